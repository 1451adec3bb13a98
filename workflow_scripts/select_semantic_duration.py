"""Choose one semantic-control arm's epochs on development data only."""

from hierbench.jobs import start_job
from hierbench.stages.tuning import select_semantic_duration

job = start_job(snakemake)
select_semantic_duration(
    snakemake.wildcards.dataset,
    snakemake.wildcards.arm,
    snakemake.input.features,
    snakemake.input.splits,
    (snakemake.input.taxonomy, snakemake.input.shuffled),
    snakemake.params.config,
    snakemake.output[0],
    job,
    aggregation=snakemake.params.aggregation,
)
