"""A dataset's temperature-tuning runs, trained as one bundle, each scored on the validation
query/gallery."""

from hierbench.jobs import start_job
from hierbench.stages.tuning import tune_temperatures

job = start_job(snakemake)
tune_temperatures(
    snakemake.wildcards.dataset,
    snakemake.params.runs,
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    list(snakemake.output),
    job,
    aggregation=snakemake.params.aggregation,
)
