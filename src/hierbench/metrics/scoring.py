"""Scoring embeddings on query/gallery draws with the metric engine: the one path every
evaluation takes, sealed (``qg-<seed>`` draws of the sealed test) or not (an outer split's
``outer-k-qg-<seed>`` draws of development images).

Scores are per query (``metrics.evaluate``) and aggregated both ways (per query and per group),
each row labelled with its draw's seed and aggregation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hierbench.metrics import check_ot_ks, evaluate, summarise
from hierbench.metrics.rank_metric import rank_metrics
from hierbench.protocol import AGGREGATIONS
from hierbench.relations import LEVELS
from hierbench.splits.construction import role_ids, rows_for_ids

OT_KS_KEY = "evaluation.ot_ks"
SEALED_DRAWS = "qg"


def score_draws(
    embeddings: np.ndarray,
    labels: np.ndarray,
    frame_ids: pd.Series,
    split_table: pd.DataFrame,
    qg_seeds: list[int],
    metric: dict[str, Any],
    prefix: str = SEALED_DRAWS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-query rows and summaries of every query/gallery draw ``<prefix>-<seed>``."""
    per_query, summaries = [], []
    for qg_seed in qg_seeds:
        split = f"{prefix}-{qg_seed}"
        queries = rows_for_ids(frame_ids, role_ids(split_table, split, "query"), f"{split}/query")
        gallery = rows_for_ids(
            frame_ids, role_ids(split_table, split, "gallery"), f"{split}/gallery"
        )
        check_ot_ks(metric["ot_ks"], len(gallery), f"config key '{OT_KS_KEY}' ({split}/gallery)")
        frame = evaluate(
            embeddings[queries], embeddings[gallery], labels[queries], labels[gallery], **metric
        )
        for name in AGGREGATIONS:
            summary = summarise(frame, labels[queries], name)
            summaries.append(summary.assign(qg_seed=qg_seed, aggregation=name))
        frame.insert(0, "image_id", frame_ids.to_numpy()[queries][frame["query"].to_numpy()])
        frame.insert(3, "group", query_groups(frame, labels[queries]))
        per_query.append(frame.assign(qg_seed=qg_seed))
    return pd.concat(per_query, ignore_index=True), pd.concat(summaries, ignore_index=True)


def query_groups(frame: pd.DataFrame, query_labels: np.ndarray) -> np.ndarray:
    """Each per-query row's group under group-macro: the query's label at the row's level
    (leaf, middle or high code), or the query itself at level ``all`` (its own group), so the
    effects' bootstrap can recompute the aggregation from these rows alone."""
    queries = frame["query"].to_numpy()
    level = frame["level"].to_numpy()
    groups = queries.astype(np.int64).copy()
    for index, name in enumerate(LEVELS):
        rows = level == name
        groups[rows] = np.asarray(query_labels)[queries[rows], index]
    return groups


def metric_settings(
    config: dict[str, Any], geometry: str, curvature: float | None
) -> dict[str, Any]:
    """The metric engine's settings from the evaluation config."""
    return {
        "geometry": geometry,
        "curvature": curvature,
        **ranking_settings(config),
        "distance_clip": config["training"]["distance_clip_test"],
    }


def ranking_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The metric engine's settings that do not concern the distance: the cut-offs, chunk
    size and the config's metric plugins (all that a ranking by ``pair_scores`` takes besides
    its scores)."""
    return {
        "ks": tuple(config["evaluation"]["recall_ks"]),
        "ot_ks": tuple(config["evaluation"]["ot_ks"]),
        "chunk_size": config["evaluation"]["query_chunk"],
        "rank_metrics": rank_metrics(config),
    }


def qg_seeds(config: dict[str, Any], dataset: str) -> list[int]:
    """The seeds of a dataset's query/gallery draws (the sealed ones and the outer splits')."""
    return config["datasets"][dataset]["splits"]["query_gallery"]["seeds"]


def l2_normalised(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (the frozen baseline's embeddings)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
