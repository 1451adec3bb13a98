"""Train one cell of the factorial's recipe: a final cell, a curvature-control cell or an outer
split's cell, as the job's wildcards name it."""

from hierbench.jobs import start_job
from hierbench.stages.training import train_cell

job = start_job(snakemake)
selection = getattr(snakemake.input, "selection", [])
train_cell(
    snakemake.wildcards.dataset,
    dict(snakemake.wildcards.items()),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    selection=selection[0] if selection else None,
    epochs=getattr(snakemake.params, "epochs", None),
)
