"""Statistics of the factorial: per-seed rows from evaluations, mean ± SD per arm, simple effects.

The three Q/G perturbations are averaged within each training seed; the training seeds are the
statistical units (mean ± sample SD, ddof = 1).
"""

from __future__ import annotations

import pandas as pd
from pandas.api.typing import SeriesGroupBy

from hierbench.effects.formulas import added_levels_of, effect_formulas
from hierbench.effects.intervals import DEFAULT_INTERVALS, IntervalSettings, uncertainty
from hierbench.effects.query_intervals import shared_variances
from hierbench.effects.schema import (
    ARMS_COLUMNS,
    EFFECTS_BY_SEED_COLUMNS,
    EFFECTS_SUMMARY_COLUMNS,
    EVALUATION_COLUMNS,
    OT_METRIC,
    OT_TREE_METRIC,
    PER_SEED_COLUMNS,
    RECALL_METRIC,
    EffectsError,
    arm_labels,
    canonical_order,
    check_arms,
    check_unique,
    integer_column,
    is_ot_metric,
    metric_key,
    require_columns,
    scored_here,
    text_column,
    validate_effects,
    validate_per_seed,
    value_column,
)
from hierbench.factorial import added_arms
from hierbench.metricnames import is_plugin_metric
from hierbench.protocol import (
    COMPANION_ARMS,
    FACTORIAL_ARMS,
    FROZEN,
    MEAN_HIERARCHY,
)


def _metric_columns(summaries: pd.DataFrame) -> list[str]:
    """The metric columns of evaluation summaries: map, every r@K, ot@K and ot_tree@…, and any
    plugin's metric, in canonical order."""
    patterns = (RECALL_METRIC, OT_METRIC, OT_TREE_METRIC)
    found = [
        str(c)
        for c in summaries.columns
        if c == "map" or any(p.match(str(c)) for p in patterns) or is_plugin_metric(c)
    ]
    return sorted(found, key=metric_key)


def _check_evaluation_arms(rows: pd.DataFrame, source: str) -> None:
    """Each row's arm must match its geometry and loss (E_R, …, or frozen)."""
    check_arms(rows, source)
    wrong = rows["arm"] != arm_labels(rows)
    if wrong.any():
        row = rows[wrong].iloc[0]
        raise EffectsError(
            f"{source}: dataset {row['dataset']!r} row has arm {row['arm']!r} but geometry "
            f"{row['geometry']!r} and loss {row['loss']!r} (expected arm "
            f"{arm_labels(rows[wrong]).iloc[0]!r})"
        )


def _check_qg_seeds(rows: pd.DataFrame, source: str) -> None:
    """Every arm, seed and level of a dataset must be averaged over the same Q/G draws."""
    for dataset, part in rows.groupby("dataset", sort=True):
        expected = sorted(set(part["qg_seed"].tolist()))
        draws = part.groupby(["arm", "seed", "level"], sort=True)["qg_seed"]
        for (arm, seed, level), seeds in draws:
            if sorted(seeds.tolist()) != expected:
                raise EffectsError(
                    f"{source}: dataset {dataset!r}, arm {arm!r}, seed {seed}, level {level!r} "
                    f"has Q/G seeds {sorted(seeds.tolist())}; every cell of the dataset needs "
                    f"{expected}"
                )


def _mean_hierarchy_rows(per_seed: pd.DataFrame, source: str) -> pd.DataFrame:
    """Rows of level mean_hierarchy: the mean of the middle and high values (NaN if either is)."""
    keys = ["dataset", "geometry", "loss", "seed", "metric"]
    parts = per_seed[per_seed["level"].isin(["middle", "high"])]
    counts = parts.groupby(keys)["level"].size().reindex(per_seed.groupby(keys).size().index)
    lacking = counts[counts.isna() | (counts < 2)]
    if len(lacking):
        dataset, geometry, loss, seed, metric = lacking.index[0]
        arm = FROZEN if geometry == FROZEN else f"{geometry}_{loss}"
        raise EffectsError(
            f"{source}: dataset {dataset!r}, arm {arm}, seed {seed}, metric "
            f"{metric!r} needs both a middle and a high row to form mean_hierarchy"
        )
    wide = parts.pivot(index=keys, columns="level", values="value")
    values = (wide["middle"] + wide["high"]) / 2
    return values.rename("value").reset_index().assign(level=MEAN_HIERARCHY)


def per_seed_from_evaluations(
    summaries: pd.DataFrame, aggregation: str = "query_micro"
) -> pd.DataFrame:
    """Per-seed table from evaluation summaries: mean over Q/G draws, plus mean_hierarchy.

    The frozen baseline stays in the table (geometry = loss = "frozen"); a NaN in any draw
    makes that seed's value NaN rather than silently averaging fewer draws.
    """
    source = "evaluation summaries"
    require_columns(summaries, EVALUATION_COLUMNS, source)
    available = sorted(set(summaries["aggregation"].astype(str).tolist()))
    if aggregation not in available:
        raise EffectsError(f"{source} hold no {aggregation!r} rows; available: {available}")
    metrics = _metric_columns(summaries)
    rows = summaries[summaries["aggregation"].astype(str) == aggregation]
    identity = ["dataset", "arm", "geometry", "loss", "level"]
    rows = pd.DataFrame({c: text_column(rows, c, source).to_numpy() for c in identity}).assign(
        seed=integer_column(rows, "seed", source).to_numpy(),
        qg_seed=integer_column(rows, "qg_seed", source).to_numpy(),
        **{m: value_column(rows, m, source, identity).to_numpy() for m in metrics},
    )
    _check_evaluation_arms(rows, source)
    check_unique(rows, ["dataset", "arm", "seed", "qg_seed", "level"], source)
    _check_qg_seeds(rows, source)
    rows = canonical_order(rows, ("dataset", "arm", "seed", "level", "qg_seed"))
    keys = ["dataset", "geometry", "loss", "seed", "level"]
    means = rows.groupby(keys, sort=True)[metrics].mean(skipna=False).reset_index()
    long = means.melt(id_vars=keys, value_vars=metrics, var_name="metric", value_name="value")
    long = long[scored_here(long)]  # OT at level all, mAP and Recall@K at the three levels
    by_level = long[~is_ot_metric(long["metric"])]
    long = pd.concat([long, _mean_hierarchy_rows(by_level, source)], ignore_index=True)
    return validate_per_seed(long[list(PER_SEED_COLUMNS)], source=source)


def _lacks_mean_hierarchy(levels: frozenset[str]) -> bool:
    """Whether the levels of one arm, seed and metric hold middle and high but no mean of them."""
    return {"middle", "high"} <= levels and MEAN_HIERARCHY not in levels


def complete_mean_hierarchy(per_seed: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Add mean_hierarchy = (middle + high) / 2 wherever middle and high exist without it.

    Tables published elsewhere often list only leaf, middle and high. Returns the validated
    table with the derived rows, and one note per dataset and metric derived, saying so.
    """
    frame = validate_per_seed(per_seed)
    keys = ["dataset", "geometry", "loss", "seed", "metric"]
    levels = frame.groupby(keys, sort=True)["level"].agg(frozenset)
    lacking = levels[[_lacks_mean_hierarchy(found) for found in levels]]
    if lacking.empty:
        return frame, []
    chosen = frame.set_index(keys).index.isin(lacking.index)
    derived = _mean_hierarchy_rows(frame[chosen], "per-seed table")
    notes = [
        f"derived level {MEAN_HIERARCHY!r} = (middle + high) / 2 for dataset {dataset!r}, "
        f"metric {metric!r} ({len(rows)} arm-seed rows)"
        for (dataset, metric), rows in derived.groupby(["dataset", "metric"], sort=True)
    ]
    combined = pd.concat([frame, derived[list(PER_SEED_COLUMNS)]], ignore_index=True)
    return validate_per_seed(combined), notes


def baseline_rows(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The frozen-baseline rows of a per-seed table (empty when it has none)."""
    frame = validate_per_seed(per_seed)
    return frame[frame["geometry"] == FROZEN].reset_index(drop=True)


# ------------------------------------------------------------------------------ summaries


def _summarise(values: SeriesGroupBy) -> pd.DataFrame:
    """Mean, sample SD (ddof = 1) and count of the non-NaN values of each group."""
    return pd.DataFrame(
        {
            "mean": values.mean(),
            "sd": values.std(ddof=1),
            "n": values.count().astype("int64"),
        }
    )


def arms_summary(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sample SD over seeds of every arm (frozen baseline included), level and metric."""
    frame = validate_per_seed(per_seed)
    keys = ["dataset", "geometry", "loss", "level", "metric"]
    summary = _summarise(frame.groupby(keys, sort=True)["value"]).reset_index()
    return canonical_order(summary[list(ARMS_COLUMNS)], ("dataset", "arm", "level", "metric"))


def _check_complete_arms(arms: pd.DataFrame, required: tuple[str, ...]) -> None:
    """Every (dataset, level, metric, seed) needs each required arm; raise naming the first
    gap."""
    keys = ["dataset", "level", "metric", "seed"]
    present = (
        arms.assign(present=True)
        .set_index([*keys, "arm"])["present"]
        .unstack("arm", fill_value=False)
        .reindex(columns=list(required), fill_value=False)
    )
    for key, row in present.iterrows():
        missing = [arm for arm in required if not row[arm]]
        if missing:
            dataset, level, metric, seed = key
            raise EffectsError(
                f"per-seed table: dataset {dataset!r}, seed {seed} lacks arm(s) {missing} "
                f"(level {level!r}, metric {metric!r}); every seed needs all of {list(required)}"
            )


def _dataset_effects(arms: pd.DataFrame) -> pd.DataFrame:
    """One dataset's effects by seed (wide: an effect per column): the factorial's five, the
    companion contrasts only when its cells are in the table, an added loss's or geometry's
    only when its arms are (:mod:`hierbench.factorial`), and then for every seed."""
    present = set(arms["arm"])
    companion = COMPANION_ARMS if present & set(COMPANION_ARMS) else ()
    required = (*FACTORIAL_ARMS, *companion, *added_arms(*added_levels_of(present)))
    _check_complete_arms(arms, required)
    keys = ["dataset", "level", "metric", "seed"]
    wide = arms.set_index([*keys, "arm"])["value"].unstack("arm")
    columns = {effect: formula(wide) for effect, formula in effect_formulas(required).items()}
    return pd.DataFrame(columns, index=wide.index).reset_index()


def effects_by_seed(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The simple effects of each seed from its arms (frozen ignored): the factorial's five,
    and the companion method's three contrasts in datasets where its cells ran."""
    frame = validate_per_seed(per_seed)
    trained = frame[frame["geometry"] != FROZEN].assign(arm=arm_labels)
    if trained.empty:
        raise EffectsError("per-seed table holds only frozen-baseline rows; no factorial arms")
    keys = ["dataset", "level", "metric", "seed"]
    parts = [_dataset_effects(arms) for _, arms in trained.groupby("dataset", sort=True)]
    long = pd.concat(
        [part.melt(id_vars=keys, var_name="effect") for part in parts], ignore_index=True
    )
    long = long.astype({"effect": "str", "value": "float64"})
    order = ("dataset", "level", "metric", "effect", "seed")
    return canonical_order(long[list(EFFECTS_BY_SEED_COLUMNS)], order)


def effects_summary(
    effects: pd.DataFrame,
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    noise: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Mean ± sample SD over seeds of every effect, the numbers of seeds above and below zero,
    and its uncertainty (:func:`hierbench.effects.intervals.uncertainty`): with the test
    images' shared variance from ``noise``
    (:func:`hierbench.effects.query_intervals.query_noise_table`, whose observed effects must
    equal these means) when the per-query rows are at hand, else over the seeds alone."""
    frame = validate_effects(effects)
    keys = ["dataset", "level", "metric", "effect"]
    groups = frame.groupby(keys, sort=True)["value"]
    summary = _summarise(groups)
    summary["positive_seeds"] = groups.agg(lambda v: int((v > 0).sum())).astype("int64")
    summary["negative_seeds"] = groups.agg(lambda v: int((v < 0).sum())).astype("int64")
    summary = summary.reset_index()
    shared = shared_variances(summary, noise) if noise is not None else None
    columns = pd.DataFrame(
        [
            uncertainty(values.to_numpy(), intervals, None if shared is None else shared[row])
            for row, (_, values) in enumerate(groups)
        ],
        index=summary.index,
    )
    summary = summary.join(columns)
    return canonical_order(summary[list(EFFECTS_SUMMARY_COLUMNS)], keys)


# ----------------------------------------------------------------------------- rendering
