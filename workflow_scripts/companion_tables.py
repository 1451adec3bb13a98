"""Tabulate a dataset's companion cells (E_A, L_A) beside the factorial's SupCon arms."""

from hierbench.jobs import start_job
from hierbench.stages.controls import build_companion_tables

job = start_job(snakemake)
build_companion_tables(
    snakemake.wildcards.dataset,
    list(snakemake.input),
    {name: list(files) for name, files in snakemake.output.items()},
    job,
)
