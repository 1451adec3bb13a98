# Stage: features. One frozen-backbone pass per dataset over its images (and one over the crops
# the companion method needs), depending on the images and the backbone only: a taxonomy edit
# never reruns it. The labelled slices join each image's codes; the sealed test images get a
# slice of their own, which no training or tuning rule takes as input. Only the slices read a
# pass.

BACKBONE_FEATURES = run_path(BACKBONE_PASS)


rule backbone_features:
    input:
        images=run_path(IMAGE_TABLE),
        files=run_path(IMAGE_FINGERPRINT),
        weights=backbone_weights_input,
    output:
        BACKBONE_FEATURES,
    log:
        log_for(BACKBONE_FEATURES),
    benchmark:
        benchmark_for(BACKBONE_FEATURES)
    threads: COMPUTE_THREADS
    resources:
        gpu=GPUS_PER_JOB,
    params:
        **code("stages.features", script="backbone_pass"),
        weights_source=weights_source,
        backbone=config["backbone"],
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
        pool=lambda wildcards: pool_config(config, wildcards.dataset),
        images_dir=lambda wildcards: images_subfolder(config, wildcards.dataset),
        device=config["device"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


DEV_FEATURE_TABLE = run_path(DEV_FEATURES)


rule features_dev:
    input:
        backbone=run_path(BACKBONE_PASS, backbone_pass="images"),
        splits=run_path(DEV_SPLITS),
        images=run_path(IMAGE_TABLE),
        taxonomy=run_path(TAXONOMY),
    output:
        DEV_FEATURE_TABLE,
    log:
        log_for(DEV_FEATURE_TABLE),
    benchmark:
        benchmark_for(DEV_FEATURE_TABLE)
    params:
        **code("stages.features", script="feature_slice"),
        partition="dev",
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# The sealed test images: their own split table in, their own artifact out.
SEALED_FEATURE_TABLE = run_path(SEALED_FEATURES)


use rule features_dev as features_sealed_test with:
    input:
        backbone=run_path(BACKBONE_PASS, backbone_pass="images"),
        splits=run_path(SEALED_SPLITS),
        images=run_path(IMAGE_TABLE),
        taxonomy=run_path(TAXONOMY),
    output:
        SEALED_FEATURE_TABLE,
    log:
        log_for(SEALED_FEATURE_TABLE),
    benchmark:
        benchmark_for(SEALED_FEATURE_TABLE)
    params:
        partition="sealed_test",


# The companion method's crop features (box and cross-image entailment pairs): development only.
CROP_FEATURE_TABLE = run_path(CROP_FEATURES)


use rule features_dev as features_dev_crops with:
    input:
        backbone=run_path(BACKBONE_PASS, backbone_pass="crops"),
        splits=run_path(DEV_SPLITS),
        images=run_path(IMAGE_TABLE),
        taxonomy=run_path(TAXONOMY),
    output:
        CROP_FEATURE_TABLE,
    log:
        log_for(CROP_FEATURE_TABLE),
    benchmark:
        benchmark_for(CROP_FEATURE_TABLE)
    params:
        partition="dev_crops",
