"""The curvature/radius control: point labels, its configuration, its tables and contrasts."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hierbench.controls.curvature import (
    CurvatureControlError,
    cell_label,
    curvature_contrasts,
    curvature_points,
    curvature_table,
    parse_point,
    per_seed_by_variant,
    point_label,
)

SEEDS = (42, 2024, 3407)
# Mean hierarchy inputs: per variant and seed, (middle mAP, high mAP), one Q/G draw each.
VALUES = {
    "E_R": ((0.30, 0.50), (0.32, 0.52), (0.28, 0.48)),
    "H_R": ((0.34, 0.54), (0.36, 0.56), (0.30, 0.50)),
    "c1e-06_r0.4": ((0.30, 0.50), (0.32, 0.53), (0.29, 0.48)),
    "c1_r0.4": ((0.31, 0.50), (0.35, 0.56), (0.27, 0.47)),
}


def _summaries() -> pd.DataFrame:
    rows = []
    for variant, per_seed in VALUES.items():
        geometry = "E" if variant == "E_R" else "H"
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
    with pytest.raises(CurvatureControlError, match="not a curvature point"):
        parse_point("c1-r0.4")


def _config(block: dict) -> dict:
    return {"datasets": {"nabirds": {"controls": {"curvature": block}}}}


def test_points_only_when_switched_on_and_repeats_name_the_key():
    assert curvature_points(_config({"enabled": False, "points": [[1, 0.4]]}), "nabirds") == []
    two = {"enabled": True, "points": [[1, 0.4], [0.1, 0.2]]}
    points = curvature_points(_config(two), "nabirds")
    assert points == [(1.0, 0.4), (0.1, 0.2)]
    with pytest.raises(CurvatureControlError, match=r"datasets\.nabirds\.controls\.curvature"):
        curvature_points(_config({"enabled": True, "points": [[1, 0.4], [1.0, 0.4]]}), "nabirds")


def test_the_table_reports_each_variant_mean_and_sd_over_seeds():
    per_seed = per_seed_by_variant(_summaries(), "query_micro")
    table = curvature_table(per_seed, (2.0, 0.4))
    assert table["arm"].tolist() == ["E_R (matched)", "H_R", "H_R", "H_R (operating point)"]
    assert table["curvature"].tolist() == ["", "1e-06", "1", "2"]
    # E_R mean hierarchy per seed: 0.40, 0.42, 0.38 -> mean 0.40, SD 0.02
    assert table.loc[0, "mean_hierarchy"] == "0.4000 ± 0.0200"


def test_contrasts_are_paired_by_seed_against_the_operating_point():
    contrasts = curvature_contrasts(per_seed_by_variant(_summaries(), "query_micro"))
    near_flat = contrasts.set_index("variant").loc["c1e-06_r0.4"]
    # per seed: (0.40 - 0.44), (0.425 - 0.46), (0.385 - 0.40)
    expected = [0.40 - 0.44, 0.425 - 0.46, 0.385 - 0.40]
    assert math.isclose(near_flat["mean"], sum(expected) / 3, abs_tol=1e-12)
    assert near_flat["positive_seeds"] == 0 and near_flat["signs"] == "− − −"
    assert contrasts["variant"].tolist() == ["E_R", "c1e-06_r0.4", "c1_r0.4"]


def test_contrasts_need_the_operating_point():
    summaries = _summaries()
    per_seed = per_seed_by_variant(summaries[summaries["variant"] != "H_R"], "query_micro")
    with pytest.raises(CurvatureControlError, match="operating point"):
        curvature_contrasts(per_seed)
