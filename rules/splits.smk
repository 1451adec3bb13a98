# Stage: splits. Train / validation / sealed test, tuning and outer splits, query/gallery
# perturbations, each (split, role) identified by the SHA256 of its sorted image ids.


rule splits:
    input:
        images=f"{RESULTS}/{{dataset}}/data/images.parquet",
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
    output:
        dev=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        manifest=f"{RESULTS}/{{dataset}}/splits/manifest.parquet",
        sealed=f"{RESULTS}/{{dataset}}/splits/sealed/test.parquet",
        sealed_manifest=f"{RESULTS}/{{dataset}}/splits/sealed/manifest.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/splits/dev.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/splits/dev.parquet")
    params:
        code=code("stages.splits", script="splits"),
        config=lambda wildcards: split_config(wildcards.dataset),
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/splits.py"
