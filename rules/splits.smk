# Stage: splits. Train / validation / sealed test, tuning and outer splits, query/gallery
# perturbations, each (split, role) identified by the SHA256 of its sorted image ids.

SPLITS = {
    "dev": run_path(DEV_SPLITS),
    "manifest": run_path(DEV_MANIFEST),
    "sealed": run_path(SEALED_SPLITS),
    "sealed_manifest": run_path(SEALED_MANIFEST),
}


rule splits:
    input:
        images=run_path(IMAGE_TABLE),
        taxonomy=run_path(TAXONOMY),
    output:
        **SPLITS,
    log:
        log_for(SPLITS),
    benchmark:
        benchmark_for(SPLITS)
    params:
        **code("stages.splits", script="splits"),
        config=lambda wildcards: split_config(config, wildcards.dataset),
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
