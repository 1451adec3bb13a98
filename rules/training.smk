# Stage: training. Temperature tuning on validation only, the Geometry x Loss factorial (one job
# per dataset, geometry, loss and seed), and the fairness audit. Inputs are development-side only.


rule tune:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
    output:
        f"{RESULTS}/{{dataset}}/tuning/{{geometry}}/tau-{{tau}}/score.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/tuning/{{geometry}}/tau-{{tau}}/score.json"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/tuning/{{geometry}}/tau-{{tau}}/score.json")
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.tuning", script="tune"),
        config=lambda wildcards: model_config(wildcards.dataset),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/tune.py"


rule tuning_selection:
    input:
        tuning_scores,
    output:
        f"{RESULTS}/{{dataset}}/tuning/selection.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/tuning/selection.parquet"),
    params:
        code=code("stages.tuning", script="tuning_selection"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/tuning_selection.py"


rule train_cell:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        selection=selection_input,
    output:
        model=f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/model.safetensors",
        log=f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/train_log.parquet",
        record=f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/record.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/model.safetensors"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/model.safetensors")
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.training", script="train_cell"),
        config=lambda wildcards: cell_config(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_cell.py"


rule train_curvature_cell:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
    output:
        model=f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/model.safetensors",
        log=f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/train_log.parquet",
        record=f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/record.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/model.safetensors"),
    benchmark:
        benchmark_for(
            f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/model.safetensors"
        )
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.training", script="train_curvature_cell"),
        config=lambda wildcards: cell_config(wildcards.dataset),
        epochs=lambda wildcards: control_epochs(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_curvature_cell.py"


rule select_semantic_duration:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        shuffled=f"{RESULTS}/{{dataset}}/taxonomy/shuffled.parquet",
    output:
        f"{RESULTS}/{{dataset}}/controls/{SEMANTIC_CONTROL}/{{arm}}/duration.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/controls/{SEMANTIC_CONTROL}/{{arm}}/duration.json"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/controls/{SEMANTIC_CONTROL}/{{arm}}/duration.json")
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.tuning", script="select_semantic_duration"),
        config=lambda wildcards: semantic_config(wildcards.dataset),
        aggregation=lambda wildcards: registered_aggregation(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/select_semantic_duration.py"


rule train_semantic_cell:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        taxonomy=f"{RESULTS}/{{dataset}}/taxonomy/taxonomy.parquet",
        shuffled=f"{RESULTS}/{{dataset}}/taxonomy/shuffled.parquet",
        duration=f"{RESULTS}/{{dataset}}/controls/{SEMANTIC_CONTROL}/{{arm}}/duration.json",
    output:
        model=f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/model.safetensors",
        log=f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/train_log.parquet",
        record=f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/record.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/model.safetensors"),
    benchmark:
        benchmark_for(
            f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/model.safetensors"
        )
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.semantic", script="train_semantic_cell"),
        config=lambda wildcards: cell_config(wildcards.dataset, controls=("semantic",)),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_semantic_cell.py"


# The context baselines: PCA fitted on final/train features, and HIER-style cells (the
# factorial's Poincaré head, seeds, batch order, optimiser and epochs, HIER's objective).
rule fit_pca:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
    output:
        model=f"{RESULTS}/{{dataset}}/{BASELINES}/{PCA}/projection.safetensors",
        record=f"{RESULTS}/{{dataset}}/{BASELINES}/{PCA}/record.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/{BASELINES}/{PCA}/projection.safetensors"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/{BASELINES}/{PCA}/projection.safetensors")
    params:
        code=code("stages.baselines", script="fit_pca"),
        dimensions=lambda wildcards: pca_dimensions(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/fit_pca.py"


rule train_hier_cell:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
    output:
        model=f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/model.safetensors",
        log=f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/train_log.parquet",
        record=f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/record.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/model.safetensors"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/model.safetensors")
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.hier", script="train_hier_cell"),
        config=lambda wildcards: baselines_config(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_hier_cell.py"


# The outer splits: the factorial's cells trained on an outer split's train side (dev data).
rule train_outer_cell:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        selection=selection_input,
    output:
        model=f"{RESULTS}/{{dataset}}/cells/{OUTER_CONTROL}/{{outer}}/{{geometry}}{{loss}}-{{seed}}/model.safetensors",
        log=f"{RESULTS}/{{dataset}}/cells/{OUTER_CONTROL}/{{outer}}/{{geometry}}{{loss}}-{{seed}}/train_log.parquet",
        record=f"{RESULTS}/{{dataset}}/cells/{OUTER_CONTROL}/{{outer}}/{{geometry}}{{loss}}-{{seed}}/record.json",
    log:
        log_for(
            f"{RESULTS}/{{dataset}}/cells/{OUTER_CONTROL}/{{outer}}/{{geometry}}{{loss}}-{{seed}}/model.safetensors"
        ),
    benchmark:
        benchmark_for(
            f"{RESULTS}/{{dataset}}/cells/{OUTER_CONTROL}/{{outer}}/{{geometry}}{{loss}}-{{seed}}/model.safetensors"
        )
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.training", script="train_outer_cell"),
        config=lambda wildcards: cell_config(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_outer_cell.py"


# The companion method's cells, E_A and L_A: the factorial's head (E: unnormalised; L: a Lorentz
# output with learnable curvature), seeds, batch order, optimiser and epochs; the
# angle-entailment objective. The record adds the norms of the validation images' embeddings.
rule train_companion_cell:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        crops=companion_crops,
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
    output:
        model=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/model.safetensors",
        log=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/train_log.parquet",
        record=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/record.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/model.safetensors"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/model.safetensors")
    resources:
        gpu=GPUS_PER_JOB,
    params:
        code=code("stages.companion", script="train_companion_cell"),
        config=lambda wildcards: companion_config(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_companion_cell.py"


# The fairness audit covers the control's, the HIER-style baseline's and the companion cells too:
# same initial projector weights and batch order as the factorial's cells of their seed.
rule fairness_audit:
    input:
        records=lambda wildcards: cell_outputs(wildcards.dataset, "record.json")
        + curvature_cells(wildcards.dataset, "record.json")
        + hier_cells(wildcards.dataset, "record.json")
        + companion_files(wildcards.dataset, "record.json"),
        models=lambda wildcards: cell_outputs(wildcards.dataset, "model.safetensors")
        + curvature_cells(wildcards.dataset, "model.safetensors")
        + hier_cells(wildcards.dataset, "model.safetensors")
        + companion_files(wildcards.dataset, "model.safetensors"),
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
    output:
        f"{RESULTS}/{{dataset}}/audit/fairness.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/audit/fairness.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/audit/fairness.parquet")
    params:
        code=code("stages.fairness_audit", script="fairness_audit"),
        config=lambda wildcards: cell_config(wildcards.dataset),
        own_epochs=lambda wildcards: own_epoch_budgets(config, wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/fairness_audit.py"
