"""What a retrieval gallery shows (hierbench.metrics.top_ranked): the queries' fixed rule, the
top-ranked items in the engine's order, and the deepest level each shares with its query."""

from __future__ import annotations

import numpy as np
import pytest

from hierbench.metrics import evaluate
from hierbench.metrics.top_ranked import (
    SHARED_LEVELS,
    picture_queries,
    ranked_gallery,
    shared_levels,
    top_ranked,
)


def _labels(rng: np.random.Generator, n: int) -> np.ndarray:
    """A tree of 12 leaves, 6 middle groups, 3 high groups: leaf l is in middle l // 2, in
    high l // 4."""
    leaf = rng.integers(0, 12, n)
    return np.stack([leaf, leaf // 2, leaf // 4], axis=1)


def test_queries_are_spread_over_the_high_groups_and_repeat_with_the_seed():
    labels = _labels(np.random.default_rng(0), 60)
    chosen = picture_queries(labels, 3, seed=42)
    assert len(chosen) == 3 and len(set(chosen)) == 3
    assert sorted(labels[chosen, 2]) == [0, 1, 2]  # one query of each high group
    assert np.array_equal(picture_queries(labels, 3, seed=42), chosen)
    others = {tuple(picture_queries(labels, 3, seed=seed)) for seed in range(10)}
    assert len(others) > 1  # the seed decides which


def test_more_queries_than_high_groups_go_round_the_groups_again():
    labels = _labels(np.random.default_rng(1), 60)
    chosen = picture_queries(labels, 7, seed=3)
    assert len(set(chosen)) == 7
    assert np.array_equal(np.bincount(labels[chosen, 2], minlength=3), [3, 2, 2])
    assert set(labels[chosen[:3], 2]) == {0, 1, 2}  # each group once before any twice


def test_asking_for_more_queries_than_there_are_gives_them_all():
    labels = _labels(np.random.default_rng(2), 5)
    assert sorted(picture_queries(labels, 9, seed=0)) == list(range(5))
    with pytest.raises(ValueError, match="positive int"):
        picture_queries(labels, 0, seed=0)


def test_top_ranked_is_the_nearest_first_with_ties_by_gallery_index():
    distances = np.array([[0.5, 0.1, 0.5, 0.2, 0.1], [3.0, 2.0, 1.0, 0.0, 2.0]])
    assert top_ranked(distances, 4).tolist() == [[1, 4, 3, 0], [3, 2, 1, 4]]
    assert top_ranked(distances, 10).shape == (2, 5)


def test_the_top_ranked_items_are_those_the_engine_counts_in_recall_at_k():
    rng = np.random.default_rng(4)
    queries, gallery = rng.normal(size=(8, 5)), rng.normal(size=(40, 5))
    query_labels, gallery_labels = _labels(rng, 8), _labels(rng, 40)
    metric = {"geometry": "euclidean", "curvature": None, "distance_clip": 1e6}
    top = ranked_gallery(queries, gallery, metric, 5)
    leaf_hits = (gallery_labels[top, 0] == query_labels[:, None, 0]).any(axis=1)
    scores = evaluate(queries, gallery, query_labels, gallery_labels, ks=(5,), **metric)
    leaf = scores[scores["level"] == "leaf"].set_index("query")
    for query in leaf.index:  # queries with a strict positive at the leaf level
        assert leaf.loc[query, "r@5"] == float(leaf_hits[query]), query


def test_shared_levels_match_a_plain_loop():
    rng = np.random.default_rng(5)
    query, ranked = _labels(rng, 6), _labels(rng, 60).reshape(6, 10, 3)
    found = shared_levels(query, ranked)
    for q in range(6):
        for item in range(10):
            expected = "none"
            for level, name in enumerate(("leaf", "middle", "high")):
                if ranked[q, item, level] == query[q, level]:
                    expected = name
                    break
            assert SHARED_LEVELS[found[q, item]] == expected, (q, item)
    assert set(found.ravel()) == {0, 1, 2, 3}  # every kind of frame occurs in this draw


def test_shared_levels_reject_labels_of_the_wrong_shape():
    with pytest.raises(ValueError, match="ranked labels"):
        shared_levels(np.zeros((2, 3), int), np.zeros((2, 3), int))
