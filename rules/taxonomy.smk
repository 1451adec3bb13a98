# Stage: taxonomy. CUB class names matched to a bird checklist (Class -> Genus -> Family);
# NABirds' own tree (Leaf -> Parent -> Supergroup); the shuffled control taxonomy.


rule taxonomy_cub:
    input:
        classes=f"{RESULTS}/cub/inputs/classes.txt",
        aliases=cub_taxonomy_config()["aliases"],
        alias_schema="schemas/aliases.schema.json",
        checklist=cub_checklist_input,
    output:
        table=f"{RESULTS}/cub/taxonomy/taxonomy.parquet",
        report=f"{RESULTS}/cub/taxonomy/match_report.md",
    log:
        log_for(f"{RESULTS}/cub/taxonomy/taxonomy.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/cub/taxonomy/taxonomy.parquet")
    params:
        code=code("stages.taxonomy"),
        source=lambda wildcards: source_identity(
            cub_taxonomy_config()["aliases"], "schemas/aliases.schema.json", *cub_checklist_input(wildcards)
        ),
        checklist=cub_taxonomy_config()["checklist"],
        checklist_sha256=lambda wildcards: checklist_fingerprint(cub_taxonomy_config()["checklist"]),
        checklist_columns=cub_taxonomy_config()["checklist_columns"],
        fuzzy_threshold=cub_taxonomy_config()["fuzzy_threshold"],
        fuzzy_margin=cub_taxonomy_config()["fuzzy_margin"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_cub.py"


rule taxonomy_nabirds:
    input:
        classes=f"{RESULTS}/nabirds/inputs/classes.txt",
        hierarchy=f"{RESULTS}/nabirds/inputs/hierarchy.txt",
    output:
        f"{RESULTS}/nabirds/taxonomy/taxonomy.parquet",
    log:
        log_for(f"{RESULTS}/nabirds/taxonomy/taxonomy.parquet"),
    params:
        code=code("stages.taxonomy"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_nabirds.py"


rule taxonomy_shuffled:
    input:
        f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
    output:
        table=f"{RESULTS}/{{dataset}}/taxonomy/shuffled.parquet",
        report=f"{RESULTS}/{{dataset}}/taxonomy/shuffle_report.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/taxonomy/shuffled.parquet"),
    params:
        code=code("stages.taxonomy"),
        seed=lambda wildcards: config["datasets"][wildcards.dataset]["taxonomy"]["shuffle_seed"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_shuffled.py"
