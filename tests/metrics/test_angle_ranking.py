"""Retrieval ranked by the exterior angle at the query (the companion cells' sensitivity): the
engine's pair scores against plain loops, the angle's asymmetry, the heads' geometry, and the
companion_angle table on synthetic rows."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from test_metrics import _assert_same, _brute_force, _tree

from hierbench.cells.checkpoints import checkpoint_writer, embed, head_for, load_checkpoint
from hierbench.cells.spec import CellSpec
from hierbench.effects.companion_angle import (
    CompanionAngleError,
    ranking_per_seed,
    ranking_table,
)
from hierbench.effects.sign_flip import sign_flip_p
from hierbench.features.store import feature_table, read_labelled_features, write_feature_parquet
from hierbench.geometry import build_head
from hierbench.metrics import evaluate, pairwise_distances
from hierbench.metrics.angles import exterior_angle_scores, head_angle_scores
from hierbench.metrics.sealed_scoring import SealedCell
from hierbench.provenance.lock import LockError, build_lock
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import role_ids, rows_for_ids
from hierbench.stages.angle_evaluation import evaluate_angles_on_sealed_test
from hierbench.stages.evaluation import evaluate_cell_on_sealed_test

CURVATURE = 0.5
# A hand example in the plane: three queries, six gallery items, angles at least 0.01 apart.
QUERIES = np.array([(1.0, 0.0), (0.0, 2.0), (-1.5, -0.5)])
GALLERY = np.array([(3.0, 0.2), (1.2, 1.0), (0.3, 3.0), (-0.5, 0.4), (-2.5, -1.5), (2.0, -2.0)])
# Leaves (middle = leaf // 3, high = leaf // 6): positives at every level for the first two
# queries; the third has a leaf and a middle positive but no high one.
QUERY_LEAVES = np.array([0, 3, 7])
GALLERY_LEAVES = np.array([0, 1, 3, 4, 7, 6])


def _euclidean_angle(x: np.ndarray, y: np.ndarray) -> float:
    """arccos(⟨x, y − x⟩ / (‖x‖·‖y − x‖)), written out."""
    along = sum(float(a) * (float(b) - float(a)) for a, b in zip(x, y, strict=True))
    norm_x = math.sqrt(sum(float(a) ** 2 for a in x))
    gap = math.sqrt(sum((float(b) - float(a)) ** 2 for a, b in zip(x, y, strict=True)))
    return math.acos(along / (norm_x * gap))


def _lorentz_angle(x: np.ndarray, y: np.ndarray, c: float = CURVATURE) -> float:
    """The exterior angle at x in its original form, from the Lorentz inner product c⟨x, y⟩_L:
    arccos((y_t + c⟨x, y⟩_L·x_t) / (‖x‖·√((c⟨x, y⟩_L)² − 1)))."""
    x_time = math.sqrt(1 / c + sum(float(a) ** 2 for a in x))
    y_time = math.sqrt(1 / c + sum(float(b) ** 2 for b in y))
    inner = c * (sum(float(a) * float(b) for a, b in zip(x, y, strict=True)) - x_time * y_time)
    norm_x = math.sqrt(sum(float(a) ** 2 for a in x))
    return math.acos((y_time + inner * x_time) / (norm_x * math.sqrt(inner * inner - 1)))


ANGLES = {None: _euclidean_angle, CURVATURE: _lorentz_angle}


@pytest.mark.parametrize("curvature", [None, CURVATURE], ids=["euclidean", "lorentz"])
def test_angle_ranking_of_a_hand_example_is_a_plain_sort_of_the_angles(curvature):
    angle = ANGLES[curvature]
    loop = np.array([[angle(q, g) for g in GALLERY] for q in QUERIES])
    scores = exterior_angle_scores(curvature)(QUERIES, GALLERY)
    np.testing.assert_allclose(scores, loop, rtol=1e-9, atol=1e-12)
    assert np.diff(np.sort(loop, axis=1), axis=1).min() > 0.01  # no near ties to flip
    query_labels, gallery_labels = _tree(QUERY_LEAVES), _tree(GALLERY_LEAVES)
    frame = evaluate(
        QUERIES,
        GALLERY,
        query_labels,
        gallery_labels,
        pair_scores=exterior_angle_scores(curvature),
    )
    expected = _brute_force(QUERIES, GALLERY, query_labels, gallery_labels, angle)
    _assert_same(frame, expected)
    assert frame["valid"].tolist() == [True] * 8 + [False]


@pytest.mark.parametrize("curvature", [None, CURVATURE], ids=["euclidean", "lorentz"])
def test_the_angle_is_not_symmetric_and_ranks_otherwise_than_the_distance(curvature):
    """q = (1, 0): g_far = (3, 0) lies on the ray beyond q (angle ~0 at q, ~π at g_far), g_near
    = (1, 0.5) beside q (angle ~π/2), nearer than g_far in either geometry."""
    query, far, near = np.array([[1.0, 0.0]]), np.array([3.0, 0.0]), np.array([1.0, 0.5])
    scores = exterior_angle_scores(curvature)
    forward = scores(query, np.stack([far, near]))[0]
    backward = scores(np.stack([far, near]), query)[:, 0]
    assert forward[0] < 0.01 and backward[0] > math.pi - 0.01
    assert abs(forward[1] - backward[1]) > 0.1
    geometry = "euclidean" if curvature is None else "lorentz"
    dist = pairwise_distances(query, np.stack([far, near]), geometry=geometry, curvature=curvature)
    assert dist[0, 1] < dist[0, 0]  # the distance ranks g_near first, the angle g_far
    labels = _tree(np.array([0])), _tree(np.array([0, 9]))  # g_far same leaf, g_near unrelated
    gallery = np.stack([far, near])
    by_distance = evaluate(query, gallery, *labels, geometry=geometry, curvature=curvature)
    by_angle = evaluate(query, gallery, *labels, pair_scores=scores)
    assert by_distance.loc[0, "ap"] == 0.5 and by_distance.loc[0, "r@1"] == 0.0
    assert by_angle.loc[0, "ap"] == 1.0 and by_angle.loc[0, "r@1"] == 1.0


def test_on_unit_norm_points_the_euclidean_angle_ranks_like_the_distance():
    """ext(q, g) = π/2 + θ/2 on the unit sphere (θ the angle between q and g)."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(70, 6))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    queries, gallery = points[:20], points[20:]
    angles = exterior_angle_scores(None)(queries, gallery)
    theta = np.arccos(np.clip(queries @ gallery.T, -1.0, 1.0))
    np.testing.assert_allclose(angles, math.pi / 2 + theta / 2, atol=1e-7)
    labels = _tree(rng.integers(0, 12, 20)), _tree(rng.integers(0, 12, 50))
    by_distance = evaluate(queries, gallery, *labels)
    by_angle = evaluate(queries, gallery, *labels, pair_scores=exterior_angle_scores(None))
    _assert_same(by_angle, by_distance)


def test_angle_ranking_is_chunk_free_and_identical_gallery_rows_tie():
    rng = np.random.default_rng(4)
    queries = rng.normal(size=(23, 5))
    gallery = rng.normal(size=(31, 5))
    gallery[[4, 17, 29]] = gallery[9]  # bitwise duplicates of item 9
    labels = _tree(rng.integers(0, 12, 23)), _tree(rng.integers(0, 12, 31))
    seen = []

    def recording(q: np.ndarray, g: np.ndarray) -> np.ndarray:
        seen.append(len(g))
        return exterior_angle_scores(CURVATURE)(q, g)

    whole = evaluate(queries, gallery, *labels, pair_scores=recording)
    assert seen == [28]  # the distinct rows only, in one chunk
    angles = exterior_angle_scores(CURVATURE)
    chunked = evaluate(queries, gallery, *labels, pair_scores=angles, chunk_size=4)
    pd.testing.assert_frame_equal(chunked, whole)
    _assert_same(whole, _brute_force(queries, gallery, *labels, _lorentz_angle))


def test_pair_scores_are_checked():
    queries, gallery = QUERIES, GALLERY
    labels = _tree(QUERY_LEAVES), _tree(GALLERY_LEAVES)
    angles = exterior_angle_scores(1.0)
    for distance_setting in ({"geometry": "lorentz"}, {"curvature": 1.0}, {"distance_clip": 9.0}):
        with pytest.raises(ValueError, match="pair_scores replaces the distance"):
            evaluate(queries, gallery, *labels, pair_scores=angles, **distance_setting)
    with pytest.raises(ValueError, match=r"must return a real \(3, 6\) matrix"):
        evaluate(queries, gallery, *labels, pair_scores=lambda q, g: np.zeros((len(g), len(q))))
    with pytest.raises(ValueError, match="non-finite score"):
        evaluate(
            queries, gallery, *labels, pair_scores=lambda q, g: np.full((len(q), len(g)), np.inf)
        )


def test_a_nan_angle_ranks_last():
    gallery = GALLERY.copy()
    gallery[0] = np.nan
    angles = exterior_angle_scores(CURVATURE)(QUERIES, gallery)
    assert (angles[:, 0] == math.pi).all() and (angles[:, 1:] < math.pi).all()


def _head(geometry: str, curvature: float | None) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_head(
        geometry, 4, hidden_dim=8, embedding_dim=2, dropout=0.0, curvature=curvature, radius=None
    )


def test_heads_are_scored_in_their_own_geometry():
    lorentz = _head("L", 2.0)
    with torch.no_grad():
        lorentz.log_curvature.fill_(math.log(0.7))  # a learned curvature, not the initial one
    assert float(lorentz.curvature.detach()) == pytest.approx(0.7)
    np.testing.assert_array_equal(
        head_angle_scores(lorentz)(QUERIES, GALLERY),
        exterior_angle_scores(float(lorentz.curvature.detach()))(QUERIES, GALLERY),
    )
    assert not np.allclose(
        head_angle_scores(lorentz)(QUERIES, GALLERY),
        exterior_angle_scores(2.0)(QUERIES, GALLERY),
    )
    np.testing.assert_array_equal(
        head_angle_scores(_head("E", None))(QUERIES, GALLERY),
        exterior_angle_scores(None)(QUERIES, GALLERY),
    )
    poincare = build_head(
        "H", 4, hidden_dim=8, embedding_dim=2, dropout=0.0, curvature=1.0, radius=0.4
    )
    with pytest.raises(ValueError, match="angle ranking needs a euclidean or lorentz head"):
        head_angle_scores(poincare)


# ---- the companion_angle table


def _summary_rows(arm: str, ranking: str, seed: int, values: dict[str, float]) -> list[dict]:
    """Evaluation summary rows of one cell: two Q/G draws (values ± 0.01), both aggregations
    (group-macro shifted by 0.1)."""
    geometry, loss = arm.split("_")
    return [
        {
            "dataset": "cub",
            "arm": arm,
            "geometry": geometry,
            "loss": loss,
            "seed": seed,
            "qg_seed": qg,
            "aggregation": aggregation,
            "level": level,
            "n_valid": 5,
            "map": value + shift + (0.01 if qg == 1 else -0.01),
            "r@1": 0.5,
            "ranking": ranking,
        }
        for qg in (1, 2)
        for aggregation, shift in (("query_micro", 0.0), ("group_macro", 0.1))
        for level, value in values.items()
    ]


# Per seed (leaf, middle, high) mAP; the angle's mean hierarchy beats the distance's on E_A for
# seeds 1 and 2 only, and never on L_A.
VALUES = {
    ("E_A", "distance"): {1: (0.50, 0.30, 0.20), 2: (0.52, 0.32, 0.22), 3: (0.54, 0.34, 0.24)},
    ("E_A", "angle"): {1: (0.40, 0.35, 0.25), 2: (0.42, 0.34, 0.24), 3: (0.44, 0.30, 0.20)},
    ("L_A", "distance"): {1: (0.60, 0.40, 0.30), 2: (0.61, 0.41, 0.31), 3: (0.62, 0.42, 0.32)},
    ("L_A", "angle"): {1: (0.55, 0.30, 0.20), 2: (0.56, 0.31, 0.21), 3: (0.57, 0.32, 0.22)},
}


def _summaries() -> pd.DataFrame:
    rows = []
    for (arm, ranking), seeds in VALUES.items():
        for seed, (leaf, middle, high) in seeds.items():
            rows += _summary_rows(
                arm, ranking, seed, {"leaf": leaf, "middle": middle, "high": high}
            )
    return pd.DataFrame(rows)


def test_ranking_per_seed_averages_the_draws_under_the_chosen_aggregation():
    per_seed = ranking_per_seed(_summaries(), "group_macro")
    assert set(per_seed["metric"]) == {"map"}
    assert list(per_seed.columns[:1]) == ["ranking"]
    row = per_seed[
        (per_seed["ranking"] == "angle")
        & (per_seed["geometry"] == "E")
        & (per_seed["seed"] == 2)
        & (per_seed["level"] == "mean_hierarchy")
    ]
    assert row["value"].item() == pytest.approx((0.34 + 0.24) / 2 + 0.1)
    assert len(per_seed) == 2 * 2 * 3 * 4  # arms, rankings, seeds, levels (mean_hierarchy too)


def test_ranking_table_means_sds_and_the_paired_difference():
    table = ranking_table(ranking_per_seed(_summaries(), "query_micro"))
    assert table.columns.tolist() == [
        "arm",
        "ranking",
        "leaf",
        "middle",
        "high",
        "mean_hierarchy",
        "positive seeds",
        "seeds",
        "interval",
        "p (seeds, these test images)",
    ]
    assert table[["arm", "ranking"]].values.tolist() == [
        ["E_A", "distance"],
        ["E_A", "angle"],
        ["E_A", "angle − distance"],
        ["L_A", "distance"],
        ["L_A", "angle"],
        ["L_A", "angle − distance"],
    ]
    for (arm, ranking), seeds in VALUES.items():
        row = table[(table["arm"] == arm) & (table["ranking"] == ranking)].iloc[0]
        values = np.array(list(seeds.values()))
        for index, level in enumerate(("leaf", "middle", "high")):
            column = values[:, index]
            assert row[level] == f"{column.mean():.4f} ± {column.std(ddof=1):.4f}"
        hierarchy = (values[:, 1] + values[:, 2]) / 2
        assert row["mean_hierarchy"] == f"{hierarchy.mean():.4f} ± {hierarchy.std(ddof=1):.4f}"
        assert row["seeds"] == 3 and row["positive seeds"] == ""
    for arm, positive in (("E_A", 2), ("L_A", 0)):
        hierarchy = {
            ranking: np.array([(m + h) / 2 for _, m, h in VALUES[(arm, ranking)].values()])
            for ranking in ("distance", "angle")
        }
        diff = hierarchy["angle"] - hierarchy["distance"]
        row = table[(table["arm"] == arm) & (table["ranking"] == "angle − distance")].iloc[0]
        assert row["mean_hierarchy"] == f"{diff.mean():+.4f} ± {diff.std(ddof=1):.4f}"
        assert row["positive seeds"] == f"{positive}/3" and row["seeds"] == 3
        assert (row["leaf"], row["middle"], row["high"]) == ("", "", "")
        low, high = (float(end) for end in row["interval"].strip("[]").split(", "))
        # over the three seeds alone (no per-query rows): the t interval on two df
        # (three equal differences have no spread: the interval is the point itself)
        scale = stats.sem(diff)
        expected = stats.t.interval(0.95, 2, loc=diff.mean(), scale=scale) if scale else diff[:2]
        assert (low, high) == pytest.approx(tuple(expected), abs=1e-4)  # four decimals
        assert row["p (seeds, these test images)"] == f"{sign_flip_p(diff):.3g} (floor 0.25)"


def test_ranking_table_refuses_incomplete_or_foreign_evaluations():
    summaries = _summaries()
    with pytest.raises(CompanionAngleError, match=r"arm L_A: no evaluation ranked by \['angle'\]"):
        ranking_per_seed(
            summaries[~((summaries["arm"] == "L_A") & (summaries["ranking"] == "angle"))],
            "query_micro",
        )
    unpaired = summaries[
        ~(
            (summaries["arm"] == "E_A")
            & (summaries["ranking"] == "angle")
            & (summaries["seed"] == 3)
        )
    ]
    with pytest.raises(CompanionAngleError, match="arm E_A: the rankings cover different"):
        ranking_per_seed(unpaired, "query_micro")
    foreign = summaries.assign(arm="E_S", loss="S")
    with pytest.raises(CompanionAngleError, match=r"companion arms .* got \['E_S'\]"):
        ranking_per_seed(foreign, "query_micro")
    with pytest.raises(CompanionAngleError, match="lack the 'ranking' column"):
        ranking_per_seed(summaries.drop(columns="ranking"), "query_micro")


# ---- the sealed evaluation of one companion cell, ranked by angle


def _sealed_cell(tmp_path: Path, loss: str = "A") -> dict[str, Path]:
    """A Lorentz cell at a learned curvature of 0.8, sealed features of 40 images and two Q/G
    draws, all recorded in a Final lock."""
    rng = np.random.default_rng(5)
    leaves = rng.integers(0, 12, 40)
    images = pd.DataFrame({"image_id": [f"img-{i:02d}" for i in range(40)]})
    images[["leaf_code", "middle_code", "high_code"]] = _tree(leaves)
    features = rng.normal(size=(40, 6)).astype(np.float32)
    paths = {name: tmp_path / name for name in ("test.parquet", "splits.parquet", "model.st")}
    write_feature_parquet(feature_table(images, features), paths["test.parquet"], JOB)
    draws = [
        {"image_id": f"img-{i:02d}", "split": f"qg-{seed}", "role": role}
        for seed in (1, 2)
        for i in range(40)
        for role in (("query",) if (i + seed) % 4 == 0 else ("gallery",))
    ]
    pd.DataFrame(draws).to_parquet(paths["splits.parquet"])
    spec = CellSpec(
        dataset="cub",
        geometry="L",
        loss=loss,
        seed=7,
        epochs=1,
        batch_size=4,
        lr=1e-3,
        weight_decay=0.0,
        grad_clip=1.0,
        hidden_dim=8,
        embedding_dim=3,
        dropout=0.0,
        curvature=0.5,
    )
    torch.manual_seed(0)
    model = head_for(spec, 6)
    with torch.no_grad():
        model.log_curvature.fill_(math.log(0.8))
    checkpoint_writer(model, spec)(paths["model.st"])
    paths["record.json"] = tmp_path / "record.json"
    paths["record.json"].write_text(json.dumps({"spec": asdict(spec)}))
    lock = build_lock(
        "cub",
        {},
        {
            "checkpoints": [paths["model.st"]],
            "sealed": [paths["test.parquet"], paths["splits.parquet"]],
        },
    )
    paths["lock.json"] = tmp_path / "lock.json"
    paths["lock.json"].write_text(json.dumps(lock))
    return paths


JOB = JobContext(rule="unit")
# The angle ranking reads no distance clip: its config has no training block.
ANGLE_CONFIG = {
    "evaluation": {"recall_ks": [1, 5], "ot_ks": [5], "query_chunk": 8},
    "datasets": {"cub": {"splits": {"query_gallery": {"seeds": [1, 2]}}}},
}


def _evaluate_angles(paths: dict[str, Path], tmp_path: Path) -> pd.DataFrame:
    return evaluate_angles_on_sealed_test(
        "cub",
        SealedCell(
            paths["record.json"],
            paths["model.st"],
            paths["lock.json"],
            paths["test.parquet"],
            paths["splits.parquet"],
        ),
        ANGLE_CONFIG,
        {"per_query": tmp_path / "angle.parquet", "summary": tmp_path / "angle_summary.parquet"},
        JOB,
        access_log=tmp_path / "access.log",
    )


def test_a_companion_cell_is_ranked_by_angle_at_its_learned_curvature(tmp_path: Path):
    paths = _sealed_cell(tmp_path)
    _evaluate_angles(paths, tmp_path)
    per_query = pd.read_parquet(tmp_path / "angle.parquet")
    summary = pd.read_parquet(tmp_path / "angle_summary.parquet")
    assert set(per_query["ranking"]) == set(summary["ranking"]) == {"angle"}
    assert set(summary["arm"]) == {"L_A"} and set(summary["qg_seed"]) == {1, 2}
    assert (tmp_path / "access.log").read_text().rstrip().endswith("cub LA-7 angle (unit)")
    spec = CellSpec.from_record(json.loads(paths["record.json"].read_text()))
    ids, labels, matrix = read_labelled_features(paths["test.parquet"])
    embeddings = embed(load_checkpoint(paths["model.st"], spec, 6), matrix)
    splits = pd.read_parquet(paths["splits.parquet"])
    rows = {
        role: rows_for_ids(ids, role_ids(splits, "qg-2", role), role)
        for role in ("query", "gallery")
    }
    expected = evaluate(
        embeddings[rows["query"]],
        embeddings[rows["gallery"]],
        labels[rows["query"]],
        labels[rows["gallery"]],
        ks=(1, 5),
        ot_ks=(5,),
        pair_scores=exterior_angle_scores(0.8),
    )
    expected = expected.sort_values(["query", "level"]).reset_index(drop=True)  # as written
    mine = per_query[per_query["qg_seed"] == 2].reset_index(drop=True)
    _assert_same(mine[expected.columns], expected)
    distance_config = ANGLE_CONFIG | {"training": {"distance_clip_test": 1e6}}
    outputs = {"per_query": tmp_path / "d.parquet", "summary": tmp_path / "d_summary.parquet"}
    evaluate_cell_on_sealed_test(
        "cub",
        SealedCell(
            paths["record.json"],
            paths["model.st"],
            paths["lock.json"],
            paths["test.parquet"],
            paths["splits.parquet"],
        ),
        distance_config,
        outputs,
        JOB,
        access_log=tmp_path / "access.log",
    )
    by_distance = pd.read_parquet(outputs["per_query"])
    assert [*by_distance.columns, "ranking"] == per_query.columns.tolist()  # the same format
    assert not np.allclose(by_distance["ap"], per_query["ap"], equal_nan=True)


def test_the_angle_evaluation_checks_the_lock_and_the_cell(tmp_path: Path):
    paths = _sealed_cell(tmp_path)
    paths["model.st"].write_bytes(paths["model.st"].read_bytes() + b" ")
    with pytest.raises(LockError, match="changed after the Final lock"):
        _evaluate_angles(paths, tmp_path)
    assert not (tmp_path / "access.log").exists()
    supcon = tmp_path / "supcon"
    supcon.mkdir()
    with pytest.raises(ValueError, match="the angle ranking is for the companion cells"):
        _evaluate_angles(_sealed_cell(supcon, loss="S"), supcon)
