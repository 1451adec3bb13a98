"""Score the frozen features and an outer split's cells on its test side (development data)."""

from hierbench.jobs import start_job
from hierbench.stages.outer import score_outer_split

job = start_job(snakemake)
score_outer_split(
    snakemake.wildcards.dataset,
    snakemake.wildcards.outer,
    snakemake.input.features,
    snakemake.input.splits,
    list(zip(snakemake.input.records, snakemake.input.models, strict=True)),
    snakemake.params.config,
    snakemake.output[0],
    job,
)
