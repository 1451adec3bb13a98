"""Semantic-control training: Euclidean SupCon cells on an arm's labels, for its chosen epochs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.controls.semantic import semantic_arm, semantic_spec, training_labels
from hierbench.features.store import role_data
from hierbench.provenance.records import JobContext
from hierbench.training.publishing import train_and_publish


def train_semantic_cell(
    dataset: str,
    arm: str,
    seed: int,
    features: str | Path,
    splits: str | Path,
    taxonomies: tuple[str | Path, str | Path],
    duration: str | Path,
    config: dict[str, Any],
    outputs: dict[str, str | Path],
    job: JobContext,
) -> dict[str, Any]:
    """Train one semantic-control cell on ``final/train`` for its arm's chosen epochs, on the
    arm's labels (the shuffled taxonomy's for the shuffle arm)."""
    chosen = semantic_arm(config, dataset, arm)
    epochs = int(json.loads(Path(duration).read_text(encoding="utf-8"))["epochs"])
    spec = semantic_spec(config, dataset, chosen, seed, epochs)
    x, y = role_data(features, splits, "final", "train")
    taxonomy, shuffled = (pd.read_parquet(path) for path in taxonomies)
    labels = training_labels(y, chosen, taxonomy, shuffled)
    return train_and_publish(
        dataset, spec, x, labels, outputs, job, label=f"{arm}-{seed}", config=config
    )
