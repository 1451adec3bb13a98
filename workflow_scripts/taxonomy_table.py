"""Read a table dataset's taxonomy.csv into the generic taxonomy table."""

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
)
