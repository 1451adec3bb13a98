"""The curvature/radius control: point labels, its configuration, its tables and contrasts."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from hierbench.controls.curvature import curvature_contrasts, curvature_table, point_roles
from hierbench.controls.curvature_points import (
    CurvatureControlError,
    cell_label,
    control_epochs,
    control_variants,
    curvature_points,
    parse_point,
    point_label,
)
from hierbench.controls.semantic import (
    SemanticControlError,
    best_epoch,
    semantic_arm,
    semantic_arms,
    semantic_spec,
    training_labels,
)
from hierbench.controls.semantic_tables import semantic_contrasts, semantic_table
from hierbench.effects.variants import per_seed_by_variant
from hierbench.protocol import MEAN_HIERARCHY

SEEDS = (42, 2024, 3407)
BASE = (2.0, 0.4)  # the operating point of these tests
# Mean hierarchy inputs: per variant and seed, (middle mAP, high mAP), one Q/G draw each.
VALUES = {
    "euclidean": ((0.30, 0.50), (0.32, 0.52), (0.28, 0.48)),
    "c2_r0.4": ((0.34, 0.54), (0.36, 0.56), (0.30, 0.50)),
    "c1e-06_r0.4": ((0.30, 0.50), (0.32, 0.53), (0.29, 0.48)),
    "c1_r0.4": ((0.31, 0.50), (0.35, 0.56), (0.27, 0.47)),
}


def _summaries() -> pd.DataFrame:
    rows = []
    for variant, per_seed in VALUES.items():
        geometry = "E" if variant == "euclidean" else "H"
        for seed, (middle, high) in zip(SEEDS, per_seed, strict=True):
            for level, value in (("leaf", 0.1), ("middle", middle), ("high", high)):
                rows.append(
                    {
                        "dataset": "cub",
                        "arm": f"{geometry}_R",
                        "geometry": geometry,
                        "loss": "R",
                        "seed": seed,
                        "qg_seed": 1,
                        "aggregation": "query_micro",
                        "level": level,
                        "map": value,
                        "variant": variant,
                    }
                )
    return pd.DataFrame(rows)


def test_point_labels_round_trip_and_name_cells():
    assert point_label(1e-6, 0.4) == "c1e-06_r0.4"
    assert parse_point("c1e-06_r0.4") == (1e-6, 0.4)
    assert parse_point(point_label(0.1, 0.8)) == (0.1, 0.8)
    assert cell_label("c1_r0.4", 42) == "HR-42@c1_r0.4"
    assert cell_label("euclidean", 42) == "ER-42@euclidean"
    with pytest.raises(CurvatureControlError, match="not a curvature point"):
        parse_point("c1-r0.4")


def _config(block: dict, epochs: int = 100) -> dict:
    return {
        "training": {"epochs": epochs},
        "datasets": {
            "nabirds": {
                "hyperbolic": {"curvature": 0.1, "radius": 0.4},
                "controls": {"curvature": block},
            }
        },
    }


def test_points_only_when_switched_on_and_repeats_name_the_key():
    assert curvature_points(_config({"enabled": False, "points": [[1, 0.4]]}), "nabirds") == []
    two = {"enabled": True, "points": [[1, 0.4], [0.1, 0.2]]}
    points = curvature_points(_config(two), "nabirds")
    assert points == [(1.0, 0.4), (0.1, 0.2)]
    with pytest.raises(CurvatureControlError, match=r"datasets\.nabirds\.controls\.curvature"):
        curvature_points(_config({"enabled": True, "points": [[1, 0.4], [1.0, 0.4]]}), "nabirds")


def test_the_control_trains_the_base_point_and_a_matched_euclidean_of_its_own():
    two = {"enabled": True, "points": [[1, 0.4], [0.1, 0.2]]}
    # The operating point (0.1, 0.4) is trained within the control though the config omits it.
    assert control_variants(_config(two), "nabirds") == [
        "euclidean",
        "c0.1_r0.2",
        "c0.1_r0.4",
        "c1_r0.4",
    ]
    assert control_variants(_config({"enabled": False}), "nabirds") == []
    # The paper's budget of 84 epochs, else the factorial's.
    assert control_epochs(_config({**two, "epochs": 84}), "nabirds") == 84
    assert control_epochs(_config({**two, "epochs": None}, epochs=100), "nabirds") == 100


PAPER_POINTS = ["euclidean", "c1e-06_r0.4", "c0.1_r0.4", "c1_r0.4", "c0.1_r0.2", "c0.1_r0.8"]


def test_point_roles_follow_table_10():
    roles = point_roles(PAPER_POINTS, (0.1, 0.4))
    assert roles == {
        "euclidean": "euclidean",
        "c1e-06_r0.4": "near_flat",
        "c0.1_r0.4": "base",
        "c1_r0.4": "strong",
        "c0.1_r0.2": "small_radius",
        "c0.1_r0.8": "large_radius",
    }
    # A point that differs from the base in both coordinates has no role.
    assert "c1_r0.8" not in point_roles(["c0.1_r0.4", "c1_r0.8"], (0.1, 0.4))


def test_the_table_reports_each_variant_mean_and_sd_over_seeds():
    per_seed = per_seed_by_variant(_summaries(), "query_micro")
    table = curvature_table(per_seed, BASE)
    assert table["arm"].tolist() == ["Matched Euclidean", "Near-flat", "H_R", "Base"]
    assert table["curvature"].tolist() == ["", "1e-06", "1", "2"]
    # matched E_R mean hierarchy per seed: 0.40, 0.42, 0.38 -> mean 0.40, SD 0.02
    assert table.loc[0, "mean_hierarchy"] == "0.4000 ± 0.0200"


def test_contrasts_are_table_10s_paired_by_seed_within_the_control():
    contrasts = curvature_contrasts(per_seed_by_variant(_summaries(), "query_micro"), BASE)
    assert contrasts["contrast"].tolist() == [
        "Base − Near-flat",
        "Near-flat − Matched Euclidean",
        "c1_r0.4 − Base",
    ]
    base_minus_flat = contrasts.set_index("contrast").loc["Base − Near-flat"]
    # per seed: (0.44 - 0.40), (0.46 - 0.425), (0.40 - 0.385)
    expected = [0.44 - 0.40, 0.46 - 0.425, 0.40 - 0.385]
    assert math.isclose(base_minus_flat["mean"], sum(expected) / 3, abs_tol=1e-12)
    assert base_minus_flat["positive_seeds"] == 3 and base_minus_flat["signs"] == "+ + +"
    flat_minus_e = contrasts.set_index("contrast").loc["Near-flat − Matched Euclidean"]
    # per seed: 0.40 - 0.40, 0.425 - 0.42, 0.385 - 0.38
    assert flat_minus_e["signs"] == "0 + +" and flat_minus_e["negative_seeds"] == 0


def test_every_contrast_of_table_10_with_all_five_points():
    rows = []
    for index, variant in enumerate(PAPER_POINTS):
        for seed in SEEDS:
            value = 0.34 + 0.001 * index + 0.0001 * (seed % 7)
            rows += [
                {
                    "variant": variant,
                    "seed": seed,
                    "level": MEAN_HIERARCHY,
                    "metric": "map",
                    "value": value,
                }
            ]
    contrasts = curvature_contrasts(pd.DataFrame(rows), (0.1, 0.4)).set_index("contrast")
    assert contrasts.index.tolist() == [
        "Base − Near-flat",
        "Strong curvature − Base",
        "Small radius − Base",
        "Large radius − Base",
        "Near-flat − Matched Euclidean",
    ]
    # index difference × 0.001 for every seed: Strong (3) − Base (2) = +0.001
    assert math.isclose(contrasts.loc["Strong curvature − Base", "mean"], 0.001, abs_tol=1e-12)
    assert contrasts.loc["Small radius − Base", "signs"] == "+ + +"


def test_contrasts_need_the_base_point():
    summaries = _summaries()
    per_seed = per_seed_by_variant(summaries[summaries["variant"] != "c2_r0.4"], "query_micro")
    with pytest.raises(CurvatureControlError, match=r"base point c2_r0\.4"):
        curvature_contrasts(per_seed, BASE)


# ------------------------------------------------------------------ semantic alignment

SEMANTIC = {
    "enabled": True,
    "tau": 0.3,
    "lr": 1e-4,
    "weight_decay": 1e-4,
    "max_epochs": 4,
    "arms": {
        "leaf": {"weights": [0.25, 0, 0]},
        "full": {"weights": [0.25, 0.5, 1.0]},
        "shuffle": {"weights": [0.25, 0.5, 1.0], "taxonomy": "shuffled"},
    },
}


def _semantic_config(**changes) -> dict:
    block = {**SEMANTIC, **changes}
    return {
        "datasets": {"nabirds": {"controls": {"semantic": block}, "hyperbolic": {}}},
        "training": {
            "epochs": 2,
            "batch_size": 4,
            "lr": 5e-5,
            "weight_decay": 1e-4,
            "grad_clip": 1.0,
            "regression_targets": {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0},
            "supcon_weights": {"c": 1.0, "m": 1.0, "h": 1.0},
            "distance_clip_train": 20.0,
            "seeds": [42],
        },
        "head": {"hidden_dim": 8, "embedding_dim": 4, "dropout": 0.1},
        "tuning": {"seed": 42},
        "evaluation": {"recall_ks": [1]},
    }


def _taxonomies() -> tuple[pd.DataFrame, pd.DataFrame]:
    taxonomy = pd.DataFrame(
        {"leaf": ["a", "b", "c", "d"], "leaf_code": [0, 1, 2, 3], "middle_code": [0, 0, 1, 1]}
    )
    shuffled = pd.DataFrame(
        {"leaf": ["a", "b", "c", "d"], "middle_code": [1, 0, 0, 1], "high_code": [5, 6, 6, 5]}
    )
    return taxonomy, shuffled


def test_unknown_arms_and_empty_weights_name_the_config_key():
    with pytest.raises(SemanticControlError, match=r"controls\.semantic\.arms has no arm 'x'"):
        semantic_arm(_semantic_config(), "nabirds", "x")
    empty = {"arms": {"none": {"weights": [0, 0, 0]}}}
    with pytest.raises(SemanticControlError, match=r"arms\.none\.weights are all zero"):
        semantic_arm(_semantic_config(**empty), "nabirds", "none")
    assert semantic_arms(_semantic_config(enabled=False), "nabirds") == {}


def test_only_the_shuffle_arm_trains_on_shuffled_labels():
    taxonomy, shuffled = _taxonomies()
    labels = np.array([[0, 0, 0], [2, 1, 0], [3, 1, 0]])
    full = semantic_arm(_semantic_config(), "nabirds", "full")
    shuffle = semantic_arm(_semantic_config(), "nabirds", "shuffle")
    assert (training_labels(labels, full, taxonomy, shuffled) == labels).all()
    assert training_labels(labels, shuffle, taxonomy, shuffled).tolist() == [
        [0, 1, 5],
        [2, 0, 6],
        [3, 1, 5],
    ]


def test_the_best_epoch_wins_and_ties_go_to_the_earlier():
    assert best_epoch([0.1, 0.3, 0.2]) == 2
    assert best_epoch([0.1, 0.3, 0.3, float("nan")]) == 2
    with pytest.raises(SemanticControlError, match="no epoch"):
        best_epoch([float("nan")])


def test_the_arm_spec_takes_the_control_recipe():
    config = _semantic_config()
    spec = semantic_spec(config, "nabirds", semantic_arm(config, "nabirds", "leaf"), 2024, 7)
    assert (spec.geometry, spec.loss, spec.tau, spec.lr, spec.epochs) == ("E", "S", 0.3, 1e-4, 7)
    assert spec.supcon_weights == (0.25, 0.0, 0.0) and spec.seed == 2024


def test_duration_selection_trains_on_the_arm_labels_and_scores_on_the_true_ones(
    tmp_path, monkeypatch
):
    """Fails if the shuffle arm trained on true labels, or were scored on shuffled ones."""
    import hierbench.stages.tuning as tuning

    true_labels = np.array([[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0]])
    features = np.zeros((4, 3), dtype=np.float32)
    monkeypatch.setattr(
        tuning, "role_arrays", lambda *a, **k: [(features, true_labels)] * 3, raising=True
    )
    taxonomy, shuffled = _taxonomies()
    paths = (tmp_path / "t.parquet", tmp_path / "s.parquet")
    taxonomy.to_parquet(paths[0])
    shuffled.to_parquet(paths[1])
    seen: dict[str, np.ndarray] = {}

    def fake_train(x, y, spec, *, on_epoch, device):
        seen["trained"], seen["device"] = y, device
        for epoch in range(1, spec.epochs + 1):
            on_epoch(epoch, None)

    def fake_score(model, query, gallery, aggregation, ks):
        seen["scored"] = query[1]
        return 0.5

    monkeypatch.setattr(tuning, "train_cell", fake_train)
    monkeypatch.setattr(tuning, "_hierarchy_score", fake_score)
    from hierbench.provenance.records import JobContext

    out = tmp_path / "duration.json"
    tuning.select_semantic_duration(
        "nabirds",
        "shuffle",
        "f",
        "s",
        paths,
        _semantic_config(),
        out,
        JobContext(rule="unit"),
        aggregation="group_macro",
    )
    assert seen["trained"][:, 1:].tolist() == [[1, 5], [0, 6], [0, 6], [1, 5]]
    assert seen["device"] == torch.device("cpu")  # the config names none: the CPU
    assert (seen["scored"] == true_labels).all()
    record = json.loads(out.read_text())
    assert record["epochs"] == 1 and record["scores"] == [0.5] * 4  # ties: the earliest


def test_the_semantic_table_and_paired_differences():
    rows = []
    means = {"leaf": (0.30, 0.31, 0.29), "full": (0.45, 0.46, 0.44), "shuffle": (0.28, 0.3, 0.27)}
    for arm, values in means.items():
        for seed, value in zip(SEEDS, values, strict=True):
            cells = [
                (MEAN_HIERARCHY, "map", value),
                ("leaf", "map", 0.2),
                ("leaf", "r@1", 0.5),
                ("middle", "map", 0.1),
                ("high", "map", 0.3),
            ]
            rows += [
                {"variant": arm, "seed": seed, "level": lvl, "metric": m, "value": v}
                for lvl, m, v in cells
            ]
    per_seed = pd.DataFrame(rows)
    table = semantic_table(per_seed, {"leaf": 5, "full": 119, "shuffle": 2})
    assert table["arm"].tolist() == ["Leaf-only", "Full", "Shuffle"]
    assert table["epochs"].tolist() == [5, 119, 2]
    assert table.loc[1, "mean hierarchy"] == "0.4500 ± 0.0100"
    contrasts = semantic_contrasts(per_seed).set_index(["contrast", "level"])
    full_shuffle = contrasts.loc[("Full − Shuffle", MEAN_HIERARCHY)]
    assert full_shuffle["positive_seeds"] == 3 and full_shuffle["signs"] == "+ + +"
    assert math.isclose(full_shuffle["mean"], (0.17 + 0.16 + 0.17) / 3)
    # Full − Shuffle is also reported on each evaluated upper level (here both arms tie there).
    assert contrasts.loc[("Full − Shuffle", "middle"), "signs"] == "0 0 0"
    assert ("Full − Shuffle", "high") in contrasts.index
    assert not any("Leaf+Parent" in name for name, _ in contrasts.index)  # no leaf_parent arm


LEVELS_AND_MEAN = ("leaf", "middle", "high", MEAN_HIERARCHY)


def test_semantic_contrasts_are_table_2s_at_every_level():
    rows = []
    # Per arm, (leaf, middle, high, mean hierarchy) for seeds 42, 2024, 3407; shuffle_minimum
    # is a sensitivity arm (a shuffle of another fixed-point setting), compared with Full.
    values = {
        "leaf": [(0.30, 0.10, 0.20, 0.15)] * 3,
        "leaf_parent": [(0.3, 0.20, 0.22, 0.21), (0.3, 0.21, 0.21, 0.21), (0.3, 0.22, 0.20, 0.21)],
        "full": [(0.3, 0.19, 0.35, 0.27), (0.3, 0.215, 0.33, 0.2725), (0.3, 0.21, 0.34, 0.275)],
        "shuffle": [(0.3, 0.12, 0.10, 0.11)] * 3,
        "shuffle_minimum": [(0.3, 0.11, 0.09, 0.10)] * 3,
    }
    for arm, per_seed_values in values.items():
        for seed, values_of_seed in zip(SEEDS, per_seed_values, strict=True):
            for level, value in zip(LEVELS_AND_MEAN, values_of_seed, strict=True):
                rows.append(
                    {"variant": arm, "seed": seed, "level": level, "metric": "map", "value": value}
                )
    contrasts = semantic_contrasts(pd.DataFrame(rows))
    names = ["Full − Shuffle", "Leaf+Parent − Leaf-only", "Full − Leaf+Parent"]
    names.append("Full − shuffle_minimum")
    assert list(zip(contrasts["contrast"], contrasts["level"], strict=True)) == [
        (name, level) for name in names for level in LEVELS_AND_MEAN
    ]
    table = contrasts.set_index(["contrast", "level"])
    # The Parent-level change of Full − Leaf+Parent: −0.01, +0.005, −0.01 (1 of 3 positive).
    parent = table.loc[("Full − Leaf+Parent", "middle")]
    assert parent["signs"] == "− + −" and parent["positive_seeds"] == 1
    assert parent["negative_seeds"] == 2
    assert math.isclose(parent["mean"], (-0.01 + 0.005 - 0.01) / 3, abs_tol=1e-12)
    assert table.loc[("Leaf+Parent − Leaf-only", MEAN_HIERARCHY), "positive_seeds"] == 3
