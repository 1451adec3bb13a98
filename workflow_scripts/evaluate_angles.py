"""Score a dataset's companion cells on the sealed test draws, each gallery ranked by exterior
angle."""

from hierbench.jobs import start_job
from hierbench.metrics.sealed_scoring import sealed_cells
from hierbench.stages.angle_evaluation import evaluate_angles_of_cells_on_sealed_test

job = start_job(snakemake)
evaluate_angles_of_cells_on_sealed_test(
    snakemake.wildcards.dataset,
    sealed_cells(dict(snakemake.input.items()), dict(snakemake.output.items())),
    snakemake.params.config,
    job,
    access_log=snakemake.params.access_log,
)
