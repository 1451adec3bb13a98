"""Pictures stage (issue #63): a dataset's retrieval galleries and embedding views, drawn from
the sealed test under the Final lock, every pictured arm in one job.

Every function here that reads test data says so in its name, and verifies the lock first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench import jobcost
from hierbench.cells.checkpoints import embed, head_ranking, learned_curvature, load_checkpoint
from hierbench.cells.spec import CellSpec
from hierbench.effects.embedding_view import (
    ArmView,
    embedding_view,
    group_indices,
    views_figure,
)
from hierbench.effects.figure_publishing import publish_figure
from hierbench.effects.gallery_figure import QueryBlock, QueryRow, gallery_figure, thumbnail
from hierbench.features.store import read_labelled_features
from hierbench.levelnames import level_labels
from hierbench.metrics.scoring import SEALED_DRAWS, l2_normalised, qg_seeds
from hierbench.metrics.sealed_scoring import note_test_access
from hierbench.metrics.top_ranked import (
    SHARED_LEVELS,
    picture_queries,
    ranked_gallery,
    shared_levels,
)
from hierbench.protocol import ARM_ORDER, EUCLIDEAN, FROZEN, GEOMETRY_NAMES
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.lock import verify_against_lock
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import role_ids, rows_for_ids

log = logging.getLogger(__name__)

QUERIES = 3  # queries pictured per dataset (spread over high groups: metrics.top_ranked)
TOP_K = 10  # ranked gallery images shown per query and arm
HIGH = 2  # the label column of the high level


class PictureError(ValueError):
    """A picture's input is not what the run scored (an image changed since it was hashed)."""


@dataclass(frozen=True)
class PictureInputs:
    """What a dataset's pictures read: the lock, the sealed test's features and splits, the
    image table and its files' hashes, the taxonomy (the high groups' names), and each
    pictured cell's record and checkpoint by arm (the frozen features need none)."""

    lock: str | Path
    sealed_features: str | Path
    sealed_splits: str | Path
    images: str | Path
    image_files: str | Path
    taxonomy: str | Path
    cells: Mapping[str, tuple[str | Path, str | Path]]

    @classmethod
    def of(cls, named: Mapping[str, Any]) -> PictureInputs:
        """The inputs of a pictures job by name: ``record_<arm>`` and ``model_<arm>`` beside
        the rest (``hierbench.paths.RunPaths.picture_inputs``)."""
        arms = [key.removeprefix("record_") for key in named if key.startswith("record_")]
        ranked = {arm: place for place, arm in enumerate(ARM_ORDER)}
        arms.sort(key=lambda arm: ranked.get(arm, len(ranked)))  # the study's arm order
        cells = {arm: (named[f"record_{arm}"], named[f"model_{arm}"]) for arm in arms}
        fields = ("lock", "sealed_features", "sealed_splits", "images", "image_files", "taxonomy")
        return cls(**{key: named[key] for key in fields}, cells=cells)


@dataclass(frozen=True)
class ArmEmbedding:
    """One arm's sealed test embeddings and how to rank and draw them."""

    arm: str
    embeddings: np.ndarray
    metric: dict[str, Any]  # the engine's distance settings, as the evaluation ranks
    geometry: str
    curvature: float | None
    normalised: bool


def _frozen(matrix: np.ndarray, clip: float) -> ArmEmbedding:
    """The frozen features as the evaluation scores them: L2-normalised, Euclidean."""
    metric = {"geometry": GEOMETRY_NAMES[EUCLIDEAN], "curvature": None, "distance_clip": clip}
    return ArmEmbedding(FROZEN, l2_normalised(matrix), metric, EUCLIDEAN, None, True)


def _cell(
    arm: str, record: str | Path, model: str | Path, matrix: np.ndarray, clip: float
) -> ArmEmbedding:
    """A trained cell's embeddings of the sealed features and its head's ranking."""
    spec = CellSpec.from_record(json.loads(Path(record).read_text(encoding="utf-8")))
    head = load_checkpoint(model, spec, matrix.shape[1])
    metric = head_ranking(head, spec, clip)
    if "pair_scores" in metric:  # picture_arms draws the paper's geometries only
        raise PictureError(f"{arm}: a cell ranked by a plugin's scores has no picture")
    return ArmEmbedding(
        arm,
        embed(head, matrix),
        metric,
        spec.geometry,
        learned_curvature(head, spec),
        spec.normalise,
    )


@jobcost.charged(jobcost.LOADING)
def checked_thumbnails(
    ids: Sequence[str], images: str | Path, image_files: str | Path, folder: Path, prefix: str
) -> dict[str, np.ndarray]:
    """The thumbnails of ``ids``, each image's bytes checked against the hash the run took."""
    table = pd.read_parquet(images).astype({"image_id": str}).set_index("image_id")
    hashes = pd.read_parquet(image_files).set_index("path")["sha256"]
    found = {}
    for image_id in sorted(set(ids)):
        relative = (Path(prefix) / str(table.loc[image_id, "path"])).as_posix()
        path = folder / relative
        if relative not in hashes.index or sha256_file(path) != hashes[relative]:
            raise PictureError(
                f"image {image_id} ({path}) is not the file the run hashed in {image_files}; "
                "rerun its fingerprint (snakemake -R image_fingerprint) and what follows"
            )
        found[image_id] = thumbnail(path)
    return found


def _high_names(taxonomy: str | Path) -> dict[int, str]:
    """Each high group's name by its code."""
    table = pd.read_parquet(taxonomy, columns=["high", "high_code"]).drop_duplicates()
    return dict(zip(table["high_code"].astype(int), table["high"].astype(str), strict=True))


def _gallery_blocks(
    arms: Sequence[ArmEmbedding],
    ids: pd.Series,
    labels: np.ndarray,
    draws: pd.DataFrame,
    seed: int,
    names: Mapping[int, str],
) -> list[QueryBlock]:
    """The pictured queries of draw ``qg-<seed>``, each with every arm's top-ranked items."""
    split = f"{SEALED_DRAWS}-{seed}"
    queries = rows_for_ids(ids, role_ids(draws, split, "query"), f"{split}/query")
    gallery = rows_for_ids(ids, role_ids(draws, split, "gallery"), f"{split}/gallery")
    chosen = queries[picture_queries(labels[queries], QUERIES, seed)]
    ranked = {  # each arm's (query, rank) -> row of the sealed features
        arm.arm: gallery[
            ranked_gallery(arm.embeddings[chosen], arm.embeddings[gallery], arm.metric, TOP_K)
        ]
        for arm in arms
    }
    image_ids = ids.to_numpy()
    blocks = []
    for place, query in enumerate(chosen):
        rows = []
        for arm, top in ranked.items():
            shared = shared_levels(labels[[query]], labels[top[place]][None])[0]
            levels = [SHARED_LEVELS[level] for level in shared]
            rows.append(QueryRow(arm, list(image_ids[top[place]]), levels))
        high = int(labels[query, HIGH])
        blocks.append(QueryBlock(image_ids[query], names.get(high, str(high)), rows))
    return blocks


def _view_panels(arms: Sequence[ArmEmbedding], labels: np.ndarray) -> list[ArmView]:
    """Each arm's embedding view, points and prototypes coloured by their high group."""
    groups = np.unique(labels[:, HIGH])
    leaves, first = np.unique(labels[:, 0], return_index=True)
    prototype_groups = group_indices(labels[first, HIGH], groups)
    panels = []
    for arm in arms:
        view = embedding_view(
            arm.embeddings,
            labels[:, 0],
            arm.geometry,
            curvature=arm.curvature,
            normalised=arm.normalised,
        )
        curvature = f", c = {arm.curvature:.3g}" if arm.curvature else ""
        title = f"{arm.arm}: {view.kind}{curvature}"
        panels.append(
            ArmView(title, view, group_indices(labels[:, HIGH], groups), prototype_groups)
        )
    log.info("embedding views: %d leaf classes, %d high groups", len(leaves), len(groups))
    return panels


def draw_pictures_from_sealed_test(
    dataset: str,
    inputs: PictureInputs,
    root: str | Path,
    images_dir: str,
    config: dict[str, Any],
    outputs: Mapping[str, Sequence[str]],
    job: JobContext,
    *,
    access_log: str | Path,
    levels: tuple[str, str, str] | None = None,
) -> None:
    """Verify the lock, then draw a dataset's retrieval galleries (``outputs["galleries"]``)
    and embedding views (``outputs["embeddings"]``), PNG and PDF, of the frozen features and
    each pictured cell, from the sealed test: the galleries on the first sealed draw."""
    models = [model for _, model in inputs.cells.values()]
    locked = [*models, inputs.sealed_features, inputs.sealed_splits, inputs.taxonomy]
    verify_against_lock(inputs.lock, locked)
    note_test_access(access_log, f"{dataset} pictures: {' '.join(inputs.cells)} ({job.rule})")
    ids, labels, matrix = read_labelled_features(inputs.sealed_features)
    clip = config["training"]["distance_clip_test"]
    arms = [_frozen(matrix, clip)]
    arms += [_cell(arm, *files, matrix, clip) for arm, files in inputs.cells.items()]
    seed = qg_seeds(config, dataset)[0]
    draws = pd.read_parquet(inputs.sealed_splits)
    blocks = _gallery_blocks(arms, ids, labels, draws, seed, _high_names(inputs.taxonomy))
    shown = [block.query for block in blocks]
    shown += [item for block in blocks for row in block.rows for item in row.ranked]
    images = checked_thumbnails(shown, inputs.images, inputs.image_files, Path(root), images_dir)
    named = level_labels(levels)
    drawn = {
        "galleries": gallery_figure(
            blocks, images, TOP_K, f"{dataset}: top {TOP_K} of draw {SEALED_DRAWS}-{seed}", named
        ),
        "embeddings": views_figure(
            _view_panels(arms, labels), f"{dataset}: sealed test embeddings", seed
        ),
    }
    for name, figure in drawn.items():
        publish_figure(figure, outputs[name], job)
    log.info("%s pictures drawn: %s", dataset, ", ".join(arm.arm for arm in arms))
