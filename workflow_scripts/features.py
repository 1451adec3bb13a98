"""Extract frozen-backbone features for the development images or the sealed test images."""

from hierbench.jobs import start_job
from hierbench.stages.features import build_dev_features, build_sealed_test_features

job = start_job(snakemake)
build = (
    build_sealed_test_features if snakemake.rule == "features_sealed_test" else build_dev_features
)
build(
    snakemake.wildcards.dataset,
    snakemake.input.splits,
    snakemake.input.images,
    snakemake.input.taxonomy,
    snakemake.input.root,
    snakemake.params.backbone,
    snakemake.output[0],
    job,
)
