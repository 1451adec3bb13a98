"""Draw the semantic and outer controls' duration searches: validation score per epoch."""

from hierbench.jobs import start_job
from hierbench.stages.curves import build_duration_curves

job = start_job(snakemake)
build_duration_curves(
    snakemake.wildcards.dataset,
    list(snakemake.input.semantic),
    list(snakemake.input.outer),
    list(snakemake.output),
    job,
)
