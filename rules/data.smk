# Stage: data. The demo datasets rendered into the real CUB / NABirds layouts or the table layout
# (when the config's source is "demo"), and every dataset folder, demo or real, read into one
# checked image table.


rule demo_cub:
    input:
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        classes=f"{RESULTS}/{{dataset}}/inputs/classes.txt",
    output:
        directory(f"{RESULTS}/{{dataset}}/demo/{LAYOUT_FOLDERS['cub']}"),
    log:
        log_for(f"{RESULTS}/{{dataset}}/demo/{LAYOUT_FOLDERS['cub']}"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/demo/{LAYOUT_FOLDERS['cub']}")
    wildcard_constraints:
        dataset=kind_constraint("cub"),
    threads: workflow.cores
    params:
        code=code("stages.demo", script="demo"),
        kind="cub",
        demo=lambda wildcards: config["datasets"][wildcards.dataset]["demo"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/demo.py"


rule demo_nabirds:
    input:
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        classes=f"{RESULTS}/{{dataset}}/inputs/classes.txt",
        hierarchy=f"{RESULTS}/{{dataset}}/inputs/hierarchy.txt",
    output:
        directory(f"{RESULTS}/{{dataset}}/demo/{LAYOUT_FOLDERS['nabirds']}"),
    log:
        log_for(f"{RESULTS}/{{dataset}}/demo/{LAYOUT_FOLDERS['nabirds']}"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/demo/{LAYOUT_FOLDERS['nabirds']}")
    wildcard_constraints:
        dataset=kind_constraint("nabirds"),
    threads: workflow.cores
    params:
        code=code("stages.demo", script="demo"),
        kind="nabirds",
        demo=lambda wildcards: config["datasets"][wildcards.dataset]["demo"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/demo.py"


# A table dataset's example collection (source "demo"): rendered from the shipped taxonomy.
rule demo_table:
    input:
        taxonomy=lambda wildcards: config["datasets"][wildcards.dataset]["example_taxonomy"],
    output:
        directory(f"{RESULTS}/{{dataset}}/demo/{TABLE_LAYOUT_FOLDER}"),
    log:
        log_for(f"{RESULTS}/{{dataset}}/demo/{TABLE_LAYOUT_FOLDER}"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/demo/{TABLE_LAYOUT_FOLDER}")
    wildcard_constraints:
        dataset=kind_constraint("table"),
    threads: workflow.cores
    params:
        code=code("stages.demo", script="demo_table"),
        source=lambda wildcards: source_identity(config["datasets"][wildcards.dataset]["example_taxonomy"]),
        demo=lambda wildcards: config["datasets"][wildcards.dataset]["demo"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/demo_table.py"


rule image_table:
    input:
        dataset_root,
    output:
        f"{RESULTS}/{{dataset}}/data/images.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/data/images.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/data/images.parquet")
    params:
        code=code("stages.images", script="image_table"),
        source=folder_source,
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/image_table.py"
