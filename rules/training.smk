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
# The plugins' files (found, not run): part of the code hash of the jobs that train their cells.
PLUGIN_FILES = {
    "objectives": [str(path) for path in plugin_sources(config).values()],
    "geometries": [str(path) for path in geometry_sources(config).values()],
}
ADDED_LEVELS = {"loss": added_losses(config), "geometry": added_geometries(config)}


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


# The outer splits (section 5.5): each arm's epochs chosen on the split's validation side (one
# job per split, every arm), then each arm's cell trained on the split's train side for them (below).
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


# A geometry added to the factorial (factorial.geometries, plugins.geometries): its own
# temperature search and selection (the paper geometries' stay as they are), then its cells
# under the paper's losses, every seed, one bundle of their own; its plugin's file is part of
# the code hash of each job that trains or scores its cells.
ADDED_GEOMETRY_TUNING = [run_path(TUNING_SCORE, tau=run["tau"]) for run in tuning_runs(config, ["{geometry}"])]
ADDED_GEOMETRY_CHOICE = run_path(ADDED_GEOMETRY_SELECTION)


use rule tune as tune_added_geometry with:
    output:
        ADDED_GEOMETRY_TUNING,
    log:
        log_for(ADDED_GEOMETRY_TUNING),
    benchmark:
        benchmark_for(ADDED_GEOMETRY_TUNING)
    wildcard_constraints:
        geometry=alternatives(ADDED_LEVELS["geometry"]),
    params:
        **code("stages.tuning", script="tune", files=PLUGIN_FILES["geometries"]),
        config=lambda wildcards: training_config(config, wildcards.dataset, plugins=True),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
        runs=lambda wildcards: tuning_runs(config, [wildcards.geometry]),


use rule tuning_selection as added_geometry_tuning_selection with:
    output:
        ADDED_GEOMETRY_CHOICE,
    log:
        log_for(ADDED_GEOMETRY_CHOICE),
    wildcard_constraints:
        geometry=alternatives(ADDED_LEVELS["geometry"]),


# Every kind of trained cell (hierbench.cellkinds.TRAINING_RULES), one rule each: the
# factorial (every cell of a dataset, E/H x R/S x seeds, one bundle job; its manifest lists the
# cells, each cell's three files those a cell alone writes), a loss or geometry added to it (a
# bundle of their own, so editing the plugin retrains them alone), the curvature control (a
# bundle per point, own epochs), the semantic control (a bundle per arm, Euclidean SupCon on the
# arm's labels for its chosen epochs), and one job per cell: the HIER-style baseline (the
# factorial's Poincare head, seeds, batch order, optimiser and epochs, HIER's objective), the
# outer splits' cells (section 5.5) and the companion method's E_A and L_A (the
# angle-entailment objective; its record adds the validation embeddings' norms).
TRAINING_READS = {  # the input groups a training rule reads, by the registry's names
    "data": DEV_DATA,
    "selection": {"selection": selection_input},
    "taxonomies": TAXONOMIES,
    "duration": {"duration": DURATION},
    "durations": {"durations": OUTER_DURATION},
    "crops": {"crops": companion_crops},
}
TRAINING_PARAMS = {  # what else a training script is told, by the registry's names
    "kind": lambda trained: trained.trains,
    "cells": lambda trained: bundle_cells(config, trained.trains),
    "epochs": lambda trained: lambda wildcards: control_epochs(config, wildcards.dataset),
}


for trained in training_rules():
    trained_outputs = PATHS.training_outputs(trained)

    rule:
        name:
            trained.rule
        input:
            **{key: files for group in trained.reads for key, files in TRAINING_READS[group].items()},
        output:
            **trained_outputs,
        log:
            log_for(trained_outputs),
        benchmark:
            benchmark_for(trained_outputs)
        wildcard_constraints:
            **({trained.added: alternatives(ADDED_LEVELS[trained.added])} if trained.added else {}),
        resources:
            gpu=GPUS_PER_JOB,
        params:
            **code(trained.stage, script=trained.script, files=[f for k in trained.plugins for f in PLUGIN_FILES[k]]),
            config=lambda wildcards, trained=trained: trained_config(wildcards.dataset, trained),
            **{name: TRAINING_PARAMS[name](trained) for name in trained.params},
        conda:
            ENVIRONMENT
        script:
            SCRIPT


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
