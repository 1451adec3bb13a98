"""Which tables a per-seed table supports, computed without writing anything.

Tables take the metrics they are given: a per-seed table published elsewhere may hold only mAP
at leaf, middle and high. :func:`plan_effects` derives ``mean_hierarchy`` where middle and high
are present (and notes that it did), computes the arm and effect summaries, and builds each of
the paper's tables whose metric is present, recording why any other is left out. The tables
stage writes the plan; the ``hierbench effects`` command prints its notes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd

from hierbench.effects.intervals import DEFAULT_INTERVALS, IntervalSettings, describe_intervals
from hierbench.effects.render import (
    NO_OT,
    arm_table,
    effects_table,
    ot_effects_table,
    ot_table,
    recall_table,
)
from hierbench.effects.schema import ANY_OT_METRIC, RECALL_METRIC
from hierbench.effects.statistics import (
    arms_summary,
    complete_mean_hierarchy,
    effects_by_seed,
    effects_summary,
)
from hierbench.protocol import (
    MEAN_HIERARCHY,
    PAPER_TABLES,
    TABLE_ARMS_MAP,
    TABLE_EFFECTS_MAP,
    TABLE_EFFECTS_OT,
    TABLE_OT,
    TABLE_RECALL,
)

MAP_METRIC = "map"


class EffectsPlan(NamedTuple):
    """Every table of a per-seed table, and what was derived or left out."""

    per_seed: pd.DataFrame  # validated, with any derived mean_hierarchy rows
    arms: pd.DataFrame
    by_seed: pd.DataFrame
    summary: pd.DataFrame
    paper: dict[str, pd.DataFrame]  # the paper tables whose metrics are present, in order
    derived: tuple[str, ...]  # one note per dataset and metric whose mean_hierarchy was derived
    skipped: dict[str, str]  # paper table -> why it is not written
    uncertainty: str  # what the effects' intervals account for
    cautions: tuple[str, ...] = ()  # what the data cannot show (one seed: no SD)
    settings: IntervalSettings = DEFAULT_INTERVALS  # how the intervals were made (their seed)

    def notes(self) -> list[str]:
        """What a reader of the output should know: derived rows, tables left out, and what
        the intervals account for."""
        left_out = [f"not written: {name} ({why})" for name, why in self.skipped.items()]
        return [*self.derived, *left_out, *self.cautions, self.uncertainty]


def _has_metric(frame: pd.DataFrame, pattern: str) -> bool:
    """Whether any row's metric matches ``pattern`` (a full match)."""
    return bool(frame["metric"].astype(str).str.fullmatch(pattern).any())


def plan_effects(
    per_seed: pd.DataFrame,
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    noise: pd.DataFrame | None = None,
) -> EffectsPlan:
    """Validate, complete mean_hierarchy, summarise (with the ``intervals`` settings), and
    build the supported paper tables. ``noise`` holds the test images' variances
    (:func:`hierbench.effects.query_intervals.query_noise_table`) when the per-query rows are
    at hand; without them the intervals are over the seeds alone."""
    frame, derived = complete_mean_hierarchy(per_seed)
    arms = arms_summary(frame)
    by_seed = effects_by_seed(frame)
    summary = effects_summary(by_seed, intervals, noise)
    level = intervals.level
    map_effects = (summary["metric"] == MAP_METRIC) & (summary["level"] == MEAN_HIERARCHY)
    no_ot = f"no {NO_OT}"
    tables: dict[str, tuple[bool, str, Callable[[], pd.DataFrame]]] = {
        TABLE_ARMS_MAP: (
            _has_metric(frame, MAP_METRIC),
            f"no {MAP_METRIC!r} metric",
            lambda: arm_table(arms, MAP_METRIC),
        ),
        TABLE_EFFECTS_MAP: (
            bool(map_effects.any()),
            f"no {MAP_METRIC!r} at level {MEAN_HIERARCHY!r}, nor middle and high to derive it",
            lambda: effects_table(summary, MAP_METRIC, MEAN_HIERARCHY, interval_level=level),
        ),
        TABLE_RECALL: (
            _has_metric(frame, RECALL_METRIC.pattern),
            "no Recall@K metric (r@K rows)",
            lambda: recall_table(arms),
        ),
        TABLE_OT: (_has_metric(frame, ANY_OT_METRIC.pattern), no_ot, lambda: ot_table(arms)),
        TABLE_EFFECTS_OT: (
            _has_metric(frame, ANY_OT_METRIC.pattern),
            no_ot,
            lambda: ot_effects_table(summary, interval_level=level),
        ),
    }
    paper = {name: tables[name][2]() for name in PAPER_TABLES if tables[name][0]}
    skipped = {name: tables[name][1] for name in PAPER_TABLES if not tables[name][0]}
    uncertainty = describe_intervals(intervals, per_query=noise is not None)
    cautions = tuple(_single_seed_cautions(frame))
    return EffectsPlan(
        frame,
        arms,
        by_seed,
        summary,
        paper,
        tuple(derived),
        skipped,
        uncertainty,
        cautions,
        intervals,
    )


def _single_seed_cautions(frame: pd.DataFrame) -> list[str]:
    """One line per dataset whose arms have a single training seed: its SD is NaN (a sample SD
    needs two seeds) and its interval and sign-flip test have nothing to resample."""
    trained = frame[frame["seed"] >= 0]
    seeds = trained.groupby("dataset")["seed"].nunique()
    return [
        f"dataset {dataset!r} has one training seed: SD needs two seeds, so every SD is NaN "
        "(tables show the mean alone) and its intervals cannot reach past that seed"
        for dataset, count in seeds.items()
        if count == 1
    ]
