"""Two-stage intervals of every effect from the evaluations' per-query rows.

The per-query rows of the factorial's (and the companion method's) cells hold, for each
query/gallery draw, each query's score at each level and its group there (``group``). For each
draw and level this module lines the rows up as one array (arm, seed, query, metric), forms
every effect's per-query contrast with the effect formulas themselves (they are linear in the
arms), and hands all effects and metrics of a level to
:func:`hierbench.effects.intervals.two_stage_batch` as columns of one matrix. Mean hierarchy
is the mean of the middle and high replicates, which share their resamples. The observed value
(every seed and query once) must equal the effect the per-seed table gives; a mismatch means
the per-query rows are not those the summaries came from, and stops the tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierbench.effects.intervals import (
    IntervalSettings,
    Resamples,
    draw_resamples,
    observed_resample,
    percentile_interval,
    two_stage_batch,
)
from hierbench.effects.schema import ANY_OT_METRIC, EffectsError
from hierbench.effects.statistics import EFFECT_FORMULAS
from hierbench.protocol import ALL_LEVELS, COMPANION_ARMS, FACTORIAL_ARMS, MEAN_HIERARCHY
from hierbench.relations import LEVELS

INTERVAL_COLUMNS = ("dataset", "level", "metric", "effect", "observed", "ci_low", "ci_high")
EFFECT_ARMS = (*FACTORIAL_ARMS, *COMPANION_ARMS)  # the arms the effect formulas read
MATCH_TOLERANCE = 1e-9  # observed vs the per-seed table's effect (float summation order)


def _metrics(per_query: pd.DataFrame, level: str) -> list[str]:
    """The per-query metric columns scored at ``level``: AP and Recall@K at leaf, middle and
    high; the OT scores at level all."""
    columns = [c for c in per_query.columns if c == "ap" or str(c).startswith("r@")]
    ot = [c for c in per_query.columns if ANY_OT_METRIC.fullmatch(str(c))]
    return ot if level == ALL_LEVELS else columns


def _summary_metric(column: str) -> str:
    """The tables' name of a per-query metric column (``ap`` is ``map``)."""
    return "map" if column == "ap" else column


def _draw_arrays(
    rows: pd.DataFrame, metrics: list[str], arms: list[str], seeds: list[int], where: str
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Per arm an (S, Q, M) array of one draw's scores at one level (NaN where not valid), and
    the (Q,) groups, the queries in index order; every arm and seed must hold the same queries
    with the same groups."""
    queries = np.sort(rows["query"].unique())
    shape = (len(arms), len(seeds), len(queries))
    ordered = rows.sort_values(["arm", "seed", "query"], kind="stable")
    keys = ordered[["arm", "seed", "query"]]
    expected = pd.MultiIndex.from_product([arms, seeds, queries])
    if len(ordered) != len(expected) or not pd.MultiIndex.from_frame(keys).equals(expected):
        raise EffectsError(
            f"{where}: the cells' per-query rows do not hold the same queries for every arm "
            f"({', '.join(arms)}) and seed ({', '.join(map(str, seeds))}); the per-query files "
            "are incomplete"
        )
    scores = ordered[metrics].to_numpy(dtype=np.float64, copy=True)
    scores[~ordered["valid"].to_numpy(dtype=bool)] = np.nan
    scores = scores.reshape(*shape, len(metrics))
    groups = None
    if "group" in ordered.columns:
        every = ordered["group"].to_numpy().reshape(shape)
        if (every != every[:1, :1]).any():
            raise EffectsError(f"{where}: the cells give one query different groups")
        groups = every[0, 0]
    return {arm: scores[index] for index, arm in enumerate(arms)}, groups


def _effects_of(arms: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every effect whose arms are all present, as per-query contrasts (S, Q, M)."""
    found = {}
    for name, formula in EFFECT_FORMULAS.items():
        try:
            found[name] = np.asarray(formula(arms))
        except KeyError:  # an arm of this effect did not run (the companion cells off)
            continue
    return found


def _level_replicates(
    per_query: pd.DataFrame,
    level: str,
    aggregation: str,
    resamples: Resamples,
    seeds: list[int],
    where: str,
) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The (effect, metric) columns of a level, their replicates (R, K) and observed (K,)."""
    metrics = _metrics(per_query, level)
    rows = per_query[per_query["level"] == level]
    arms = sorted(rows["arm"].unique())
    draws, columns = [], []
    for qg_seed in sorted(rows["qg_seed"].unique()):
        arm_values, groups = _draw_arrays(
            rows[rows["qg_seed"] == qg_seed], metrics, arms, seeds, f"{where}, draw {qg_seed}"
        )
        effects = _effects_of(arm_values)
        columns = [(effect, _summary_metric(m)) for effect in effects for m in metrics]
        stacked = np.concatenate(list(effects.values()), axis=2)  # (S, Q, E·M)
        macro = aggregation == "group_macro" and level != ALL_LEVELS
        draws.append((stacked, groups if macro else None))
    replicates = two_stage_batch(draws, resamples)
    sizes = [stacked.shape[1] for stacked, _ in draws]
    observed = two_stage_batch(draws, observed_resample(len(seeds), sizes))[0]
    return columns, replicates, observed


def query_intervals(
    per_query: pd.DataFrame, aggregation: str, settings: IntervalSettings
) -> pd.DataFrame:
    """One row per (dataset, level, metric, effect): the observed effect and its two-stage
    interval (``INTERVAL_COLUMNS``), mean hierarchy included."""
    needed = {"dataset", "arm", "seed", "qg_seed", "query", "level", "valid"}
    if aggregation == "group_macro":
        needed.add("group")
    missing = needed - set(per_query.columns)
    if missing:
        raise EffectsError(
            f"per-query rows lack columns {sorted(missing)} (a run's eval/*.parquet has them; "
            "group-macro needs each row's group)"
        )
    rows = []
    for dataset, part in per_query.groupby("dataset", sort=True):
        trained = part[part["arm"].isin(EFFECT_ARMS)]  # other arms' rows (frozen, PCA) unused
        seeds = sorted(int(s) for s in trained["seed"].unique())
        sizes = [
            trained.loc[
                (trained["qg_seed"] == q) & (trained["level"] == LEVELS[0]), "query"
            ].nunique()
            for q in sorted(trained["qg_seed"].unique())
        ]
        resamples = draw_resamples(len(seeds), sizes, settings.replicates, settings.seed)
        by_level = {}
        for level in sorted(trained["level"].unique()):
            where = f"dataset {dataset!r}, level {level!r}"
            by_level[level] = _level_replicates(
                trained, level, aggregation, resamples, seeds, where
            )
        if "middle" in by_level and "high" in by_level:
            columns, middle, middle_observed = by_level["middle"]
            _, high, high_observed = by_level["high"]
            by_level[MEAN_HIERARCHY] = (
                columns,
                (middle + high) / 2,
                (middle_observed + high_observed) / 2,
            )
        for level, (columns, replicates, observed) in by_level.items():
            for index, (effect, metric) in enumerate(columns):
                low, high = percentile_interval(replicates[:, index], settings.level)
                rows.append((dataset, level, metric, effect, observed[index], low, high))
    return pd.DataFrame(rows, columns=list(INTERVAL_COLUMNS))


def with_query_intervals(summary: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """The effects summary with its ``ci_low``/``ci_high`` replaced by the two-stage ones;
    every effect must have one whose observed value equals the summary's mean."""
    keys = ["dataset", "level", "metric", "effect"]
    merged = summary.drop(columns=["ci_low", "ci_high"]).merge(
        intervals, on=keys, how="left", validate="one_to_one"
    )
    missing = merged["observed"].isna() & merged["mean"].notna()
    mismatch = (merged["observed"] - merged["mean"]).abs() > MATCH_TOLERANCE
    for bad, why in (
        (missing, "has no per-query rows"),
        (mismatch, "differs in its per-query rows"),
    ):
        if bad.any():
            row = merged[bad].iloc[0]
            raise EffectsError(
                f"effect {row['effect']} on {row['metric']} at level {row['level']} of dataset "
                f"{row['dataset']!r} {why} (the summaries say {row['mean']!r}); evaluate again"
            )
    return merged.drop(columns="observed")[list(summary.columns)]
