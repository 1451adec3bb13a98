"""The path patterns of a run, each spelled once: every artifact's place below the run folder.

Patterns keep Snakemake's wildcards (``{dataset}``, ``{seed}``, ...). A cell of any kind lives
in ``<dataset>/cells/<cell>/`` and its sealed evaluation in ``<dataset>/eval/<cell>.parquet``
(``_summary.parquet`` beside it), so one table of cell kinds serves training and evaluation.
Pure strings and string functions, below everything that reads or writes a run (the seal, the
run listings and comparisons); :mod:`hierbench.paths` expands them from a config.
"""

from __future__ import annotations

import re
from typing import Any

from hierbench.protocol import (
    ARMS_SUMMARY,
    BASELINES,
    COMPANION_KIND,
    COMPANION_LOSS,
    CURVATURE_CONTROL,
    EUCLIDEAN,
    FACTORIAL_KIND,
    FROZEN,
    HIER,
    OUTER_CONTROL,
    PCA,
    REGRESSION,
    SEMANTIC_CONTROL,
    SUPCON,
)

# One file each, below the run folder.
INPUT_FILE = "{dataset}/inputs/{name}.txt"
TAXONOMY = "{dataset}/taxonomy/taxonomy.parquet"
MATCH_REPORT = "{dataset}/taxonomy/match_report.md"
SHUFFLED_TAXONOMY = "{dataset}/taxonomy/shuffled_{fixed}.parquet"  # fixed: its fixed points
SHUFFLE_REPORT = "{dataset}/taxonomy/shuffle_report_{fixed}.json"
DEMO_FOLDER = "{dataset}/demo/{layout}"
IMAGE_TABLE = "{dataset}/data/images.parquet"
LAYOUT_FINGERPRINT = "{dataset}/data/layout_files.parquet"  # the layout's tables, hashed
IMAGE_FINGERPRINT = "{dataset}/data/image_files.parquet"  # the images they list, hashed
TAXONOMY_FINGERPRINT = "{dataset}/data/taxonomy_files.parquet"  # a table kind's taxonomy.csv
DEV_SPLITS = "{dataset}/splits/dev.parquet"
DEV_MANIFEST = "{dataset}/splits/manifest.parquet"
SEALED_SPLITS = "{dataset}/splits/sealed/test.parquet"
SEALED_MANIFEST = "{dataset}/splits/sealed/manifest.parquet"
BACKBONE_PASS = "{dataset}/features/backbone/{backbone_pass}.parquet"  # unlabelled
BACKBONE_PASSES = ("images", "crops")  # whole images of the pool; crops of possible dev images
DEV_FEATURES = "{dataset}/features/dev.parquet"
CROP_FEATURES = "{dataset}/features/dev_crops.parquet"
SEALED_FEATURES = "{dataset}/features/sealed/test.parquet"
TUNING_SCORE = "{dataset}/tuning/{geometry}/tau-{tau}/score.json"
TUNING_SELECTION = "{dataset}/tuning/selection.parquet"
# A geometry added to the factorial: its temperature chosen from its own tuning runs.
ADDED_GEOMETRY_SELECTION = "{dataset}/tuning/selection-{geometry}.parquet"
SEMANTIC_DURATION = f"{{dataset}}/controls/{SEMANTIC_CONTROL}/{{arm}}/duration.json"
PCA_FOLDER = f"{{dataset}}/{BASELINES}/{PCA}"
PCA_FILES = {"model": f"{PCA_FOLDER}/projection.safetensors", "record": f"{PCA_FOLDER}/record.json"}
FAIRNESS_AUDIT = "{dataset}/audit/fairness.parquet"
FINAL_LOCK = "{dataset}/lock/final_lock.json"
ACCESS_LOG = "{dataset}/lock/test_access.log"  # below the run's logs folder: every sealed read
RESEALS = "reseals"  # <dataset>/reseals/<NNN>/: an archived lock, its evaluations and tables
EVALUATIONS = "{dataset}/eval"  # every sealed evaluation: two files per cell or arm
RESEAL_HISTORY = "{dataset}/lock/reseal_history.md"
OUTER_FOLDER = f"{{dataset}}/{OUTER_CONTROL}"
OUTER_SCORES = f"{OUTER_FOLDER}/{{outer}}/scores.parquet"
OUTER_DURATIONS = f"{OUTER_FOLDER}/{{outer}}/durations.json"  # each arm's validation epochs
TABLES = "{dataset}/tables"
ARMS_SUMMARY_TABLE = f"{TABLES}/{ARMS_SUMMARY}.parquet"  # the per-arm summary a run list reads
CONTROL_TABLES = f"{TABLES}/controls"
FIGURES = "{dataset}/figures"
EFFECTS_VERDICTS = f"{FIGURES}/effects_intervals.rst"  # the effects figure's caption, per effect
# Training curves (#63): a kind of cell's loss per epoch, and the τ search's validation score.
# Drawn from development data only, so outside FIGURES: a re-seal archives FIGURES (derived from
# the sealed evaluations) and would take these with it, drawn before the lock and not redrawn.
CURVES = "{dataset}/curves"
TRAINING_CURVES = "training_curves_{kind}"
# The paragraph of a training-curves figure's caption naming its flat or non-finite cells.
TRAINING_PROBLEMS = f"{CURVES}/{TRAINING_CURVES}_problems.rst"
TAU_SEARCH_FIGURE = "tau_search"
DURATION_SEARCH_FIGURE = "duration_search"  # the semantic and outer controls' epoch searches
# Pictures (#63): each pictured arm's top-ranked test images per query, and its test
# embeddings in two dimensions. Drawn from the sealed test under the lock, so in FIGURES: a
# re-seal archives them with the figures, and the new lock's pictures are drawn anew.
GALLERIES_FIGURE = "galleries"
EMBEDDING_VIEWS_FIGURE = "embedding_views"
# The tracker export (#63, the config's `tracker`): one folder per dataset, named after the
# tracker (<dataset>/tensorboard/), that the tracker's own tools read; recorded as a folder.
TRACKER_EXPORT = "{dataset}/{tracker}"

# Every kind of trained cell: its folder below <dataset>/cells/ (and its evaluation's below
# <dataset>/eval/). Seedless arms (the frozen features, PCA) are evaluated under their names.
CELLS = {
    FACTORIAL_KIND: "{geometry}{loss}-{seed}",
    "curvature": f"{CURVATURE_CONTROL}/{{point}}/{{geometry}}{REGRESSION}-{{seed}}",
    "semantic": f"{SEMANTIC_CONTROL}/{{arm}}/{EUCLIDEAN}{SUPCON}-{{seed}}",
    "hier": f"{HIER}/{HIER}-{{seed}}",
    "outer": f"{OUTER_CONTROL}/{{outer}}/{{geometry}}{{loss}}-{{seed}}",
    COMPANION_KIND: f"{{head}}{COMPANION_LOSS}-{{seed}}",
}
SEEDLESS_ARMS = (FROZEN, PCA)
# A cell's three files, by output name.
CELL_FILES = {"model": "model.safetensors", "log": "train_log.parquet", "record": "record.json"}
# The kinds trained in bundles (one job, many cells: see training.bundle), each with the
# manifest its job writes (its cells, in bundle order): a dataset's whole factorial; a
# curvature point's, and a semantic arm's, cells of every seed. (An outer split's arms train
# alone: each for its own validation-chosen epochs.)
ADDED_LOSS = "added_loss"  # the bundle kind of a loss added to the factorial
ADDED_GEOMETRY = "added_geometry"  # the bundle kind of a geometry added to the factorial
BUNDLE_MANIFESTS = {
    FACTORIAL_KIND: f"{{dataset}}/cells/bundles/{FACTORIAL_KIND}.json",
    # a loss added to the factorial (hierbench.factorial): its cells on every geometry and seed
    ADDED_LOSS: "{dataset}/cells/bundles/factorial-{loss}.json",
    # a geometry added to the factorial: its cells under the paper's losses, every seed
    ADDED_GEOMETRY: "{dataset}/cells/bundles/geometry-{geometry}.json",
    "curvature": f"{{dataset}}/cells/bundles/{CURVATURE_CONTROL}/{{point}}-{{geometry}}.json",
    "semantic": f"{{dataset}}/cells/bundles/{SEMANTIC_CONTROL}/{{arm}}.json",
}
BUNDLED_KINDS = tuple(BUNDLE_MANIFESTS)
# The kind whose cells a bundle kind writes, where the two differ (an added loss's or
# geometry's cells are factorial cells).
BUNDLE_CELLS_OF = {ADDED_LOSS: FACTORIAL_KIND, ADDED_GEOMETRY: FACTORIAL_KIND}

WILDCARD = re.compile(r"\{(\w+)\}")


def fill(pattern: str, **values: Any) -> str:
    """``pattern`` with the named wildcards filled in and every other wildcard kept."""
    return WILDCARD.sub(lambda m: str(values.get(m[1], m[0])), pattern)


def cell_folder(kind: str) -> str:
    """The folder pattern of a cell of ``kind``, below the run folder."""
    return f"{{dataset}}/cells/{CELLS[kind]}"


def evaluation_stem(kind: str, ranking: str | None = None) -> str:
    """The evaluation files' stem of a cell of ``kind`` (or a seedless arm's name), below the
    run folder; ``ranking`` names another ranking's folder (the angle ranking)."""
    cell = kind if kind in SEEDLESS_ARMS else CELLS[kind]
    return "/".join([EVALUATIONS, *([ranking] if ranking else []), cell])


def evaluation_files(stem: str) -> dict[str, str]:
    """An evaluation's two files, by output name: per-query scores and their summary."""
    return {"per_query": f"{stem}.parquet", "summary": f"{stem}_summary.parquet"}
