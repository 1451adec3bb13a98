"""Train a dataset's factorial cells as one bundle."""

from hierbench.jobs import start_job
from hierbench.stages.training import train_factorial_bundle

job = start_job(snakemake)
selection = getattr(snakemake.input, "selection", [])
train_factorial_bundle(
    snakemake.wildcards.dataset,
    snakemake.params.cells,
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    selection=selection[0] if selection else None,
)
