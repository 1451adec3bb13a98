"""Train one bundle of factorial-recipe cells: a dataset's factorial, or a curvature point's
cells of every seed."""

from hierbench.jobs import start_job
from hierbench.stages.training import train_cell_bundle

job = start_job(snakemake)
selection = getattr(snakemake.input, "selection", [])
train_cell_bundle(
    snakemake.wildcards.dataset,
    snakemake.params.kind,
    dict(snakemake.wildcards.items()),
    snakemake.params.cells,
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    selection=selection[0] if selection else None,
    epochs=getattr(snakemake.params, "epochs", None),
)
