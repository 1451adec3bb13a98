"""A run's per-seed numbers beside a published table (hierbench.effects.reproduction): the Welch
interval, the verdict rule, and the published table against itself, against a shifted copy and
against a noisy one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from scipy import stats

from hierbench.effects import EffectsError, read_per_seed
from hierbench.effects.reproduction import (
    ARMS,
    DEFAULT_MARGIN,
    DIFFERS,
    DIFFERS_WITHIN,
    ENDPOINTS,
    EQUIVALENT,
    NO_INTERVAL,
    TOO_UNCERTAIN,
    SeedSample,
    WelchInterval,
    compare_to_published,
    reproduction_verdict,
    welch_interval,
)
from hierbench.effects.study_images import OTHER_IMAGES, SAME_IMAGES, UNKNOWN_IMAGES, StudyImages
from hierbench.protocol import FACTORIAL_EFFECTS

PUBLISHED = REPO / "tests/fixtures/published/paper_per_seed_map.csv"
# Adding this to H_R at middle and high moves H_R's mean hierarchy mAP by the same amount.
SHIFT = 0.02
SHIFTED_EFFECTS = {"geom_R", "loss_H", "int"}  # the effects with H_R in their formula


@pytest.fixture(scope="module")
def published() -> pd.DataFrame:
    return read_per_seed(PUBLISHED)


def shifted(table: pd.DataFrame, dataset: str, arm: tuple[str, str], by: float) -> pd.DataFrame:
    """A copy with ``by`` added to one arm's middle and high mAP of one dataset, every seed."""
    chosen = (
        (table["dataset"] == dataset)
        & (table["geometry"] == arm[0])
        & (table["loss"] == arm[1])
        & table["level"].isin(["middle", "high"])
    )
    copy = table.copy()
    copy.loc[chosen, "value"] += by
    return copy


def verdicts(table: pd.DataFrame) -> dict[tuple[str, str], str]:
    return {(row.dataset, row.name): row.verdict for row in table.itertuples()}


# ---- the interval and the verdict


def test_the_welch_interval_is_scipys():
    run, published = [0.51, 0.53, 0.50], [0.55, 0.56, 0.58, 0.54]
    interval = welch_interval(
        SeedSample(np.mean(run), np.std(run, ddof=1), 3),
        SeedSample(np.mean(published), np.std(published, ddof=1), 4),
        0.9,
    )
    test = stats.ttest_ind(run, published, equal_var=False)
    low, high = test.confidence_interval(0.9)
    assert interval.low == pytest.approx(low) and interval.high == pytest.approx(high)
    assert interval.df == pytest.approx(test.df)
    assert interval.se**2 == pytest.approx(np.var(run, ddof=1) / 3 + np.var(published, ddof=1) / 4)


@pytest.mark.parametrize(
    ("run", "published", "why"),
    [
        (SeedSample(0.5, math.nan, 1), SeedSample(0.5, 0.01, 3), "the run has 1 seed(s)"),
        (SeedSample(0.5, 0.01, 3), SeedSample(0.5, 0.0, 3), "published table's seeds all equal"),
    ],
)
def test_one_seed_or_no_spread_gives_no_interval(run, published, why):
    interval = welch_interval(run, published, 0.95)
    assert math.isnan(interval.low) and math.isnan(interval.high) and why in interval.note
    assert interval.difference == 0.0
    assert reproduction_verdict(interval) == NO_INTERVAL


@pytest.mark.parametrize(
    ("ends", "tost", "verdict"),
    [
        ((0.001, 0.03), (0.004, 0.027), DIFFERS),
        ((-0.05, -0.0001), (-0.045, -0.004), DIFFERS),
        ((0.001, 0.015), (0.002, 0.014), DIFFERS_WITHIN),  # real, and smaller than the margin
        ((-0.01, 0.01), (-0.008, 0.008), EQUIVALENT),
        ((-0.025, 0.021), (-0.0199, 0.0199), EQUIVALENT),  # the TOST interval decides
        ((-0.03, 0.02), (-0.025, 0.015), TOO_UNCERTAIN),
        ((-0.02, 0.02), (-0.02, 0.02), TOO_UNCERTAIN),  # an end on the margin is not inside
        ((0.0, 0.01), (0.001, 0.009), EQUIVALENT),  # an end at 0 contains it
        ((math.nan, math.nan), (math.nan, math.nan), NO_INTERVAL),
    ],
)
def test_the_verdict_rule(ends, tost, verdict):
    interval = WelchInterval(0.0, 0.01, 4.0, *ends, *tost)
    assert reproduction_verdict(interval, 0.02) == verdict


def test_the_tost_interval_is_the_interval_at_twice_alpha():
    run, published = SeedSample(0.51, 0.01, 3), SeedSample(0.50, 0.02, 4)
    tost = welch_interval(run, published, 0.95)
    plain = welch_interval(run, published, 0.90)
    assert (tost.tost_low, tost.tost_high) == pytest.approx((plain.low, plain.high))


def test_other_test_images_add_both_studies_variance():
    run, published = SeedSample(0.51, 0.01, 3), SeedSample(0.50, 0.02, 4)
    seeds_only = welch_interval(run, published, 0.95)
    carried = welch_interval(run, published, 0.95, images_variance=2e-4)
    assert carried.se**2 == pytest.approx(seeds_only.se**2 + 2e-4)
    # the test images' part is counted as known: it adds to se⁴, not to the df's denominator
    parts = (0.01**2 / 3) ** 2 / 2 + (0.02**2 / 4) ** 2 / 3
    assert carried.df == pytest.approx(carried.se**4 / parts)
    assert carried.df > seeds_only.df


def _images(test_hash: str | None, variance: float | None) -> StudyImages:
    hashes = {} if test_hash is None else {"cub": test_hash}
    variances = (
        {} if variance is None else {("cub", effect): variance for effect in FACTORIAL_EFFECTS}
    )
    return StudyImages(hashes, variances)


@pytest.mark.parametrize(
    ("run", "other", "case", "added"),
    [
        (_images("a", 1e-4), _images("a", 3e-4), SAME_IMAGES, 0.0),
        (_images("a", 1e-4), _images("b", 3e-4), OTHER_IMAGES, 4e-4),
        (_images("a", 1e-4), _images(None, None), UNKNOWN_IMAGES, 2e-4),  # theirs taken as ours
        (_images(None, None), _images(None, None), UNKNOWN_IMAGES, 0.0),  # nothing known
    ],
)
def test_the_test_images_case_and_what_it_adds(published, run, other, case, added):
    result = compare_to_published(published, published, images=(run, other))
    cub = result.table(ENDPOINTS)
    cub = cub[cub["dataset"] == "cub"]
    assert set(cub["test_images"]) == {case}
    assert cub["images_variance"].tolist() == pytest.approx([added] * len(cub))
    if case == UNKNOWN_IMAGES:
        assert all(cub["images_note"] != "")
    # the arms have no test-image variance in the tables: on other images they say so
    arms = result.table(ARMS)
    arms = arms[arms["dataset"] == "cub"]
    assert set(arms["images_variance"]) == {0.0}
    assert all(("neither" in note) == (case != SAME_IMAGES) for note in arms["images_note"])


@pytest.mark.parametrize(("confidence", "margin"), [(1.0, 0.02), (0.95, 0.0), (0.0, 0.02)])
def test_bad_settings_are_errors_naming_the_option(published, confidence, margin):
    option = "--margin" if margin <= 0 else "--confidence"
    with pytest.raises(ValueError, match=option):
        compare_to_published(published, published, confidence=confidence, margin=margin)


# ---- the published table against itself and against altered copies


def test_the_published_table_against_itself_is_equivalent_everywhere(published):
    result = compare_to_published(published, published)
    endpoints, arms = result.table(ENDPOINTS), result.table(ARMS)
    assert len(endpoints) == 2 * len(FACTORIAL_EFFECTS) and len(arms) == 8
    assert list(endpoints["name"][:5]) == list(FACTORIAL_EFFECTS)  # the study's order
    assert set(result.rows["verdict"]) == {EQUIVALENT}
    assert (result.rows["difference"] == 0).all()
    assert result.not_compared == []
    assert len(result.notes) == 4  # mean hierarchy derived on both sides, for both datasets
    # the widest interval the published table gets against itself stays within the margin
    assert result.rows["half_width"].max() < DEFAULT_MARGIN


def test_the_estimates_are_the_published_effects(published):
    """The published side's estimates are the paper's printed means (its second table)."""
    printed = pd.read_csv(REPO / "tests/fixtures/published/paper_effects_mean_hierarchy.csv")
    endpoints = compare_to_published(published, published).table(ENDPOINTS)
    ours = endpoints.set_index(["dataset", "name"])
    for row in printed.itertuples():
        assert ours.at[(row.dataset, row.effect), "published"] == pytest.approx(row.mean, abs=5e-6)
        assert ours.at[(row.dataset, row.effect), "published_sd"] == pytest.approx(row.sd, abs=5e-6)


def test_a_shifted_arm_differs_exactly_where_it_enters(published):
    run = shifted(published, "cub", ("H", "R"), SHIFT)
    result = compare_to_published(run, published)
    for (dataset, effect), verdict in verdicts(result.table(ENDPOINTS)).items():
        moved = dataset == "cub" and effect in SHIFTED_EFFECTS
        assert verdict == (DIFFERS if moved else EQUIVALENT), (dataset, effect)
    endpoints = result.table(ENDPOINTS).set_index(["dataset", "name"])
    assert endpoints.at[("cub", "geom_R"), "difference"] == pytest.approx(SHIFT)
    assert endpoints.at[("cub", "loss_H"), "difference"] == pytest.approx(-SHIFT)
    arms = verdicts(result.table(ARMS))
    assert [key for key, verdict in arms.items() if verdict != EQUIVALENT] == [("cub", "H_R")]


def test_a_noisy_run_is_too_uncertain_to_say(published):
    """Seeds spread far wider than the paper's, around the paper's means: every interval
    contains 0 but is wider than the margin."""
    noise = {42: -0.04, 2024: 0.0, 3407: 0.04}  # mean 0: the run's means are the paper's
    run = published.copy()
    run["value"] += run["seed"].map(noise)
    result = compare_to_published(run, published)
    arms = result.table(ARMS)
    assert set(arms["verdict"]) == {TOO_UNCERTAIN}
    assert (arms["ci_low"] < 0).all() and (arms["ci_high"] > 0).all()
    # the same noise on every arm of a seed cancels in the effects: those stay equivalent
    assert set(result.table(ENDPOINTS)["verdict"]) == {EQUIVALENT}


def test_a_tight_margin_makes_the_wide_intervals_too_uncertain(published):
    result = compare_to_published(published, published, margin=0.005)
    endpoints = result.table(ENDPOINTS)
    wide = endpoints["tost_high"] >= 0.005
    assert wide.any() and not wide.all()
    assert set(endpoints.loc[wide, "verdict"]) == {TOO_UNCERTAIN}
    assert set(endpoints.loc[~wide, "verdict"]) == {EQUIVALENT}


def test_what_only_one_side_holds_is_listed_not_compared(published):
    run = published[published["dataset"] == "cub"]
    frozen = pd.DataFrame(
        {
            "dataset": "cub",
            "geometry": "frozen",
            "loss": "frozen",
            "seed": -1,
            "level": ["middle", "high"],
            "metric": "map",
            "value": [0.4, 0.5],
        }
    )
    result = compare_to_published(pd.concat([run, frozen]), published)
    assert set(result.rows["dataset"]) == {"cub"}
    assert "cub arms only in the run: frozen" in result.not_compared
    assert any(
        line.startswith("nabirds endpoints only in the published table: geom_R, geom_S")
        for line in result.not_compared
    )


def test_no_common_endpoint_is_an_error_naming_both_sides(published):
    run = published[published["dataset"] == "cub"].assign(dataset="moths")
    with pytest.raises(EffectsError, match=r"no planned endpoint in both mine\.csv and paper\.csv"):
        compare_to_published(run, published, ("mine.csv", "paper.csv"))


def test_a_seed_lacking_an_arm_is_an_error_naming_the_file(published):
    run = published[~((published["seed"] == 42) & (published["geometry"] == "H"))]
    with pytest.raises(EffectsError, match=r"mine.csv: .*seed 42 lacks arm\(s\)"):
        compare_to_published(run, published, ("mine.csv", "paper.csv"))
