"""Train one outer arm's cell on its outer split's train side for its validation-chosen epochs."""

from hierbench.jobs import start_job
from hierbench.stages.outer_training import train_outer_cell

job = start_job(snakemake)
selection = getattr(snakemake.input, "selection", [])
train_outer_cell(
    snakemake.wildcards.dataset,
    snakemake.wildcards.outer,
    snakemake.wildcards.geometry,
    snakemake.wildcards.loss,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.splits,
    selection[0] if selection else None,
    snakemake.input.durations,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
)
