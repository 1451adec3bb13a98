"""Temperature-tuning stage: one SupCon run per (geometry, τ), a dataset's runs trained as one
bundle, each scored on validation only, and the selection of each geometry's temperature from
those scores; and the other choices made on validation, the semantic arms' and the outer arms'
epochs. Nothing here reads a sealed artifact.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.cells.checkpoints import embed, head_ranking
from hierbench.cells.spec import CellSpec, cell_spec
from hierbench.controls.outer import outer_arms, outer_block
from hierbench.controls.semantic import (
    best_epoch,
    semantic_arm,
    semantic_spec,
    training_labels,
)
from hierbench.devices import config_device
from hierbench.features.store import role_arrays
from hierbench.metrics import evaluate, summarise
from hierbench.metrics.pair_scores import DEFAULT_DISTANCE_CLIP
from hierbench.protocol import (
    EUCLIDEAN,
    GEOMETRY_NAMES,
    SUPCON,
)
from hierbench.provenance.artifacts import write_json, write_parquet
from hierbench.provenance.records import JobContext
from hierbench.splits.outer_splits import TUNING_SUFFIX
from hierbench.training.bundle import train_bundle
from hierbench.training.trainer import train_cell
from hierbench.training.tuning import final_spec, hierarchy_scores, select_temperatures

log = logging.getLogger(__name__)


def write_selection(
    scores: list[str | Path], out_table: str | Path, job: JobContext
) -> pd.DataFrame:
    """Read every tuning score file and write the candidates with the winners flagged."""
    records = [json.loads(Path(p).read_text(encoding="utf-8")) for p in scores]
    table = select_temperatures(records)
    write_parquet(table, out_table, job, sort_by=["geometry", "tau"])
    log.info("temperature selection:\n%s", table.to_string(index=False))
    return table


def validation_score(
    model: Any,
    spec: CellSpec,
    query: tuple[np.ndarray, np.ndarray],
    gallery: tuple[np.ndarray, np.ndarray],
    ks: list[int],
    aggregation: str,
) -> dict[str, float]:
    """mAP per level on the tuning query/gallery (features, labels) under the dataset's
    registered ``aggregation``, and their hierarchy mean (the score τ is chosen by)."""
    (query_x, query_y), (gallery_x, gallery_y) = query, gallery
    frame = evaluate(
        embed(model, query_x),
        embed(model, gallery_x),
        query_y,
        gallery_y,
        ks=tuple(ks),
        **head_ranking(model, spec, DEFAULT_DISTANCE_CLIP),
    )
    return hierarchy_scores(summarise(frame, query_y, aggregation))


def tune_temperatures(
    dataset: str,
    runs: Sequence[Mapping[str, str]],
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    out_scores: Sequence[str | Path],
    job: JobContext,
    *,
    aggregation: str,
) -> list[dict[str, Any]]:
    """A dataset's tuning runs (``runs``: geometry and τ each), Taxonomy-SupCon on
    tuning/train, trained as one bundle and each scored on validation only under the dataset's
    registered ``aggregation``; one score file per run (``out_scores``, in the same order)."""
    tuning = config["tuning"]
    specs = [
        cell_spec(
            dataset,
            run["geometry"],
            SUPCON,
            tuning["seed"],
            config,
            tau=float(run["tau"]),
            epochs=tuning["epochs"],
        )
        for run in runs
    ]
    (x, y), query, gallery = role_arrays(
        features, splits, [("tuning", "train"), ("tuning", "query"), ("tuning", "gallery")]
    )
    results = train_bundle(x, y, specs, device=config_device(config))
    ks = config["evaluation"]["recall_ks"]
    records = []
    for spec, result, out_score in zip(specs, results, out_scores, strict=True):
        scores = validation_score(result.model, spec, query, gallery, ks, aggregation)
        # A level without valid validation queries has no mAP: null in JSON, NaN when read back.
        finite = {key: (value if math.isfinite(value) else None) for key, value in scores.items()}
        record = {"dataset": dataset, "geometry": spec.geometry, "tau": spec.tau, "seed": spec.seed}
        record |= {"epochs": spec.epochs, "aggregation": aggregation, **finite}
        write_json(record, out_score, job)
        log.info("%s tuning %s tau %s: %s", dataset, spec.geometry, spec.tau, scores)
        records.append(record)
    return records


def _hierarchy_score(
    model: Any,
    query: tuple[np.ndarray, np.ndarray],
    gallery: tuple[np.ndarray, np.ndarray],
    aggregation: str,
    ks: list[int],
) -> float:
    """Validation mean hierarchy mAP (Euclidean) under a dataset's registered aggregation."""
    frame = evaluate(
        embed(model, query[0]),
        embed(model, gallery[0]),
        query[1],
        gallery[1],
        geometry=GEOMETRY_NAMES[EUCLIDEAN],
        ks=tuple(ks),
    )
    return hierarchy_scores(summarise(frame, query[1], aggregation))["score"]


def select_semantic_duration(
    dataset: str,
    arm: str,
    features: str | Path,
    splits: str | Path,
    taxonomies: tuple[str | Path, str | Path],
    config: dict[str, Any],
    out_json: str | Path,
    job: JobContext,
    *,
    aggregation: str,
) -> dict[str, Any]:
    """Choose a semantic-control arm's epochs on development data only, scored under the
    dataset's registered ``aggregation``.

    The arm trains on ``tuning/train`` (its own labels: true, or the shuffled taxonomy's) up to
    ``max_epochs`` and is scored after every epoch on the tuning query/gallery with the TRUE
    taxonomy; the best epoch wins, ties to the earlier.
    """
    chosen = semantic_arm(config, dataset, arm)
    block = config["datasets"][dataset]["controls"]["semantic"]
    (x, y), query, gallery = role_arrays(
        features, splits, [("tuning", "train"), ("tuning", "query"), ("tuning", "gallery")]
    )
    taxonomy, shuffled = (pd.read_parquet(path) for path in taxonomies)
    spec = semantic_spec(config, dataset, chosen, config["tuning"]["seed"], block["max_epochs"])
    ks = config["evaluation"]["recall_ks"]
    scores: list[float] = []

    def score(epoch: int, model: Any) -> dict[str, float]:
        scores.append(_hierarchy_score(model, query, gallery, aggregation, ks))
        return {"validation_score": scores[-1]}

    labels = training_labels(y, chosen, taxonomy, shuffled)
    train_cell(x, labels, spec, on_epoch=score, device=config_device(config))
    epochs = best_epoch(scores)
    record = {
        "dataset": dataset,
        "arm": arm,
        "epochs": epochs,
        "aggregation": aggregation,
        "seed": spec.seed,
        "scores": [value if math.isfinite(value) else None for value in scores],
    }
    write_json(record, out_json, job)
    log.info("%s semantic arm %s: best epoch %d of %d", dataset, arm, epochs, len(scores))
    return record


def select_outer_durations(
    dataset: str,
    outer: str,
    features: str | Path,
    splits: str | Path,
    selection: str | Path | None,
    config: dict[str, Any],
    out_json: str | Path,
    job: JobContext,
    *,
    aggregation: str,
) -> dict[str, Any]:
    """Choose every outer arm's epochs on ``outer``'s validation side: each arm (the tuning
    seed, the factorial's recipe and τ) trains on ``<outer>-tuning/train`` up to
    ``controls.outer.max_epochs`` and is scored after every epoch on its query/gallery (mean
    hierarchy mAP under ``aggregation``, in the arm's own geometry); the best epoch wins, ties
    to the earlier."""
    tuning = f"{outer}-{TUNING_SUFFIX}"
    (x, y), query, gallery = role_arrays(
        features, splits, [(tuning, "train"), (tuning, "query"), (tuning, "gallery")]
    )
    max_epochs = int(outer_block(config, dataset)["max_epochs"])
    seed, ks = int(config["tuning"]["seed"]), config["evaluation"]["recall_ks"]
    arms = {}
    for geometry, loss in outer_arms(config, dataset):
        spec = final_spec(dataset, geometry, loss, seed, config, selection, epochs=max_epochs)
        scores: list[float] = []

        def score(epoch: int, model: Any, spec: Any = spec, scores: list = scores) -> dict:
            scores.append(validation_score(model, spec, query, gallery, ks, aggregation)["score"])
            return {"validation_score": scores[-1]}

        train_cell(x, y, spec, on_epoch=score, device=config_device(config))
        arm = f"{geometry}_{loss}"
        arms[arm] = {
            "epochs": best_epoch(scores),
            "scores": [value if math.isfinite(value) else None for value in scores],
        }
        log.info(
            "%s %s %s: best epoch %d of %d", dataset, outer, arm, arms[arm]["epochs"], max_epochs
        )
    record = {
        "dataset": dataset,
        "outer": outer,
        "validation": tuning,
        "aggregation": aggregation,
        "seed": seed,
        "arms": arms,
    }
    write_json(record, out_json, job)
    return record
