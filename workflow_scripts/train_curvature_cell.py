"""Train one curvature-control cell, as the job's wildcards name it."""

from hierbench.jobs import start_job
from hierbench.stages.training import train_curvature_cell

job = start_job(snakemake)
train_curvature_cell(
    snakemake.wildcards.dataset,
    dict(snakemake.wildcards.items()),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    epochs=snakemake.params.epochs,
)
