# Stage: the tracker export (#63), when the config's `tracker` names one. A dataset's training
# curves (every cell's train log), its duration searches' validation scores and its sealed
# per-seed results, as one folder of the tracker's own files (<dataset>/tensorboard/), so a lab
# can put the run beside its own experiments: `tensorboard --logdir results/cub/tensorboard`.
TENSORBOARD_EXPORT = run_path(TRACKER_EXPORT, tracker="tensorboard")


rule tensorboard_export:
    input:
        logs=lambda wildcards: PATHS.cells(wildcards.dataset, PATHS.curve_kinds(wildcards.dataset), CELL_FILES["log"]),
        searches=lambda wildcards: [run_path(SEMANTIC_DURATION, dataset=wildcards.dataset, arm=arm) for arm in semantic_arms(config, wildcards.dataset)]
        + [run_path(OUTER_DURATIONS, dataset=wildcards.dataset, outer=split) for split in outer_splits(config, wildcards.dataset)],
        tables=lambda wildcards: PATHS.result_tables(wildcards.dataset),
    output:
        directory(TENSORBOARD_EXPORT),
    log:
        log_for(TENSORBOARD_EXPORT),
    benchmark:
        benchmark_for(TENSORBOARD_EXPORT)
    params:
        **code("stages.tracker", "trackers.tensorboard", script="tensorboard_export"),
        tracker="tensorboard",
    conda:
        ENVIRONMENT
    script:
        SCRIPT
