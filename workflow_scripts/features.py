"""Extract frozen-backbone features of one partition: development images, their crops, or the
sealed test."""

from hierbench.jobs import start_job
from hierbench.paths import dataset_folder
from hierbench.stages.features import build_features

job = start_job(snakemake)
build_features(
    snakemake.params.partition,
    snakemake.wildcards.dataset,
    snakemake.input.splits,
    snakemake.input.images,
    snakemake.input.taxonomy,
    dataset_folder(snakemake.config, snakemake.wildcards.dataset),
    snakemake.params.backbone,
    snakemake.output[0],
    job,
    images_dir=snakemake.params.images_dir,
    device=snakemake.params.device,
)
