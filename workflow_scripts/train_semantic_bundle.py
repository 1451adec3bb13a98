"""Train a semantic-control arm's cells (one per seed) as one bundle, for its chosen epochs."""

from hierbench.jobs import start_job
from hierbench.stages.semantic import train_semantic_bundle

job = start_job(snakemake)
train_semantic_bundle(
    snakemake.wildcards.dataset,
    snakemake.wildcards.arm,
    snakemake.params.cells,
    snakemake.input.features,
    snakemake.input.splits,
    (snakemake.input.taxonomy, snakemake.input.shuffled),
    snakemake.input.duration,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
)
