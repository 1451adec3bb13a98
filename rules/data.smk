# Stage: data. The demo datasets rendered into the real CUB / NABirds layouts or the table layout
# (when the config's source is "demo"), and every dataset folder, demo or real, read into one
# checked image table.

CUB_DEMO = run_path(DEMO_FOLDER, layout=LAYOUT_FOLDERS["cub"])
NABIRDS_DEMO = run_path(DEMO_FOLDER, layout=LAYOUT_FOLDERS["nabirds"])
TABLE_DEMO = run_path(DEMO_FOLDER, layout=TABLE_LAYOUT_FOLDER)
IMAGES = run_path(IMAGE_TABLE)
CUB_DEMO_TREE = shipped("resources/cub_demo_taxonomy.csv")


rule demo_nabirds:
    input:
        taxonomy=run_path(TAXONOMY),
        classes=run_path(INPUT_FILE, name="classes"),
        hierarchy=run_path(INPUT_FILE, name="hierarchy"),
    output:
        directory(NABIRDS_DEMO),
    log:
        log_for(NABIRDS_DEMO),
    benchmark:
        benchmark_for(NABIRDS_DEMO)
    wildcard_constraints:
        dataset=kind_constraint("nabirds"),
    threads: workflow.cores
    params:
        **code("stages.demo", script="demo"),
        kind="nabirds",
        demo=lambda wildcards: config["datasets"][wildcards.dataset]["demo"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# The CUB demo's birds are drawn from a shipped tree (tools/cub_demo_taxonomy.py), never from
# the run's taxonomy: a taxonomy setting changes the protocol's labels, not the photographs.
use rule demo_nabirds as demo_cub with:
    input:
        taxonomy=CUB_DEMO_TREE,
        classes=run_path(INPUT_FILE, name="classes"),
    output:
        directory(CUB_DEMO),
    log:
        log_for(CUB_DEMO),
    benchmark:
        benchmark_for(CUB_DEMO)
    wildcard_constraints:
        dataset=kind_constraint("cub"),
    params:
        **code("stages.demo", script="demo"),
        kind="cub",
        demo=lambda wildcards: config["datasets"][wildcards.dataset]["demo"],
        tree=source_identity(CUB_DEMO_TREE),


# A table dataset's example collection (source "demo"): rendered from the shipped taxonomy.
rule demo_table:
    input:
        taxonomy=lambda wildcards: config["datasets"][wildcards.dataset]["example_taxonomy"],
    output:
        directory(TABLE_DEMO),
    log:
        log_for(TABLE_DEMO),
    benchmark:
        benchmark_for(TABLE_DEMO)
    wildcard_constraints:
        dataset=kind_constraint("table"),
    threads: workflow.cores
    params:
        **code("stages.demo", script="demo_table"),
        source=lambda wildcards: source_identity(config["datasets"][wildcards.dataset]["example_taxonomy"]),
        demo=lambda wildcards: config["datasets"][wildcards.dataset]["demo"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# A dataset enters the workflow through the content of its files, never through its folder:
# touching the folder or a file, or a stray file in it, reruns nothing; a changed table reruns
# the image table and what follows, a changed image the features and what follows.
LAYOUT_FILES = run_path(LAYOUT_FINGERPRINT)
IMAGE_FILES = run_path(IMAGE_FINGERPRINT)


rule layout_fingerprint:
    input:
        rendered_demo,
    output:
        LAYOUT_FILES,
    log:
        log_for(LAYOUT_FILES),
    benchmark:
        benchmark_for(LAYOUT_FILES)
    params:
        **with_dataset_code(code("stages.images", script="fingerprint")),
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
        part="layout",
        content=folder_content("layout"),
        cache=lambda wildcards: hash_cache(wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


use rule layout_fingerprint as image_fingerprint with:
    output:
        IMAGE_FILES,
    log:
        log_for(IMAGE_FILES),
    benchmark:
        benchmark_for(IMAGE_FILES)
    params:
        **with_dataset_code(code("stages.images", script="fingerprint")),
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
        part="images",
        content=folder_content("images"),
        cache=lambda wildcards: hash_cache(wildcards.dataset),


# A collection's taxonomy tables (table: taxonomy.csv): an identity of their own, read by its
# taxonomy rule only.
TAXONOMY_FILES = run_path(TAXONOMY_FINGERPRINT)


use rule layout_fingerprint as taxonomy_fingerprint with:
    output:
        TAXONOMY_FILES,
    log:
        log_for(TAXONOMY_FILES),
    benchmark:
        benchmark_for(TAXONOMY_FILES)
    wildcard_constraints:
        dataset=collection_constraint(),
    params:
        **with_dataset_code(code("stages.images", script="fingerprint")),
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
        part="taxonomy",
        content=folder_content("taxonomy"),
        cache=lambda wildcards: hash_cache(wildcards.dataset),


rule image_table:
    input:
        LAYOUT_FILES,
    output:
        IMAGES,
    log:
        log_for(IMAGES),
    benchmark:
        benchmark_for(IMAGES)
    params:
        **with_dataset_code(code("stages.images", script="image_table")),
        kind=lambda wildcards: dataset_kind(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
