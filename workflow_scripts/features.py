"""Extract frozen-backbone features: development images, their crops, or the sealed test."""

from hierbench.jobs import start_job
from hierbench.stages.features import (
    build_dev_crop_features,
    build_dev_features,
    build_sealed_test_features,
)

job = start_job(snakemake)
build = {
    "features_sealed_test": build_sealed_test_features,
    "features_dev_crops": build_dev_crop_features,
}.get(snakemake.rule, build_dev_features)
build(
    snakemake.wildcards.dataset,
    snakemake.input.splits,
    snakemake.input.images,
    snakemake.input.taxonomy,
    snakemake.input.root,
    snakemake.params.backbone,
    snakemake.output[0],
    job,
    images_dir=snakemake.params.images_dir,
    device=snakemake.params.device,
)
