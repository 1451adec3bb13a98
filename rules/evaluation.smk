# Stage: sealed evaluation. The Final lock is written only once every final cell and the
# fairness audit succeeded; evaluation checks every artifact against it before reading test data.

LOCK = run_path(FINAL_LOCK)
# The metric plugins' files (found, not run): part of every sealed evaluation's code hash.
METRIC_FILES = [str(path) for path in metric_sources(config).values()]


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


# The sealed evaluations, one rule per kind of cell (hierbench.cellkinds) and per seedless arm,
# generated here: the sealed test's draws scored by the same engine under the lock. A job scores
# a whole bundle of cells (a dataset's factorial; a curvature point's or semantic arm's seeds),
# each into its own files (hierbench.paths.RunPaths.sealed_evaluation); a rule's name and what
# it scores come from the registry; a curvature point or semantic arm is also named to the
# script as the evaluation's variant. A kind no dataset trains has no rule.
for evaluated in sealed_evaluations():
    scored, scores = PATHS.sealed_evaluation(evaluated)
    if not scores:  # no dataset trains the kind
        continue

    rule:
        name:
            evaluated.rule
        input:
            **sealed_inputs(scored),
        output:
            **scores,
        log:
            log_for(scores),
        benchmark:
            benchmark_for(scores)
        params:
            **code("stages.evaluation", script="evaluate", files=METRIC_FILES),
            **geometry_code(),
            config=lambda wildcards: evaluation_config(config, wildcards.dataset),
            access_log=lambda wildcards: access_log(wildcards.dataset),
            **variant_param(evaluated.variant),
        conda:
            ENVIRONMENT
        script:
            SCRIPT


# The companion cells ranked by the exterior angle at the query instead of by distance (a
# sensitivity of the ranking): the same lock check, sealed inputs and formats, under eval/angle/.
ANGLE_EVALUATION = PATHS.sealed_evaluation(sealed_evaluation(COMPANION_KIND), ANGLE_RANKING)[1]

if ANGLE_EVALUATION:  # the companion cells are on

    use rule evaluate_companion_cell as evaluate_companion_angle with:
        output:
            **ANGLE_EVALUATION,
        log:
            log_for(ANGLE_EVALUATION),
        benchmark:
            benchmark_for(ANGLE_EVALUATION)
        params:
            **code("stages.angle_evaluation", script="evaluate_angles", files=METRIC_FILES),
            config=lambda wildcards: evaluation_config(config, wildcards.dataset, distance_clip=False),
            access_log=lambda wildcards: access_log(wildcards.dataset),


# Not sealed: an outer split's test side is development data, scored without the lock.
OUTER_SPLIT_SCORES = run_path(OUTER_SCORES)


rule score_outer_split:
    input:
        **DEV_DATA,
        records=lambda wildcards: PATHS.cells(wildcards.dataset, [OUTER_CONTROL], CELL_FILES["record"], outer=wildcards.outer),
        models=lambda wildcards: PATHS.cells(wildcards.dataset, [OUTER_CONTROL], CELL_FILES["model"], outer=wildcards.outer),
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
