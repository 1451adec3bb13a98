# Stage: effect tables and figures. Per-seed rows, mean ± SD per arm, simple effects, the
# group-macro sensitivity tables, and the figures; `snakemake --report report.html` shows them.


rule effect_tables:
    input:
        lambda wildcards: eval_outputs(wildcards.dataset),
    output:
        table_outputs(f"{RESULTS}/{{dataset}}/tables"),
        table_outputs(f"{RESULTS}/{{dataset}}/tables/group_macro"),
        summary=report(
            f"{RESULTS}/{{dataset}}/tables/summary.md",
            caption="../report/summary.rst",
            category="Tables",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/tables/summary.md"),
    params:
        code=code("stages.tables"),
        out_dir=lambda wildcards: f"{RESULTS}/{wildcards.dataset}/tables",
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/effect_tables.py"


rule figures:
    input:
        arms=f"{RESULTS}/{{dataset}}/tables/arms_summary.parquet",
        effects=f"{RESULTS}/{{dataset}}/tables/effects_by_seed.parquet",
        records=lambda wildcards: hyperbolic_cells(wildcards.dataset, "record.json"),
        models=lambda wildcards: hyperbolic_cells(wildcards.dataset, "model.safetensors"),
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
    output:
        effects=report(
            expand(f"{RESULTS}/{{{{dataset}}}}/figures/effects.{{ext}}", ext=["png", "pdf"]),
            caption="../report/effects.rst",
            category="Figures",
            subcategory="{dataset}",
        ),
        map_by_level=report(
            expand(f"{RESULTS}/{{{{dataset}}}}/figures/map_by_level.{{ext}}", ext=["png", "pdf"]),
            caption="../report/map_by_level.rst",
            category="Figures",
            subcategory="{dataset}",
        ),
        hyperbolic_norms=report(
            expand(f"{RESULTS}/{{{{dataset}}}}/figures/hyperbolic_norms.{{ext}}", ext=["png", "pdf"]),
            caption="../report/hyperbolic_norms.rst",
            category="Figures",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/figures/effects.png"),
    params:
        code=code("stages.figures"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/figures.py"
