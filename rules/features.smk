# Stage: features. Frozen backbone features, computed once per image. The sealed test images
# get an artifact of their own, which no training or tuning rule takes as input.


rule features_dev:
    input:
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        images=f"{RESULTS}/{{dataset}}/data/images.parquet",
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        root=dataset_root,
        weights=backbone_weights_input,
    output:
        f"{RESULTS}/{{dataset}}/features/dev.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/features/dev.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/features/dev.parquet")
    threads: workflow.cores
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.features", script="features"),
        source=real_sources,
        backbone=config["backbone"],
        images_dir=lambda wildcards: images_subfolder(dataset_kind(config, wildcards.dataset)),
        device=config["device"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/features.py"


rule features_sealed_test:
    input:
        splits=f"{RESULTS}/{{dataset}}/splits/sealed/test.parquet",
        images=f"{RESULTS}/{{dataset}}/data/images.parquet",
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        root=dataset_root,
        weights=backbone_weights_input,
    output:
        f"{RESULTS}/{{dataset}}/features/sealed/test.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/features/sealed/test.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/features/sealed/test.parquet")
    threads: workflow.cores
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.features", script="features"),
        source=real_sources,
        backbone=config["backbone"],
        images_dir=lambda wildcards: images_subfolder(dataset_kind(config, wildcards.dataset)),
        device=config["device"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/features.py"


# The companion method's crop features (box and cross-image entailment pairs): development only.
rule features_dev_crops:
    input:
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        images=f"{RESULTS}/{{dataset}}/data/images.parquet",
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        root=dataset_root,
        weights=backbone_weights_input,
    output:
        f"{RESULTS}/{{dataset}}/features/dev_crops.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/features/dev_crops.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/features/dev_crops.parquet")
    threads: workflow.cores
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.features", script="features"),
        source=real_sources,
        backbone=config["backbone"],
        images_dir=lambda wildcards: images_subfolder(dataset_kind(config, wildcards.dataset)),
        device=config["device"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/features.py"
