# Stage: sealed evaluation. The Final lock is written only once every final cell and the
# fairness audit succeeded; evaluation checks every artifact against it before reading test data.


# Both outputs are update(): Snakemake keeps the previous lock until the job ends and restores it
# when the job fails, so a refused re-seal leaves the old lock as it was. The script reads
# seal.on_change from the config, not from params: changing the policy reruns nothing, and it
# is not part of what the lock covers.
rule final_lock:
    input:
        unpack(lock_inputs),
    output:
        lock=update(f"{RESULTS}/{{dataset}}/lock/final_lock.json"),
        history=update(
            report(
                f"{RESULTS}/{{dataset}}/lock/reseal_history.md",
                caption="../report/reseals.rst",
                category="Seal",
                subcategory="{dataset}",
            )
        ),
    log:
        log_for(f"{RESULTS}/{{dataset}}/lock/final_lock.json"),
    params:
        code=code("stages.lock", script="final_lock"),
        config=lambda wildcards: resolved_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/final_lock.py"


rule evaluate_cell:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        model=f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/model.safetensors",
        record=f"{RESULTS}/{{dataset}}/cells/{{geometry}}{{loss}}-{{seed}}/record.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{{geometry}}{{loss}}-{{seed}}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{{geometry}}{{loss}}-{{seed}}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{{geometry}}{{loss}}-{{seed}}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{{geometry}}{{loss}}-{{seed}}.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


rule evaluate_frozen:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/frozen.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/frozen_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/frozen.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/frozen.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


rule evaluate_curvature_cell:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        model=f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/model.safetensors",
        record=f"{RESULTS}/{{dataset}}/cells/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}/record.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{CURVATURE_CONTROL}/{{point}}/{{geometry}}R-{{seed}}.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
        variant=lambda wildcards: wildcards.point,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


rule evaluate_semantic_cell:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        model=f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/model.safetensors",
        record=f"{RESULTS}/{{dataset}}/cells/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}/record.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{SEMANTIC_CONTROL}/{{arm}}/ES-{{seed}}.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
        variant=lambda wildcards: wildcards.arm,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


rule evaluate_pca:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        projection=f"{RESULTS}/{{dataset}}/{BASELINES}/{PCA}/projection.safetensors",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{PCA}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{PCA}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{PCA}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{PCA}.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


rule evaluate_hier_cell:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        model=f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/model.safetensors",
        record=f"{RESULTS}/{{dataset}}/cells/{HIER}/{HIER}-{{seed}}/record.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{HIER}/{HIER}-{{seed}}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{HIER}/{HIER}-{{seed}}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{HIER}/{HIER}-{{seed}}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{HIER}/{HIER}-{{seed}}.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


# Not sealed: an outer split's test side is development data, scored without the lock.
rule score_outer_split:
    input:
        features=f"{RESULTS}/{{dataset}}/features/dev.parquet",
        splits=f"{RESULTS}/{{dataset}}/splits/dev.parquet",
        records=lambda wildcards: outer_cell_files(wildcards.dataset, wildcards.outer, "record.json"),
        models=lambda wildcards: outer_cell_files(wildcards.dataset, wildcards.outer, "model.safetensors"),
    output:
        f"{RESULTS}/{{dataset}}/{OUTER_CONTROL}/{{outer}}/scores.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/{OUTER_CONTROL}/{{outer}}/scores.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/{OUTER_CONTROL}/{{outer}}/scores.parquet")
    params:
        code=code("stages.outer", script="score_outer_split"),
        config=lambda wildcards: eval_config(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/score_outer_split.py"


rule evaluate_companion_cell:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        model=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/model.safetensors",
        record=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/record.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{{head}}A-{{seed}}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{{head}}A-{{seed}}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{{head}}A-{{seed}}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{{head}}A-{{seed}}.parquet")
    params:
        code=code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"


# The companion cells ranked by the exterior angle at the query instead of by distance (a
# sensitivity of the ranking): the same lock check, sealed inputs and formats, under eval/angle/.
rule evaluate_companion_angle:
    input:
        unpack(lambda wildcards: sealed_inputs(wildcards.dataset)),
        lock=f"{RESULTS}/{{dataset}}/lock/final_lock.json",
        model=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/model.safetensors",
        record=f"{RESULTS}/{{dataset}}/cells/{{head}}A-{{seed}}/record.json",
    output:
        per_query=f"{RESULTS}/{{dataset}}/eval/{ANGLE_RANKING}/{{head}}A-{{seed}}.parquet",
        summary=f"{RESULTS}/{{dataset}}/eval/{ANGLE_RANKING}/{{head}}A-{{seed}}_summary.parquet",
    log:
        log_for(f"{RESULTS}/{{dataset}}/eval/{ANGLE_RANKING}/{{head}}A-{{seed}}.parquet"),
    benchmark:
        benchmark_for(f"{RESULTS}/{{dataset}}/eval/{ANGLE_RANKING}/{{head}}A-{{seed}}.parquet")
    params:
        code=code("stages.angle_evaluation", script="evaluate_angles"),
        config=lambda wildcards: angle_eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate_angles.py"
