# Stage: taxonomy. CUB class names matched to a bird checklist (Class -> Genus -> Family);
# NABirds' own tree (Leaf -> Parent -> Supergroup); a table dataset's taxonomy.csv; the shuffled
# control taxonomy. Each dataset's kind picks its rule.


TAXONOMY_TABLE = run_path(TAXONOMY)
ALIAS_SCHEMA = shipped("schemas/aliases.schema.json")
CUB_TAXONOMY = {"table": TAXONOMY_TABLE, "report": run_path(MATCH_REPORT)}
SHUFFLED = {"table": run_path(SHUFFLED_TAXONOMY), "report": run_path(SHUFFLE_REPORT)}


rule taxonomy_cub:
    input:
        classes=run_path(INPUT_FILE, name="classes"),
        aliases=lambda wildcards: cub_taxonomy_config(wildcards)["aliases"],
        alias_schema=ALIAS_SCHEMA,
        checklist=cub_checklist_input,
    output:
        **CUB_TAXONOMY,
    log:
        log_for(CUB_TAXONOMY),
    benchmark:
        benchmark_for(CUB_TAXONOMY)
    wildcard_constraints:
        dataset=kind_constraint("cub"),
    params:
        **code("stages.taxonomy", script="taxonomy_cub"),
        source=lambda wildcards: source_identity(
            cub_taxonomy_config(wildcards)["aliases"],
            ALIAS_SCHEMA,
            *cub_checklist_input(wildcards),
        ),
        checklist=lambda wildcards: cub_taxonomy_config(wildcards)["checklist"],
        checklist_sha256=lambda wildcards: checklist_fingerprint(cub_taxonomy_config(wildcards)["checklist"]),
        checklist_columns=lambda wildcards: cub_taxonomy_config(wildcards)["checklist_columns"],
        fuzzy_threshold=lambda wildcards: cub_taxonomy_config(wildcards)["fuzzy_threshold"],
        fuzzy_margin=lambda wildcards: cub_taxonomy_config(wildcards)["fuzzy_margin"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


rule taxonomy_nabirds:
    input:
        classes=run_path(INPUT_FILE, name="classes"),
        hierarchy=run_path(INPUT_FILE, name="hierarchy"),
    output:
        TAXONOMY_TABLE,
    log:
        log_for(TAXONOMY_TABLE),
    wildcard_constraints:
        dataset=kind_constraint("nabirds"),
    params:
        **code("stages.taxonomy", script="taxonomy_nabirds"),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# Your own collection: taxonomy.csv read together with images.csv (the reader checks both), or
# a kind of your own's tables (plugins.datasets).
rule taxonomy_table:
    input:
        taxonomy=run_path(TAXONOMY_FINGERPRINT),
        images=run_path(IMAGE_TABLE),  # read after the image table: one flaw, one message
    output:
        TAXONOMY_TABLE,
    log:
        log_for(TAXONOMY_TABLE),
    wildcard_constraints:
        dataset=collection_constraint(),
    params:
        **with_dataset_code(code("stages.taxonomy", script="taxonomy_table")),
        levels=lambda wildcards: level_names(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


rule taxonomy_shuffled:
    input:
        TAXONOMY_TABLE,
    output:
        **SHUFFLED,
    log:
        log_for(SHUFFLED),
    wildcard_constraints:
        fixed=r"paper|minimum|\d+",
    params:
        **code("stages.taxonomy", script="taxonomy_shuffled"),
        seed=lambda wildcards: config["datasets"][wildcards.dataset]["taxonomy"]["shuffle_seed"],
        fixed_points=lambda wildcards: fixed_points_value(wildcards.fixed),
        levels=lambda wildcards: level_names(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
