# Stage: taxonomy. CUB class names matched to a bird checklist (Class -> Genus -> Family);
# NABirds' own tree (Leaf -> Parent -> Supergroup); a table dataset's taxonomy.csv; the shuffled
# control taxonomy. Each dataset's kind picks its rule.


rule taxonomy_cub:
    input:
        classes=f"{RESULTS}/{{dataset}}/inputs/classes.txt",
        aliases=lambda wildcards: cub_taxonomy_config(wildcards)["aliases"],
        alias_schema="schemas/aliases.schema.json",
        checklist=cub_checklist_input,
    output:
        table=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        report=f"{RESULTS}/{{dataset}}/taxonomy/match_report.md",
    log:
        log_for(f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet")
    wildcard_constraints:
        dataset=kind_constraint("cub"),
    params:
        code=code("stages.taxonomy", script="taxonomy_cub"),
        source=lambda wildcards: source_identity(
            cub_taxonomy_config(wildcards)["aliases"],
            "schemas/aliases.schema.json",
            *cub_checklist_input(wildcards),
        ),
        checklist=lambda wildcards: cub_taxonomy_config(wildcards)["checklist"],
        checklist_sha256=lambda wildcards: checklist_fingerprint(cub_taxonomy_config(wildcards)["checklist"]),
        checklist_columns=lambda wildcards: cub_taxonomy_config(wildcards)["checklist_columns"],
        fuzzy_threshold=lambda wildcards: cub_taxonomy_config(wildcards)["fuzzy_threshold"],
        fuzzy_margin=lambda wildcards: cub_taxonomy_config(wildcards)["fuzzy_margin"],
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_cub.py"


rule taxonomy_nabirds:
    input:
        classes=f"{RESULTS}/{{dataset}}/inputs/classes.txt",
        hierarchy=f"{RESULTS}/{{dataset}}/inputs/hierarchy.txt",
    output:
        f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet"),
    wildcard_constraints:
        dataset=kind_constraint("nabirds"),
    params:
        code=code("stages.taxonomy", script="taxonomy_nabirds"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_nabirds.py"


# Your own collection: taxonomy.csv, read together with images.csv (the reader checks both).
rule taxonomy_table:
    input:
        root=dataset_root,
    output:
        f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet"),
    wildcard_constraints:
        dataset=kind_constraint("table"),
    params:
        code=code("stages.taxonomy", script="taxonomy_table"),
        source=folder_source,
        levels=lambda wildcards: level_names(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_table.py"


rule taxonomy_shuffled:
    input:
        f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
    output:
        table=f"{RESULTS}/{{dataset}}/taxonomy/shuffled.parquet",
        report=f"{RESULTS}/{{dataset}}/taxonomy/shuffle_report.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/taxonomy/shuffled.parquet"),
    params:
        code=code("stages.taxonomy", script="taxonomy_shuffled"),
        seed=lambda wildcards: config["datasets"][wildcards.dataset]["taxonomy"]["shuffle_seed"],
        levels=lambda wildcards: level_names(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/taxonomy_shuffled.py"
