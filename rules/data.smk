# Stage: data. The demo datasets rendered into the real CUB / NABirds layouts (when the config's
# source is "demo"), and every dataset folder, demo or real, read into one checked image table.


rule demo_cub:
    input:
        taxonomy=f"{RESULTS}/cub/taxonomy/taxonomy.parquet",
        classes=f"{RESULTS}/cub/inputs/classes.txt",
    output:
        directory(demo_folder("cub")),
    log:
        log_for(demo_folder("cub")),
    benchmark:
        benchmark_for(demo_folder("cub"))
    threads: workflow.cores
    params:
        code=code("stages.demo"),
        dataset="cub",
        demo=config["datasets"]["cub"]["demo"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/demo.py"


rule demo_nabirds:
    input:
        taxonomy=f"{RESULTS}/nabirds/taxonomy/taxonomy.parquet",
        classes=f"{RESULTS}/nabirds/inputs/classes.txt",
        hierarchy=f"{RESULTS}/nabirds/inputs/hierarchy.txt",
    output:
        directory(demo_folder("nabirds")),
    log:
        log_for(demo_folder("nabirds")),
    benchmark:
        benchmark_for(demo_folder("nabirds"))
    threads: workflow.cores
    params:
        code=code("stages.demo"),
        dataset="nabirds",
        demo=config["datasets"]["nabirds"]["demo"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/demo.py"


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
        code=code("stages.images"),
        source=real_sources,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/image_table.py"
