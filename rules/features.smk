# Stage: features. Frozen backbone features, computed once per image. The sealed test images
# get an artifact of their own, which no training or tuning rule takes as input.

DEV_FEATURE_TABLE = run_path(DEV_FEATURES)


rule features_dev:
    input:
        splits=run_path(DEV_SPLITS),
        images=run_path(IMAGE_TABLE),
        taxonomy=run_path(TAXONOMY),
        files=run_path(IMAGE_FINGERPRINT),
        weights=backbone_weights_input,
    output:
        DEV_FEATURE_TABLE,
    log:
        log_for(DEV_FEATURE_TABLE),
    benchmark:
        benchmark_for(DEV_FEATURE_TABLE)
    threads: workflow.cores
    resources:
        gpu=GPUS_PER_JOB,
    params:
        **code("stages.features", script="features"),
        partition="dev",
        weights_source=weights_source,
        backbone=config["backbone"],
        images_dir=lambda wildcards: images_subfolder(dataset_kind(config, wildcards.dataset)),
        device=config["device"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# The sealed test images: their own split table in, their own artifact out.
SEALED_FEATURE_TABLE = run_path(SEALED_FEATURES)


use rule features_dev as features_sealed_test with:
    input:
        splits=run_path(SEALED_SPLITS),
        images=run_path(IMAGE_TABLE),
        taxonomy=run_path(TAXONOMY),
        files=run_path(IMAGE_FINGERPRINT),
        weights=backbone_weights_input,
    output:
        SEALED_FEATURE_TABLE,
    log:
        log_for(SEALED_FEATURE_TABLE),
    benchmark:
        benchmark_for(SEALED_FEATURE_TABLE)
    params:
        **code("stages.features", script="features"),
        partition="sealed_test",
        weights_source=weights_source,
        backbone=config["backbone"],
        images_dir=lambda wildcards: images_subfolder(dataset_kind(config, wildcards.dataset)),
        device=config["device"],


# The companion method's crop features (box and cross-image entailment pairs): development only.
CROP_FEATURE_TABLE = run_path(CROP_FEATURES)


use rule features_dev as features_dev_crops with:
    output:
        CROP_FEATURE_TABLE,
    log:
        log_for(CROP_FEATURE_TABLE),
    benchmark:
        benchmark_for(CROP_FEATURE_TABLE)
    params:
        **code("stages.features", script="features"),
        partition="dev_crops",
        weights_source=weights_source,
        backbone=config["backbone"],
        images_dir=lambda wildcards: images_subfolder(dataset_kind(config, wildcards.dataset)),
        device=config["device"],
