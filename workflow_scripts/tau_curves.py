"""Draw the τ search's validation score against τ."""

from hierbench.jobs import start_job
from hierbench.stages.curves import build_tau_curves

job = start_job(snakemake)
build_tau_curves(
    snakemake.wildcards.dataset,
    list(snakemake.input.scores),
    list(snakemake.output),
    job,
)
