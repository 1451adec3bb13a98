# Stage: effect tables and figures. Per-seed rows, mean ± SD per arm, simple effects under each
# dataset's registered aggregation, the other aggregation's sensitivity tables, and the figures; `snakemake --report report.html` shows them.

SUMMARY = run_path(f"{TABLES}/{SUMMARY_PAGE}")
FACTORIAL_SUMMARIES = [FACTORIAL_KIND, COMPANION_KIND, FROZEN]  # what the effect tables read


rule effect_tables:
    input:
        summaries=lambda wildcards: PATHS.summaries(wildcards.dataset, FACTORIAL_SUMMARIES),
        per_query=lambda wildcards: PATHS.summaries(
            wildcards.dataset, FACTORIAL_SUMMARIES, file="per_query"
        ),
        companion_angle=lambda wildcards: PATHS.companion_angle_table(wildcards.dataset),
        logs=lambda wildcards: PATHS.cells(wildcards.dataset, [FACTORIAL_KIND], CELL_FILES["log"]),
    output:
        PATHS.effect_table_files(TABLES),
        PATHS.effect_table_files(f"{TABLES}/{SENSITIVITY_FOLDER}"),
        summary=report(SUMMARY, caption="../report/summary.rst", category="Tables", subcategory="{dataset}"),
    log:
        log_for(SUMMARY),
    benchmark:
        benchmark_for(SUMMARY)
    params:
        **code("stages.tables", script="effect_tables"),
        out_dir=lambda wildcards: run_path(TABLES, dataset=wildcards.dataset),
        aggregation=aggregation,
        levels=dataset_levels,
        intervals=config["effects"]["intervals"],
        margin=config["effects"]["equivalence_margin"],
        failed_seeds=config["effects"]["failed_seeds"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


FIGURE_FILES = {name: PATHS.figure_files(name) for name in FIGURE_NAMES}


rule figures:
    input:
        arms=run_path(f"{TABLES}/{ARMS_SUMMARY}.parquet"),
        effects=run_path(f"{TABLES}/{EFFECTS_BY_SEED}.parquet"),
        intervals=run_path(f"{TABLES}/{EFFECTS_SUMMARY}.parquet"),
        records=lambda wildcards: PATHS.cells(wildcards.dataset, [FACTORIAL_KIND], CELL_FILES["record"], geometry=POINCARE),
        models=lambda wildcards: PATHS.cells(wildcards.dataset, [FACTORIAL_KIND], CELL_FILES["model"], geometry=POINCARE),
        features=run_path(DEV_FEATURES),
    output:
        **{
            name: report(files, caption=f"../report/{name}.rst", category="Figures", subcategory="{dataset}")
            for name, files in FIGURE_FILES.items()
        },
        verdicts=run_path(EFFECTS_VERDICTS),
    log:
        log_for(FIGURE_FILES),
    benchmark:
        benchmark_for(FIGURE_FILES)
    params:
        **code("stages.figures", script="figures"),
        levels=dataset_levels,
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# Training curves (#63): one figure per kind of cell a dataset trains (so retraining one kind
# redraws its own picture only), with its caption's paragraph naming the flat or non-finite
# cells; the τ search's validation score against τ; the duration searches' score per epoch.
# In CURVES, which a re-seal leaves in place (development data only).
CURVES_FILES = PATHS.figure_files(TRAINING_CURVES, folder=CURVES)


rule training_curves:
    input:
        logs=lambda wildcards: PATHS.cells(wildcards.dataset, [wildcards.kind], CELL_FILES["log"]),
    output:
        figure=report(CURVES_FILES, caption="../report/training_curves.rst", category="Training", subcategory="{dataset}"),
        problems=run_path(TRAINING_PROBLEMS),
    log:
        log_for(CURVES_FILES),
    benchmark:
        benchmark_for(CURVES_FILES)
    wildcard_constraints:
        kind="[a-z]+",
    params:
        **code("stages.curves", script="training_curves"),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


TAU_FILES = PATHS.figure_files(TAU_SEARCH_FIGURE, folder=CURVES)


rule tau_curves:
    input:
        scores=tuning_scores,
    output:
        report(TAU_FILES, caption="../report/tau_search.rst", category="Training", subcategory="{dataset}"),
    log:
        log_for(TAU_FILES),
    benchmark:
        benchmark_for(TAU_FILES)
    params:
        **code("stages.curves", script="tau_curves"),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


DURATION_FILES = PATHS.figure_files(DURATION_SEARCH_FIGURE, folder=CURVES)


rule duration_curves:
    input:
        semantic=lambda wildcards: [run_path(SEMANTIC_DURATION, dataset=wildcards.dataset, arm=arm) for arm in semantic_arms(config, wildcards.dataset)],
        outer=lambda wildcards: [run_path(OUTER_DURATIONS, dataset=wildcards.dataset, outer=split) for split in outer_splits(config, wildcards.dataset)],
    output:
        report(DURATION_FILES, caption="../report/duration_search.rst", category="Training", subcategory="{dataset}"),
    log:
        log_for(DURATION_FILES),
    benchmark:
        benchmark_for(DURATION_FILES)
    params:
        **code("stages.curves", script="duration_curves"),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# The controls' tables: per-seed rows, the paper's layout, paired contrasts and a figure each.
# Snakemake merges an inheriting rule's params into its parent's, so the parent is the rule
# with the fewest; each inheritor still names every param it reads.
SEMANTIC_OUTPUTS = PATHS.control_outputs(SEMANTIC_CONTROL, SEMANTIC_TABLES)


rule semantic_tables:
    input:
        summaries=lambda wildcards: PATHS.summaries(wildcards.dataset, [SEMANTIC_CONTROL]),
        per_query=lambda wildcards: PATHS.summaries(wildcards.dataset, [SEMANTIC_CONTROL], file="per_query"),
        durations=lambda wildcards: [run_path(SEMANTIC_DURATION, dataset=wildcards.dataset, arm=arm) for arm in semantic_arms(config, wildcards.dataset)],
    output:
        **in_report(SEMANTIC_OUTPUTS, SEMANTIC_CONTROL, "Controls"),
    log:
        log_for(SEMANTIC_OUTPUTS),
    benchmark:
        benchmark_for(SEMANTIC_OUTPUTS)
    params:
        **code("stages.controls", script="semantic_tables"),
        aggregation=aggregation,
        levels=dataset_levels,
        intervals=config["effects"]["intervals"],
    conda:
        ENVIRONMENT
    script:
        SCRIPT


CURVATURE_OUTPUTS = PATHS.control_outputs(CURVATURE_CONTROL, CURVATURE_TABLES)


use rule semantic_tables as curvature_tables with:
    input:
        summaries=lambda wildcards: PATHS.summaries(wildcards.dataset, [CURVATURE_CONTROL]),
        per_query=lambda wildcards: PATHS.summaries(wildcards.dataset, [CURVATURE_CONTROL], file="per_query"),
    output:
        **in_report(CURVATURE_OUTPUTS, CURVATURE_CONTROL, "Controls"),
    log:
        log_for(CURVATURE_OUTPUTS),
    benchmark:
        benchmark_for(CURVATURE_OUTPUTS)
    params:
        **code("stages.controls", script="curvature_tables"),
        operating_point=lambda wildcards: config["datasets"][wildcards.dataset]["hyperbolic"],
        aggregation=aggregation,
        levels=dataset_levels,
        intervals=config["effects"]["intervals"],


BASELINES_OUTPUTS = PATHS.baselines_outputs()
BASELINE_KINDS = [FROZEN, PCA, HIER, FACTORIAL_KIND]


use rule semantic_tables as baselines_tables with:
    input:
        summaries=lambda wildcards: PATHS.summaries(wildcards.dataset, BASELINE_KINDS),
        per_query=lambda wildcards: PATHS.summaries(wildcards.dataset, BASELINE_KINDS, file="per_query"),
    output:
        **in_report(BASELINES_OUTPUTS, BASELINES, "Baselines"),
    log:
        log_for(BASELINES_OUTPUTS),
    benchmark:
        benchmark_for(BASELINES_OUTPUTS)
    params:
        **code("stages.controls", script="baselines_tables"),
        dimensions=lambda wildcards: pca_dimensions(config, wildcards.dataset),
        aggregation=aggregation,
        levels=dataset_levels,
        intervals=config["effects"]["intervals"],


OUTER_OUTPUTS = PATHS.outer_outputs()


use rule semantic_tables as outer_tables with:
    input:
        scores=lambda wildcards: [run_path(OUTER_SCORES, dataset=wildcards.dataset, outer=split) for split in outer_splits(config, wildcards.dataset)],
    output:
        **in_report(OUTER_OUTPUTS, OUTER_CONTROL, "Controls"),
    log:
        log_for(OUTER_OUTPUTS),
    benchmark:
        benchmark_for(OUTER_OUTPUTS)
    params:
        **code("stages.controls", script="outer_tables"),
        aggregation=OUTER_AGGREGATION,  # group-macro on every dataset (see controls/outer.py)
        levels=dataset_levels,
        intervals=config["effects"]["intervals"],


COMPANION_ANGLE_OUTPUTS = PATHS.companion_angle_outputs()


use rule semantic_tables as companion_angle_tables with:
    input:
        distance=lambda wildcards: PATHS.summaries(wildcards.dataset, [COMPANION_KIND]),
        angle=lambda wildcards: PATHS.summaries(wildcards.dataset, [COMPANION_KIND], ANGLE_RANKING),
        distance_queries=lambda wildcards: PATHS.summaries(wildcards.dataset, [COMPANION_KIND], file="per_query"),
        angle_queries=lambda wildcards: PATHS.summaries(wildcards.dataset, [COMPANION_KIND], ANGLE_RANKING, "per_query"),
    output:
        **COMPANION_ANGLE_OUTPUTS,
    log:
        log_for(COMPANION_ANGLE_OUTPUTS),
    benchmark:
        benchmark_for(COMPANION_ANGLE_OUTPUTS)
    params:
        **code("stages.angle_table", script="companion_angle_tables"),
        aggregation=aggregation,
        levels=dataset_levels,
        intervals=config["effects"]["intervals"],


# Pictures (#63): the retrieval galleries and the embedding views of a dataset's pictured arms
# (hierbench.cellkinds.picture_arms: the frozen features, the factorial's four paper arms, the
# companion's where it runs, HIER-style where trained; each a cell of the first training seed).
# Drawn from the sealed test, so the lock is an input and the job verifies it first, as the
# evaluations do. One job per dataset: a job per arm cost over three times the training
# curves' share of the tiny run. Retraining any arm changes the lock, so that dataset's
# pictures are drawn anew, and no other dataset's.
PICTURE_FILES = PATHS.picture_files()


rule pictures:
    input:
        unpack(lambda wildcards: PATHS.picture_inputs(wildcards.dataset)),
    output:
        galleries=report(PICTURE_FILES["galleries"], caption="../report/galleries.rst", category="Pictures", subcategory="{dataset}"),
        embeddings=report(PICTURE_FILES["embeddings"], caption="../report/embedding_views.rst", category="Pictures", subcategory="{dataset}"),
    log:
        log_for(PICTURE_FILES),
    benchmark:
        benchmark_for(PICTURE_FILES)
    params:
        **code("stages.pictures", script="pictures"),
        config=lambda wildcards: evaluation_config(config, wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
        levels=dataset_levels,
        images_dir=lambda wildcards: images_subfolder(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
