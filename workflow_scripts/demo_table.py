"""Render the example collection of a table dataset into the table layout."""

from hierbench.jobs import start_job
from hierbench.stages.demo import build_table_demo

job = start_job(snakemake)
build_table_demo(
    snakemake.input.taxonomy,
    snakemake.output[0],
    job,
    workers=snakemake.threads,
    **snakemake.params.demo,
)
