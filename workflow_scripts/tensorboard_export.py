"""Export a dataset's training curves, duration searches and sealed results to TensorBoard."""

from hierbench.jobs import start_job
from hierbench.stages.tracker import build_tracker_export

job = start_job(snakemake)
build_tracker_export(
    snakemake.params.tracker,
    snakemake.wildcards.dataset,
    list(snakemake.input.logs),
    list(snakemake.input.searches),
    list(snakemake.input.tables),
    snakemake.output[0],
    job,
)
