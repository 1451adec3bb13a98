"""Train one companion cell (E_A or L_A)."""

from hierbench.jobs import start_job
from hierbench.stages.companion import train_companion_cell

job = start_job(snakemake)
train_companion_cell(
    snakemake.wildcards.dataset,
    snakemake.wildcards.head,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.crops[0] if snakemake.input.crops else None,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
)
