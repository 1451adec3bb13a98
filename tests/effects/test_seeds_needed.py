"""`hierbench seeds`: the power of the reported interval and test with more training seeds, and
their rate at a true zero (hierbench.effects.seeds_needed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.effects.intervals import IntervalSettings, t_interval
from hierbench.effects.seeds_needed import STUDIES, Noise, measured_noise, seeds_table, simulate

SETTINGS = IntervalSettings(level=0.95, replicates=1000, seed=0)


def _row(mean: float, sd: float, shared_sd: float, n: int = 3) -> pd.Series:
    """An effects-summary row whose interval holds SD²/n plus the shared variance."""
    se = math.sqrt(sd**2 / n + shared_sd**2)
    return pd.Series(
        {
            "dataset": "nabirds",
            "effect": "geom_R",
            "metric": "map",
            "level": "mean_hierarchy",
            "mean": mean,
            "sd": sd,
            "n": n,
            "se": se,
            "ci_low": mean - 2 * se,
            "ci_high": mean + 2 * se,
        }
    )


def test_the_noise_split_is_the_interval_s_variance_less_the_seeds_part():
    noise = measured_noise(_row(0.01, 0.004, 0.003))
    assert noise.mean == 0.01 and noise.seed_sd == 0.004
    assert noise.shared_sd == pytest.approx(0.003)
    # the same split as the interval the tables print: se² = SD²/n + shared
    interval = t_interval([0.006, 0.010, 0.014], 0.003**2, 0.95)
    row = _row(0.01, 0.004, 0.003).copy()
    row["se"] = interval.se
    assert measured_noise(row).shared_sd == pytest.approx(0.003)
    assert measured_noise(_row(0.01, 0.004, 0.0)).shared_sd == 0.0


MC_ERROR = 3 * math.sqrt(0.05 * 0.95 / STUDIES)  # three Monte-Carlo SEs of a 5 % rate


@pytest.mark.parametrize("shared_sd", [0.0, 0.002, 0.01])
@pytest.mark.parametrize("seeds", [3, 10])
def test_at_a_true_zero_the_interval_excludes_it_at_the_stated_rate(seeds, shared_sd):
    rates = simulate(Noise(0.02, 0.004, shared_sd), seeds, 0.0, SETTINGS)
    assert abs(rates.interval_excludes_zero - 0.05) < MC_ERROR


def test_the_sign_flip_test_has_no_power_below_its_floor():
    strong = simulate(Noise(0.05, 0.001, 0.0), 3, 0.05, SETTINGS)
    assert strong.interval_excludes_zero == 1.0  # the interval sees it every time
    assert strong.test_rejects == 0.0  # the test cannot: its floor with 3 seeds is 0.25
    assert simulate(Noise(0.05, 0.001, 0.0), 5, 0.05, SETTINGS).test_rejects == 0.0  # 0.0625
    assert simulate(Noise(0.05, 0.001, 0.0), 10, 0.05, SETTINGS).test_rejects == 1.0


def test_more_seeds_narrow_the_interval_and_clear_more_studies():
    # seed noise dominates: more seeds help
    table = seeds_table(_row(0.005, 0.006, 0.0005), SETTINGS)
    assert table["seeds"].tolist() == [3, 5, 10, 20]
    assert table["median width"].is_monotonic_decreasing
    power = table["interval excludes 0, at observed"]
    assert power.iloc[-1] > 0.9 > power.iloc[0]
    assert (np.abs(table["interval excludes 0, at zero"] - 0.05) < MC_ERROR).all()


def test_test_image_noise_is_a_floor_no_number_of_seeds_removes():
    # the effect is smaller than the test images' shared spread: 20 seeds clear it little more
    table = seeds_table(_row(0.0017, 0.0037, 0.0025), SETTINGS)
    assert (table["interval excludes 0, at observed"] < 0.4).all()
    assert table["median width"].iloc[-1] > 2 * 1.96 * 0.0025


def test_the_command_states_its_caveats_and_names_a_missing_effect(tmp_path, capsys):
    path = tmp_path / "effects_summary.parquet"
    pd.DataFrame([_row(0.0017, 0.0037, 0.0019)]).assign(positive_seeds=2).to_parquet(path)
    args = ["seeds", str(path), "--effect", "geom_R", "--dataset", "nabirds"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("nabirds geom_R on map at mean_hierarchy: mean +0.0017")
    assert "take +0.0017 as the truth, which it is not known to be" in out[1]
    assert "With 3, 5 seeds the sign-flip test's floor is above 0.05: it has zero power" in out[2]
    table = out[out.index(next(line for line in out if line.startswith("| seeds"))) :]
    assert [line.split("|")[1].strip() for line in table[2:6]] == ["3", "5", "10", "20"]
    assert main(["seeds", str(path), "--effect", "loss_E", "--dataset", "nabirds"]) == 2
    assert "no effect 'loss_E'; it has ['geom_R']" in capsys.readouterr().err
