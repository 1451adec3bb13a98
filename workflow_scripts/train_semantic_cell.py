"""Train one semantic-control cell for its arm's chosen epochs."""

from hierbench.jobs import start_job
from hierbench.stages.semantic import train_semantic_cell

job = start_job(snakemake)
train_semantic_cell(
    snakemake.wildcards.dataset,
    snakemake.wildcards.arm,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.splits,
    (snakemake.input.taxonomy, snakemake.input.shuffled),
    snakemake.input.duration,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
)
