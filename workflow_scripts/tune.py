"""One temperature-tuning run, scored on the validation query/gallery."""

from hierbench.jobs import start_job
from hierbench.stages.tuning import tune_temperature

job = start_job(snakemake)
tune_temperature(
    snakemake.wildcards.dataset,
    snakemake.wildcards.geometry,
    float(snakemake.wildcards.tau),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    snakemake.output[0],
    job,
    aggregation=snakemake.params.aggregation,
)
