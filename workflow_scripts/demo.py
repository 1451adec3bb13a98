"""Render a demo dataset into its real on-disk layout."""

from hierbench.jobs import start_job
from hierbench.stages.demo import build_demo

job = start_job(snakemake)
build_demo(
    snakemake.params.kind,
    snakemake.input.taxonomy,
    snakemake.output[0],
    job,
    classes_file=snakemake.input.classes,
    hierarchy_file=snakemake.input.get("hierarchy"),
    workers=snakemake.threads,
    **snakemake.params.demo,
)
