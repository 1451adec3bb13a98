"""The intervals' parts (hierbench.effects.intervals): leaf-stratified query resampling, the test
images' shared variance, the t interval and the sign-flip test."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.effects.calibration import calibrated_quantile
from hierbench.effects.intervals import (
    IntervalError,
    IntervalSettings,
    query_only_interval,
    t_interval,
    uncertainty,
)
from hierbench.effects.resampling import (
    QueryResamples,
    collapsed_strata,
    draw_image_weights,
    observed_weights,
    per_seed_replicates,
    query_noise,
)
from hierbench.effects.sign_flip import (
    RANDOM_SIGN_FLIPS,
    _all_signs,
    sign_flip_p,
    sign_flip_pvalues,
    smallest_p,
)

# ------------------------------------------------------------------------- strata, weights

# leaf, middle, high of twelve queries: leaves 0 and 1 hold three and two queries; leaves
# 2, 3 (middle 10) and 4, 5 (middle 11) one each; leaf 6 alone in middle 12, leaf 7 alone in
# middle 13 (both high 100); leaf 8 alone in middle 14, high 200
LABELS = np.array(
    [
        [0, 10, 100],
        [0, 10, 100],
        [0, 10, 100],
        [1, 10, 100],
        [1, 10, 100],
        [2, 10, 100],
        [3, 10, 100],
        [4, 11, 100],
        [5, 11, 100],
        [6, 12, 100],
        [7, 13, 100],
        [8, 14, 200],
    ]
)


def _members(strata: np.ndarray) -> list[list[int]]:
    """The strata as sorted lists of query positions."""
    return sorted(np.flatnonzero(strata == s).tolist() for s in np.unique(strata))


def test_a_query_takes_its_image_s_weight_in_every_draw():
    images = draw_image_weights(collapsed_strata(LABELS), 20, seed=2)
    resamples = QueryResamples.of_images(images, [np.array([0, 3, 7]), np.array([7, 0])])
    np.testing.assert_array_equal(resamples.weights[0][:, 0], resamples.weights[1][:, 1])
    np.testing.assert_array_equal(resamples.weights[0][:, 2], resamples.weights[1][:, 0])


def test_one_query_leaves_are_pooled_up_the_hierarchy():
    strata = collapsed_strata(LABELS)
    # leaves with two or more queries are their own strata; one-query leaves pool under their
    # middle group (2+3, 4+5), those still alone under their high group (6+7), and the last
    # one alone (8) stays a stratum of one
    assert _members(strata) == [[0, 1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11]]


def test_every_leaf_and_pool_keeps_its_query_count_in_every_replicate():
    strata = collapsed_strata(LABELS)
    weights = draw_image_weights(strata, 500, seed=3)
    assert weights.shape == (500, len(LABELS))
    for members in _members(strata):
        np.testing.assert_allclose(weights[:, members].sum(axis=1), len(members))
    assert (weights[:, 11] == 1).all()  # a stratum of one keeps its query
    # Rao–Wu: n − 1 draws from a stratum of n, each weighing n / (n − 1)
    np.testing.assert_allclose(np.unique(weights[:, :3]), [0, 1.5, 3])
    assert weights[:, :3].std() > 0  # and it does resample


def test_rao_wu_weights_give_the_stratified_variance_of_a_mean():
    # the replicates' variance of a weighted mean is the textbook stratified variance
    # Σ (n_h/n)² s_h²/n_h (no finite-population correction), which is what Rao–Wu targets
    rng = np.random.default_rng(0)
    strata = np.repeat(np.arange(6), [2, 3, 4, 5, 6, 10])
    values = rng.normal(size=len(strata)) + strata
    weights = draw_image_weights(strata, 40_000, seed=1)
    replicates = weights @ values / len(values)
    expected = sum(
        (np.sum(strata == h) / len(values)) ** 2
        * np.var(values[strata == h], ddof=1)
        / np.sum(strata == h)
        for h in range(6)
    )
    assert replicates.var() == pytest.approx(expected, rel=0.03)


def _group_macro(values: np.ndarray, groups: np.ndarray, weights: np.ndarray) -> float:
    """The evaluation's group-macro mean under query weights, as a plain pandas computation."""
    frame = pd.DataFrame({"value": values, "group": groups, "w": weights}).dropna()
    frame = frame[frame["w"] > 0]
    means = frame.groupby("group").apply(lambda g: np.average(g["value"], weights=g["w"]))
    return float(means.mean())


def test_per_seed_replicates_equal_a_plain_loop_over_replicates():
    rng = np.random.default_rng(5)
    seeds = 3
    values = [rng.normal(size=(seeds, 9)), rng.normal(size=(seeds, 7))]
    values[0][:, 4] = np.nan  # a query no seed scores (no positive at this level)
    groups = [rng.integers(0, 3, size=9), rng.integers(0, 2, size=7)]
    strata = rng.integers(0, 3, size=16)
    resamples = QueryResamples.of_images(
        draw_image_weights(strata, 50, seed=11), [np.arange(9), np.arange(9, 16)]
    )
    draws = [(v[:, :, None], g) for v, g in zip(values, groups, strict=True)]
    fast = per_seed_replicates(draws, resamples)[:, :, 0]
    for replicate in range(resamples.replicates):
        for seed in range(seeds):
            per_draw = [
                _group_macro(values[d][seed], groups[d], resamples.weights[d][replicate])
                for d in range(2)
            ]
            assert fast[replicate, seed] == pytest.approx(np.mean(per_draw), abs=1e-12)


def test_the_observed_weights_give_the_tables_value():
    rng = np.random.default_rng(2)
    values = rng.normal(size=(3, 12))
    groups = rng.integers(0, 4, size=12)
    observed = per_seed_replicates([(values[:, :, None], groups)], observed_weights([12]))
    expected = [_group_macro(v, groups, np.ones(12)) for v in values]
    np.testing.assert_allclose(observed[0, :, 0], expected)


def test_group_macro_refuses_a_query_scored_in_some_columns_only():
    values = np.ones((2, 5, 1))
    values[0, 2, 0] = np.nan
    with pytest.raises(IntervalError, match="every column or in none"):
        weights = QueryResamples((draw_image_weights(np.zeros(5), 10, 0),))
        per_seed_replicates([(values, np.zeros(5))], weights)


def test_the_same_inputs_give_the_same_bytes():
    values = np.random.default_rng(1).normal(size=(3, 40, 1))
    strata = collapsed_strata(np.stack([np.arange(40) // 3, np.arange(40) // 9], axis=1))
    first = QueryResamples((draw_image_weights(strata, 1000, seed=0),))
    again = QueryResamples((draw_image_weights(strata, 1000, seed=0),))
    first = per_seed_replicates([(values, None)], first)
    again = per_seed_replicates([(values, None)], again)
    assert first.tobytes() == again.tobytes()


# --------------------------------------------------------------------- the shared variance


def test_the_shared_variance_is_the_mean_covariance_between_seeds():
    rng = np.random.default_rng(4)
    common = rng.normal(size=(2000, 1, 1))
    replicates = common + 0.5 * rng.normal(size=(2000, 4, 2))
    noise = query_noise(replicates)
    for column in range(2):
        cov = np.cov(replicates[:, :, column], rowvar=False)
        off = cov[~np.eye(4, dtype=bool)].mean()
        assert noise.shared[column] == pytest.approx(off, rel=1e-10)
        assert noise.total[column] == pytest.approx(
            np.var(replicates[:, :, column].mean(axis=1), ddof=1), rel=1e-10
        )
    assert noise.shared == pytest.approx([1.0, 1.0], rel=0.1)


def test_a_replicate_that_leaves_a_seed_unscored_is_skipped():
    replicates = np.arange(24, dtype=float).reshape(6, 2, 2)
    replicates[0, 1, 0] = np.nan
    noise = query_noise(replicates)
    expected = query_noise(replicates[1:, :, :1])
    assert noise.shared[0] == pytest.approx(expected.shared[0])
    one_seed = query_noise(replicates[:, :1])
    assert np.isnan(one_seed.shared).all() and np.isfinite(one_seed.total[1])


# ------------------------------------------------------------------------- the t interval


def test_without_test_noise_it_is_the_t_interval_of_three_seeds():
    values = [0.01, 0.02, 0.03]
    interval = t_interval(values, 0.0, 0.95)
    # worked: mean 0.02, SD 0.01, se 0.01/√3, t(0.975, 2) = 4.302653
    half = 4.302653 * 0.01 / np.sqrt(3)
    assert interval.low == pytest.approx(0.02 - half, abs=1e-7)
    assert interval.high == pytest.approx(0.02 + half, abs=1e-7)
    assert interval.df == 2 and interval.se == pytest.approx(0.01 / np.sqrt(3))
    scipy_ci = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    assert (interval.low, interval.high) == pytest.approx((scipy_ci.low, scipy_ci.high))


def test_the_shared_variance_widens_it_with_the_calibrated_quantile():
    # se² = 0.0001/3 + 0.0001 = 4 × 0.0001/3, the observed ratio V/(s²/n) is 3
    interval = t_interval([0.01, 0.02, 0.03], 0.0001, 0.95)
    assert interval.se == pytest.approx(np.sqrt(4e-4 / 3))
    q = float(calibrated_quantile(3, 0.95)(np.array([3.0]))[0])
    assert 1.959964 < q < 4.302653  # between the normal and the t(2) quantile
    assert interval.high - 0.02 == pytest.approx(q * interval.se)
    # the reported df is the one whose t quantile is q: mean ± t(df) · se reads true
    assert stats.t.ppf(0.975, interval.df) == pytest.approx(q, rel=1e-4)
    # three seeds that agree exactly: only the test images' noise, the normal quantile
    flat = t_interval([0.02, 0.02, 0.02], 0.0001, 0.90)
    assert flat.df == np.inf and flat.high - 0.02 == pytest.approx(1.644854 * 0.01, abs=1e-7)


def test_one_seed_has_no_interval_but_a_deterministic_contrast_has_one_over_queries():
    assert np.isnan(t_interval([0.3], 0.0, 0.95).low)
    interval = query_only_interval(0.1, 0.0004, 0.95)
    half = 1.959964 * 0.02
    assert (interval.low, interval.high) == pytest.approx((0.1 - half, 0.1 + half))
    with pytest.raises(IntervalError, match="level"):
        t_interval([0.1, 0.2], 0.0, 95)


def test_uncertainty_gives_every_column():
    row = uncertainty([0.01, 0.02, 0.03], IntervalSettings(), shared=0.0001)
    assert set(row) == {"se", "df", "ci_low", "ci_high", "p_seeds", "p_min"}
    assert row["p_seeds"] == 0.25 and row["p_min"] == 0.25 and 2 < row["df"] < np.inf


# ------------------------------------------------------------------------- sign-flip test


def _hand_count(values: list[float]) -> float:
    """The share of the 2**n sign assignments whose |sum| reaches the observed |sum|."""
    observed = abs(sum(values))
    hits = [
        abs(sum(s * v for s, v in zip(signs, values, strict=True))) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(values))
    ]
    return sum(hits) / len(hits)


@pytest.mark.parametrize(
    "per_seed",
    [[0.02, 0.01, 0.03], [-0.4, -0.1, -0.2], [0.0017, 0.004, -0.0021], [1.0, 1.0, 0.0], [0, 0, 0]],
)
def test_sign_flip_p_equals_a_hand_count_of_the_eight_assignments(per_seed):
    assert sign_flip_p(per_seed) == pytest.approx(_hand_count(per_seed))


def test_every_assignment_is_enumerated_once_from_bits():
    signs = _all_signs(4)
    assert signs.shape == (16, 4)
    assert {tuple(row) for row in signs} == set(itertools.product((1.0, -1.0), repeat=4))


def test_three_seeds_of_one_sign_give_a_quarter_and_no_less():
    assert sign_flip_p([0.02, 0.01, 0.03]) == 0.25
    assert sign_flip_p([-5.0, -0.1, -2.0]) == 0.25
    assert smallest_p(3) == 0.25 and smallest_p(5) == 0.0625 and smallest_p(1) == 1.0
    assert sign_flip_p([1.0, 1.0, 0.0]) == 0.5  # a zero seed cannot reach the floor
    assert sign_flip_p([1.0, -1.0, 2.0]) == 0.75  # |mean| reached by 6 of the 8


def test_monte_carlo_p_values_count_the_observed_assignment():
    # 21 seeds of one sign: no random assignment of the 2**20 − 1 reaches the observed |sum|
    # (only the observed signs and their mirror do), so p = (1 + 0) / (1 + B), never 0
    p = sign_flip_p(np.linspace(1.0, 2.0, 21))
    assert p == 1 / (1 + RANDOM_SIGN_FLIPS) > 0
    rows = sign_flip_pvalues(np.array([[0.1, 0.2, -0.05], [np.nan, 1.0, 1.0]]))
    assert rows[0] == pytest.approx(_hand_count([0.1, 0.2, -0.05])) and np.isnan(rows[1])
