"""Retrieval metrics against a brute-force loop, hand examples and geoopt."""

from __future__ import annotations

import math

import geoopt
import numpy as np
import pandas as pd
import pytest
import torch

from hierbench.metrics import engine as metrics_engine
from hierbench.metrics import (
    evaluate,
    group_macro,
    mean_hierarchy,
    pairwise_distances,
    query_micro,
)
from hierbench.relations import strict_positive_counts

KS = (1, 5, 10, 20)
CURVATURE = 0.7


def _tree(leaves: np.ndarray) -> np.ndarray:
    """(leaf, middle, high) labels of a fixed tree: middle = leaf // 3, high = middle // 2."""
    leaves = np.asarray(leaves)
    return np.stack([leaves, leaves // 3, leaves // 6], axis=1)


def _relation(a: np.ndarray, b: np.ndarray) -> int:
    """0 same leaf, 1 same middle, 2 same high, 3 other (plain loop version)."""
    for level in range(3):
        if a[level] == b[level]:
            return level
    return 3


def _euclidean(x: np.ndarray, y: np.ndarray) -> float:
    return math.sqrt(sum((float(a) - float(b)) ** 2 for a, b in zip(x, y, strict=True)))


def _poincare(x: np.ndarray, y: np.ndarray, c: float = CURVATURE) -> float:
    """(2/√c)·artanh(√c·‖(−x)⊕_c y‖) with the Möbius addition written out."""
    u = [-float(a) for a in x]
    v = [float(b) for b in y]
    uv = sum(a * b for a, b in zip(u, v, strict=True))
    uu, vv = sum(a * a for a in u), sum(b * b for b in v)
    denominator = 1 + 2 * c * uv + c * c * uu * vv
    summed = [
        ((1 + 2 * c * uv + c * vv) * a + (1 - c * uu) * b) / denominator
        for a, b in zip(u, v, strict=True)
    ]
    norm = math.sqrt(sum(a * a for a in summed))
    return 2 / math.sqrt(c) * math.atanh(math.sqrt(c) * norm)


def _brute_force(queries, gallery, query_labels, gallery_labels, distance) -> pd.DataFrame:
    """Per-query frame from plain loops: distances, a sort by (distance, index), AP, recalls."""
    rows = []
    for q in range(len(queries)):
        dist = [distance(queries[q], gallery[g]) for g in range(len(gallery))]
        ranking = sorted(range(len(gallery)), key=lambda g: (dist[g], g))
        for level, name in enumerate(("leaf", "middle", "high")):
            relevant = [_relation(query_labels[q], gallery_labels[g]) == level for g in ranking]
            row = {"query": q, "level": name, "valid": any(relevant), "ap": math.nan}
            row |= {f"r@{k}": math.nan for k in KS}
            if any(relevant):
                hits, total = 0, 0.0
                for position, is_relevant in enumerate(relevant, start=1):
                    if is_relevant:
                        hits += 1
                        total += hits / position
                row["ap"] = total / sum(relevant)
                row |= {f"r@{k}": float(any(relevant[:k])) for k in KS}
            rows.append(row)
    return pd.DataFrame(rows)


def _assert_same(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        actual, expected, check_dtype=False, check_exact=False, rtol=1e-12, atol=1e-15
    )


def _ball_points(rng: np.random.Generator, n: int, dim: int, c: float = CURVATURE) -> np.ndarray:
    """Random points strictly inside the ball of curvature ``c`` (norms up to 0.9/√c)."""
    points = rng.normal(size=(n, dim))
    radius = rng.uniform(0.0, 0.9, size=(n, 1)) / math.sqrt(c)
    return points / np.linalg.norm(points, axis=1, keepdims=True) * radius


def _mixed_case(rng: np.random.Generator, embed) -> tuple:
    """Random data covering invalid queries and a single positive at every level.

    Gallery leaves 0..9 with leaf 5 once, and leaf 12 once. Leaf 9 is the only gallery leaf of
    middle 3, leaf 12 the only gallery item of middles 4 and 5 (high 2). Queries of leaf 5, 13
    and 15 have exactly one leaf, middle and high positive; of leaf 10, 9 and 12 none.
    """
    gallery_leaves = np.concatenate([rng.choice([0, 1, 2, 3, 4, 6, 7, 8, 9], 118), [5, 12]])
    query_leaves = np.concatenate([rng.integers(0, 16, 30), [5, 9, 10, 12, 13, 15]])
    return embed(len(query_leaves)), embed(len(gallery_leaves)), query_leaves, gallery_leaves


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
def test_matches_brute_force_on_random_data(geometry):
    rng = np.random.default_rng(0)
    if geometry == "euclidean":
        embed, distance, curvature = (lambda n: rng.normal(size=(n, 6))), _euclidean, None
    else:
        embed, distance, curvature = (lambda n: _ball_points(rng, n, 6)), _poincare, CURVATURE
    queries, gallery, query_leaves, gallery_leaves = _mixed_case(rng, embed)
    query_labels, gallery_labels = _tree(query_leaves), _tree(gallery_leaves)
    counts = strict_positive_counts(query_labels, gallery_labels)
    assert (counts == 0).any(axis=0).all() and (counts == 1).any(axis=0).all()  # cases covered
    frame = evaluate(
        queries, gallery, query_labels, gallery_labels, geometry=geometry, curvature=curvature
    )
    _assert_same(frame, _brute_force(queries, gallery, query_labels, gallery_labels, distance))
    np.testing.assert_array_equal(frame["valid"].to_numpy().reshape(-1, 3), counts > 0)


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
def test_gallery_of_only_positives(geometry):
    rng = np.random.default_rng(1)
    gallery = _ball_points(rng, 25, 4)
    queries = _ball_points(rng, 3, 4)
    gallery_labels = _tree(np.full(25, 1))  # leaf 1, middle 0, high 0
    query_labels = _tree([1, 0, 3])  # every gallery item is a leaf / middle / high positive
    curvature = CURVATURE if geometry == "poincare" else None
    frame = evaluate(
        queries, gallery, query_labels, gallery_labels, geometry=geometry, curvature=curvature
    )
    distance = _poincare if geometry == "poincare" else _euclidean
    _assert_same(frame, _brute_force(queries, gallery, query_labels, gallery_labels, distance))
    diagonal = frame.iloc[[0, 4, 8]]
    assert diagonal["valid"].all() and (diagonal[["ap", "r@1", "r@20"]] == 1.0).all().all()
    assert frame["valid"].sum() == 3


def test_ties_are_broken_by_gallery_index():
    # Gallery points 0-3 lie at distance exactly 1 from the query, point 4 at distance 2.
    gallery = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [2.0, 0.0]])
    gallery_labels = _tree([0, 1, 0, 1, 6])  # leaf 6 is in another high
    frame = evaluate(np.zeros((1, 2)), gallery, _tree([0]), gallery_labels)
    # ranking 0, 1, 2, 3, 4: leaf positives (0, 2) at ranks 1, 3; middle (1, 3) at 2, 4
    # (reversed index order would give ranks 2, 4 and 1, 3)
    assert frame["ap"].tolist()[:2] == [(1 / 1 + 2 / 3) / 2, (1 / 2 + 2 / 4) / 2]
    assert frame["r@1"].tolist()[:2] == [1.0, 0.0]
    assert frame["valid"].tolist() == [True, True, False]


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
def test_duplicated_gallery_rows_tie_like_the_brute_force(geometry):
    rng = np.random.default_rng(2)
    base = rng.normal(size=(30, 5)) if geometry == "euclidean" else _ball_points(rng, 30, 5)
    gallery = base[rng.integers(0, 30, 90)]  # every point three times on average
    gallery_leaves = rng.integers(0, 9, 90)
    queries, query_leaves = np.concatenate([base[5:15] * 0.9, base[:5]]), rng.integers(0, 9, 15)
    curvature = CURVATURE if geometry == "poincare" else None
    distance = _poincare if geometry == "poincare" else _euclidean
    frame = evaluate(
        queries,
        gallery,
        _tree(query_leaves),
        _tree(gallery_leaves),
        geometry=geometry,
        curvature=curvature,
    )
    expected = _brute_force(queries, gallery, _tree(query_leaves), _tree(gallery_leaves), distance)
    _assert_same(frame, expected)


@pytest.mark.parametrize("n", [20, 40])
def test_equal_keys_are_ranked_by_exact_distance(n):
    # Distances 1 + j·1e-13 fall into one 16-bit key bin next to a far point, and in reverse
    # index order, so the exact (distance, index) refinement decides the ranking: within the
    # run for n = 20, by a full sort of the row for n = 40 (longer than the scan limit).
    assert (n > metrics_engine._RUN_SCAN_LIMIT) == (n == 40)
    norms = 1.0 + np.arange(n)[::-1] * 1e-13
    gallery = np.zeros((n + 1, 3))
    gallery[:n, 0] = norms
    gallery[n, 0] = 1e3
    gallery_leaves = np.concatenate([np.full(n - 10, 1), np.full(10, 0), [0]])  # leaf 0 last
    queries = np.zeros((1, 3))
    frame = evaluate(queries, gallery, _tree([0]), _tree(gallery_leaves))
    expected = _brute_force(queries, gallery, _tree([0]), _tree(gallery_leaves), _euclidean)
    _assert_same(frame, expected)


def test_identical_distances_everywhere_rank_by_index():
    gallery = np.ones((12, 4))
    gallery_leaves = np.array([2, 0, 1, 0, 2, 1, 0, 3, 4, 5, 0, 1])
    queries = np.ones((2, 4))
    frame = evaluate(queries, gallery, _tree([0, 1]), _tree(gallery_leaves))
    expected = _brute_force(queries, gallery, _tree([0, 1]), _tree(gallery_leaves), _euclidean)
    _assert_same(frame, expected)


@pytest.mark.parametrize("geometry", ["euclidean", "poincare"])
def test_chunking_does_not_change_results(geometry):
    rng = np.random.default_rng(3)
    queries, gallery = _ball_points(rng, 50, 8), _ball_points(rng, 300, 8)
    query_labels, gallery_labels = _tree(rng.integers(0, 30, 50)), _tree(rng.integers(0, 30, 300))
    curvature = CURVATURE if geometry == "poincare" else None
    frames = [
        evaluate(
            queries,
            gallery,
            query_labels,
            gallery_labels,
            geometry=geometry,
            curvature=curvature,
            chunk_size=chunk_size,
        )
        for chunk_size in (1, 7, 10000)
    ]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])


def test_per_query_frame_format():
    rng = np.random.default_rng(4)
    frame = evaluate(
        rng.normal(size=(3, 4)),
        rng.normal(size=(6, 4)),
        _tree([0, 1, 14]),
        _tree([0, 0, 1, 2, 3, 6]),
        ks=(3, 1),
    )
    assert list(frame.columns) == ["query", "level", "valid", "ap", "r@3", "r@1"]
    assert frame["query"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert frame["level"].tolist() == ["leaf", "middle", "high"] * 3
    assert frame["valid"].dtype == bool and frame["ap"].dtype == np.float64
    invalid = frame[~frame["valid"]]
    assert len(invalid) == 3 and invalid[["ap", "r@3", "r@1"]].isna().all().all()  # query 2


def test_torch_and_numpy_inputs_agree():
    rng = np.random.default_rng(5)
    queries, gallery = _ball_points(rng, 8, 4), _ball_points(rng, 20, 4)
    labels_q, labels_g = _tree(rng.integers(0, 6, 8)), _tree(rng.integers(0, 6, 20))
    kwargs = {"geometry": "poincare", "curvature": CURVATURE}
    expected = evaluate(queries, gallery, labels_q, labels_g, **kwargs)
    actual = evaluate(
        torch.from_numpy(queries), torch.from_numpy(gallery), labels_q, labels_g, **kwargs
    )
    pd.testing.assert_frame_equal(actual, expected)


@pytest.mark.parametrize("curvature", [1e-6, 0.1, 1.0, 2.5])
def test_poincare_distances_match_geoopt(curvature):
    rng = np.random.default_rng(6)
    x, y = _ball_points(rng, 12, 5, curvature), _ball_points(rng, 17, 5, curvature)
    # geoopt stores c through an inverse softplus: build the ball in float64 and compare at the
    # curvature it really holds (a float32 ball turns c=1e-6 into 2**-20).
    ball = geoopt.PoincareBall(c=torch.tensor(curvature, dtype=torch.float64))
    expected = ball.dist(torch.from_numpy(x)[:, None], torch.from_numpy(y)[None]).numpy()
    actual = pairwise_distances(x, y, geometry="poincare", curvature=ball.c.item())
    # geoopt's artanh, (log(1 + x) − log(1 − x))/2, is off by up to ~3e-9 (relative) at c=1e-6;
    # the closed form here agrees with 50-digit arithmetic to ~1e-15.
    np.testing.assert_allclose(actual, expected, rtol=1e-8, atol=1e-12)


def test_euclidean_distances_match_numpy():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(9, 6)), rng.normal(size=(11, 6))
    expected = np.linalg.norm(x[:, None] - y[None], axis=2)
    np.testing.assert_allclose(pairwise_distances(x, y), expected, rtol=1e-12, atol=1e-12)


def test_non_finite_distances_are_clipped():
    inside, boundary, outside = [0.1, 0.0], [1.0, 0.0], [3.0, 0.0]
    gallery = np.array([inside, boundary, outside, [np.nan, 0.0], [0.0, 0.2]])
    dist = pairwise_distances(
        np.zeros((1, 2)), gallery, geometry="poincare", curvature=1.0, distance_clip=50.0
    )
    assert dist[0, 0] == pytest.approx(2 * math.atanh(0.1))
    np.testing.assert_array_equal(dist[0, 1:4], [50.0, 50.0, 50.0])
    frame = evaluate(
        np.zeros((1, 2)),
        gallery,
        _tree([0]),
        _tree([3, 0, 0, 0, 0]),
        geometry="poincare",
        curvature=1.0,
        distance_clip=50.0,
    )
    # ranking by (distance, index): 0, 4, then the clipped 1, 2, 3; leaf positives 1, 2, 3, 4
    assert frame.loc[0, "ap"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 4)
    assert frame.loc[0, "r@1"] == 0.0 and frame.loc[0, "r@5"] == 1.0


def _frame(rows: list[tuple[int, str, float | None, float | None]]) -> pd.DataFrame:
    """A per-query frame from (query, level, ap, r@1) rows; None marks an invalid row."""
    return pd.DataFrame(
        {
            "query": [row[0] for row in rows],
            "level": [row[1] for row in rows],
            "valid": [row[2] is not None for row in rows],
            "ap": [math.nan if row[2] is None else row[2] for row in rows],
            "r@1": [math.nan if row[3] is None else row[3] for row in rows],
        }
    )


def _hand_example() -> tuple[pd.DataFrame, np.ndarray]:
    labels = np.array([[0, 0, 0], [0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0], [4, 2, 1]])
    rows = [
        (0, "leaf", 0.5, 1.0),
        (0, "middle", 0.2, 0.0),
        (0, "high", 0.3, 1.0),
        (1, "leaf", 0.7, 1.0),
        (1, "middle", 0.4, 1.0),
        (1, "high", 0.5, 0.0),
        (2, "leaf", None, None),
        (2, "middle", 0.6, 1.0),
        (2, "high", 0.1, 0.0),
        (3, "leaf", 0.9, 1.0),
        (3, "middle", None, None),
        (3, "high", 0.2, 0.0),
        (4, "leaf", 0.1, 0.0),
        (4, "middle", 0.5, 0.0),
        (4, "high", 0.9, 1.0),
        (5, "leaf", 1.0, 1.0),
        (5, "middle", None, None),
        (5, "high", None, None),
    ]
    return _frame(rows), labels


def test_query_micro_hand_example():
    frame, _ = _hand_example()
    summary = query_micro(frame)
    assert list(summary.columns) == ["level", "n_valid", "map", "r@1"]
    assert summary["level"].tolist() == ["leaf", "middle", "high"]
    assert summary["n_valid"].tolist() == [5, 4, 5]
    np.testing.assert_allclose(summary["map"], [3.2 / 5, 1.7 / 4, 2.0 / 5])
    np.testing.assert_allclose(summary["r@1"], [4 / 5, 2 / 4, 2 / 5])
    assert mean_hierarchy(summary) == pytest.approx((1.7 / 4 + 2.0 / 5) / 2)


def test_group_macro_hand_example():
    frame, labels = _hand_example()
    summary = group_macro(frame, labels)
    assert list(summary.columns) == ["level", "n_valid", "n_groups", "map", "r@1"]
    # leaf groups: {0: q0, q1}, {2: q3}, {3: q4}, {4: q5}; q2 (leaf 1) is invalid
    # middle groups: {0: q0, q1, q2}, {1: q4} (q3 invalid), middle 2 has no valid query
    # high groups: {0: q0..q4}; high 1 has no valid query
    assert summary["n_groups"].tolist() == [4, 2, 1]
    assert summary["n_valid"].tolist() == [5, 4, 5]
    np.testing.assert_allclose(summary["map"], [(0.6 + 0.9 + 0.1 + 1.0) / 4, (0.4 + 0.5) / 2, 0.4])
    np.testing.assert_allclose(summary["r@1"], [(1.0 + 1.0 + 0.0 + 1.0) / 4, (2 / 3 + 0) / 2, 0.4])
    assert mean_hierarchy(summary) == pytest.approx((0.45 + 0.4) / 2)


def test_summary_of_a_level_without_valid_queries_is_nan():
    frame = _frame([(0, "leaf", 0.5, 1.0), (0, "middle", None, None), (0, "high", 0.25, 0.0)])
    for summary in (query_micro(frame), group_macro(frame, np.array([[0, 0, 0]]))):
        assert summary["n_valid"].tolist() == [1, 0, 1]
        assert math.isnan(summary.loc[1, "map"]) and math.isnan(mean_hierarchy(summary))


GOOD = {
    "query_emb": np.zeros((2, 3)),
    "gallery_emb": np.ones((4, 3)),
    "query_labels": _tree([0, 1]),
    "gallery_labels": _tree([0, 1, 2, 3]),
}


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"query_emb": np.zeros(3)}, ValueError, "query_emb must be a non-empty"),
        ({"gallery_emb": np.zeros((0, 3))}, ValueError, "gallery_emb must be a non-empty"),
        ({"gallery_emb": np.ones((4, 2))}, ValueError, "dimension 3 but gallery_emb has 2"),
        ({"query_emb": np.array([["a"] * 3] * 2)}, TypeError, "real numbers"),
        ({"query_labels": np.zeros((2, 2), int)}, ValueError, r"shape \(n, 3\)"),
        ({"gallery_labels": _tree([0, 1, 2])}, ValueError, "3 rows but the embeddings have 4"),
        ({"query_labels": _tree([0, 1]).astype(float)}, TypeError, "integer label codes"),
        ({"query_labels": np.array([[0, 5, 0], [1, 0, 0]])}, ValueError, "do not form a tree"),
        ({"gallery_labels": np.array([[0, 0, 0], [1, 0, 7]] * 2)}, ValueError, "form a tree"),
        ({"geometry": "hyperbolic"}, ValueError, "geometry must be one of"),
        ({"geometry": "poincare"}, ValueError, "needs the ball's curvature"),
        ({"geometry": "poincare", "curvature": -1.0}, ValueError, "finite positive"),
        ({"curvature": 1.0}, ValueError, "only used with geometry='poincare'"),
        ({"ks": (1, 0)}, ValueError, "positive integers"),
        ({"ks": (1, 1)}, ValueError, "must not repeat"),
        ({"ks": (1.5,)}, ValueError, "positive integers"),
        ({"chunk_size": 0}, ValueError, "at least 1"),
        ({"chunk_size": 2.0}, TypeError, "must be an int"),
        ({"distance_clip": math.inf}, ValueError, "distance_clip"),
    ],
)
def test_invalid_inputs_raise(changes, error, match):
    arguments = GOOD | changes
    positional = [arguments.pop(name) for name in list(GOOD)]
    with pytest.raises(error, match=match):
        evaluate(*positional, **arguments)


def test_aggregations_reject_foreign_frames():
    with pytest.raises(ValueError, match="pass the output of evaluate"):
        query_micro(pd.DataFrame({"query": [0], "ap": [0.5]}))
    frame, labels = _hand_example()
    with pytest.raises(ValueError, match="query indices outside"):
        group_macro(frame, labels[:3])
    with pytest.raises(ValueError, match="exactly one 'high' row"):
        mean_hierarchy(query_micro(frame).iloc[:2])


@pytest.mark.parametrize("scan_limit", [32, 2])
def test_results_do_not_depend_on_the_sort_key_resolution(monkeypatch, scan_limit):
    # With 4 key values nearly every item shares a key run, so the exact refinement ranks all;
    # with a scan limit of 2 most rows fall back to a full stable sort.
    rng = np.random.default_rng(8)
    queries, gallery, query_leaves, gallery_leaves = _mixed_case(
        rng, lambda n: _ball_points(rng, n, 6)
    )
    arguments = (queries, gallery, _tree(query_leaves), _tree(gallery_leaves))
    expected = evaluate(*arguments, geometry="poincare", curvature=CURVATURE)
    monkeypatch.setattr(metrics_engine, "_KEY_MAX", 3)
    monkeypatch.setattr(metrics_engine, "_RUN_SCAN_LIMIT", scan_limit)
    pd.testing.assert_frame_equal(
        evaluate(*arguments, geometry="poincare", curvature=CURVATURE, chunk_size=5), expected
    )


def test_long_runs_of_equal_distances_are_ranked_exactly():
    # From the origin: two points at 0.5, one at 2 and 300 unit vectors at exactly 1, a run of
    # equal keys far longer than the scan limit.
    rng = np.random.default_rng(10)
    units = np.eye(4)[rng.integers(0, 4, 300)] * rng.choice([-1.0, 1.0], size=(300, 1))
    gallery = np.concatenate([[[2.0, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, -0.5, 0]], units])
    labels_q, labels_g = _tree([0, 4]), _tree(rng.integers(0, 9, len(gallery)))
    queries = np.zeros((2, 4))
    frame = evaluate(queries, gallery, labels_q, labels_g)
    _assert_same(frame, _brute_force(queries, gallery, labels_q, labels_g, _euclidean))


def test_thread_count_does_not_change_results(monkeypatch):
    rng = np.random.default_rng(9)
    queries, gallery = rng.normal(size=(40, 6)), rng.normal(size=(200, 6))
    labels_q, labels_g = _tree(rng.integers(0, 20, 40)), _tree(rng.integers(0, 20, 200))
    frames = []
    for threads in ("1", "3"):
        monkeypatch.setenv("OMP_NUM_THREADS", threads)
        assert metrics_engine.worker_count() == int(threads)
        frames.append(evaluate(queries, gallery, labels_q, labels_g, chunk_size=6))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")  # nested OpenMP: the outer level counts
    assert metrics_engine.worker_count() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="OMP_NUM_THREADS must be an integer"):
        metrics_engine.worker_count()
