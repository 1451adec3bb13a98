"""The two-stage paired bootstrap and the sign-flip test (hierbench.effects.intervals)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.effects.intervals import (
    IntervalError,
    draw_resamples,
    observed_resample,
    percentile_interval,
    sign_flip_p,
    smallest_p,
    two_stage_batch,
    two_stage_replicates,
)


def test_one_stage_agrees_with_scipy_percentile_bootstrap():
    # one seed and one draw: the bootstrap of a mean over queries, as scipy computes it
    values = np.random.default_rng(3).gamma(2.0, 0.1, size=200)
    resamples = draw_resamples(1, [len(values)], 10_000, seed=0)
    replicates = two_stage_replicates([(values[None, :], None)], resamples)
    low, high = percentile_interval(replicates, 0.95)
    reference = stats.bootstrap(
        (values,), np.mean, n_resamples=10_000, method="percentile", random_state=1
    ).confidence_interval
    width = reference.high - reference.low
    assert abs(low - reference.low) < 0.05 * width
    assert abs(high - reference.high) < 0.05 * width


def _group_macro(values: np.ndarray, groups: np.ndarray) -> float:
    """The evaluation's group-macro mean, as a plain pandas computation (NaN: not scored)."""
    frame = pd.DataFrame({"value": values, "group": groups}).dropna()
    return float(frame.groupby("group")["value"].mean().mean())


def test_two_stage_equals_a_plain_loop_over_replicates():
    rng = np.random.default_rng(5)
    seeds, draws = 3, 2
    values = [rng.normal(size=(seeds, 9)), rng.normal(size=(seeds, 7))]
    values[0][:, 4] = np.nan  # a query no seed scores (no positive at this level)
    groups = [rng.integers(0, 3, size=9), rng.integers(0, 2, size=7)]
    resamples = draw_resamples(seeds, [9, 7], 50, seed=11)
    fast = two_stage_replicates(list(zip(values, groups, strict=True)), resamples)
    for replicate in range(resamples.replicates):
        by_seed = []
        chosen = np.repeat(np.arange(seeds), resamples.seeds[replicate])
        for seed in chosen:
            per_draw = []
            for draw in range(draws):
                rows = np.repeat(np.arange(len(groups[draw])), resamples.queries[draw][replicate])
                per_draw.append(_group_macro(values[draw][seed, rows], groups[draw][rows]))
            by_seed.append(np.mean(per_draw))
        assert fast[replicate] == pytest.approx(np.mean(by_seed), rel=1e-12, abs=1e-12)


def test_a_batch_of_effects_equals_each_effect_alone():
    rng = np.random.default_rng(8)
    values = [rng.normal(size=(3, 11, 4)), rng.normal(size=(3, 6, 4))]
    groups = [rng.integers(0, 4, size=11), None]
    resamples = draw_resamples(3, [11, 6], 200, seed=4)
    batch = two_stage_batch(list(zip(values, groups, strict=True)), resamples)
    for column in range(4):
        alone = [(v[:, :, column], g) for v, g in zip(values, groups, strict=True)]
        np.testing.assert_allclose(batch[:, column], two_stage_replicates(alone, resamples))


def test_group_macro_refuses_a_query_scored_in_some_columns_only():
    values = np.ones((2, 5, 1))
    values[0, 2, 0] = np.nan
    with pytest.raises(IntervalError, match="every column or in none"):
        two_stage_replicates([(values[:, :, 0], np.zeros(5))], draw_resamples(2, [5], 10, 0))


def test_the_observed_resample_gives_the_tables_value():
    rng = np.random.default_rng(2)
    values = rng.normal(size=(3, 12))
    groups = rng.integers(0, 4, size=12)
    [observed] = two_stage_replicates([(values, groups)], observed_resample(3, [12]))
    assert observed == pytest.approx(np.mean([_group_macro(v, groups) for v in values]))


def test_pairing_narrows_an_interval_whose_arms_share_query_noise():
    # each query's difficulty moves both arms alike; the effect (B - A) is small and steady
    rng = np.random.default_rng(0)
    difficulty = rng.normal(0, 1.0, size=(1, 300))
    arm_a = difficulty + rng.normal(0, 0.05, size=(1, 300))
    arm_b = difficulty + 0.1 + rng.normal(0, 0.05, size=(1, 300))
    paired = two_stage_replicates([(arm_b - arm_a, None)], draw_resamples(1, [300], 4000, 1))
    apart_a = two_stage_replicates([(arm_a, None)], draw_resamples(1, [300], 4000, 2))
    apart_b = two_stage_replicates([(arm_b, None)], draw_resamples(1, [300], 4000, 3))
    paired_width = np.subtract(*percentile_interval(paired, 0.95)[::-1])
    unpaired_width = np.subtract(*percentile_interval(apart_b - apart_a, 0.95)[::-1])
    assert paired_width < 0.1 * unpaired_width
    assert percentile_interval(paired, 0.95)[0] > 0  # the paired interval excludes zero


def test_the_same_inputs_give_the_same_bytes():
    values = np.random.default_rng(1).normal(size=(3, 40))
    first = two_stage_replicates([(values, None)], draw_resamples(3, [40], 1000, seed=0))
    again = two_stage_replicates([(values, None)], draw_resamples(3, [40], 1000, seed=0))
    assert first.tobytes() == again.tobytes()


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


def test_three_seeds_of_one_sign_give_a_quarter_and_no_less():
    assert sign_flip_p([0.02, 0.01, 0.03]) == 0.25
    assert sign_flip_p([-5.0, -0.1, -2.0]) == 0.25
    assert smallest_p(3) == 0.25 and smallest_p(5) == 0.0625 and smallest_p(1) == 1.0
    assert sign_flip_p([1.0, 1.0, 0.0]) == 0.5  # a zero seed cannot reach the floor
    assert sign_flip_p([1.0, -1.0, 2.0]) == 0.75  # |mean| reached by 6 of the 8


def test_bad_inputs_are_named():
    with pytest.raises(IntervalError, match="level"):
        percentile_interval(np.zeros(3), 95)
    with pytest.raises(IntervalError, match="queries per draw"):
        draw_resamples(3, [], 10, seed=0)
    with pytest.raises(IntervalError, match="do not match"):
        two_stage_replicates([(np.zeros((3, 4)), None)], draw_resamples(3, [5], 10, seed=0))
