"""Train one curvature-control cell: H_R at the (c, r) its point names, or the matched E_R."""

from hierbench.jobs import start_job
from hierbench.stages.training import train_curvature_cell

job = start_job(snakemake)
train_curvature_cell(
    snakemake.wildcards.dataset,
    snakemake.wildcards.point,
    snakemake.wildcards.geometry,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    epochs=snakemake.params.epochs,
)
