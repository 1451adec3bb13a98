"""Draw a bundle's training curves: loss per epoch, one panel per kind of cell."""

from hierbench.jobs import start_job
from hierbench.stages.curves import build_training_curves

job = start_job(snakemake)
build_training_curves(
    snakemake.wildcards.dataset,
    snakemake.wildcards.kind,
    list(snakemake.input.logs),
    list(snakemake.output.figure),
    snakemake.output.problems,
    job,
)
