# Stage: training. Temperature tuning on validation only, every kind of cell (the Geometry x Loss
# factorial, one bundle job per dataset, and the controls', baselines' and
# companion method's cells), and the fairness audit. Inputs are development-side only.

# The true taxonomy and the shuffle an arm of the semantic control trains on (its own setting).
TAXONOMIES = {
    "taxonomy": run_path(TAXONOMY),
    "shuffled": lambda wildcards: run_path(
        SHUFFLED_TAXONOMY,
        dataset=wildcards.dataset,
        fixed=shuffle_setting(config, wildcards.dataset, wildcards.arm),
    ),
}
TUNING_RUNS = tuning_runs(config)  # geometry, then tau: the bundle's order
TUNING_BUNDLE = [run_path(TUNING_SCORE, **run) for run in TUNING_RUNS]
SELECTION = run_path(TUNING_SELECTION)
DURATION = run_path(SEMANTIC_DURATION)
OUTER_DURATION = run_path(OUTER_DURATIONS)


# A dataset's tuning runs (every geometry and tau) trained as one bundle, one score file each.
rule tune:
    input:
        **DEV_DATA,
    output:
        TUNING_BUNDLE,
    log:
        log_for(TUNING_BUNDLE),
    benchmark:
        benchmark_for(TUNING_BUNDLE)
    resources:
        gpu=GPUS_PER_JOB,
    params:
        **code("stages.tuning", script="tune"),
        config=lambda wildcards: training_config(config, wildcards.dataset),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
        runs=TUNING_RUNS,
    conda:
        ENVIRONMENT
    script:
        SCRIPT


rule tuning_selection:
    input:
        tuning_scores,
    output:
        SELECTION,
    log:
        log_for(SELECTION),
    params:
        **code("stages.tuning", script="tuning_selection"),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


use rule tune as select_semantic_duration with:
    input:
        **DEV_DATA,
        **TAXONOMIES,
    output:
        DURATION,
    log:
        log_for(DURATION),
    benchmark:
        benchmark_for(DURATION)
    params:
        **code("stages.tuning", script="select_semantic_duration"),
        config=lambda wildcards: training_config(config, wildcards.dataset, controls=(SEMANTIC_CONTROL,)),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),


# The factorial: every cell of a dataset (E/H x R/S x seeds) trained as one bundle, one job;
# its manifest lists the cells, and each cell's three files are those a cell alone writes.
FACTORIAL_BUNDLE = PATHS.bundle_outputs(FACTORIAL_KIND)
CURVATURE_BUNDLE = PATHS.bundle_outputs(CURVATURE_CONTROL)
SEMANTIC_BUNDLE = PATHS.bundle_outputs(SEMANTIC_CONTROL)


rule train_factorial:
    input:
        **DEV_DATA,
        selection=selection_input,
    output:
        **FACTORIAL_BUNDLE,
    log:
        log_for(FACTORIAL_BUNDLE),
    benchmark:
        benchmark_for(FACTORIAL_BUNDLE)
    resources:
        gpu=GPUS_PER_JOB,
    params:
        **code("stages.training", script="train_bundle"),
        config=lambda wildcards: cell_config(wildcards.dataset),
        kind=FACTORIAL_KIND,
        cells=bundle_cells(config, FACTORIAL_KIND),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# The outer splits (section 5.5): each arm's epochs chosen on the split's validation side (one
# job per split, every arm), then each arm's cell trained on the split's train side for them.
use rule tune as select_outer_durations with:
    input:
        **DEV_DATA,
        selection=selection_input,
    output:
        OUTER_DURATION,
    log:
        log_for(OUTER_DURATION),
    benchmark:
        benchmark_for(OUTER_DURATION)
    params:
        **code("stages.tuning", script="select_outer_durations"),
        config=lambda wildcards: training_config(config, wildcards.dataset, controls=(OUTER_CONTROL,)),
        aggregation=OUTER_AGGREGATION,


# A loss added to the factorial (factorial.losses, plugins.objectives): its cells on every
# geometry and seed, one bundle of their own, so that editing the plugin retrains them alone.
ADDED_LOSS_BUNDLE = PATHS.bundle_outputs(ADDED_LOSS)
# Their objectives' files (found, not run): part of the code hash of the jobs that train them,
# with the added geometries' (the bundle holds the loss's cells on every geometry).
ADDED_OBJECTIVE_FILES = [str(path) for path in plugin_sources(config).values()]
ADDED_GEOMETRY_FILES = [str(path) for path in geometry_sources(config).values()]


use rule train_factorial as train_added_loss with:
    output:
        **ADDED_LOSS_BUNDLE,
    log:
        log_for(ADDED_LOSS_BUNDLE),
    benchmark:
        benchmark_for(ADDED_LOSS_BUNDLE)
    wildcard_constraints:
        loss=alternatives(added_losses(config)),
    params:
        **code("stages.training", script="train_bundle", files=ADDED_OBJECTIVE_FILES + ADDED_GEOMETRY_FILES),
        config=lambda wildcards: cell_config(wildcards.dataset, plugins=True),
        kind=ADDED_LOSS,
        cells=bundle_cells(config, ADDED_LOSS),


# A geometry added to the factorial (factorial.geometries, plugins.geometries): its own
# temperature search and selection (the paper geometries' stay as they are), then its cells
# under the paper's losses, every seed, one bundle of their own; its plugin's file is part of
# the code hash of each job that trains or scores its cells.
ADDED_GEOMETRY_TUNING = [run_path(TUNING_SCORE, tau=run["tau"]) for run in tuning_runs(config, ["{geometry}"])]
ADDED_GEOMETRY_BUNDLE = PATHS.bundle_outputs(ADDED_GEOMETRY)
ADDED_GEOMETRY_CHOICE = run_path(ADDED_GEOMETRY_SELECTION)


use rule tune as tune_added_geometry with:
    output:
        ADDED_GEOMETRY_TUNING,
    log:
        log_for(ADDED_GEOMETRY_TUNING),
    benchmark:
        benchmark_for(ADDED_GEOMETRY_TUNING)
    wildcard_constraints:
        geometry=alternatives(added_geometries(config)),
    params:
        **code("stages.tuning", script="tune", files=ADDED_GEOMETRY_FILES),
        config=lambda wildcards: training_config(config, wildcards.dataset, plugins=True),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
        runs=lambda wildcards: tuning_runs(config, [wildcards.geometry]),


use rule tuning_selection as added_geometry_tuning_selection with:
    output:
        ADDED_GEOMETRY_CHOICE,
    log:
        log_for(ADDED_GEOMETRY_CHOICE),
    wildcard_constraints:
        geometry=alternatives(added_geometries(config)),


use rule train_factorial as train_added_geometry with:
    output:
        **ADDED_GEOMETRY_BUNDLE,
    log:
        log_for(ADDED_GEOMETRY_BUNDLE),
    benchmark:
        benchmark_for(ADDED_GEOMETRY_BUNDLE)
    wildcard_constraints:
        geometry=alternatives(added_geometries(config)),
    params:
        **code("stages.training", script="train_bundle", files=ADDED_GEOMETRY_FILES),
        config=lambda wildcards: cell_config(wildcards.dataset, plugins=True),
        kind=ADDED_GEOMETRY,
        cells=bundle_cells(config, ADDED_GEOMETRY),


# The curvature control: H_R at another operating point (or the matched E_R), own epochs; one
# bundle per point, its cell of every seed.
use rule train_factorial as train_curvature with:
    input:
        **DEV_DATA,
    output:
        **CURVATURE_BUNDLE,
    log:
        log_for(CURVATURE_BUNDLE),
    benchmark:
        benchmark_for(CURVATURE_BUNDLE)
    params:
        **code("stages.training", script="train_bundle"),
        config=lambda wildcards: cell_config(wildcards.dataset),
        kind=CURVATURE_CONTROL,
        cells=bundle_cells(config, CURVATURE_CONTROL),
        epochs=lambda wildcards: control_epochs(config, wildcards.dataset),


# The semantic control: Euclidean SupCon on an arm's labels, for the arm's chosen epochs; one
# bundle per arm, its cell of every seed.
use rule train_factorial as train_semantic with:
    input:
        **DEV_DATA,
        **TAXONOMIES,
        duration=DURATION,
    output:
        **SEMANTIC_BUNDLE,
    log:
        log_for(SEMANTIC_BUNDLE),
    benchmark:
        benchmark_for(SEMANTIC_BUNDLE)
    params:
        **code("stages.semantic", script="train_semantic_bundle"),
        config=lambda wildcards: cell_config(wildcards.dataset, controls=(SEMANTIC_CONTROL,)),
        cells=bundle_cells(config, SEMANTIC_CONTROL),


# The HIER-style baseline: the factorial's Poincaré head, seeds, batch order, optimiser and
# epochs, HIER's objective; one job per cell. The companion cells are this rule too (use rule
# ... with: below): own inputs, cell folder, config keys and code, the same three files.
rule train_hier_cell:
    input:
        **DEV_DATA,
    output:
        **CELL[HIER],
    log:
        log_for(CELL[HIER]),
    benchmark:
        benchmark_for(CELL[HIER])
    resources:
        gpu=GPUS_PER_JOB,
    params:
        **code("stages.hier", script="train_hier_cell"),
        config=lambda wildcards: cell_config(wildcards.dataset, controls=(BASELINES,)),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


use rule train_hier_cell as train_outer with:
    input:
        **DEV_DATA,
        selection=selection_input,
        durations=OUTER_DURATION,
    output:
        **CELL[OUTER_CONTROL],
    log:
        log_for(CELL[OUTER_CONTROL]),
    benchmark:
        benchmark_for(CELL[OUTER_CONTROL])
    params:
        **code("stages.outer_training", script="train_outer_cell"),
        config=lambda wildcards: cell_config(wildcards.dataset, controls=(OUTER_CONTROL,)),


# The companion method's cells, E_A and L_A: the factorial's head (E: unnormalised; L: a Lorentz
# output with learnable curvature), seeds, batch order, optimiser and epochs; the
# angle-entailment objective. The record adds the norms of the validation images' embeddings.
use rule train_hier_cell as train_companion_cell with:
    input:
        features=run_path(DEV_FEATURES),
        crops=companion_crops,
        splits=run_path(DEV_SPLITS),
    output:
        **CELL[COMPANION_KIND],
    log:
        log_for(CELL[COMPANION_KIND]),
    benchmark:
        benchmark_for(CELL[COMPANION_KIND])
    params:
        **code("stages.companion", script="train_companion_cell"),
        config=lambda wildcards: companion_config(wildcards.dataset),


# The context baseline PCA, fitted on final/train features.

rule fit_pca:
    input:
        **DEV_DATA,
    output:
        **PCA_MODEL,
    log:
        log_for(PCA_MODEL),
    benchmark:
        benchmark_for(PCA_MODEL)
    params:
        **code("stages.baselines", script="fit_pca"),
        dimensions=lambda wildcards: pca_dimensions(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# The fairness audit covers the control's, the HIER-style baseline's and the companion cells too:
# same initial projector weights and batch order as the factorial's cells of their seed.
AUDIT = run_path(FAIRNESS_AUDIT)


rule fairness_audit:
    input:
        records=lambda wildcards: PATHS.cells(wildcards.dataset, audited_kinds(), CELL_FILES["record"]),
        models=lambda wildcards: PATHS.cells(wildcards.dataset, audited_kinds(), CELL_FILES["model"]),
        **DEV_DATA,
    output:
        AUDIT,
    log:
        log_for(AUDIT),
    benchmark:
        benchmark_for(AUDIT)
    params:
        **code("stages.fairness_audit", script="fairness_audit"),
        config=lambda wildcards: cell_config(wildcards.dataset),
        own_epochs=lambda wildcards: own_epoch_budgets(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
