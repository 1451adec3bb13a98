"""Tabulate a dataset's context baselines beside the factorial's arms."""

from hierbench.jobs import start_job
from hierbench.stages.controls import build_baselines_tables

job = start_job(snakemake)
build_baselines_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input.summaries),
    snakemake.params.dimensions,
    {name: list(files) for name, files in snakemake.output.items()},
    job,
    aggregation=snakemake.params.aggregation,
    levels=tuple(snakemake.params.levels),
    intervals=snakemake.params.intervals,
    per_query=list(snakemake.input.per_query),
)
