"""Train one factorial cell on an outer split's train side."""

from hierbench.jobs import start_job
from hierbench.stages.training import train_final_cell

job = start_job(snakemake)
outer = snakemake.wildcards.outer
train_final_cell(
    snakemake.wildcards.dataset,
    snakemake.wildcards.geometry,
    snakemake.wildcards.loss,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    selection=snakemake.input.selection[0] if snakemake.input.selection else None,
    label=f"{snakemake.wildcards.geometry}{snakemake.wildcards.loss}-{snakemake.wildcards.seed}@{outer}",
    split=outer,
)
