"""The labelled features of one partition (development, their crops, or the sealed test), cut
from a backbone pass."""

from hierbench.jobs import start_job
from hierbench.stages.features import build_feature_slice

job = start_job(snakemake)
build_feature_slice(
    snakemake.params.partition,
    snakemake.wildcards.dataset,
    snakemake.input.backbone,
    snakemake.input.splits,
    snakemake.input.images,
    snakemake.input.taxonomy,
    snakemake.output[0],
    job,
)
