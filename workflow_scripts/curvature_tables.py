"""Tabulate a dataset's curvature/radius control (Table 10) from its own cells."""

from hierbench.jobs import start_job
from hierbench.stages.controls import build_curvature_tables

job = start_job(snakemake)
hyperbolic = snakemake.params.operating_point
build_curvature_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input.summaries),
    (hyperbolic["curvature"], hyperbolic["radius"]),
    {name: list(files) for name, files in snakemake.output.items()},
    job,
    aggregation=snakemake.params.aggregation,
    levels=tuple(snakemake.params.levels),
    intervals=snakemake.params.intervals,
    per_query=list(snakemake.input.per_query),
)
