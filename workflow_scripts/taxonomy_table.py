"""Read a collection's taxonomy (taxonomy.csv, or a kind of one's own's tables) into the generic
taxonomy table."""

from hierbench.data.kinds import kind_of
from hierbench.jobs import start_job
from hierbench.paths import dataset_folder
from hierbench.stages.taxonomy import build_table_taxonomy

job = start_job(snakemake)
build_table_taxonomy(
    snakemake.wildcards.dataset,
    dataset_folder(snakemake.config, snakemake.wildcards.dataset),
    tuple(snakemake.params.levels),
    snakemake.output[0],
    job,
    kind=kind_of(snakemake.config, snakemake.wildcards.dataset),
)
