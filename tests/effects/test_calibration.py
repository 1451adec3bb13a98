"""The interval's calibrated quantile (hierbench.effects.calibration): its coverage is the
stated level whatever the share of the test images' noise, where the Welch–Satterthwaite rule's
is not; the t quantile and the normal one at the two ends."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hierbench.effects.calibration import (
    Quantile,
    calibrated_quantile,
    chi2_nodes,
    coverage,
    effective_df,
)
from hierbench.effects.intervals import t_intervals

FINE_RATIOS = np.exp(np.linspace(np.log(1e-6), np.log(1e6), 400))


@pytest.mark.parametrize(("seeds", "tolerance"), [(3, 0.005), (4, 0.002), (5, 0.002), (10, 0.002)])
def test_the_coverage_is_the_level_at_every_ratio(seeds, tolerance):
    found = coverage(
        calibrated_quantile(seeds, 0.95), seeds, FINE_RATIOS, chi2_nodes(seeds, 20_000)
    )
    assert np.abs(found - 0.95).max() < tolerance


def test_other_levels_are_calibrated_too():
    found = coverage(calibrated_quantile(3, 0.90), 3, FINE_RATIOS, chi2_nodes(3, 20_000))
    assert np.abs(found - 0.90).max() < 0.005


def test_welch_satterthwaite_is_what_it_replaces_and_misses_with_three_seeds():
    # the moment-matching df = (n − 1) · se⁴ / (s²/n)² as a quantile of the observed ratio
    class WelchSatterthwaite(Quantile):
        def __call__(self, ratio):
            return stats.t.ppf(0.975, 2 * (1 + np.asarray(ratio)) ** 2)

    welch = WelchSatterthwaite(3, 0.95, np.ones(2))
    found = coverage(welch, 3, FINE_RATIOS, chi2_nodes(3, 20_000))
    assert found.min() < 0.925


def test_the_ends_are_the_t_and_the_normal_quantiles():
    q = calibrated_quantile(3, 0.95)
    assert q(np.array([0.0]))[0] == pytest.approx(stats.t.ppf(0.975, 2))
    assert q(np.array([np.inf]))[0] == pytest.approx(stats.norm.ppf(0.975))
    values = q(np.exp(np.linspace(-12, 12, 50)))
    assert (np.diff(values) <= 1e-12).all()  # falls monotonically in between
    assert effective_df(np.array([stats.t.ppf(0.975, 2), 1.959]), 3, 0.95).tolist() == [
        pytest.approx(2.0),
        np.inf,
    ]


def test_simulated_studies_cover_at_the_level():
    # normal seeds plus a shared test-set offset, as the calibration assumes
    rng = np.random.default_rng(7)
    studies, seeds = 40_000, 3
    for shared in (0.0, 0.1 / seeds, 1 / seeds, 10 / seeds):
        values = rng.normal(size=(studies, seeds)) + rng.normal(
            0, np.sqrt(shared), size=(studies, 1)
        )
        low, high, _, _ = t_intervals(values, shared, 0.95)
        covered = np.mean((low <= 0) & (high >= 0))
        assert abs(covered - 0.95) < 3 * np.sqrt(0.95 * 0.05 / studies) + 0.005
