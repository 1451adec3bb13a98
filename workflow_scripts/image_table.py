"""Read a dataset folder (demo or real) into its checked image table."""

from hierbench.data.kinds import kind_of
from hierbench.jobs import start_job
from hierbench.paths import dataset_folder
from hierbench.stages.images import build_image_table

job = start_job(snakemake)
build_image_table(
    snakemake.wildcards.dataset,
    dataset_folder(snakemake.config, snakemake.wildcards.dataset),
    snakemake.output[0],
    job,
    kind=kind_of(snakemake.config, snakemake.wildcards.dataset),
)
