"""PCA of the frozen features: fitted on development images only, then L2-normalised, Euclidean.

The fit is float64: the features are centred on their mean and the top-``k`` right singular
vectors of the centred matrix are the components. A singular vector's sign is arbitrary, so each
component is flipped until its largest-magnitude loading is positive: the same features always
give the same bytes. Shapes: features (n, D), mean (D,), components (k, D).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

NORM_FLOOR = 1e-12


class PcaError(ValueError):
    """PCA cannot be fitted or applied as asked; the message gives the numbers."""


@dataclass(frozen=True)
class PcaProjection:
    """A fitted projection: the centring mean, the orthonormal components, the variance share
    each component explains."""

    mean: np.ndarray
    components: np.ndarray
    explained_variance_ratio: np.ndarray

    @property
    def dimensions(self) -> int:
        """Output dimensions k."""
        return int(self.components.shape[0])


def fit_pca(features: np.ndarray, dimensions: int) -> PcaProjection:
    """The top-``dimensions`` principal components of ``features`` (n, D), signs fixed."""
    n, width = features.shape
    if dimensions < 1 or dimensions > min(n - 1, width):
        raise PcaError(
            f"PCA to {dimensions} dimensions needs 1 <= k <= min(n - 1, D) = "
            f"{min(n - 1, width)} ({n} development images, {width}-D features)"
        )
    x = np.asarray(features, dtype=np.float64)
    mean = x.mean(axis=0)
    _, singular, vt = np.linalg.svd(x - mean, full_matrices=False)
    components = vt[:dimensions]
    largest = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(dimensions), largest])
    variance = singular**2
    ratio = variance[:dimensions] / variance.sum() if variance.sum() > 0 else variance[:dimensions]
    return PcaProjection(mean, components * signs[:, None], ratio)


def project(projection: PcaProjection, features: np.ndarray) -> np.ndarray:
    """Features (n, D) as L2-normalised (n, k) float32 embeddings."""
    if features.shape[1] != projection.mean.shape[0]:
        raise PcaError(
            f"features are {features.shape[1]}-D but the PCA was fitted on "
            f"{projection.mean.shape[0]}-D features"
        )
    scores = (np.asarray(features, dtype=np.float64) - projection.mean) @ projection.components.T
    norms = np.linalg.norm(scores, axis=1, keepdims=True)
    return (scores / np.maximum(norms, NORM_FLOOR)).astype(np.float32)


def pca_writer(projection: PcaProjection) -> Callable[[Path], None]:
    """A writer of the projection as safetensors (float64 tensors), for publishing."""
    tensors = {
        "mean": torch.from_numpy(np.ascontiguousarray(projection.mean)),
        "components": torch.from_numpy(np.ascontiguousarray(projection.components)),
        "explained_variance_ratio": torch.from_numpy(
            np.ascontiguousarray(projection.explained_variance_ratio)
        ),
    }
    metadata = {"dimensions": json.dumps(projection.dimensions)}
    return lambda path: save_file(tensors, str(path), metadata=metadata)


def load_pca(path: str | Path) -> PcaProjection:
    """A projection saved by ``pca_writer``."""
    tensors = load_file(str(path))
    missing = {"mean", "components", "explained_variance_ratio"} - set(tensors)
    if missing:
        raise PcaError(f"{path} is not a PCA projection: no {sorted(missing)}")
    return PcaProjection(
        tensors["mean"].numpy(),
        tensors["components"].numpy(),
        tensors["explained_variance_ratio"].numpy(),
    )
