"""Taxonomic relations between items and the strict positive sets built on them.

For items with (leaf, middle, high) labels the relation of a pair is exactly one of
c (same leaf), m (same middle, different leaf), h (same high, different middle), o (other).
The strict positives of a query at a level are the items in that level's relation:
leaf → c, middle → m, high → h. Losses, metrics and split checks all use these definitions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

LEVELS: tuple[str, ...] = ("leaf", "middle", "high")
LABEL_COLUMNS: tuple[str, ...] = ("leaf_code", "middle_code", "high_code")
RELATION_CODES = {"c": 0, "m": 1, "h": 2, "o": 3}


def strict_relation_masks(same_leaf: Any, same_middle: Any, same_high: Any) -> tuple[Any, Any, Any]:
    """The (c, m, h) relation masks from per-level "same label" masks (NumPy or torch booleans).

    c = same leaf; m = same middle, different leaf; h = same high, different middle and leaf.
    Everything else is o. This is the one definition every caller builds on.
    """
    return same_leaf, same_middle & ~same_leaf, same_high & ~same_middle & ~same_leaf


def strict_positive_counts(query_labels: np.ndarray, gallery_labels: np.ndarray) -> np.ndarray:
    """Number of strict positives in the gallery per query and level, shape (n_queries, 3).

    Uses group counts, not a pairwise matrix, so it is linear in the data size. It relies on
    the labels forming a tree (a leaf has one middle, a middle one high), which the taxonomy
    stage guarantees.
    """
    counts = []
    for level in range(3):
        per_group = pd.Series(gallery_labels[:, level]).value_counts()
        counts.append(pd.Series(query_labels[:, level]).map(per_group).fillna(0).to_numpy(int))
    leaf, middle, high = counts
    return np.stack([leaf, middle - leaf, high - middle], axis=1)


def valid_query_counts(query_labels: np.ndarray, gallery_labels: np.ndarray) -> dict[str, int]:
    """Queries with at least one strict positive in the gallery, per level."""
    valid = strict_positive_counts(query_labels, gallery_labels) > 0
    return {level: int(valid[:, index].sum()) for index, level in enumerate(LEVELS)}
