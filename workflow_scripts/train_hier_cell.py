"""Train one HIER-style baseline cell."""

from hierbench.jobs import start_job
from hierbench.stages.hier import train_hier_cell

job = start_job(snakemake)
train_hier_cell(
    snakemake.wildcards.dataset,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
)
