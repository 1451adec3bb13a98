"""Ranking by a score other than a distance (``evaluate(..., pair_scores=...)``): the callable's
contract and its checks. Torch-free: the angle scores that use it live in ``metrics.angles``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

DEFAULT_GEOMETRY = "euclidean"
DEFAULT_DISTANCE_CLIP = 1e6

# A ranking score other than a distance: (query rows (n, d), distinct gallery rows (m, d)) ->
# (n, m) finite real scores, lower ranks first (e.g. ``metrics.angles.exterior_angle_scores``).
PairScores = Callable[[np.ndarray, np.ndarray], np.ndarray]


def check_no_distance_settings(
    geometry: str, curvature: float | None, distance_clip: float
) -> None:
    """Raise when distance settings come with ``pair_scores``, which replaces the distance."""
    defaults = (DEFAULT_GEOMETRY, None, DEFAULT_DISTANCE_CLIP)
    if (geometry, curvature, distance_clip) != defaults:
        raise ValueError(
            "pair_scores replaces the distance: leave geometry, curvature and distance_clip at "
            f"their defaults, got geometry={geometry!r}, curvature={curvature!r}, "
            f"distance_clip={distance_clip!r}"
        )


def checked_pair_scores(
    pair_scores: PairScores,
    gallery: tuple[np.ndarray, np.ndarray | None],
    queries: np.ndarray,
) -> np.ndarray:
    """``pair_scores`` of a chunk of queries against the distinct gallery rows, checked to be
    finite reals of shape (queries, distinct rows), as float64 against every gallery row."""
    unique, inverse = gallery
    scores = np.asarray(pair_scores(queries, unique))
    expected = (len(queries), len(unique))
    if scores.shape != expected or scores.dtype.kind not in "fiu":
        raise ValueError(
            f"pair_scores must return a real {expected} matrix, got {scores.dtype} {scores.shape}"
        )
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        raise ValueError("pair_scores returned a non-finite score; give every pair a finite one")
    return scores if inverse is None else scores[:, inverse]


def score_rows(scores: np.ndarray, queries: np.ndarray, rows: slice) -> np.ndarray:
    """A block of a chunk's precomputed scores (the queries are not needed again)."""
    return scores[rows]
