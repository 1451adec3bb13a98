"""Tabulate a dataset's curvature/radius control against the factorial's E_R and H_R."""

from hierbench.jobs import start_job
from hierbench.stages.controls import build_curvature_tables

job = start_job(snakemake)
hyperbolic = snakemake.params.operating_point
build_curvature_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input.points),
    list(snakemake.input.references),
    (hyperbolic["curvature"], hyperbolic["radius"]),
    {name: list(files) for name, files in snakemake.output.items()},
    job,
)
