"""`hierbench seeds`: the power of the reported interval with more training seeds, as the range
over what the run's seeds allow, its rate at a true zero, and the sign-flip test beside it
(hierbench.effects.seeds_needed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.cli import main
from hierbench.effects.intervals import IntervalSettings, t_interval
from hierbench.effects.seeds_needed import (
    PROMISE,
    STUDIES,
    Noise,
    detectable_floor,
    exclusion_rates,
    measured_noise,
    plausible_region,
    power_table,
    seeds_table,
    smallest_detectable,
)

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
    assert noise.mean == 0.01 and noise.seed_sd == 0.004 and noise.seeds == 3
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
    rates, _ = exclusion_rates([0.0], [0.004], shared_sd, seeds, SETTINGS)
    assert abs(rates[0] - 0.05) < MC_ERROR


def test_the_plausible_region_is_the_effect_s_interval_and_the_seed_sd_s_chi2_interval():
    noise = Noise(0.01, 0.004, 0.0, 3)
    region = plausible_region(noise, 0.95)
    # with no shared noise the effect's part is Student's t at 97.5 %, two-sided
    half = stats.t.ppf(1 - 0.0125, 2) * 0.004 / math.sqrt(3)
    assert region.effect_high == pytest.approx(0.01 + half, rel=1e-3)
    assert region.effect_low == 0.0  # the interval holds zero: no effect is ruled out
    assert region.seed_sd_low == pytest.approx(0.004 * math.sqrt(2 / stats.chi2.ppf(0.9875, 2)))
    assert region.seed_sd_high == pytest.approx(0.004 * math.sqrt(2 / stats.chi2.ppf(0.0125, 2)))
    clear = plausible_region(Noise(0.05, 0.004, 0.0, 3), 0.95)
    assert clear.effect_low == pytest.approx(0.05 - half, rel=1e-3)
    with pytest.raises(ValueError, match="two seeds or more"):
        plausible_region(Noise(0.05, 0.0, 0.0, 1), 0.95)


def test_an_effect_whose_interval_holds_zero_is_promised_nothing():
    table = power_table(Noise(0.005, 0.006, 0.0005, 3), SETTINGS)
    assert table["seeds"].tolist() == [3, 5, 10, 20]
    assert (table["power low"] < 0.05 + MC_ERROR).all()  # the false-exclusion rate
    assert (table["power high"] > 0.9).all()  # and an effect at the far end would be seen
    assert (np.abs(table["at a true zero"] - 0.05) < MC_ERROR).all()


def test_a_clear_effect_with_little_seed_noise_is_promised_power_that_grows_with_seeds():
    table = power_table(Noise(0.05, 0.003, 0.0005, 3), SETTINGS)
    assert table["power low"].is_monotonic_increasing
    assert table["power low"].iloc[-1] > 0.95 > table["power low"].iloc[0]
    assert table["width high"].is_monotonic_decreasing


def test_test_image_noise_is_a_floor_no_number_of_seeds_removes():
    table = power_table(Noise(0.0017, 0.0037, 0.0025, 3), SETTINGS)
    assert table["width low"].iloc[-1] > 2 * 1.96 * 0.0025


def test_null_studies_are_rarely_promised_power_the_measured_values_would_promise():
    # 3-seed studies of a true zero, seeds dominating: the measured values taken as the truth
    # promise 20-seed power of 50 % or more to many of them; the range to few
    rng = np.random.default_rng(7)
    values = rng.normal(0.0, 0.01, (40, 3)) + rng.normal(0.0, 0.0018, (40, 1))
    noises = [Noise(float(v.mean()), float(v.std(ddof=1)), 0.0018, 3) for v in values]
    told = [power_table(noise, SETTINGS, (20,))["power low"].iloc[0] >= PROMISE for noise in noises]
    plug_in, _ = exclusion_rates(
        [n.mean for n in noises], [n.seed_sd for n in noises], 0.0018, 20, SETTINGS
    )
    assert np.mean(told) <= 0.1
    assert np.mean(plug_in >= PROMISE) >= 0.2


def test_the_sign_flip_test_beside_it_has_a_floor_and_a_rate_above_alpha_for_new_images():
    table = seeds_table(_row(0.0, 0.002, 0.003), SETTINGS, (3, 20))
    assert table["sign-flip floor"].tolist() == [0.25, 2.0**-19]
    assert table["sign-flip at a true zero"].iloc[0] == 0.0  # it cannot reject with 3 seeds
    assert table["sign-flip at a true zero"].iloc[1] > 0.3  # the shared offset, for new images


def test_the_command_states_its_caveats_and_names_a_missing_effect(tmp_path, capsys):
    path = tmp_path / "effects_summary.parquet"
    pd.DataFrame([_row(0.0017, 0.0037, 0.0019)]).assign(positive_seeds=2).to_parquet(path)
    args = ["seeds", str(path), "--effect", "geom_R", "--dataset", "nabirds"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("nabirds geom_R on map at mean_hierarchy: mean +0.0017")
    shared = _row(0.0017, 0.0037, 0.0019)
    floor = detectable_floor(measured_noise(shared).shared_sd, 0.95)
    assert out[1].startswith("Smallest effect detected with 80% power")
    assert f"No number of seeds detects less than {floor:.4f}" in out[1]
    assert out[2].startswith("What 3 seeds allow, jointly at 95%: a true effect of size 0.0000")
    assert "not at the measured values (which are not known to be the truth)" in out[2]
    assert "the low end is the false-exclusion rate" in out[3]
    assert "The sign-flip p the tables print is about these test images only" in out[4]
    assert "With 3, 5 seeds the sign-flip test's floor is above 0.05" in out[5]
    table = out[out.index(next(line for line in out if line.startswith("| seeds"))) :]
    assert table[0].split("|")[2].strip() == "detectable with 80% power (range)"
    cells = [line.split("|") for line in table[2:6]]
    assert [c[1].strip() for c in cells] == ["3", "5", "10", "20"]
    lows = [float(c[2].split("–")[0]) for c in cells]
    assert lows == sorted(lows, reverse=True) and min(lows) >= floor  # more seeds, smaller
    assert all("%–" in c[3] for c in cells)  # power: a range, not one figure
    assert main([*args, "--seeds", "4"]) == 0
    assert "| 4 |" in capsys.readouterr().out
    assert main(["seeds", str(path), "--effect", "loss_E", "--dataset", "nabirds"]) == 2
    assert "no effect 'loss_E'; it has ['geom_R']" in capsys.readouterr().err


def test_the_smallest_detectable_effect_has_the_stated_power_and_a_floor():
    settings = IntervalSettings(level=0.95, seed=3)
    found = smallest_detectable(0.004, 0.001, 10, settings)
    power, _ = exclusion_rates([found], [0.004], 0.001, 10, settings)
    assert power[0] == pytest.approx(0.8, abs=0.02)
    assert detectable_floor(0.001, 0.95) == pytest.approx((1.959964 + 0.841621) * 0.001)
    assert smallest_detectable(0.004, 0.001, 200, settings) >= detectable_floor(0.001, 0.95)


def test_an_unknown_test_image_variance_is_warned_of_not_taken_as_zero(tmp_path, capsys):
    path = tmp_path / "effects_summary.parquet"
    seeds_only = _row(0.01, 0.004, 0.0)  # se² = SD²/n: no test-image part
    pd.DataFrame([seeds_only]).assign(positive_seeds=3).to_parquet(path)
    assert main(["seeds", str(path), "--effect", "geom_R", "--dataset", "nabirds"]) == 0
    out = capsys.readouterr().out
    assert "Warning: this row's se holds no test-image part" in out
    assert "the test images' variance is unknown, not zero" in out
