"""The test images' share of every effect's uncertainty, from the evaluations' per-query rows.

The per-query rows of the factorial's (and the companion method's) cells hold, for each
query/gallery draw, each query's score at each level and its group there (``group``: its leaf,
middle or high label). For each draw and level this module lines the rows up as one array (arm,
seed, query, metric), forms every effect's per-query contrast with the effect formulas
themselves (they are linear in the arms), resamples the query images within their leaf strata
(:class:`QueryImages`: one weight per test image, taken by its queries in every draw, shared
by every level, seed, arm and effect, so the pairing is real) and hands all effects and metrics of
a level to :func:`hierbench.effects.intervals.per_seed_replicates` as columns of one matrix.
Mean hierarchy is the mean of the middle and high replicates, which share their resamples. The
result per effect is its observed value and the test images' shared and total variance
(:class:`hierbench.effects.intervals.QueryNoise`); the effects summary combines the shared
variance with the seeds' spread. The observed value (every query once) must equal the effect the
per-seed table gives; a mismatch means the per-query rows are not those the summaries came
from, and stops the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierbench.effects.formulas import effect_arms, effect_formulas
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.resampling import (
    QueryResamples,
    collapsed_strata,
    draw_image_weights,
    observed_weights,
    per_seed_replicates,
    query_noise,
)
from hierbench.effects.schema import ANY_OT_METRIC, EffectsError
from hierbench.metricnames import is_plugin_metric
from hierbench.protocol import ALL_LEVELS, MEAN_HIERARCHY
from hierbench.relations import LEVELS

NOISE_KEYS = ("dataset", "level", "metric", "effect")
NOISE_COLUMNS = (*NOISE_KEYS, "observed", "shared", "total")
MATCH_TOLERANCE = 1e-9  # observed vs the per-seed table's effect (float summation order)


@dataclass(frozen=True)
class QueryImages:
    """The test images that serve as queries in a dataset's draws: each one's stratum, and per
    draw (``qg_seed``) each query's image among them, the queries in index order."""

    strata: np.ndarray
    positions: dict[int, np.ndarray]

    def resamples(self, settings: IntervalSettings) -> QueryResamples:
        """Every draw's query weights in ``settings.replicates`` resamples of the images."""
        images = draw_image_weights(self.strata, settings.replicates, settings.seed)
        return QueryResamples.of_images(images, [self.positions[q] for q in sorted(self.positions)])


def query_images(per_query: pd.DataFrame, where: str) -> QueryImages:
    """The query images of per-query rows (``image_id``, and ``group``: each query's label at
    its row's level) with their leaf strata (:func:`collapsed_strata`)."""
    missing = {"image_id", "group"} - set(per_query.columns)
    if missing:
        raise EffectsError(
            f"{where}: per-query rows lack {sorted(missing)} (each query's image and its label "
            "at the row's level), which resampling the test images within their leaves needs; "
            "evaluate again"
        )
    rows = per_query.drop_duplicates(["qg_seed", "level", "query"])
    images = np.sort(rows["image_id"].astype(str).unique())
    labels = []
    for level in LEVELS:
        at_level = rows[rows["level"] == level].drop_duplicates(["image_id", "group"])
        if at_level["image_id"].duplicated().any():
            image = at_level.loc[at_level["image_id"].duplicated(), "image_id"].iloc[0]
            raise EffectsError(f"{where}: image {image!r} has two labels at level {level!r}")
        found = at_level.set_index(at_level["image_id"].astype(str))["group"].reindex(images)
        if found.isna().any():
            raise EffectsError(f"{where}: not every query image has a row at level {level!r}")
        labels.append(found.to_numpy())
    positions = {}
    for qg_seed, draw in rows[rows["level"] == LEVELS[0]].groupby("qg_seed", sort=True):
        ordered = draw.sort_values("query")["image_id"].astype(str).to_numpy()
        positions[int(qg_seed)] = np.searchsorted(images, ordered)
    return QueryImages(collapsed_strata(np.stack(labels, axis=1)), positions)


def _metrics(per_query: pd.DataFrame, level: str) -> list[str]:
    """The per-query metric columns scored at ``level``: AP, Recall@K and any plugin's metric
    at leaf, middle and high; the OT scores at level all."""
    columns = [
        c for c in per_query.columns if c == "ap" or str(c).startswith("r@") or is_plugin_metric(c)
    ]
    ot = [c for c in per_query.columns if ANY_OT_METRIC.fullmatch(str(c))]
    return ot if level == ALL_LEVELS else columns


def _summary_metric(column: str) -> str:
    """The tables' name of a per-query metric column (``ap`` is ``map``)."""
    return "map" if column == "ap" else column


def _draw_arrays(
    rows: pd.DataFrame, metrics: list[str], arms: list[str], seeds: list[int], where: str
) -> tuple[dict[str, np.ndarray], np.ndarray]:
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
    every = ordered["group"].to_numpy().reshape(shape)
    if (every != every[:1, :1]).any():
        raise EffectsError(f"{where}: the cells give one query different groups")
    return {arm: scores[index] for index, arm in enumerate(arms)}, every[0, 0]


def _effects_of(arms: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every effect whose arms are all present, as per-query contrasts (S, Q, M)."""
    return {name: np.asarray(formula(arms)) for name, formula in effect_formulas(arms).items()}


def _level_replicates(
    per_query: pd.DataFrame,
    level: str,
    aggregation: str,
    resamples: QueryResamples,
    seeds: list[int],
    where: str,
) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The (effect, metric) columns of a level, their per-seed replicates (R, S, K) and
    observed per-seed values (S, K)."""
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
    replicates = per_seed_replicates(draws, resamples)
    sizes = [stacked.shape[1] for stacked, _ in draws]
    observed = per_seed_replicates(draws, observed_weights(sizes))[0]
    return columns, replicates, observed


def query_noise_table(
    per_query: pd.DataFrame, aggregation: str, settings: IntervalSettings
) -> pd.DataFrame:
    """One row per (dataset, level, metric, effect): the observed effect (the seed mean) and
    the test images' ``shared`` and ``total`` variance of it (``NOISE_COLUMNS``), mean
    hierarchy included."""
    needed = {"dataset", "arm", "seed", "qg_seed", "query", "level", "valid", "group", "image_id"}
    missing = needed - set(per_query.columns)
    if missing:
        raise EffectsError(
            f"per-query rows lack columns {sorted(missing)} (a run's eval/*.parquet has them; "
            "resampling the test images needs each row's image and group)"
        )
    rows = []
    for dataset, part in per_query.groupby("dataset", sort=True):
        trained = part[part["arm"].isin(effect_arms(part["arm"]))]  # frozen, PCA: unused
        seeds = sorted(int(s) for s in trained["seed"].unique())
        resamples = query_images(trained, f"dataset {dataset!r}").resamples(settings)
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
            noise = query_noise(replicates)
            means = observed.mean(axis=0)
            for index, (effect, metric) in enumerate(columns):
                rows.append(
                    (
                        dataset,
                        level,
                        metric,
                        effect,
                        means[index],
                        noise.shared[index],
                        noise.total[index],
                    )
                )
    return pd.DataFrame(rows, columns=list(NOISE_COLUMNS))


def shared_variances(summary: pd.DataFrame, noise: pd.DataFrame) -> pd.Series:
    """Each effects-summary row's shared test-image variance (aligned with ``summary``'s
    index); every effect must have per-query rows whose observed value equals the summary's
    mean."""
    merged = summary[[*NOISE_KEYS, "mean"]].merge(
        noise, on=list(NOISE_KEYS), how="left", validate="one_to_one"
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
    return pd.Series(merged["shared"].to_numpy(), index=summary.index)
