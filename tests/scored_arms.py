"""Per-query rows and evaluation summaries of the four factorial arms, scored by the pipeline's
own scoring code on two draws of 60 items: a small, real input for the effects' tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierbench.metrics.scoring import metric_settings, score_draws

ARMS = {"E_R": ("E", "R"), "H_R": ("H", "R"), "E_S": ("E", "S"), "H_S": ("H", "S")}
SEEDS, DRAWS = (1, 2, 3), (7, 8)


def scored_arms() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-query rows and summaries of every arm and seed on two draws of 60 items, the H_S
    arm's embeddings nearer its labels than E_R's."""
    rng = np.random.default_rng(0)
    leaf = rng.integers(0, 6, size=60)
    labels = np.stack([leaf, leaf // 2, leaf // 4], axis=1)
    ids = pd.Series([f"img{i:02d}" for i in range(60)])
    sealed = pd.concat(
        [
            pd.DataFrame(
                {
                    "split": f"qg-{d}",
                    "role": np.where(order < 20, "query", "gallery"),
                    "image_id": ids,
                }
            )
            for d, order in ((d, rng.permutation(60)) for d in DRAWS)
        ]
    )
    config = {
        "evaluation": {"recall_ks": [1], "ot_ks": [5], "query_chunk": 16},
        "training": {"distance_clip_test": 1e6},
    }
    metric = metric_settings(config, "euclidean", None)
    per_query, summaries = [], []
    for pull, (arm, (geometry, loss)) in enumerate(ARMS.items()):
        for seed in SEEDS:
            points = rng.normal(size=(60, 4)) + pull * np.eye(4)[leaf % 4]
            rows, summary = score_draws(points, labels, ids, sealed, list(DRAWS), metric)
            identity = {
                "dataset": "toy",
                "arm": arm,
                "geometry": geometry,
                "loss": loss,
                "seed": seed,
            }
            per_query.append(rows.assign(**identity))
            summaries.append(summary.assign(**identity))
    return pd.concat(per_query, ignore_index=True), pd.concat(summaries, ignore_index=True)
