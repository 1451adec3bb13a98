# Stage: sealed evaluation. The Final lock is written only once every final cell and the
# fairness audit succeeded; evaluation checks every artifact against it before reading test data.

LOCK = run_path(FINAL_LOCK)


# Both outputs are update(): Snakemake keeps the previous lock until the job ends and restores it
# when the job fails, so a refused re-seal leaves the old lock as it was. The script reads
# seal.on_change from the config, not from params: changing the policy reruns nothing, and it
# is not part of what the lock covers.
rule final_lock:
    input:
        unpack(lock_inputs),
    output:
        lock=update(LOCK),
        history=update(
            report(
                run_path(RESEAL_HISTORY),
                caption="../report/reseals.rst",
                category="Seal",
                subcategory="{dataset}",
            )
        ),
    log:
        log_for(LOCK),
    benchmark:
        benchmark_for(LOCK)
    params:
        **code("stages.lock", script="final_lock"),
        config=lambda wildcards: locked_config(config, wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


# Every sealed evaluation is this rule (use rule ... with: below): a cell of any kind, or a
# seedless arm, scored on the sealed test draws by the same engine under the lock.
rule evaluate_cell:
    input:
        **sealed_inputs(trained("factorial")),
    output:
        **EVALUATION["factorial"],
    log:
        log_for(EVALUATION["factorial"]),
    benchmark:
        benchmark_for(EVALUATION["factorial"])
    params:
        **code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: evaluation_config(config, wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT


use rule evaluate_cell as evaluate_frozen with:
    input:
        **sealed_inputs(),
    output:
        **EVALUATION[FROZEN],
    log:
        log_for(EVALUATION[FROZEN]),
    benchmark:
        benchmark_for(EVALUATION[FROZEN])


use rule evaluate_cell as evaluate_pca with:
    input:
        **sealed_inputs({"projection": PCA_MODEL["model"]}),
    output:
        **EVALUATION[PCA],
    log:
        log_for(EVALUATION[PCA]),
    benchmark:
        benchmark_for(EVALUATION[PCA])


use rule evaluate_cell as evaluate_curvature_cell with:
    input:
        **sealed_inputs(trained("curvature")),
    output:
        **EVALUATION["curvature"],
    log:
        log_for(EVALUATION["curvature"]),
    benchmark:
        benchmark_for(EVALUATION["curvature"])
    params:
        **code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: evaluation_config(config, wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
        variant=lambda wildcards: wildcards.point,


use rule evaluate_cell as evaluate_semantic_cell with:
    input:
        **sealed_inputs(trained("semantic")),
    output:
        **EVALUATION["semantic"],
    log:
        log_for(EVALUATION["semantic"]),
    benchmark:
        benchmark_for(EVALUATION["semantic"])
    params:
        **code("stages.evaluation", script="evaluate"),
        config=lambda wildcards: evaluation_config(config, wildcards.dataset),
        access_log=lambda wildcards: access_log(wildcards.dataset),
        variant=lambda wildcards: wildcards.arm,


use rule evaluate_cell as evaluate_hier_cell with:
    input:
        **sealed_inputs(trained("hier")),
    output:
        **EVALUATION["hier"],
    log:
        log_for(EVALUATION["hier"]),
    benchmark:
        benchmark_for(EVALUATION["hier"])


use rule evaluate_cell as evaluate_companion_cell with:
    input:
        **sealed_inputs(trained("companion")),
    output:
        **EVALUATION["companion"],
    log:
        log_for(EVALUATION["companion"]),
    benchmark:
        benchmark_for(EVALUATION["companion"])


# The companion cells ranked by the exterior angle at the query instead of by distance (a
# sensitivity of the ranking): the same lock check, sealed inputs and formats, under eval/angle/.
ANGLE_EVALUATION = PATHS.evaluation_outputs("companion", ANGLE_RANKING)


use rule evaluate_companion_cell as evaluate_companion_angle with:
    output:
        **ANGLE_EVALUATION,
    log:
        log_for(ANGLE_EVALUATION),
    benchmark:
        benchmark_for(ANGLE_EVALUATION)
    params:
        **code("stages.angle_evaluation", script="evaluate_angles"),
        config=lambda wildcards: evaluation_config(config, wildcards.dataset, distance_clip=False),
        access_log=lambda wildcards: access_log(wildcards.dataset),


# Not sealed: an outer split's test side is development data, scored without the lock.
OUTER_SPLIT_SCORES = run_path(OUTER_SCORES)


rule score_outer_split:
    input:
        **DEV_DATA,
        records=lambda wildcards: PATHS.cells(wildcards.dataset, ["outer"], CELL_FILES["record"], outer=wildcards.outer),
        models=lambda wildcards: PATHS.cells(wildcards.dataset, ["outer"], CELL_FILES["model"], outer=wildcards.outer),
    output:
        OUTER_SPLIT_SCORES,
    log:
        log_for(OUTER_SPLIT_SCORES),
    benchmark:
        benchmark_for(OUTER_SPLIT_SCORES)
    params:
        **code("stages.outer", script="score_outer_split"),
        config=lambda wildcards: evaluation_config(config, wildcards.dataset),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
