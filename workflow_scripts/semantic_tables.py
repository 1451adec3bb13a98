"""Tabulate a dataset's semantic-alignment control (the paper's Table 2)."""

from hierbench.jobs import start_job
from hierbench.stages.controls import build_semantic_tables

job = start_job(snakemake)
build_semantic_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input.summaries),
    list(snakemake.input.durations),
    {name: list(files) for name, files in snakemake.output.items()},
    job,
    aggregation=snakemake.params.aggregation,
    levels=tuple(snakemake.params.levels),
    intervals=snakemake.params.intervals,
    per_query=list(snakemake.input.per_query),
)
