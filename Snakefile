# hierbench: hierarchy-aware bird image retrieval, end to end.
# Thin by design: validate the config, include one .smk per stage, name the final outputs.
# Every decision lives in src/hierbench/ (docs/architecture.md).

import sys
from pathlib import Path

from snakemake.utils import min_version, validate

from hierbench.config import (
    ConfigError,
    check_inputs_exist,
    enabled_datasets,
    load_yaml,
    named_sources,
    validate_config,
)
from hierbench.controls.curvature_points import POINT_PATTERN
from hierbench.data.kinds import name_constraint
from hierbench.data.quality import check_table_splits, plan_warnings
from hierbench.devices import check_device_before_scheduling
from hierbench.layout import BACKBONE_PASSES
from hierbench.provenance.numerics import MODE_KEY, pin_environment
from hierbench.factorial import factorial_geometries, factorial_losses
from hierbench.protocol import COMPANION_CELLS, alternatives
from hierbench.runlogs import note_repository
from hierbench.runs import check_working_folder
from hierbench.runtools.launch import config_from_files
from hierbench.shipped import shipped_paths

min_version("9.0")

# From another folder (snakemake -s PATH/Snakefile), stop with what to do, not a missing file.
check_working_folder(workflow.basedir, Path.cwd())

# The config file comes from profiles/default (config.yaml, the demo) or from --configfile,
# which replaces it rather than merging into it. A file outside this folder takes its relative
# paths from its own folder, as `hierbench run` does (hierbench.runtools.launch.base_of).
config.update(
    config_from_files(
        config, workflow.overwrite_configfiles, workflow.config_settings.config, Path.cwd(), Path(workflow.basedir)
    )
)


# Key-named errors and defaults from our validator, then Snakemake's own check of the schema.
try:
    config.update(validate_config(config, load_yaml(workflow.source_path("schemas/config.schema.yaml"))))
except ConfigError as error:  # each problem names its file (several --configfile overlay)
    raise named_sources(error, workflow.overwrite_configfiles) from None
validate(config, "schemas/config.schema.yaml")
# An installed package runs in your folder: its shipped defaults (resources/) come from the package.
config.update(shipped_paths(config, workflow.basedir, Path.cwd()))
check_inputs_exist(config)
# One kernel path and one thread per job (numeric_mode: portable), inherited by every job
# before it loads torch or numpy: the same bytes on any x86-64 machine and at any --cores.
pin_environment(config[MODE_KEY])


# A collection of your own is checked as the run is planned: what makes its queries weak.
if workflow.is_main_process:
    check_table_splits(config, enabled_datasets(config))
    for warning in plan_warnings(config, enabled_datasets(config)):
        print(f"warning: {warning}", file=sys.stderr)


onstart:
    # device: cuda without CUDA stops a local run before its first job, naming the key.
    check_device_before_scheduling(config, jobs_run_here=workflow.local_exec)
    # The run's logs name this repository: the CLI finds a run folder on a scratch disk.
    note_repository(RESULTS, Path.cwd())


wildcard_constraints:
    dataset=name_constraint(enabled_datasets(config)),
    name="classes|hierarchy",
    backbone_pass=alternatives(BACKBONE_PASSES),
    geometry=alternatives(factorial_geometries(config)),
    loss=alternatives(factorial_losses(config)),
    seed=r"\d+",
    tau=r"[0-9.]+",
    point=POINT_PATTERN,
    arm=r"[a-z][a-z0-9_]*",
    outer=r"outer-\d+",
    head=alternatives([head for head, _ in COMPANION_CELLS]),


include: "rules/common.smk"
include: "rules/inputs.smk"
include: "rules/taxonomy.smk"
include: "rules/data.smk"
include: "rules/splits.smk"
include: "rules/features.smk"
include: "rules/training.smk"
include: "rules/evaluation.smk"
include: "rules/report.smk"
include: "rules/tracker.smk"


rule all:
    input:
        final_outputs(),
    default_target: True
