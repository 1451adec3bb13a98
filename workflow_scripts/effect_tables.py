"""Aggregate a dataset's evaluation summaries into the effect tables."""

from hierbench.jobs import start_job
from hierbench.stages.tables import build_tables

job = start_job(snakemake)
build_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input.summaries),
    snakemake.params.out_dir,
    job,
    aggregation=snakemake.params.aggregation,
    levels=tuple(snakemake.params.levels),
    intervals=snakemake.params.intervals,
    per_query=list(snakemake.input.per_query),
    companion_angle=list(snakemake.input.companion_angle),
    margin=snakemake.params.margin,
    logs=list(snakemake.input.logs),
    failed_seeds=snakemake.params.failed_seeds,
)
