# Path wiring only: where each rule's files live (the patterns are hierbench.layout's), which
# config keys each rule reads as params, and code(). Every decision is a tested library function.

from hierbench.baselines import pca_dimensions
from hierbench.cells.companion import companion_enabled, pair_sources
from hierbench.cells.spec import own_epoch_budgets
from hierbench.config import (
    enabled_datasets, evaluation_config, locked_config, pool_config, split_config, training_config,
)
from hierbench.controls.curvature_points import control_epochs
from hierbench.controls.outer import OUTER_AGGREGATION, outer_splits
from hierbench.controls.semantic import fixed_points_value, semantic_arms, shuffle_setting
from hierbench.data.kinds import (
    TABLE_LAYOUT_FOLDER, dataset_kind, datasets_of_kind, images_subfolder, kind_of, kind_sources,
    level_names, name_constraint, own_collections, registered_aggregation,
)
from hierbench.data.fingerprint import fingerprint, identity, weights_identity
from hierbench.devices import gpus_per_job
from hierbench.factorial import added_geometries, added_losses, geometry_sources, plugin_sources, waits_for_tau
from hierbench.metricnames import metric_sources
from hierbench.layout import (
    BACKBONE_PASS,
    CELL_FILES,
    ADDED_GEOMETRY,
    ADDED_GEOMETRY_SELECTION,
    ADDED_LOSS,
    CROP_FEATURES,
    CURVES,
    DEV_FEATURES,
    DEV_MANIFEST,
    DEV_SPLITS,
    DURATION_SEARCH_FIGURE,
    FAIRNESS_AUDIT,
    EFFECTS_VERDICTS,
    FIGURES,
    FINAL_LOCK,
    DEMO_FOLDER,
    IMAGE_FINGERPRINT,
    IMAGE_TABLE,
    INPUT_FILE,
    LAYOUT_FINGERPRINT,
    MATCH_REPORT,
    OUTER_DURATIONS,
    OUTER_SCORES,
    PCA_FILES,
    RESEAL_HISTORY,
    SEALED_FEATURES,
    SEALED_MANIFEST,
    SEALED_SPLITS,
    SEMANTIC_DURATION,
    SHUFFLE_REPORT,
    SHUFFLED_TAXONOMY,
    TABLES,
    TAU_SEARCH_FIGURE,
    TAXONOMY,
    TAXONOMY_FINGERPRINT,
    TUNING_SCORE,
    TUNING_SELECTION,
    TRACKER_EXPORT,
    TRAINING_CURVES,
    TRAINING_PROBLEMS,
)
from hierbench.cellkinds import audited_kinds, sealed_evaluation, sealed_evaluations, training_rules
from hierbench.paths import RunPaths, bundle_cells, dataset_folder, tuning_runs
from hierbench.protocol import (
    ANGLE_RANKING, ARMS_SUMMARY, BASELINES, COMPANION_KIND, CURVATURE_CONTROL, CURVATURE_TABLES,
    EFFECTS_BY_SEED, EFFECTS_SUMMARY, FACTORIAL_KIND, FIGURES as FIGURE_NAMES, FROZEN, GEOMETRIES,
    HIER, LAYOUT_FOLDERS, OUTER_CONTROL, PACKAGE_WEIGHTS_PREFIX, PCA, POINCARE, SEMANTIC_CONTROL,
    SEMANTIC_TABLES, SENSITIVITY_FOLDER, SUMMARY_PAGE,
)
from hierbench.jobs import code_params
from hierbench.provenance.codehash import code_hash
from hierbench.provenance.numerics import MODE_KEY, compute_threads, mode_name
from hierbench.provenance.hashing import sha256_bytes, source_fingerprint
from hierbench.provenance.seal import SealPaths
from hierbench.runlogs import check_no_legacy_logs
from hierbench.runs import logs_folder, run_folder
from hierbench.shipped import workflow_path
from hierbench.taxonomy import checklist_fingerprint

DATASETS = enabled_datasets(config)
RESULTS = run_folder(config)  # this config's run: every artifact and lock under it
LOGS = logs_folder(RESULTS)  # inside the run: job logs, timings, the sealed-read log
check_no_legacy_logs(RESULTS, Path.cwd())
GPUS_PER_JOB = gpus_per_job(config)  # the features and training jobs' GPU request
NUMERIC_MODE = mode_name(config[MODE_KEY])  # every job's kernels and threads (the Snakefile set them)
COMPUTE_THREADS = compute_threads(config[MODE_KEY], workflow.cores)  # a backbone pass's threads
PATHS = RunPaths(RESULTS, config)
run_path = PATHS.at  # a hierbench.layout pattern under this run's folder
ENVIRONMENT = "../environment.yml"
DEV_DATA = {"features": run_path(DEV_FEATURES), "splits": run_path(DEV_SPLITS)}
PCA_MODEL = {key: run_path(path) for key, path in PCA_FILES.items()}


def code(*modules, script, files=()):
    """A rule's code and numeric mode as its params (hierbench.jobs.code_params, which its jobs
    check as they start); ``script`` is the workflow script's name, which SCRIPT reads."""
    path = f"{workflow.basedir}/workflow_scripts/{script}.py"
    return code_params(modules, script, path, files, NUMERIC_MODE)


SCRIPT = "../workflow_scripts/{params.script}.py"


def shipped(relative):
    """A file the workflow ships (resources/, schemas/) as rules name it (hierbench.shipped)."""
    return workflow_path(relative, workflow.basedir, Path.cwd())


def _first_path(outputs):
    """The first path of an output spec: a path, a list of paths or a dict of either."""
    while not isinstance(outputs, str):
        outputs = next(iter(outputs.values())) if isinstance(outputs, dict) else outputs[0]
    return outputs


def log_for(outputs):
    """The log file of a rule: its first output's path under the run's logs folder, plus .log."""
    return _first_path(outputs).replace(f"{RESULTS}/", f"{LOGS}/", 1) + ".log"


def benchmark_for(outputs):
    """The Snakemake benchmark file of a rule, beside its log."""
    return _first_path(outputs).replace(f"{RESULTS}/", f"{LOGS}/", 1) + ".benchmark.tsv"


def final_outputs():
    """The final targets for the enabled datasets."""
    return PATHS.final_targets(DATASETS)


# ---- config keys and source inputs, as params values (a change reruns the rule)


def shipped_input(wildcards):
    """The shipped metadata file a dataset's config names under the key `name`."""
    return config["datasets"][wildcards.dataset][wildcards.name]


def kind_constraint(kind):
    """The wildcard constraint of the rules that serve one dataset kind: its datasets' names."""
    return name_constraint(datasets_of_kind(config, kind, DATASETS))


def collection_constraint():
    """The constraint of the rules that read a collection of one's own (table or plugin kind)."""
    return name_constraint(own_collections(config, DATASETS))


def with_dataset_code(params):
    """``code(...)``'s params where datasets' folders are read. A dataset of a plugin kind has
    the kind's source in its ``code``; every other dataset keeps the code hash it had without
    plugins, so adding a plugin reruns none of their jobs."""
    hashes = {kind: code_hash((), [path]) for kind, path in kind_sources(config).items()}
    own = params["code"]
    with_plugin = {kind: sha256_bytes(f"{own} {plugin}".encode()) for kind, plugin in hashes.items()}
    return {**params, "code": lambda wildcards: with_plugin.get(dataset_kind(config, wildcards.dataset), own)} if hashes else params


def cub_taxonomy_config(wildcards):
    """The taxonomy block of a CUB-kind dataset."""
    return config["datasets"][wildcards.dataset]["taxonomy"]


def cub_checklist_input(wildcards):
    """The checklist CSV as an input when the config names one (the default ships in a package)."""
    spec = cub_taxonomy_config(wildcards)["checklist"]
    return [] if spec == "default" else [spec]


def rendered_demo(wildcards):
    """The rendered demo folder (a rule's output) a dataset's fingerprints wait for; a real
    folder is never an input: it enters through its content (hierbench.data.fingerprint)."""
    demo = config["datasets"][wildcards.dataset]["source"] == "demo"
    return [dataset_folder(config, wildcards.dataset)] if demo else []


def hash_cache(name):
    """The cache of file hashes kept beside the run's logs (``name``: a dataset, or weights)."""
    return f"{LOGS}/{name}/file_hashes.json"


def folder_content(part):
    """The params value of a fingerprint rule: the part's content identity for a real folder,
    so that a changed file, and only that, reruns it; "demo" for a rendered one."""

    def content(wildcards):
        dataset = wildcards.dataset
        if config["datasets"][dataset]["source"] == "demo":
            return "demo"
        root, kind = dataset_folder(config, dataset), kind_of(config, dataset)
        return identity(fingerprint(root, kind, part, hash_cache(dataset)))

    return content


def backbone_weights_input(wildcards):
    """The backbone weights file as an input (package-shipped weights are not a path)."""
    weights = config["backbone"]["weights"]
    return [] if weights.startswith(PACKAGE_WEIGHTS_PREFIX) else [weights]


def source_identity(*paths):
    """Content fingerprint of source inputs (a params value: edits rerun, touches do not)."""
    return source_fingerprint([path for path in paths if path])


def weights_source(wildcards):
    """The backbone weights' content identity (a params value), hashed once per file version."""
    weights = config["backbone"]["weights"]
    if weights.startswith(PACKAGE_WEIGHTS_PREFIX):
        return weights
    return weights_identity(weights, hash_cache("weights"))


def cell_config(dataset, controls=(), plugins=False):
    """The config keys a final cell reads (no tuning or validation-scoring keys; a params value)."""
    return training_config(config, dataset, controls=controls, scoring=False, plugins=plugins)


def trained_config(dataset, trained):
    """The config keys the cells of a training rule (hierbench.cellkinds.TrainingRule) read."""
    keys = cell_config(dataset, controls=trained.controls, plugins=bool(trained.plugins))
    return {**keys, **{block: config[block] for block in trained.blocks}}


def access_log(dataset):
    """The append-only log of every read of a dataset's sealed test data."""
    return SealPaths.of(dataset, RESULTS, LOGS).access_log.as_posix()


# ---- inputs that depend on the config


def tuning_scores(wildcards):
    """Every tuning run's score file of a dataset: the paper geometries' (or an added one's own)."""
    geometries = [wildcards.geometry] if "geometry" in wildcards.keys() else GEOMETRIES
    runs = tuning_runs(config, geometries)
    return [run_path(TUNING_SCORE, dataset=wildcards.dataset, **run) for run in runs]


def selection_input(wildcards):
    """The tuning selection (an added geometry's own) when the job waits for it (factorial.waits_for_tau)."""
    geometries = [wildcards.geometry] if "geometry" in wildcards.keys() else GEOMETRIES
    if not waits_for_tau(config, wildcards.dataset, wildcards.get("loss"), geometries):
        return []
    pattern = ADDED_GEOMETRY_SELECTION if geometries[0] in added_geometries(config) else TUNING_SELECTION
    return [run_path(pattern, dataset=wildcards.dataset, geometry=geometries[0])]


def geometry_code():
    """A param: an added geometry's plugin's code hash for the jobs of its cells ("" for other
    jobs); no param without added geometries, so the paper's jobs keep their params."""
    hashes = {code: code_hash((), [path]) for code, path in geometry_sources(config).items()}
    return {"geometry_code": lambda wildcards: hashes.get(wildcards.get("geometry"), "")} if hashes else {}


def companion_crops(wildcards):
    """The crop features a companion cell needs (box or cross-image pairs), else nothing."""
    if not companion_enabled(config) or not pair_sources(config).needs_crops:
        return []
    return [run_path(CROP_FEATURES, dataset=wildcards.dataset)]


def variant_param(wildcard):
    """The ``variant`` param of an evaluation whose kind names one (none otherwise)."""
    return {"variant": lambda wildcards: wildcards[wildcard]} if wildcard else {}


def sealed_inputs(scored={}):
    """The inputs of a sealed evaluation: the sealed test's features and splits, the lock, and
    the files of what it scores (names -> patterns)."""
    return {
        "sealed_features": run_path(SEALED_FEATURES),
        "sealed_splits": run_path(SEALED_SPLITS),
        "lock": run_path(FINAL_LOCK),
        **scored,
    }


def lock_inputs(wildcards):
    """Everything the Final lock of a dataset records (and waits for)."""
    return PATHS.lock_inputs(wildcards.dataset)


def in_report(outputs, caption, category):
    """A tables rule's outputs, its figure shown in Snakemake's report."""
    figure = report(outputs["figure"], caption=f"../report/{caption}.rst", category=category, subcategory="{dataset}")
    return {**outputs, "figure": figure}


def dataset_levels(wildcards):
    """The dataset's level names, leaf to high (a params value: what a person reads shows them)."""
    return list(level_names(config, wildcards.dataset))


def aggregation(wildcards):
    """The dataset's registered aggregation (a params value)."""
    return registered_aggregation(config, wildcards.dataset)
