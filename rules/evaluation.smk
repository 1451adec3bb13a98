# Stage: sealed evaluation. The Final lock is written only once every final cell and the
# fairness audit succeeded; evaluation checks every artifact against it before reading test data.


rule final_lock:
    input:
        unpack(lock_inputs),
    output:
        f"{RESULTS}/{{dataset}}/lock/final_lock.json",
    log:
        log_for(f"{RESULTS}/{{dataset}}/lock/final_lock.json"),
    params:
        code=code("stages.evaluation"),
        config=lambda wildcards: resolved_config(wildcards.dataset),
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
        code=code("stages.evaluation"),
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
        code=code("stages.evaluation"),
        config=lambda wildcards: eval_config(wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/evaluate.py"
