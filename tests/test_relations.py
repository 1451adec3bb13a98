"""Relations and strict positives against a plain loop."""

from __future__ import annotations

import numpy as np

from hierbench.relations import (
    RELATION_CODES,
    strict_positive_counts,
    strict_relation_masks,
    valid_query_counts,
)


def _tree_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random labels that form a tree: leaf -> middle -> high."""
    leaf = rng.integers(0, 12, n)
    middle = leaf // 3
    high = middle // 2
    return np.stack([leaf, middle, high], axis=1)


def _relation(a: np.ndarray, b: np.ndarray) -> int:
    if a[0] == b[0]:
        return 0
    if a[1] == b[1]:
        return 1
    if a[2] == b[2]:
        return 2
    return 3


def relation_matrix(labels_a: np.ndarray, labels_b: np.ndarray) -> np.ndarray:
    """Relation codes (0 c, 1 m, 2 h, 3 o) of every pair, from ``strict_relation_masks``."""
    same = [labels_a[:, None, level] == labels_b[None, :, level] for level in range(3)]
    relation = np.full(same[0].shape, RELATION_CODES["o"], dtype=np.int8)
    for name, mask in zip(("c", "m", "h"), strict_relation_masks(*same), strict=True):
        relation[mask] = RELATION_CODES[name]
    return relation


def test_strict_relation_masks_match_a_loop():
    rng = np.random.default_rng(0)
    a, b = _tree_labels(rng, 30), _tree_labels(rng, 25)
    expected = np.array([[_relation(x, y) for y in b] for x in a])
    np.testing.assert_array_equal(relation_matrix(a, b), expected)


def test_strict_positive_counts_match_a_loop():
    rng = np.random.default_rng(1)
    queries, gallery = _tree_labels(rng, 40), _tree_labels(rng, 60)
    relation = relation_matrix(queries, gallery)
    expected = np.stack([(relation == level).sum(axis=1) for level in range(3)], axis=1)
    np.testing.assert_array_equal(strict_positive_counts(queries, gallery), expected)


def test_valid_query_counts_hand_example():
    gallery = np.array([[0, 0, 0], [1, 0, 0], [5, 3, 1]])
    queries = np.array([[0, 0, 0], [2, 1, 0], [9, 9, 9], [6, 3, 1]])
    # query 0: leaf 0 in gallery, middle 0 has leaf 1 (strict m), high 0 only via middle 0 -> no h
    # query 1: no leaf 2, no middle 1 member, high 0 via middle 0 -> h
    # query 2: nothing; query 3: leaf 6 absent, middle 3 via leaf 5 -> m, no other middle in high 1
    assert valid_query_counts(queries, gallery) == {"leaf": 1, "middle": 2, "high": 1}
