"""Audit the final cells of a dataset; fail naming the cells and what differs."""

from hierbench.jobs import start_job
from hierbench.stages.fairness_audit import audit_cells

job = start_job(snakemake)
audit_cells(
    snakemake.wildcards.dataset,
    list(snakemake.input.records),
    list(snakemake.input.models),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    snakemake.output[0],
    job,
    own_epochs=dict(snakemake.params.own_epochs),
)
