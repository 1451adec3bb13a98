"""Score a companion cell on the sealed test draws, its gallery ranked by exterior angle."""

from hierbench.jobs import start_job
from hierbench.metrics.sealed_scoring import SealedCell
from hierbench.stages.angle_evaluation import evaluate_angles_on_sealed_test

job = start_job(snakemake)
evaluate_angles_on_sealed_test(
    snakemake.wildcards.dataset,
    SealedCell(
        snakemake.input.record,
        snakemake.input.model,
        snakemake.input.lock,
        snakemake.input.sealed_features,
        snakemake.input.sealed_splits,
    ),
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    access_log=snakemake.params.access_log,
)
