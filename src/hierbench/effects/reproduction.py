"""Did a run reproduce published numbers? Each planned endpoint (a dataset's five simple effects
on mean hierarchy mAP) and each arm's mean hierarchy mAP, estimated from a run's per-seed table
and from a published one, side by side: both estimates, their difference and an interval for it.

The two studies' training seeds are independent samples (seed 42 on other hardware and software
is another draw, so nothing pairs them). A seed mean also carries its test images: every seed of
a study is scored on the same images, so their draw moves the whole study (the effect tables'
shared variance V, :mod:`hierbench.effects.intervals`). The difference run − published has

    se² = s₁²/n₁ + s₂²/n₂ + V₁ + V₂

with s the sample SD (ddof = 1), n the seeds of each side and V each side's test-image variance
when the two studies scored different test images, or may have; on the same test images the V
terms cancel (Welch's se alone). A side whose V is unknown (a published table has no per-query
rows) takes the other side's: same protocol, same test-set size
(:mod:`hierbench.effects.study_images`). The degrees
of freedom are Welch–Satterthwaite's with V counted as known, df = se⁴ / ((s₁²/n₁)²/(n₁ − 1) +
(s₂²/n₂)²/(n₂ − 1)); the interval is difference ± t(df) · se, the quantile from
``scipy.stats.t``. A side with fewer than two seeds or a spread of exactly zero (a table of
means repeated per seed, say) gives no interval: its uncertainty is unknown.

The verdict (:func:`reproduction_verdict`) reads the interval against 0 and the two one-sided
tests' interval against a margin in mAP units (equivalence, TOST).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
from scipy import stats

from hierbench.effects.schema import SORT_KEYS, EffectsError, arm_labels, canonical_order
from hierbench.effects.statistics import complete_mean_hierarchy, effects_by_seed
from hierbench.effects.study_images import (
    NOTHING_KNOWN,
    StudyImages,
    images_case,
    images_variance,
)
from hierbench.protocol import FACTORIAL_ARMS, FACTORIAL_EFFECTS, MEAN_HIERARCHY

ENDPOINT_METRIC = "map"
DEFAULT_CONFIDENCE = 0.95
# Two mAP points: above the widest interval the published table gets against itself (NABirds
# int, about ±0.015 from its three seeds), below every loss effect it reports (0.04 to 0.05).
DEFAULT_MARGIN = 0.02

EQUIVALENT = "equivalent within the margin"
DIFFERS_WITHIN = "differs by less than the margin"
DIFFERS = "differs"
TOO_UNCERTAIN = "too uncertain to say"
NO_INTERVAL = "no interval"
VERDICTS: tuple[str, ...] = (EQUIVALENT, DIFFERS_WITHIN, DIFFERS, TOO_UNCERTAIN, NO_INTERVAL)

ENDPOINTS = "endpoint"  # the table of the planned endpoints (name: the effect)
ARMS = "arm"  # the table of the arms' mean hierarchy mAP (name: the arm)
COMPARISON_COLUMNS: tuple[str, ...] = (
    "table",
    "dataset",
    "name",
    "run",
    "run_sd",
    "run_n",
    "published",
    "published_sd",
    "published_n",
    "difference",
    "se",
    "df",
    "ci_low",
    "ci_high",
    "half_width",
    "tost_low",
    "tost_high",
    "test_images",
    "images_variance",
    "images_note",
    "verdict",
    "note",
)


@dataclass(frozen=True)
class SeedSample:
    """One side's seeds of one quantity: their mean, sample SD (ddof = 1) and count."""

    mean: float
    sd: float
    n: int


@dataclass(frozen=True)
class WelchInterval:
    """The difference run − published with its interval at the confidence level and the two
    one-sided tests' interval (level 1 − 2α); NaN ends and a note when there is none."""

    difference: float
    se: float
    df: float
    low: float
    high: float
    tost_low: float = math.nan
    tost_high: float = math.nan
    note: str = ""

    @property
    def half_width(self) -> float:
        """Half the interval's width: how far the true difference may lie from the estimate."""
        return (self.high - self.low) / 2


def _lacking_spread(sample: SeedSample, side: str) -> str:
    """Why one side's seeds give no spread ("" when they do)."""
    if sample.n == 0:
        return f"{side} has no value (NaN on every seed)"
    if sample.n < 2:
        return f"{side} has {sample.n} seed(s); a spread needs two"
    if not sample.sd > 0:
        return f"{side}'s seeds all equal (SD 0)"
    return ""


def welch_interval(
    run: SeedSample, published: SeedSample, confidence: float, images_variance: float = 0.0
) -> WelchInterval:
    """Difference of the means and its interval: se² = s₁²/n₁ + s₂²/n₂ + ``images_variance``
    (the test images' part, counted as known), Welch–Satterthwaite df, t quantile from
    scipy.stats.t. No interval when a side has < 2 seeds or SD 0."""
    check_confidence(confidence)
    difference = run.mean - published.mean
    reasons = [_lacking_spread(run, "the run"), _lacking_spread(published, "the published table")]
    note = "; ".join(reason for reason in reasons if reason)
    if note:
        return WelchInterval(difference, math.nan, math.nan, math.nan, math.nan, note=note)
    run_part, published_part = run.sd**2 / run.n, published.sd**2 / published.n
    se = math.sqrt(run_part + published_part + max(images_variance, 0.0))
    df = se**4 / (run_part**2 / (run.n - 1) + published_part**2 / (published.n - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * se
    tost_half = float(stats.t.ppf(confidence, df)) * se  # level 1 − 2α: each side at 1 − α
    return WelchInterval(
        difference,
        se,
        df,
        difference - half,
        difference + half,
        difference - tost_half,
        difference + tost_half,
    )


def check_confidence(confidence: float) -> None:
    """A confidence level strictly between 0 and 1, or an error naming the option."""
    if not 0 < confidence < 1:
        raise ValueError(f"--confidence: {confidence} must lie strictly between 0 and 1")


def check_margin(margin: float) -> None:
    """A margin above 0 (mAP units), or an error naming the option."""
    if not margin > 0:
        raise ValueError(f"--margin: {margin} must be above 0 (mAP units)")


def check_settings(confidence: float, margin: float) -> None:
    """Both settings checked, so a bad one fails before any table is read."""
    check_confidence(confidence)
    check_margin(margin)


def reproduction_verdict(interval: WelchInterval, margin: float = DEFAULT_MARGIN) -> str:
    """The verdict on run − published: "differs" when the interval excludes 0, "equivalent
    within the margin" when it holds 0 and the two one-sided tests put the difference inside
    ±``margin`` (its 1 − 2α interval lies within it), "differs by less than the margin" when
    both hold, else "too uncertain to say"; "no interval" when there is none."""
    check_margin(margin)
    ends = (interval.low, interval.high, interval.tost_low, interval.tost_high)
    if not all(map(math.isfinite, ends)):
        return NO_INTERVAL
    excludes = interval.low > 0 or interval.high < 0
    within = -margin < interval.tost_low and interval.tost_high < margin
    if excludes:
        return DIFFERS_WITHIN if within else DIFFERS
    return EQUIVALENT if within else TOO_UNCERTAIN


# ---------------------------------------------------------------------------- the quantities


def with_mean_hierarchy(
    per_seed: pd.DataFrame, source: str, side: str
) -> tuple[pd.DataFrame, list[str]]:
    """A per-seed table with level mean_hierarchy = (middle + high) / 2 added where it lacks it,
    as ``hierbench effects`` adds it, and one note per dataset derived, naming the ``side``; an
    error names the ``source`` (its file)."""
    try:
        table, notes = complete_mean_hierarchy(per_seed)
    except EffectsError as error:
        raise EffectsError(f"{source}: {error}") from error
    return table, [f"{side}: {note}" for note in notes]


def _endpoint_rows(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The rows the endpoints and arms are read from: mAP at mean hierarchy."""
    chosen = (per_seed["metric"] == ENDPOINT_METRIC) & (per_seed["level"] == MEAN_HIERARCHY)
    return per_seed[chosen]


def endpoint_values(per_seed: pd.DataFrame, source: str) -> pd.DataFrame:
    """Each seed's planned endpoints (``dataset, name, seed, value``): the five factorial effects
    on mean hierarchy mAP, from the four factorial arms of the seed (other arms ignored)."""
    rows = _endpoint_rows(per_seed)
    rows = rows[arm_labels(rows).isin(FACTORIAL_ARMS)]
    if rows.empty:
        return pd.DataFrame(columns=["dataset", "name", "seed", "value"])
    try:
        effects = effects_by_seed(rows)
    except EffectsError as error:
        raise EffectsError(f"{source}: {error}") from error
    effects = effects[effects["effect"].isin(FACTORIAL_EFFECTS)]
    return effects.rename(columns={"effect": "name"})[["dataset", "name", "seed", "value"]]


def arm_values(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Each seed's mean hierarchy mAP per arm (``dataset, name, seed, value``), every arm the
    table holds (the frozen baseline and the companion cells included)."""
    rows = _endpoint_rows(per_seed)
    return rows.assign(name=arm_labels(rows))[["dataset", "name", "seed", "value"]]


def seed_samples(values: pd.DataFrame) -> dict[tuple[str, str], SeedSample]:
    """Mean, sample SD and count of the non-NaN seed values of each (dataset, name)."""
    groups = values.groupby(["dataset", "name"], sort=True)["value"]
    summary = groups.agg(["mean", "std", "count"])
    return {
        key: SeedSample(float(row["mean"]), float(row["std"]), int(row["count"]))
        for key, row in summary.iterrows()
    }


# ------------------------------------------------------------------------------ comparison


@dataclass(frozen=True)
class Reproduction:
    """A run beside a published table: one row per quantity in both (:data:`COMPARISON_COLUMNS`),
    what only one side holds, the notes on derived levels, and the settings used."""

    rows: pd.DataFrame
    not_compared: list[str]
    notes: list[str]
    confidence: float
    margin: float
    sources: dict[str, str] = field(default_factory=dict)

    def table(self, which: str) -> pd.DataFrame:
        """The rows of one table (:data:`ENDPOINTS` or :data:`ARMS`)."""
        return self.rows[self.rows["table"] == which].reset_index(drop=True)

    def verdict_counts(self, which: str = ENDPOINTS) -> dict[str, int]:
        """How many rows of a table got each verdict (only verdicts given, in their order)."""
        counts = self.table(which)["verdict"].value_counts()
        return {verdict: int(counts[verdict]) for verdict in VERDICTS if verdict in counts}


@dataclass(frozen=True)
class _Settings:
    """What every row of one comparison shares: the level, the margin and both sides' test
    images."""

    confidence: float
    margin: float
    run_images: StudyImages = NOTHING_KNOWN
    published_images: StudyImages = NOTHING_KNOWN


def _comparison_row(
    table: str, key: tuple[str, str], run: SeedSample, published: SeedSample, settings: _Settings
) -> dict:
    """One quantity's row: both sides, the test images' case, the difference, its intervals
    and the verdict."""
    case = images_case(key[0], settings.run_images, settings.published_images)
    variance, images_note = images_variance(
        key, case, settings.run_images, settings.published_images
    )
    interval = welch_interval(run, published, settings.confidence, variance)
    return {
        "table": table,
        "dataset": key[0],
        "name": key[1],
        "run": run.mean,
        "run_sd": run.sd,
        "run_n": run.n,
        "published": published.mean,
        "published_sd": published.sd,
        "published_n": published.n,
        "difference": interval.difference,
        "se": interval.se,
        "df": interval.df,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "half_width": interval.half_width,
        "tost_low": interval.tost_low,
        "tost_high": interval.tost_high,
        "test_images": case,
        "images_variance": variance,
        "images_note": images_note,
        "verdict": reproduction_verdict(interval, settings.margin),
        "note": interval.note,
    }


def _one_side_only(table: str, keys: set[tuple[str, str]], side: str) -> list[str]:
    """Lines naming the quantities of a table that only ``side`` holds, one per dataset, in
    the study's order of effects or arms."""
    order = SORT_KEYS["effect" if table == ENDPOINTS else "arm"]
    datasets = sorted({dataset for dataset, _ in keys})
    return [
        f"{dataset} {table}s only in {side}: "
        + ", ".join(sorted((name for d, name in keys if d == dataset), key=order))
        for dataset in datasets
    ]


def side_by_side(
    table: str, run: pd.DataFrame, published: pd.DataFrame, settings: _Settings
) -> tuple[list[dict], list[str]]:
    """The rows of one table for every (dataset, name) in both value frames, and lines naming
    those in one only."""
    ours, theirs = seed_samples(run), seed_samples(published)
    rows = [
        _comparison_row(table, key, ours[key], theirs[key], settings)
        for key in sorted(set(ours) & set(theirs))
    ]
    lacking = _one_side_only(table, set(ours) - set(theirs), "the run")
    lacking += _one_side_only(table, set(theirs) - set(ours), "the published table")
    return rows, lacking


def _ordered(rows: list[dict]) -> pd.DataFrame:
    """The rows as a frame: endpoints then arms, datasets by name, effects and arms in the
    study's order."""
    frame = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    parts = []
    for table, column in ((ENDPOINTS, "effect"), (ARMS, "arm")):
        part = frame[frame["table"] == table].rename(columns={"name": column})
        parts.append(canonical_order(part, ("dataset", column)).rename(columns={column: "name"}))
    return pd.concat(parts, ignore_index=True).astype({"run_n": "int64", "published_n": "int64"})


def compare_to_published(
    run: pd.DataFrame,
    published: pd.DataFrame,
    sources: tuple[str, str] = ("run", "published table"),
    confidence: float = DEFAULT_CONFIDENCE,
    margin: float = DEFAULT_MARGIN,
    images: tuple[StudyImages, StudyImages] = (NOTHING_KNOWN, NOTHING_KNOWN),
) -> Reproduction:
    """Compare a run's per-seed table with a published one on every planned endpoint and arm
    both hold, each side's test images (``images``: the run's, the published table's) carried
    where they differ; an error naming both ``sources`` when they share no planned endpoint."""
    check_settings(confidence, margin)
    run, run_notes = with_mean_hierarchy(run, sources[0], "the run")
    published, published_notes = with_mean_hierarchy(published, sources[1], "the published table")
    settings = _Settings(confidence, margin, *images)
    endpoint_rows, lacking = side_by_side(
        ENDPOINTS,
        endpoint_values(run, sources[0]),
        endpoint_values(published, sources[1]),
        settings,
    )
    if not endpoint_rows:
        raise EffectsError(no_common_endpoint(run, published, sources))
    arm_rows, arms_lacking = side_by_side(ARMS, arm_values(run), arm_values(published), settings)
    return Reproduction(
        rows=_ordered(endpoint_rows + arm_rows),
        not_compared=lacking + arms_lacking,
        notes=run_notes + published_notes,
        confidence=confidence,
        margin=margin,
        sources={"run": sources[0], "published": sources[1]},
    )


def no_common_endpoint(run: pd.DataFrame, published: pd.DataFrame, sources: tuple[str, str]) -> str:
    """The message for two tables without a planned endpoint in common: what each holds."""

    def holds(frame: pd.DataFrame) -> str:
        rows = _endpoint_rows(frame)
        arms = sorted(set(arm_labels(rows[arm_labels(rows).isin(FACTORIAL_ARMS)])))
        return f"datasets {sorted(set(rows['dataset']))} (factorial arms {arms})"

    return (
        f"no planned endpoint in both {sources[0]} and {sources[1]}: {sources[0]} holds "
        f"{holds(run)}, {sources[1]} holds {holds(published)}; an endpoint needs one dataset "
        f"with the four arms {list(FACTORIAL_ARMS)} in mAP at middle and high (or "
        f"{MEAN_HIERARCHY}) on both sides"
    )
