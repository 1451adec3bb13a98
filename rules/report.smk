# Stage: effect tables and figures. Per-seed rows, mean ± SD per arm, simple effects under each
# dataset's registered aggregation, the other aggregation's sensitivity tables, and the figures; `snakemake --report report.html` shows them.


rule effect_tables:
    input:
        lambda wildcards: eval_outputs(wildcards.dataset),
    output:
        table_outputs(f"{RESULTS}/{{dataset}}/tables"),
        table_outputs(f"{RESULTS}/{{dataset}}/tables/{SENSITIVITY_FOLDER}"),
        summary=report(
            f"{RESULTS}/{{dataset}}/tables/{SUMMARY_PAGE}",
            caption="../report/summary.rst",
            category="Tables",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/tables/{SUMMARY_PAGE}"),
    params:
        code=code("stages.tables", script="effect_tables"),
        out_dir=lambda wildcards: f"{RESULTS}/{wildcards.dataset}/tables",
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/effect_tables.py"


rule figures:
    input:
        arms=f"{RESULTS}/{{dataset}}/tables/{ARMS_SUMMARY}.parquet",
        effects=f"{RESULTS}/{{dataset}}/tables/{EFFECTS_BY_SEED}.parquet",
        records=lambda wildcards: hyperbolic_cells(wildcards.dataset, "record.json"),
        models=lambda wildcards: hyperbolic_cells(wildcards.dataset, "model.safetensors"),
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
    output:
        **{
            name: report(
                figure_outputs("{dataset}", name),
                caption=f"../report/{name}.rst",
                category="Figures",
                subcategory="{dataset}",
            )
            for name in FIGURES
        },
    log:
        log_for(figure_outputs("{dataset}", FIGURES[0])[0]),
    params:
        code=code("stages.figures", script="figures"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/figures.py"


rule curvature_tables:
    input:
        lambda wildcards: curvature_evals(wildcards.dataset),
    output:
        per_seed=[f"{RESULTS}/{{dataset}}/tables/controls/{CURVATURE_CONTROL}_{PER_SEED_TABLE}.parquet"],
        table=[f"{RESULTS}/{{dataset}}/tables/controls/{CURVATURE_TABLES[0]}.{ext}" for ext in TABLE_FORMATS],
        contrasts=[
            f"{RESULTS}/{{dataset}}/tables/controls/{CURVATURE_TABLES[1]}.{ext}" for ext in TABLE_FORMATS
        ],
        figure=report(
            figure_outputs("{dataset}", CURVATURE_CONTROL),
            caption="../report/curvature.rst",
            category="Controls",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/tables/controls/{CURVATURE_CONTROL}.md"),
    params:
        code=code("stages.controls", script="curvature_tables"),
        operating_point=lambda wildcards: config["datasets"][wildcards.dataset]["hyperbolic"],
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/curvature_tables.py"


rule semantic_tables:
    input:
        summaries=lambda wildcards: semantic_evals(wildcards.dataset),
        durations=lambda wildcards: semantic_durations(wildcards.dataset),
    output:
        per_seed=[f"{RESULTS}/{{dataset}}/tables/controls/{SEMANTIC_CONTROL}_{PER_SEED_TABLE}.parquet"],
        table=[f"{RESULTS}/{{dataset}}/tables/controls/{SEMANTIC_TABLES[0]}.{ext}" for ext in TABLE_FORMATS],
        contrasts=[
            f"{RESULTS}/{{dataset}}/tables/controls/{SEMANTIC_TABLES[1]}.{ext}" for ext in TABLE_FORMATS
        ],
        figure=report(
            figure_outputs("{dataset}", SEMANTIC_CONTROL),
            caption="../report/semantic.rst",
            category="Controls",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/tables/controls/{SEMANTIC_CONTROL}.md"),
    params:
        code=code("stages.controls", script="semantic_tables"),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/semantic_tables.py"


rule baselines_tables:
    input:
        lambda wildcards: baseline_evals(wildcards.dataset),
    output:
        per_seed=[f"{RESULTS}/{{dataset}}/tables/{BASELINES}_{PER_SEED_TABLE}.parquet"],
        table=[f"{RESULTS}/{{dataset}}/tables/{BASELINES}.{ext}" for ext in TABLE_FORMATS],
        figure=report(
            figure_outputs("{dataset}", BASELINES),
            caption="../report/baselines.rst",
            category="Baselines",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/tables/{BASELINES}.md"),
    params:
        code=code("stages.controls", script="baselines_tables"),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
        dimensions=lambda wildcards: pca_dimensions(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/baselines_tables.py"


rule outer_tables:
    input:
        lambda wildcards: outer_scores(wildcards.dataset),
    output:
        per_split=[f"{outer_folder('{dataset}')}/{OUTER_CONTROL}_per_split.parquet"],
        table=[f"{outer_folder('{dataset}')}/{OUTER_TABLES[0]}.{ext}" for ext in TABLE_FORMATS],
        gains=[f"{outer_folder('{dataset}')}/{OUTER_TABLES[1]}.{ext}" for ext in TABLE_FORMATS],
        figure=report(
            outer_figure("{dataset}"),
            caption="../report/outer.rst",
            category="Controls",
            subcategory="{dataset}",
        ),
    log:
        log_for(f"{outer_folder('{dataset}')}/{OUTER_CONTROL}.md"),
    params:
        code=code("stages.controls", script="outer_tables"),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/outer_tables.py"


rule companion_angle_tables:
    input:
        distance=lambda wildcards: companion_evals(wildcards.dataset),
        angle=lambda wildcards: companion_evals(wildcards.dataset, ANGLE_RANKING),
    output:
        per_seed=[f"{RESULTS}/{{dataset}}/tables/{COMPANION_ANGLE_TABLE}_{PER_SEED_TABLE}.parquet"],
        table=[f"{RESULTS}/{{dataset}}/tables/{COMPANION_ANGLE_TABLE}.{ext}" for ext in TABLE_FORMATS],
    log:
        log_for(f"{RESULTS}/{{dataset}}/tables/{COMPANION_ANGLE_TABLE}.md"),
    params:
        code=code("stages.angle_table", script="companion_angle_tables"),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/companion_angle_tables.py"
