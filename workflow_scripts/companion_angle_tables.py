"""Tabulate the companion cells' mAP ranked by distance and by exterior angle."""

from hierbench.jobs import start_job
from hierbench.stages.angle_table import build_companion_angle_table

job = start_job(snakemake)
build_companion_angle_table(
    snakemake.wildcards.dataset,
    list(snakemake.input.distance),
    list(snakemake.input.angle),
    {name: list(files) for name, files in snakemake.output.items()},
    job,
    aggregation=snakemake.params.aggregation,
    levels=tuple(snakemake.params.levels),
    intervals=snakemake.params.intervals,
    per_query=(list(snakemake.input.distance_queries), list(snakemake.input.angle_queries)),
)
