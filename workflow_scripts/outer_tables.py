"""Tabulate a dataset's outer hierarchy-disjoint splits."""

from hierbench.jobs import start_job
from hierbench.stages.controls import build_outer_tables

job = start_job(snakemake)
build_outer_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input.scores),
    {name: list(files) for name, files in snakemake.output.items()},
    job,
    aggregation=snakemake.params.aggregation,
    levels=tuple(snakemake.params.levels),
    intervals=snakemake.params.intervals,
)
