"""`hierbench seeds`: how many training seeds an effect needs (hierbench.effects.seeds_needed)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.seeds_needed import Noise, measured_noise, seeds_table, simulate

SETTINGS = IntervalSettings(level=0.95, replicates=1000, seed=0)


def _row(mean: float, sd: float, low: float, high: float) -> pd.Series:
    return pd.Series(
        {
            "dataset": "nabirds",
            "effect": "geom_R",
            "metric": "map",
            "level": "mean_hierarchy",
            "mean": mean,
            "sd": sd,
            "n": 3,
            "ci_low": low,
            "ci_high": high,
        }
    )


def test_the_test_images_share_is_the_width_the_seeds_do_not_explain():
    z = 1.959963984540054
    noise = measured_noise(_row(0.01, 0.004, 0.01 - z * 0.003, 0.01 + z * 0.003), 0.95)
    assert noise.mean == 0.01 and noise.seed_sd == 0.004
    assert noise.query_sd == pytest.approx(math.sqrt(0.003**2 - 0.004**2 / 3))
    # an interval narrower than the seeds alone explain leaves nothing to the test images
    assert measured_noise(_row(0.01, 0.004, 0.009, 0.011), 0.95).query_sd == 0.0


def test_a_clear_effect_is_clear_with_few_seeds_and_a_null_one_rarely_with_many():
    assert simulate(Noise(0.05, 0.004, 0.001), 3, SETTINGS)[0] == 1.0
    null_share, _ = simulate(Noise(0.0, 0.004, 0.001), 20, SETTINGS)
    assert null_share < 0.15  # near 1 - level (percentile intervals undercover a little)


def test_more_seeds_narrow_the_interval_and_clear_more_studies():
    # seed noise dominates: more seeds help (0.0005 of test-image noise stays)
    table = seeds_table(_row(0.005, 0.006, -0.00186, 0.01186), SETTINGS)
    assert table["seeds"].tolist() == [3, 5, 10, 20]
    assert table["median width"].is_monotonic_decreasing
    assert table["interval excludes zero"].iloc[-1] > 0.9 > table["interval excludes zero"].iloc[0]


def test_test_image_noise_is_a_floor_no_number_of_seeds_removes():
    # the effect is smaller than the test images' spread: 20 seeds clear it no more than 3
    table = seeds_table(_row(0.0017, 0.0037, -0.004, 0.0074), SETTINGS)
    assert (table["interval excludes zero"] < 0.3).all()
    assert table["median width"].iloc[-1] > 2 * 1.96 * 0.0019


def test_the_command_prints_a_row_per_seed_count_and_names_a_missing_effect(tmp_path, capsys):
    path = tmp_path / "effects_summary.parquet"
    pd.DataFrame([_row(0.0017, 0.0037, -0.004, 0.0074)]).assign(positive_seeds=2).to_parquet(path)
    args = ["seeds", str(path), "--effect", "geom_R", "--dataset", "nabirds"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("nabirds geom_R on map at mean_hierarchy: mean +0.0017")
    assert [line.split("|")[1].strip() for line in out[3:7]] == ["3", "5", "10", "20"]
    assert main(["seeds", str(path), "--effect", "loss_E", "--dataset", "nabirds"]) == 2
    assert "no effect 'loss_E'; it has ['geom_R']" in capsys.readouterr().err
