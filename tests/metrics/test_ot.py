"""OT@K, the optimal-transport hierarchy score, and its tree-referenced form ot_tree: a hand
example, a brute-force loop and scipy, the extremes, the frame."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

# scipy is pinned in requirements.lock (geoopt depends on it); it is the independent reference.
from scipy.stats import wasserstein_distance

from hierbench.metrics import (
    evaluate,
    group_macro,
    ideal_counts,
    ordinal_wasserstein,
    pairwise_distances,
    query_micro,
    top_k_counts,
    top_tree_counts,
    tree_wasserstein,
)

# The query has leaf 0 (middle 0, high 0) on the tree middle = leaf // 3, high = leaf // 6, so a
# gallery item of leaf 0 / 1 / 3 / 6 is in relation leaf / middle / high / other to it.
LEAF_OF_RELATION = (0, 1, 3, 6)
CURVATURE = 0.5


def _tree(leaves) -> np.ndarray:
    leaves = np.asarray(leaves)
    return np.stack([leaves, leaves // 3, leaves // 6], axis=1)


def _ranked(relations) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A query at 0 and a gallery on a line whose ranking lists ``relations`` in order."""
    gallery = np.zeros((len(relations), 2))
    gallery[:, 0] = np.arange(1, len(relations) + 1)
    gallery_labels = _tree([LEAF_OF_RELATION[r] for r in relations])
    return np.zeros((1, 2)), gallery, _tree([0]), gallery_labels


def _ot(relations, ks) -> dict[int, float]:
    """OT@K of a query whose ranking lists ``relations`` in order, from ``evaluate``."""
    frame = evaluate(*_ranked(relations), ot_ks=ks)
    row = frame[frame["level"] == "all"].iloc[0]
    return {k: float(row[f"ot@{k}"]) for k in ks}


# ------------------------------------------------------------------------- hand example

# Relations in rank order: middle, other, leaf, high, other, leaf, middle, other.
HAND = (1, 3, 0, 2, 3, 0, 1, 3)


def test_hand_example_histograms():
    # Positives (relation < 3) at ranks 0, 2, 3, 5, 6; the gallery holds 2 leaf, 2 middle, 1 high
    # and 3 other items.
    rows, ranks, levels = np.zeros(5, int), np.array([0, 2, 3, 5, 6]), np.array([1, 0, 2, 0, 1])
    counts = top_k_counts(rows, ranks, levels, 1, (4, 2, 6))
    assert counts[0].tolist() == [[1, 1, 1, 1], [0, 1, 0, 1], [2, 1, 1, 2]]
    totals = np.array([2, 2, 1, 3])
    assert ideal_counts(totals, 4).tolist() == [2, 2, 0, 0]
    assert ideal_counts(totals, 2).tolist() == [2, 0, 0, 0]
    assert ideal_counts(totals, 6).tolist() == [2, 2, 1, 1]
    assert ideal_counts(totals, 8).tolist() == [2, 2, 1, 3]


def test_hand_example_distances():
    # K=4: actual (1,1,1,1)/4, CDF .25 .5 .75; ideal (2,2,0,0)/4, CDF .5 1 1 -> .25+.5+.25 = 1
    # K=2: actual (0,1,0,1)/2, CDF 0 .5 .5; ideal (2,0,0,0)/2, CDF 1 1 1 -> 1+.5+.5 = 2
    # K=6: actual (2,1,1,2)/6, CDF 2/6 3/6 4/6; ideal (2,2,1,1)/6, CDF 2/6 4/6 5/6 -> 1/3
    # K=1: a middle item where a leaf item was available -> 1; K=8: the whole gallery -> 0
    assert _ot(HAND, (4, 2, 6, 1, 8)) == pytest.approx({4: 1.0, 2: 2.0, 6: 1 / 3, 1: 1.0, 8: 0.0})
    assert ordinal_wasserstein(np.array([1, 1, 1, 1]), np.array([2, 2, 0, 0])) == 1.0


def test_hand_example_agrees_with_scipy():
    for k, value in _ot(HAND, (1, 2, 4, 6, 8)).items():
        ideal = sorted(HAND)[:k]
        assert value == pytest.approx(wasserstein_distance(HAND[:k], ideal), abs=1e-15)


# -------------------------------------------------------------------- against scipy


def _scipy_ot(queries, gallery, query_labels, gallery_labels, ks, **metric) -> np.ndarray:
    """OT@K per query from a per-query loop: stable ranking, relations, scipy's W1."""
    dist = pairwise_distances(queries, gallery, **metric)
    scores = np.empty((len(queries), len(ks)))
    for q in range(len(queries)):
        order = np.lexsort((np.arange(len(gallery)), dist[q]))  # (distance, gallery index)
        same = gallery_labels == query_labels[q]
        relation = np.select([same[:, 0], same[:, 1], same[:, 2]], [0, 1, 2], default=3)
        for index, k in enumerate(ks):
            ideal = np.sort(relation)[:k]
            scores[q, index] = wasserstein_distance(relation[order][:k], ideal)
    return scores


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
@pytest.mark.parametrize("trial", range(4))
def test_random_rankings_agree_with_scipy(geometry, trial):
    rng = np.random.default_rng(100 + trial)
    n_gallery = int(rng.integers(30, 150))
    points = rng.normal(size=(40 + n_gallery, 5))
    if geometry == "poincare":
        points *= 0.9 / np.sqrt(CURVATURE) / np.linalg.norm(points, axis=1, keepdims=True)
        points *= rng.uniform(0, 1, size=(len(points), 1))
    # Duplicated gallery rows tie exactly: the ranking breaks them by gallery index.
    gallery = points[40 + rng.integers(0, n_gallery, n_gallery)]
    queries = points[:40]
    query_labels = _tree(rng.integers(0, 24, 40))
    gallery_labels = _tree(rng.integers(0, 24, n_gallery))
    ks = (n_gallery, 1, *sorted(rng.choice(np.arange(2, n_gallery), 3, replace=False).tolist()))
    metric = {"geometry": geometry, "curvature": CURVATURE if geometry == "poincare" else None}
    frame = evaluate(
        queries, gallery, query_labels, gallery_labels, ot_ks=ks, chunk_size=7, **metric
    )
    actual = frame.loc[frame["level"] == "all", [f"ot@{k}" for k in ks]].to_numpy()
    expected = _scipy_ot(queries, gallery, query_labels, gallery_labels, ks, **metric)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12)
    assert (actual[:, 0] == 0).all()  # K = the whole gallery: the ideal histogram itself


def test_ot_is_the_mean_relation_beyond_the_ideal_top_k():
    # The ideal cumulative shares are never below the actual ones, so W1 is the difference of
    # the mean relations (the reading of OT@K in docs/pipeline.md).
    rng = np.random.default_rng(14)
    for _ in range(20):
        relations = rng.integers(0, 4, int(rng.integers(5, 30))).tolist()
        ks = tuple(sorted({1, len(relations), *rng.integers(1, len(relations), 3).tolist()}))
        for k, value in _ot(relations, ks).items():
            expected = np.mean(relations[:k]) - np.mean(sorted(relations)[:k])
            assert value == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------ extremes

# Relation counts of the gallery: 3 leaf, 2 middle, 4 high, 5 other.
COUNTS = (3, 2, 4, 5)


def _max_attainable(counts, k) -> float:
    """The largest OT@K over every top-K histogram the gallery allows (scipy's W1)."""
    ideal = ideal_counts(np.array(counts), k)
    best = 0.0
    for top in itertools.product(*(range(c + 1) for c in counts)):
        if sum(top) == k:
            best = max(best, wasserstein_distance(range(4), range(4), top, ideal))
    return best


def test_the_ideal_ranking_scores_zero():
    ranking = [r for r, count in enumerate(COUNTS) for _ in range(count)]
    ks = tuple(range(1, sum(COUNTS) + 1))
    assert set(_ot(ranking, ks).values()) == {0.0}


def test_every_other_item_first_scores_the_maximum_attainable():
    rng = np.random.default_rng(11)
    n_gallery, n_other = sum(COUNTS), COUNTS[3]
    ks = tuple(range(1, n_gallery + 1))
    maxima = {k: _max_attainable(COUNTS, k) for k in ks}
    # Others first, then high, middle, leaf: the maximum at every K.
    worst = [r for r in (3, 2, 1, 0) for _ in range(COUNTS[r])]
    assert _ot(worst, ks) == pytest.approx(maxima, abs=1e-12)
    # Others first, the rest in any order: the maximum for every K up to the number of others.
    for _ in range(5):
        rest = rng.permutation([r for r in (0, 1, 2) for _ in range(COUNTS[r])]).tolist()
        scores = _ot([3] * n_other + rest, ks)
        for k in range(1, n_other + 1):
            assert scores[k] == pytest.approx(maxima[k], abs=1e-12)
        assert all(scores[k] <= maxima[k] + 1e-12 for k in ks)
    # K others where K leaf items were available: the largest OT@K of all, 3.
    assert maxima[3] == pytest.approx(3.0)


def test_no_ranking_exceeds_the_maximum_attainable():
    rng = np.random.default_rng(12)
    base = [r for r, count in enumerate(COUNTS) for _ in range(count)]
    ks = (1, 4, 7, 10)
    maxima = {k: _max_attainable(COUNTS, k) for k in ks}
    for _ in range(10):
        scores = _ot(rng.permutation(base).tolist(), ks)
        assert all(0.0 <= scores[k] <= maxima[k] + 1e-12 for k in ks)


# ------------------------------------------------------------------- ot_tree


def _ot_tree(relations, ks) -> dict:
    """ot_tree@K and ot_tree@tree of a query whose ranking lists ``relations``, from evaluate."""
    frame = evaluate(*_ranked(relations), ot_ks=ks)
    row = frame[frame["level"] == "all"].iloc[0]
    return {k: float(row[f"ot_tree@{k}"]) for k in (*ks, "tree")}


def test_hand_example_tree_scores():
    # HAND's tree: 2 leaf, 2 middle, 1 high (T = 5), CDF .4 .8 1.
    # K=4: M O L H, CDF .25 .5 .75 -> .15 + .3 + .25 = .7
    # K=1: M, CDF 0 1 1 -> .4 + .2 + 0 = .6; K=8: the whole gallery, CDF .25 .5 .625 -> .825
    # tree (K = 5): M O L H O, CDF .2 .4 .6 -> .2 + .4 + .4 = 1, as OT@5 (the ideal top 5 is the
    # tree itself)
    expected = {4: 0.7, 1: 0.6, 8: 0.825, "tree": 1.0}
    assert _ot_tree(HAND, (4, 1, 8)) == pytest.approx(expected, abs=1e-15)
    assert _ot(HAND, (5,))[5] == pytest.approx(1.0, abs=1e-15)
    rows, ranks, levels = np.zeros(5, int), np.array([0, 2, 3, 5, 6]), np.array([1, 0, 2, 0, 1])
    tree = np.array([[2, 2, 1]])
    assert top_tree_counts(rows, ranks, levels, tree).tolist() == [[1, 1, 1, 2]]
    assert tree_wasserstein(np.array([1, 1, 1, 1]), np.array([2, 2, 1])) == pytest.approx(0.7)


def _brute_force_ot_tree(relation: np.ndarray, order: np.ndarray, ks) -> list[float]:
    """ot_tree@K per K and @tree of one query by counting, step by step, in plain Python."""
    tree = [int((relation == t).sum()) for t in range(3)]
    size = sum(tree)
    if size == 0:
        return [math.nan] * (len(ks) + 1)
    scores = []
    for k in (*ks, size):
        top = [int((relation[order][:k] == t).sum()) for t in range(4)]
        gap, top_share, tree_share = 0.0, 0.0, 0.0
        for t in range(3):
            top_share += top[t] / k
            tree_share += tree[t] / size
            gap += abs(top_share - tree_share)
        scores.append(gap)
    return scores


def _scipy_ot_tree(relation: np.ndarray, order: np.ndarray, ks) -> list[float]:
    """ot_tree@K per K and @tree of one query with scipy's W1 on the support 0..3 and weights."""
    tree = np.bincount(relation[relation < 3], minlength=4)
    if tree.sum() == 0:
        return [math.nan] * (len(ks) + 1)
    support = np.arange(4)
    return [
        wasserstein_distance(
            u_values=support,
            v_values=support,
            u_weights=np.bincount(relation[order][:k], minlength=4),
            v_weights=tree,
        )
        for k in (*ks, int(tree.sum()))
    ]


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
@pytest.mark.parametrize("trial", range(3))
def test_random_tree_scores_agree_with_a_brute_force_loop_and_scipy(geometry, trial):
    rng = np.random.default_rng(200 + trial)
    n_gallery = int(rng.integers(30, 150))
    points = rng.normal(size=(40 + n_gallery, 5))
    if geometry == "poincare":
        points *= 0.9 / np.sqrt(CURVATURE) / np.linalg.norm(points, axis=1, keepdims=True)
        points *= rng.uniform(0, 1, size=(len(points), 1))
    gallery = points[40 + rng.integers(0, n_gallery, n_gallery)]  # duplicates tie exactly
    queries = points[:40]
    # Leaves 0..35 in the queries, 0..29 in the gallery: queries of high group 5 have no tree.
    query_labels = _tree(rng.integers(0, 36, 40))
    gallery_labels = _tree(rng.integers(0, 30, n_gallery))
    ks = (n_gallery, 1, *sorted(rng.choice(np.arange(2, n_gallery), 3, replace=False).tolist()))
    metric = {"geometry": geometry, "curvature": CURVATURE if geometry == "poincare" else None}
    frame = evaluate(
        queries, gallery, query_labels, gallery_labels, ot_ks=ks, chunk_size=7, **metric
    )
    names = [f"ot_tree@{k}" for k in (*ks, "tree")]
    actual = frame.loc[frame["level"] == "all", names].to_numpy()
    dist = pairwise_distances(queries, gallery, **metric)
    brute, reference = np.empty_like(actual), np.empty_like(actual)
    for q in range(len(queries)):
        order = np.lexsort((np.arange(n_gallery), dist[q]))  # (distance, gallery index)
        same = gallery_labels == query_labels[q]
        relation = np.select([same[:, 0], same[:, 1], same[:, 2]], [0, 1, 2], default=3)
        brute[q] = _brute_force_ot_tree(relation, order, ks)
        reference[q] = _scipy_ot_tree(relation, order, ks)
    treeless = np.isnan(brute[:, 0])
    assert treeless.any() and not treeless.all()  # both kinds of query are exercised
    np.testing.assert_allclose(actual, brute, rtol=0, atol=1e-12)
    np.testing.assert_allclose(actual, reference, rtol=0, atol=1e-12)
    assert (np.isnan(actual) == treeless[:, None]).all()


def test_tree_score_at_the_tree_size_equals_ot_at_that_size():
    # With K = T the ideal top K is the tree itself, so ot_tree@tree = OT@T for every ranking.
    rng = np.random.default_rng(15)
    for _ in range(20):
        relations = rng.integers(0, 4, int(rng.integers(5, 30))).tolist()
        size = sum(r < 3 for r in relations)
        if size == 0:
            continue
        assert _ot_tree(relations, (1,))["tree"] == pytest.approx(
            _ot(relations, (size,))[size], abs=1e-12
        )


def test_tree_scores_lie_between_zero_and_three():
    rng = np.random.default_rng(16)
    base = [r for r, count in enumerate(COUNTS) for _ in range(count)]
    ks = tuple(range(1, sum(COUNTS) + 1))
    for _ in range(10):
        scores = _ot_tree(rng.permutation(base).tolist(), ks)
        assert all(0.0 <= value <= 3.0 for value in scores.values())
    # Every "other" item first: ot_tree@1 = 3 - the tree's mean relation (shares 3, 2, 4 of 9)
    worst = _ot_tree([r for r in (3, 2, 1, 0) for _ in range(COUNTS[r])], (1,))
    assert worst[1] == pytest.approx(3 - (0 * 3 + 1 * 2 + 2 * 4) / 9, abs=1e-12)


# ------------------------------------------------------------ frame, summaries, errors


def test_per_query_frame_with_ot_rows():
    rng = np.random.default_rng(4)
    frame = evaluate(
        rng.normal(size=(3, 4)),
        rng.normal(size=(6, 4)),
        _tree([0, 1, 14]),
        _tree([0, 0, 1, 2, 3, 6]),
        ks=(3, 1),
        ot_ks=(6, 2),
    )
    ot_names = ["ot@6", "ot@2", "ot_tree@6", "ot_tree@2", "ot_tree@tree"]
    assert list(frame.columns) == ["query", "level", "valid", "ap", "r@3", "r@1", *ot_names]
    assert frame["query"].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert frame["level"].tolist() == ["leaf", "middle", "high", "all"] * 3
    scored = frame["level"] == "all"
    assert frame.loc[scored, "valid"].all()  # query 2 has no positive, yet it is scored
    assert frame.loc[scored, ["ap", "r@3", "r@1"]].isna().all().all()
    assert frame.loc[~scored, ot_names].isna().all().all()
    # query 2 has no tree (no gallery item shares its high group): no tree score
    assert frame.loc[scored, ot_names[2:]].iloc[2].isna().all()
    assert frame.loc[scored, ot_names[2:]].iloc[:2].notna().all().all()
    assert frame.loc[scored, "ot@6"].tolist() == [0.0, 0.0, 0.0]
    # query 2 (leaf 14, high 2) has only "other" items: every top K is ideal
    assert frame.loc[scored, "ot@2"].iloc[2] == 0.0
    # Without ot_ks the frame is the level rows alone, as before
    plain = evaluate(
        rng.normal(size=(3, 4)), rng.normal(size=(6, 4)), _tree([0, 1, 14]), _tree([0] * 6)
    )
    assert "all" not in set(plain["level"]) and not any(c.startswith("ot") for c in plain)


def test_ot_columns_follow_the_given_order_and_chunks_do_not_matter():
    rng = np.random.default_rng(5)
    arguments = (
        rng.normal(size=(30, 4)),
        rng.normal(size=(80, 4)),
        _tree(rng.integers(0, 12, 30)),
        _tree(rng.integers(0, 12, 80)),
    )
    first = evaluate(*arguments, ot_ks=(50, 5, 20))
    second = evaluate(*arguments, ot_ks=(5, 20, 50), chunk_size=4)
    pd.testing.assert_frame_equal(first, second[first.columns])


def test_summaries_average_ot_over_every_query():
    # Query 0 is valid at every level, query 1 (leaf 14) at none: both count for OT@K.
    gallery = np.array([[3.0, 0.0], [1.0, 0.0], [2.0, 0.0], [4.0, 0.0]])
    gallery_labels = _tree([0, 1, 3, 6])  # leaf, middle, high, other for query 0
    queries = np.zeros((2, 2))
    frame = evaluate(queries, gallery, _tree([0, 14]), gallery_labels, ks=(1,), ot_ks=(1, 2))
    # query 0 ranks middle, high, leaf, other: OT@1 = 1 (middle vs leaf); OT@2: actual (0,1,1,0)
    # /2, CDF 0 .5 1; ideal (1,1,0,0)/2, CDF .5 1 1 -> .5 + .5 = 1. Query 1: only "other" -> 0.
    for summary in (query_micro(frame), group_macro(frame, _tree([0, 14]))):
        assert summary["level"].tolist() == ["leaf", "middle", "high", "all"]
        row = summary.set_index("level").loc["all"]
        assert row["n_valid"] == 2
        assert (row["ot@1"], row["ot@2"]) == (0.5, 0.5)
        assert math.isnan(row["map"]) and math.isnan(row["r@1"])
        assert summary.set_index("level").loc[["leaf", "middle", "high"], "ot@1"].isna().all()
        assert summary.set_index("level").loc["leaf", "n_valid"] == 1
        # ot_tree: query 0's tree is 1 leaf, 1 middle, 1 high (CDF 1/3, 2/3, 1); query 1 has no
        # tree and is skipped. @1: M, CDF 0 1 1 -> 1/3 + 1/3; @2: M H, CDF 0 .5 1 -> 1/3 + 1/6;
        # @tree (K = 3): M H L, the tree's own mix -> 0.
        assert row["n_tree"] == 1
        assert row["ot_tree@1"] == pytest.approx(2 / 3, abs=1e-15)
        assert row["ot_tree@2"] == pytest.approx(0.5, abs=1e-15)
        assert row["ot_tree@tree"] == 0.0
        assert (summary.set_index("level").loc[["leaf", "middle", "high"], "n_tree"] == 0).all()
    assert group_macro(frame, _tree([0, 14])).set_index("level").loc["all", "n_groups"] == 2


@pytest.mark.parametrize(
    ("ot_ks", "match"),
    [
        ((5, 9), r"ot_ks: K = \[9\] is larger than the gallery \(8 items\)"),
        ((0,), "positive integers"),
        ((2, 2), "must not repeat"),
        ((2.0,), "positive integers"),
    ],
)
def test_invalid_ot_ks_raise_naming_the_argument(ot_ks, match):
    with pytest.raises(ValueError, match=match):
        evaluate(*_ranked(HAND), ot_ks=ot_ks)


def test_histograms_of_different_mass_are_not_compared():
    with pytest.raises(ValueError, match="same positive mass"):
        ordinal_wasserstein(np.array([1, 0, 0, 0]), np.array([1, 1, 0, 0]))


def _draw(ot_ks: list[int]) -> tuple:
    """Ten items, one sealed draw qg-1 (2 queries, 8 gallery items), the stage's settings."""
    from hierbench.metrics.scoring import metric_settings

    rng = np.random.default_rng(13)
    ids = pd.Series([f"img{i}" for i in range(10)])
    sealed = pd.DataFrame(
        {
            "split": "qg-1",
            "role": ["query"] * 2 + ["gallery"] * 8,
            "image_id": ids,
        }
    )
    config = {
        "evaluation": {"recall_ks": [1], "ot_ks": ot_ks, "query_chunk": 4},
        "training": {"distance_clip_test": 1e6},
    }
    metric = metric_settings(config, "euclidean", None)
    return rng.normal(size=(10, 3)), _tree(rng.integers(0, 12, 10)), ids, sealed, [1], metric


def test_scoring_the_draws_gives_ot_and_names_the_config_key():
    from hierbench.metrics.scoring import score_draws

    per_query, summary = score_draws(*_draw([8, 3]))
    assert {"ot@8", "ot@3"} <= set(per_query.columns)
    assert (per_query.loc[per_query["level"] == "all", "ot@8"] == 0.0).all()
    micro = summary[(summary["aggregation"] == "query_micro") & (summary["level"] == "all")]
    assert len(micro) == 1 and micro["n_valid"].item() == 2
    with pytest.raises(ValueError, match=r"'evaluation\.ot_ks' \(qg-1/gallery\): K = \[9\]"):
        score_draws(*_draw([5, 9]))
