"""Fit the PCA baseline on a dataset's development features."""

from hierbench.jobs import start_job
from hierbench.stages.baselines import fit_pca_on_development

job = start_job(snakemake)
fit_pca_on_development(
    snakemake.wildcards.dataset,
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.dimensions,
    dict(snakemake.output.items()),
    job,
)
