"""Choose every outer arm's epochs on one outer split's validation side."""

from hierbench.jobs import start_job
from hierbench.stages.tuning import select_outer_durations

job = start_job(snakemake)
selection = getattr(snakemake.input, "selection", [])
select_outer_durations(
    snakemake.wildcards.dataset,
    snakemake.wildcards.outer,
    snakemake.input.features,
    snakemake.input.splits,
    selection[0] if selection else None,
    snakemake.params.config,
    snakemake.output[0],
    job,
    aggregation=snakemake.params.aggregation,
)
