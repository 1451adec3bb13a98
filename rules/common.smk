# Path wiring and wildcard constraints only; every decision is a tested library function.

from hierbench.baselines import baselines_enabled, pca_dimensions
from hierbench.cells.spec import own_epoch_budgets
from hierbench.provenance.codehash import code_hash
from hierbench.cells.companion import companion_cells, companion_enabled, pair_sources
from hierbench.config import enabled_datasets, locked_config, training_config
from hierbench.controls.curvature import control_epochs, control_variants, point_geometry
from hierbench.controls.outer import outer_cells, outer_splits
from hierbench.controls.semantic import semantic_arms
from hierbench.data.kinds import (
    TABLE_LAYOUT_FOLDER,
    dataset_kind,
    datasets_of_kind,
    images_subfolder,
    layout_folder,
    level_names,
    name_constraint,
    registered_aggregation,
)
from hierbench.devices import gpus_per_job
from hierbench.provenance.hashing import source_fingerprint
from hierbench.runs import logs_folder, run_folder
from hierbench.protocol import (
    ANGLE_RANKING,
    ARMS_SUMMARY,
    COMPANION_ANGLE_TABLE,
    BASELINES,
    HIER,
    OUTER_CONTROL,
    OUTER_TABLES,
    PCA,
    CURVATURE_CONTROL,
    CURVATURE_TABLES,
    EUCLIDEAN,
    SEMANTIC_CONTROL,
    SEMANTIC_TABLES,
    SENSITIVITY_FOLDER,
    SUPCON,
    EFFECT_TABLES,
    EFFECTS_BY_SEED,
    FIGURE_FORMATS,
    FIGURES,
    GEOMETRIES,
    LAYOUT_FOLDERS,
    LOSSES,
    PACKAGE_WEIGHTS_PREFIX,
    PAPER_TABLE_FORMATS,
    PAPER_TABLES,
    PER_SEED_TABLE,
    POINCARE,
    REGRESSION,
    SUMMARY_PAGE,
    TABLE_FORMATS,
    cell_name,
)
from hierbench.provenance.seal import SealPaths
from hierbench.taxonomy import checklist_fingerprint

DATASETS = enabled_datasets(config)
RESULTS = run_folder(config)  # this config's run: every artifact and lock under it
LOGS = logs_folder(RESULTS)
GPUS_PER_JOB = gpus_per_job(config)  # the features and training jobs' GPU request


def code(*modules, script):
    """Behaviour hash of the library modules a rule runs and of its workflow script (named as
    in its script: directive); as a params value, edits rerun it, comments do not."""
    return code_hash(modules, [f"{workflow.basedir}/workflow_scripts/{script}.py"])


def log_for(output_path):
    """The log file of an output: the same path under the run's logs folder, plus .log."""
    return output_path.replace(f"{RESULTS}/", f"{LOGS}/", 1) + ".log"


def shipped_input(wildcards):
    """The shipped metadata file a dataset's config names under the key `name`."""
    return config["datasets"][wildcards.dataset][wildcards.name]


def final_outputs():
    """The final targets for the enabled datasets."""
    targets = [f"{RESULTS}/{dataset}/tables/{SUMMARY_PAGE}" for dataset in DATASETS]
    targets += [
        path for dataset in DATASETS for name in FIGURES for path in figure_outputs(dataset, name)
    ]
    targets += [
        f"{RESULTS}/{dataset}/taxonomy/shuffled.parquet"
        for dataset in datasets_of_kind(config, "nabirds", DATASETS)
    ]
    targets += [
        path for dataset in DATASETS if control_variants(config, dataset) for path in curvature_outputs(dataset)
    ]
    targets += [
        path for dataset in DATASETS if semantic_arms(config, dataset) for path in semantic_outputs(dataset)
    ]
    targets += [path for dataset in DATASETS for path in baseline_outputs(dataset)]
    targets += [path for dataset in DATASETS for path in outer_outputs(dataset)]
    targets += [path for dataset in DATASETS for path in companion_angle_outputs(dataset)]
    return targets


def benchmark_for(output_path):
    """The Snakemake benchmark file of an output, beside its log."""
    return output_path.replace(f"{RESULTS}/", f"{LOGS}/", 1) + ".benchmark.tsv"


def kind_constraint(kind):
    """The wildcard constraint of the rules that serve one dataset kind: its datasets' names."""
    return name_constraint(datasets_of_kind(config, kind, DATASETS))


def cub_taxonomy_config(wildcards):
    """The taxonomy block of a CUB-kind dataset."""
    return config["datasets"][wildcards.dataset]["taxonomy"]


def cub_checklist_input(wildcards):
    """The checklist CSV as an input when the config names one (the default ships in a package)."""
    spec = cub_taxonomy_config(wildcards)["checklist"]
    return [] if spec == "default" else [spec]


def demo_folder(dataset):
    """Where the demo of a dataset is rendered (its layout's folder name, by kind)."""
    return f"{RESULTS}/{dataset}/demo/{layout_folder(config, dataset)}"


def dataset_root(wildcards):
    """The dataset folder a run reads: the rendered demo, or the real folder from the config."""
    block = config["datasets"][wildcards.dataset]
    return demo_folder(wildcards.dataset) if block["source"] == "demo" else block["root"]


def split_config(dataset):
    """The config keys the split stage reads for a dataset (its params, hence its rerun trigger)."""
    block = config["datasets"][dataset]
    return {key: block[key] for key in ("splits", "image_pool") if key in block}


def backbone_weights_input(wildcards):
    """The backbone weights file as an input (package-shipped weights are not a path)."""
    weights = config["backbone"]["weights"]
    return [] if weights.startswith(PACKAGE_WEIGHTS_PREFIX) else [weights]


def tau_label(tau):
    """A temperature as it appears in paths: 0.07, 0.1, 1."""
    return f"{tau:g}"


def model_config(dataset):
    """The config keys that define training, tuning and scoring for a dataset (a params value)."""
    return training_config(config, dataset)


def cell_config(dataset, controls=()):
    """The config keys a final cell reads (no tuning or validation-scoring keys; a params value)."""
    return training_config(config, dataset, controls=controls, scoring=False)


def tuning_scores(wildcards):
    """Every tuning run's score file of a dataset."""
    return [
        f"{RESULTS}/{wildcards.dataset}/tuning/{geometry}/tau-{tau_label(tau)}/score.json"
        for geometry in GEOMETRIES
        for tau in config["tuning"]["taus"]
    ]


def selection_input(wildcards):
    """The tuning selection, needed by an S cell unless its temperature is pinned."""
    pinned = config["datasets"][wildcards.dataset]["tau"][wildcards.geometry]
    if wildcards.loss == REGRESSION or pinned is not None:
        return []
    return [f"{RESULTS}/{wildcards.dataset}/tuning/selection.parquet"]


def cell_outputs(dataset, name):
    """One output file of every final cell of a dataset."""
    return [
        f"{RESULTS}/{dataset}/cells/{cell_name(geometry, loss, seed)}/{name}"
        for geometry in GEOMETRIES
        for loss in LOSSES
        for seed in config["training"]["seeds"]
    ]


def eval_config(dataset):
    """The config keys the sealed evaluation reads for a dataset (a params value)."""
    block = config["datasets"][dataset]
    return {
        "evaluation": config["evaluation"],
        "training": {"distance_clip_test": config["training"]["distance_clip_test"]},
        "datasets": {dataset: {"splits": {"query_gallery": block["splits"]["query_gallery"]}}},
    }


def access_log(dataset):
    """The append-only log of every read of a dataset's sealed test data."""
    return SealPaths.of(dataset, RESULTS, LOGS).access_log.as_posix()


def sealed_inputs(dataset):
    """The sealed artifacts of a dataset, as the lock and the evaluation name them."""
    return {
        "sealed_features": f"{RESULTS}/{dataset}/features/sealed/test.parquet",
        "sealed_splits": f"{RESULTS}/{dataset}/splits/sealed/test.parquet",
    }


def lock_inputs(wildcards):
    """Everything the Final lock of a dataset records (and waits for)."""
    dataset = wildcards.dataset
    return {
        "checkpoints": cell_outputs(dataset, "model.safetensors")
        + curvature_cells(dataset, "model.safetensors")
        + semantic_cells(dataset, "model.safetensors")
        + hier_cells(dataset, "model.safetensors")
        + companion_files(dataset, "model.safetensors")
        + pca_outputs(dataset, "projection.safetensors"),
        "records": cell_outputs(dataset, "record.json")
        + curvature_cells(dataset, "record.json")
        + semantic_cells(dataset, "record.json")
        + hier_cells(dataset, "record.json")
        + companion_files(dataset, "record.json")
        + pca_outputs(dataset, "record.json"),
        "audits": [f"{RESULTS}/{dataset}/audit/fairness.parquet"],
        "taxonomy": [f"{RESULTS}/{dataset}/taxonomy/taxonomy.parquet"],
        "features": [f"{RESULTS}/{dataset}/features/dev.parquet"],
        "splits": [
            f"{RESULTS}/{dataset}/splits/dev.parquet",
            f"{RESULTS}/{dataset}/splits/manifest.parquet",
            f"{RESULTS}/{dataset}/splits/sealed/manifest.parquet",
        ],
        "sealed": list(sealed_inputs(dataset).values()),
    }


def eval_outputs(dataset):
    """Every evaluation summary the effect tables read: the factorial cells, the companion
    cells (when switched on) and the frozen baseline."""
    cells = [
        cell_name(geometry, loss, seed)
        for geometry in GEOMETRIES
        for loss in LOSSES
        for seed in config["training"]["seeds"]
    ] + companion_cells(config)
    return [f"{RESULTS}/{dataset}/eval/{cell}_summary.parquet" for cell in cells] + [
        f"{RESULTS}/{dataset}/eval/frozen_summary.parquet"
    ]


def resolved_config(dataset):
    """The resolved config as it concerns one dataset (what its Final lock hashes)."""
    return locked_config(config, dataset)


def table_outputs(prefix):
    """Every file the tables stage writes under ``prefix`` (a folder pattern)."""
    files = [f"{prefix}/{name}.{ext}" for name in EFFECT_TABLES for ext in TABLE_FORMATS]
    files += [f"{prefix}/{name}.{ext}" for name in PAPER_TABLES for ext in PAPER_TABLE_FORMATS]
    return files + [f"{prefix}/{PER_SEED_TABLE}.parquet"]


def figure_outputs(dataset, name):
    """The files (PNG, PDF) of one figure of a dataset (a name or the "{dataset}" pattern)."""
    return [f"{RESULTS}/{dataset}/figures/{name}.{ext}" for ext in FIGURE_FORMATS]


def hyperbolic_cells(dataset, name):
    """One output file of every Poincare cell of a dataset."""
    return [
        f"{RESULTS}/{dataset}/cells/{cell_name(POINCARE, loss, seed)}/{name}"
        for loss in LOSSES
        for seed in config["training"]["seeds"]
    ]


def source_identity(*paths):
    """Content fingerprint of source inputs (a params value: edits rerun, touches do not)."""
    return source_fingerprint([path for path in paths if path])


def folder_source(wildcards):
    """The source input of a rule that reads only the dataset folder (a real folder's
    fingerprint; a demo folder is a rule's output)."""
    block = config["datasets"][wildcards.dataset]
    return source_identity(block["root"] if block["source"] == "folder" else None)


def real_sources(wildcards):
    """The source inputs of the feature and image-table rules: a real dataset folder (a demo
    folder is a rule's output) and a backbone weights file."""
    block = config["datasets"][wildcards.dataset]
    root = block["root"] if block["source"] == "folder" else None
    return source_identity(root, *backbone_weights_input(wildcards))


# ---- the curvature/radius control (H_R at other operating points, matched to the factorial)


def curvature_cells(dataset, name):
    """One output file of every curvature-control cell of a dataset (the matched E_R too)."""
    return [
        f"{RESULTS}/{dataset}/cells/{CURVATURE_CONTROL}/{label}/{cell_name(point_geometry(label), REGRESSION, seed)}/{name}"
        for label in control_variants(config, dataset)
        for seed in config["training"]["seeds"]
    ]


def curvature_evals(dataset):
    """Every evaluation summary of a dataset's curvature-control cells."""
    return [
        f"{RESULTS}/{dataset}/eval/{CURVATURE_CONTROL}/{label}/{cell_name(point_geometry(label), REGRESSION, seed)}_summary.parquet"
        for label in control_variants(config, dataset)
        for seed in config["training"]["seeds"]
    ]


def factorial_summaries(dataset, geometry, loss):
    """The evaluation summaries of one factorial arm, every seed."""
    return [
        f"{RESULTS}/{dataset}/eval/{cell_name(geometry, loss, seed)}_summary.parquet"
        for seed in config["training"]["seeds"]
    ]


def curvature_outputs(dataset):
    """Every file the curvature-control tables write for a dataset."""
    tables = [
        f"{RESULTS}/{dataset}/tables/controls/{name}.{ext}"
        for name in CURVATURE_TABLES
        for ext in TABLE_FORMATS
    ]
    per_seed = [f"{RESULTS}/{dataset}/tables/controls/{CURVATURE_CONTROL}_{PER_SEED_TABLE}.parquet"]
    return tables + per_seed + figure_outputs(dataset, CURVATURE_CONTROL)


# ---- the semantic-alignment control (Euclidean SupCon arms, one on the shuffled taxonomy)


def semantic_cells(dataset, name):
    """One output file of every semantic-control cell of a dataset."""
    return [
        f"{RESULTS}/{dataset}/cells/{SEMANTIC_CONTROL}/{arm}/{cell_name(EUCLIDEAN, SUPCON, seed)}/{name}"
        for arm in semantic_arms(config, dataset)
        for seed in config["training"]["seeds"]
    ]


def semantic_durations(dataset):
    """Every arm's chosen duration of a dataset."""
    return [
        f"{RESULTS}/{dataset}/controls/{SEMANTIC_CONTROL}/{arm}/duration.json"
        for arm in semantic_arms(config, dataset)
    ]


def semantic_evals(dataset):
    """Every evaluation summary of a dataset's semantic-control cells."""
    return [
        f"{RESULTS}/{dataset}/eval/{SEMANTIC_CONTROL}/{arm}/{cell_name(EUCLIDEAN, SUPCON, seed)}_summary.parquet"
        for arm in semantic_arms(config, dataset)
        for seed in config["training"]["seeds"]
    ]


def baselines_config(dataset):
    """The config keys the HIER-style cells read (a params value)."""
    return cell_config(dataset, controls=("baselines",))


def semantic_config(dataset):
    """The config keys the semantic control's jobs read (a params value)."""
    return training_config(config, dataset, controls=("semantic",))


def semantic_outputs(dataset):
    """Every file the semantic-control tables write for a dataset."""
    tables = [
        f"{RESULTS}/{dataset}/tables/controls/{name}.{ext}"
        for name in SEMANTIC_TABLES
        for ext in TABLE_FORMATS
    ]
    per_seed = [f"{RESULTS}/{dataset}/tables/controls/{SEMANTIC_CONTROL}_{PER_SEED_TABLE}.parquet"]
    return tables + per_seed + figure_outputs(dataset, SEMANTIC_CONTROL)


# ---- the context baselines: PCA of the frozen features and a HIER-style model


def pca_outputs(dataset, name):
    """The PCA projection's file ``name`` of a dataset (none when the baselines are off)."""
    return [f"{RESULTS}/{dataset}/{BASELINES}/{PCA}/{name}"] if baselines_enabled(config, dataset) else []


def hier_cells(dataset, name):
    """One output file of every HIER-style cell of a dataset."""
    if not baselines_enabled(config, dataset):
        return []
    return [
        f"{RESULTS}/{dataset}/cells/{HIER}/{HIER}-{seed}/{name}" for seed in config["training"]["seeds"]
    ]


def baseline_evals(dataset):
    """The evaluation summaries the baselines table reads: frozen, PCA, HIER-style, factorial."""
    return (
        [f"{RESULTS}/{dataset}/eval/frozen_summary.parquet", f"{RESULTS}/{dataset}/eval/{PCA}_summary.parquet"]
        + [
            f"{RESULTS}/{dataset}/eval/{HIER}/{HIER}-{seed}_summary.parquet"
            for seed in config["training"]["seeds"]
        ]
        + [path for g in GEOMETRIES for loss in LOSSES for path in factorial_summaries(dataset, g, loss)]
    )


def baseline_outputs(dataset):
    """Every file the baselines table writes for a dataset (none when the baselines are off)."""
    if not baselines_enabled(config, dataset):
        return []
    tables = [f"{RESULTS}/{dataset}/tables/{BASELINES}.{ext}" for ext in TABLE_FORMATS]
    per_seed = [f"{RESULTS}/{dataset}/tables/{BASELINES}_{PER_SEED_TABLE}.parquet"]
    return tables + per_seed + figure_outputs(dataset, BASELINES)


# ---- the outer hierarchy-disjoint splits (development data: no lock, no seal)


def outer_cell_files(dataset, split, name):
    """One output file of every cell an outer split trains."""
    return [f"{RESULTS}/{dataset}/cells/{OUTER_CONTROL}/{split}/{cell}/{name}" for cell in outer_cells(config, dataset)]


def outer_scores(dataset):
    """Every outer split's scores of a dataset."""
    return [f"{RESULTS}/{dataset}/{OUTER_CONTROL}/{split}/scores.parquet" for split in outer_splits(config, dataset)]


def outer_outputs(dataset):
    """Every file the outer-splits tables write for a dataset (none when they are off)."""
    if not outer_splits(config, dataset):
        return []
    tables = [f"{outer_folder(dataset)}/{name}.{ext}" for name in OUTER_TABLES for ext in TABLE_FORMATS]
    per_split = [f"{outer_folder(dataset)}/{OUTER_CONTROL}_per_split.parquet"]
    return tables + per_split + outer_figure(dataset)


def outer_folder(dataset):
    """Where the outer splits' tables and figure live: apart from tables/ and figures/, which
    derive from the sealed evaluation and move into the archive at a re-seal."""
    return f"{RESULTS}/{dataset}/{OUTER_CONTROL}"


def outer_figure(dataset):
    """The outer splits' figure files of a dataset (a name or the "{dataset}" pattern)."""
    return [f"{outer_folder(dataset)}/{OUTER_CONTROL}.{ext}" for ext in FIGURE_FORMATS]


# ---- the companion method in the factorial: E_A and L_A cells (angle entailment)


def companion_files(dataset, name):
    """One output file of every companion cell of a dataset (none when switched off)."""
    return [f"{RESULTS}/{dataset}/cells/{cell}/{name}" for cell in companion_cells(config)]


def companion_crops(wildcards):
    """The crop features a companion cell needs (box or cross-image pairs), else nothing."""
    if not companion_enabled(config) or not pair_sources(config).needs_crops:
        return []
    return [f"{RESULTS}/{wildcards.dataset}/features/dev_crops.parquet"]


def companion_config(dataset):
    """The config keys a companion cell reads (a params value)."""
    return {**cell_config(dataset), "companion": config["companion"]}


def companion_evals(dataset, ranking_folder=None):
    """The evaluation summaries of every companion cell of a dataset (none when switched off):
    ranked by distance, or those under ``eval/<ranking_folder>/`` (the angle ranking)."""
    parts = [RESULTS, dataset, "eval", *([ranking_folder] if ranking_folder else [])]
    folder = "/".join(parts)
    return [f"{folder}/{cell}_summary.parquet" for cell in companion_cells(config)]


def angle_eval_config(dataset):
    """The config keys the angle-ranked evaluation reads (a params value): the sealed
    evaluation's without the distance clip, which an angle ranking does not use."""
    return {key: value for key, value in eval_config(dataset).items() if key != "training"}


def companion_angle_outputs(dataset):
    """Every file the companion ranking table writes for a dataset (none when the companion
    cells are switched off)."""
    if not companion_enabled(config):
        return []
    tables = [f"{RESULTS}/{dataset}/tables/{COMPANION_ANGLE_TABLE}.{ext}" for ext in TABLE_FORMATS]
    return tables + [f"{RESULTS}/{dataset}/tables/{COMPANION_ANGLE_TABLE}_{PER_SEED_TABLE}.parquet"]
