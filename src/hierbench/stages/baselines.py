"""Baselines stage: the PCA projection of the frozen features, fitted on development images.

Only ``final/train`` rows of the development features reach the fit; the sealed test features
live in an artifact this stage never reads.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hierbench.baselines.pca import fit_pca, pca_writer
from hierbench.features.store import role_data
from hierbench.provenance.artifacts import publish, write_json
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)


def fit_pca_on_development(
    dataset: str,
    features: str | Path,
    splits: str | Path,
    dimensions: int,
    outputs: dict[str, str | Path],
    job: JobContext,
) -> dict[str, Any]:
    """Fit PCA to ``dimensions`` on the ``final/train`` features; write projection and record."""
    x, _ = role_data(features, splits, "final", "train")
    projection = fit_pca(x, dimensions)
    publish(outputs["model"], pca_writer(projection), job)
    explained = float(projection.explained_variance_ratio.sum())
    record = {
        "dataset": dataset,
        "dimensions": projection.dimensions,
        "fit_split": "final/train",
        "fit_examples": len(x),
        "feature_dim": int(x.shape[1]),
        "explained_variance": explained,
    }
    write_json(record, outputs["record"], job)
    log.info("%s PCA-%d on %d images: %.4f of the variance", dataset, dimensions, len(x), explained)
    return record
