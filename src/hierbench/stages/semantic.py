"""Semantic-control training: an arm's Euclidean SupCon cells (one per seed, one bundle) on the
arm's labels, for its chosen epochs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.controls.semantic import semantic_arm, semantic_spec, training_labels
from hierbench.features.store import role_data
from hierbench.protocol import SEMANTIC_CONTROL
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_bundle_and_publish


def train_semantic_bundle(
    dataset: str,
    arm: str,
    cells: Mapping[str, Mapping[str, Any]],
    features: str | Path,
    splits: str | Path,
    taxonomies: tuple[str | Path, str | Path],
    duration: str | Path,
    config: dict[str, Any],
    outputs: Mapping[str, str | Path],
    job: JobContext,
) -> list[dict[str, Any]]:
    """Train an arm's semantic-control cells (``cells``: each seed's, by output key) as one
    bundle on ``final/train`` for the arm's chosen epochs, on the arm's labels (the shuffled
    taxonomy's for the shuffle arm); each cell's files as a cell alone writes them."""
    chosen = semantic_arm(config, dataset, arm)
    epochs = int(json.loads(Path(duration).read_text(encoding="utf-8"))["epochs"])
    members = [
        (
            key,
            semantic_spec(config, dataset, chosen, int(cell["seed"]), epochs),
            f"{arm}-{cell['seed']}",
        )
        for key, cell in cells.items()
    ]
    x, y = role_data(features, splits, "final", "train")
    taxonomy, shuffled = (pd.read_parquet(path) for path in taxonomies)
    labels = training_labels(y, chosen, taxonomy, shuffled)
    return train_bundle_and_publish(
        dataset, SEMANTIC_CONTROL, members, x, labels, outputs, job, config=config
    )
