"""Distances the metric engine ranks by: Euclidean, the geodesic distance of
``geoopt.PoincareBall(c)``, or that of the hyperboloid of curvature −c (a Lorentz head's
learned curvature, points given by their space components), in float64 from one BLAS product,
sanitised and clipped."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from hierbench.protocol import EUCLIDEAN, HEAD_NAMES, LORENTZ, POINCARE

GEOMETRIES: tuple[str, ...] = (HEAD_NAMES[EUCLIDEAN], HEAD_NAMES[POINCARE], HEAD_NAMES[LORENTZ])
# What the curvature of each curved geometry is, for the error that asks for one.
_CURVATURE_OF = {
    HEAD_NAMES[POINCARE]: "the ball's curvature, e.g. curvature=0.1",
    HEAD_NAMES[LORENTZ]: "the hyperboloid's (learned) curvature c of its head",
}


class Metric(NamedTuple):
    """Validated distance settings."""

    geometry: str
    curvature: float | None
    clip: float


class Gallery(NamedTuple):
    """Unique gallery rows as [−2·y, 1, ‖y‖²]ᵀ, their ‖y‖² and the map back to all rows."""

    augmented_t: np.ndarray
    sq_norm: np.ndarray
    inverse: np.ndarray | None


def as_embeddings(
    first: Any, second: Any, names: tuple[str, str] = ("query_emb", "gallery_emb")
) -> tuple[np.ndarray, np.ndarray]:
    """Both embedding matrices as float64 NumPy arrays of equal width."""
    arrays = []
    for value, name in zip((first, second), names, strict=True):
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
            raise ValueError(f"{name} must be a non-empty (n, d) array, got shape {array.shape}")
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
        arrays.append(np.ascontiguousarray(array, dtype=np.float64))
    if arrays[0].shape[1] != arrays[1].shape[1]:
        raise ValueError(
            f"{names[0]} has dimension {arrays[0].shape[1]} but {names[1]} has "
            f"{arrays[1].shape[1]}; embed both with the same model"
        )
    return arrays[0], arrays[1]


def check_metric(geometry: str, curvature: float | None, distance_clip: float) -> Metric:
    """Validated geometry, curvature and clip value."""
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
    clip = float(distance_clip)
    if not np.isfinite(clip) or clip <= 0:
        raise ValueError(f"distance_clip must be a finite positive number, got {distance_clip!r}")
    if geometry == HEAD_NAMES[EUCLIDEAN]:
        if curvature is not None:
            raise ValueError(
                "curvature is only used with geometry='poincare' or 'lorentz'; pass None"
            )
        return Metric(geometry, None, clip)
    if curvature is None:
        raise ValueError(f"geometry={geometry!r} needs {_CURVATURE_OF[geometry]}")
    c = float(curvature)
    if not np.isfinite(c) or c <= 0:
        raise ValueError(f"curvature must be a finite positive number, got {curvature!r}")
    return Metric(geometry, c, clip)


def unique_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The bitwise distinct rows of a C-contiguous matrix and the map back to every row (None
    when all rows are distinct), so that identical rows always get identical scores."""
    rows = matrix.view(np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return (matrix, None) if len(first) == len(matrix) else (matrix[first], inverse)


def prepare_gallery(gallery: np.ndarray) -> Gallery:
    """Deduplicate gallery rows so bitwise identical embeddings get identical distances."""
    unique, inverse = unique_rows(gallery)
    sq_norm = np.einsum("ij,ij->i", unique, unique)
    augmented_t = np.concatenate([-2.0 * unique.T, np.ones((1, len(unique))), sq_norm[None]])
    return Gallery(np.ascontiguousarray(augmented_t), sq_norm, inverse)


def distance_block(queries: np.ndarray, gallery: Gallery, metric: Metric) -> np.ndarray:
    """Sanitised float64 distances from each query to each gallery row."""
    return sanitised_distances(squared_distances(queries, gallery), queries, gallery, metric)


def squared_distances(queries: np.ndarray, gallery: Gallery) -> np.ndarray:
    """‖x − y‖² (at least 0) to each unique gallery row as one BLAS product.

    [x, ‖x‖², 1]·[−2y, 1, ‖y‖²] = ‖x‖² + ‖y‖² − 2⟨x, y⟩, so the absolute error is about
    1e-16·(‖x‖² + ‖y‖²).
    """
    sq_norm = np.einsum("ij,ij->i", queries, queries)[:, None]
    augmented = np.concatenate([queries, sq_norm, np.ones_like(sq_norm)], axis=1)
    squared = augmented @ gallery.augmented_t
    return np.maximum(squared, 0.0, out=squared)


def sanitised_distances(
    squared: np.ndarray, queries: np.ndarray, gallery: Gallery, metric: Metric
) -> np.ndarray:
    """Sanitised distances (queries, all gallery rows), in place on the squared distances."""
    if metric.geometry == HEAD_NAMES[EUCLIDEAN]:
        dist = np.sqrt(squared, out=squared)
    else:
        query_sq = np.einsum("ij,ij->i", queries, queries)
        curved = _poincare if metric.geometry == HEAD_NAMES[POINCARE] else _lorentz
        dist = curved(squared, query_sq, gallery.sq_norm, metric.curvature)
    np.fmin(dist, metric.clip, out=dist)  # NaN and +inf become the clip value; all are ≥ 0
    if gallery.inverse is not None:
        dist = dist[:, gallery.inverse]
    return dist


def _poincare(squared: np.ndarray, x_sq: np.ndarray, y_sq: np.ndarray, c: float) -> np.ndarray:
    """Poincaré-ball distance (2/√c)·artanh(√c·‖(−x)⊕_c y‖) from ‖x − y‖², in place.

    Uses c·‖(−x)⊕_c y‖² = ‖x − y‖² / (‖x − y‖² + (1 − c‖x‖²)(1 − c‖y‖²)/c) (Ungar's identity
    rearranged): inside the ball both terms of the denominator are non-negative.
    """
    denominator = np.multiply.outer((1.0 - c * x_sq) / c, 1.0 - c * y_sq)
    denominator += squared
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(squared, denominator, out=squared)
        np.sqrt(squared, out=squared)  # NaN outside the ball, where the factors can be < 0
        np.arctanh(squared, out=squared)  # inf on the boundary, NaN beyond it
    squared *= 2.0 / np.sqrt(c)
    return squared


def _lorentz(squared: np.ndarray, x_sq: np.ndarray, y_sq: np.ndarray, c: float) -> np.ndarray:
    """Hyperboloid distance (1/√c)·acosh(−c⟨x, y⟩_L) from ‖x − y‖² of space components, in place.

    −c⟨x, y⟩_L − 1 = (c/2)(‖x − y‖² − (x_time − y_time)²), x_time = √(1/c + ‖x‖²), clamped at
    0 (the acosh argument at 1), and acosh(1 + u) = log1p(u + √(u(u + 2))): the formula of
    ``geometry.lorentz_distance``, accurate for near points.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # inf − inf is NaN, for the clip
        delta = np.subtract.outer(np.sqrt(1.0 / c + x_sq), np.sqrt(1.0 / c + y_sq))
        delta *= delta
        squared -= delta
        squared *= c / 2.0
        np.maximum(squared, 0.0, out=squared)
        np.multiply(squared + 2.0, squared, out=delta)
        np.sqrt(delta, out=delta)
        delta += squared
        np.log1p(delta, out=squared)
    squared /= np.sqrt(c)
    return squared


def pairwise_distances(
    a: Any,
    b: Any,
    *,
    geometry: str = "euclidean",
    curvature: float | None = None,
    distance_clip: float = 1e6,
) -> np.ndarray:
    """Distance matrix (len(a), len(b)) in float64, exactly as :func:`evaluate` ranks by."""
    left, right = as_embeddings(a, b, names=("a", "b"))
    metric = check_metric(geometry, curvature, distance_clip)
    return distance_block(left, prepare_gallery(right), metric)
