"""The tables of the effects package: their columns, canonical order and validation.

docs/protocol.md, "Statistics and effect tables": the three Q/G perturbations are averaged
within each training seed; the training seeds are the statistical units (mean ± sample SD,
ddof = 1).

Formats (every frame returned here is in canonical order: datasets and seeds ascending, arms
frozen, E_R, H_R, E_S, H_S, E_A, L_A, levels leaf, middle, high, mean_hierarchy, all, metrics map,
r@K by K, ot@K by K, then ot_tree@K by K and ot_tree@tree, effects geom_R, geom_S, loss_E, loss_H,
int, loss_AS_E, loss_AS_hyp, geom_A; the index is a plain range):

- per-seed table: ``dataset, geometry, loss, seed, level, metric, value`` (long format), one row
  per (dataset, geometry, loss, seed, level, metric). ``geometry`` is E or H and ``loss`` R or S,
  or, for the companion method's cells, E_A and L_A (geometry E or L, loss A);
  the frozen-feature baseline is kept in the same table with geometry = loss = ``frozen`` (seed
  -1 when it comes from the evaluation stage). ``value`` is a finite float or NaN.
- arms summary: ``dataset, geometry, loss, level, metric, mean, sd, n``, frozen included.
- effects by seed: ``dataset, level, metric, effect, seed, value`` from the four factorial arms
  of the same seed (and, where the companion cells ran, their three contrasts with E_S and H_S);
  the frozen baseline takes no part.
- effects summary: ``dataset, level, metric, effect, mean, sd, n, positive_seeds,
  negative_seeds, se, df, ci_low, ci_high, p_seeds, p_min`` (the t interval at
  ``effects.intervals.level``, mean ± t(df) · se, then the sign-flip p-value over seeds and
  its floor with ``n`` seeds: :mod:`hierbench.effects.intervals`).

Levels and metrics: mAP and Recall@K are scored at leaf, middle and high (and their
mean_hierarchy); the OT scores (lower is better), our adaptations of the companion method's
score to relation levels, OT@K (``ot@K``, ideal-referenced) and the taxonomy-tree-referenced
``ot_tree@K`` and ``ot_tree@tree``, are one score per query over the whole relation mix, so they
are scored only at level ``all`` (:data:`hierbench.protocol.ALL_LEVELS`). A per-seed row that
pairs a metric with a level where it is not scored is an error.

NaN values (a level without valid queries) are skipped by the summaries: ``n`` counts the
non-NaN values, ``sd`` is NaN when ``n`` < 2, ``positive_seeds`` counts values > 0 and
``negative_seeds`` values < 0.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.factorial import is_added_effect, is_added_geometry, is_added_loss
from hierbench.protocol import (
    ALL_LEVELS,
    ARM_ORDER,
    COMPANION_LOSS,
    EFFECT_ORDER,
    FACTORIAL_ARMS,
    FROZEN,
    GEOMETRIES,
    HEAD_NAMES,
    LEVEL_ORDER,
    LOSSES,
    MEAN_HIERARCHY,
)

__all__ = ["FACTORIAL_ARMS"]  # re-exported for the statistics module

PER_SEED_COLUMNS: tuple[str, ...] = (
    "dataset",
    "geometry",
    "loss",
    "seed",
    "level",
    "metric",
    "value",
)
PER_SEED_KEYS: tuple[str, ...] = PER_SEED_COLUMNS[:-1]
ARMS_COLUMNS: tuple[str, ...] = (
    "dataset",
    "geometry",
    "loss",
    "level",
    "metric",
    "mean",
    "sd",
    "n",
)
EFFECTS_BY_SEED_COLUMNS: tuple[str, ...] = ("dataset", "level", "metric", "effect", "seed", "value")
EFFECTS_SUMMARY_COLUMNS: tuple[str, ...] = (
    "dataset",
    "level",
    "metric",
    "effect",
    "mean",
    "sd",
    "n",
    "positive_seeds",
    "negative_seeds",
    "se",
    "df",
    "ci_low",
    "ci_high",
    "p_seeds",
    "p_min",
)
EVALUATION_COLUMNS: tuple[str, ...] = (
    "dataset",
    "arm",
    "geometry",
    "loss",
    "seed",
    "qg_seed",
    "aggregation",
    "level",
    "map",
)

RECALL_METRIC = re.compile(r"^r@(\d+)$")
OT_METRIC = re.compile(r"^ot@(\d+)$")  # ideal-referenced OT@K
OT_TREE_METRIC = re.compile(r"^ot_tree@(\d+|tree)$")  # tree-referenced: ot_tree@K, ot_tree@tree
# Every OT score: lower is better, scored only at level "all".
ANY_OT_METRIC = re.compile(r"^(?:ot@\d+|ot_tree@(?:\d+|tree))$")


class EffectsError(ValueError):
    """A statistics input is malformed; the message names the table, column and rows involved."""


# ------------------------------------------------------------------------------ ordering


def _listed_key(order: Sequence[str]) -> Callable[[Any], tuple]:
    """Sort key that puts the listed values first, in list order, then the rest by name."""
    rank = {value: index for index, value in enumerate(order)}
    return lambda value: (rank.get(value, len(rank)), str(value))


def metric_key(metric: Any) -> tuple:
    """Sort key of metric names: map, r@K by K, ot@K by K, ot_tree@K by K then ot_tree@tree,
    then the rest by name."""
    if metric == "map":
        return (0, 0, 0, "")
    for rank, pattern in enumerate((RECALL_METRIC, OT_METRIC, OT_TREE_METRIC), start=1):
        match = pattern.match(str(metric))
        if match:
            cutoff = match.group(1)
            return (rank, 0, int(cutoff), "") if cutoff.isdigit() else (rank, 1, 0, "")
    return (4, 0, 0, str(metric))


def is_ot_metric(metrics: pd.Series) -> pd.Series:
    """Whether each metric name is an OT score (``ot@K``, ``ot_tree@K``, ``ot_tree@tree``),
    scored only at level ``all``."""
    return metrics.astype(str).str.match(ANY_OT_METRIC.pattern)


def scored_here(frame: pd.DataFrame) -> pd.Series:
    """Whether each row's metric is scored at its level: OT@K at ``all``, the rest elsewhere."""
    return is_ot_metric(frame["metric"]) == (frame["level"] == ALL_LEVELS)


SORT_KEYS: dict[str, Callable[[Any], tuple]] = {
    "arm": _listed_key(ARM_ORDER),
    "level": _listed_key(LEVEL_ORDER),
    "effect": _listed_key(EFFECT_ORDER),
    "metric": metric_key,
}


def arm_labels(frame: pd.DataFrame) -> pd.Series:
    """Arm name of each row from its geometry and loss ("E_R", …, or "frozen")."""
    frozen = frame["geometry"] == FROZEN
    labels = frame["geometry"].astype(str) + "_" + frame["loss"].astype(str)
    return labels.where(~frozen, FROZEN)


def add_arm(frame: pd.DataFrame) -> pd.DataFrame:
    """Copy of a frame with geometry and loss plus an ``arm`` column after ``dataset``."""
    result = frame.copy()
    result.insert(1, "arm", arm_labels(frame).to_numpy())
    return result


def _ranks(values: pd.Series, column: str) -> np.ndarray:
    """Integer ranks of a column's values in canonical order (for lexsort)."""
    unique = sorted(set(values.tolist()), key=SORT_KEYS.get(column))
    position = {value: index for index, value in enumerate(unique)}
    return np.array([position[value] for value in values.tolist()], dtype=np.int64)


def canonical_order(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by ``columns`` in canonical order ("arm" may be derived from geometry/loss)."""
    keys = []
    for column in reversed(columns):
        values = arm_labels(frame) if column == "arm" and "arm" not in frame else frame[column]
        keys.append(_ranks(values, column))
    order = np.lexsort(keys) if len(frame) and keys else np.arange(len(frame))
    return frame.iloc[order].reset_index(drop=True)


# ---------------------------------------------------------------------------- validation


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds, so messages read 2 rather than np.int64(2)."""
    return value.item() if isinstance(value, np.generic) else value


def require_columns(frame: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    """Raise naming the source and every required column it lacks."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise EffectsError(
            f"{source} lacks column(s) {missing}; it needs {list(columns)} "
            f"(found {[str(c) for c in frame.columns]})"
        )


def text_column(frame: pd.DataFrame, column: str, source: str) -> pd.Series:
    """A label column as plain strings; empty or missing labels are an error."""
    values = frame[column]
    blank = values.isna() | (values.astype(str).str.strip() == "")
    if blank.any():
        row = int(np.flatnonzero(blank.to_numpy())[0])
        raise EffectsError(f"{source}: column {column!r} is empty in row {row}")
    return values.astype(str)


def integer_column(frame: pd.DataFrame, column: str, source: str) -> pd.Series:
    """An integer column (seeds) as int64; missing or fractional values are an error."""
    numbers = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    bad = numbers.isna() | ~np.isfinite(numbers) | (numbers != np.round(numbers))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise EffectsError(
            f"{source}: column {column!r} needs whole numbers; row {row} holds "
            f"{frame[column].iloc[row]!r}"
        )
    return numbers.astype("int64")


def value_column(frame: pd.DataFrame, column: str, source: str, keys: Sequence[str]) -> pd.Series:
    """A numeric column as float64: finite numbers or NaN; text or infinities are an error."""
    raw = frame[column]
    numbers = pd.to_numeric(raw, errors="coerce").astype("float64")
    bad = (numbers.isna() & raw.notna()) | np.isinf(numbers)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        where = {key: _plain(frame[key].iloc[row]) for key in keys}
        raise EffectsError(
            f"{source}: column {column!r} must hold finite numbers or NaN; found "
            f"{_plain(raw.iloc[row])!r} at {where}"
        )
    return numbers


def check_choices(values: pd.Series, column: str, allowed: Sequence[str], source: str) -> None:
    """Raise naming the invalid values of a column and the allowed ones."""
    invalid = sorted(set(values.tolist()) - set(allowed))
    if invalid:
        raise EffectsError(
            f"{source}: column {column!r} has invalid value(s) {invalid}; expected one of "
            f"{list(allowed)}"
        )


def is_added_arm(arm: str) -> bool:
    """Whether an arm is an added loss's or geometry's (:mod:`hierbench.factorial`): a
    geometry of the factorial (the paper's or an added one, one capital letter) with a loss of
    it, at least one of the two beyond the paper's and the companion's."""
    geometry, _, loss = str(arm).partition("_")
    added_geometry, added_loss = is_added_geometry(geometry), is_added_loss(loss)
    return (geometry in GEOMETRIES or added_geometry) and (
        added_loss or (added_geometry and loss in LOSSES)
    )


def check_arms(frame: pd.DataFrame, source: str) -> None:
    """Each row's geometry and loss form a known arm: a factorial cell (E/H with R/S, or an
    added loss or geometry), a companion cell (E_A, L_A), or both "frozen" for the baseline."""
    geometries = frame["geometry"].astype(str)
    check_choices(
        geometries[~geometries.map(is_added_geometry)], "geometry", (*HEAD_NAMES, FROZEN), source
    )
    added = frame["loss"].astype(str).map(lambda loss: is_added_arm(f"{GEOMETRIES[0]}_{loss}"))
    check_choices(frame["loss"][~added], "loss", (*LOSSES, COMPANION_LOSS, FROZEN), source)
    mixed = (frame["geometry"] == FROZEN) != (frame["loss"] == FROZEN)
    if mixed.any():
        row = frame[mixed].iloc[0]
        raise EffectsError(
            f"{source}: dataset {row['dataset']!r} has geometry {row['geometry']!r} with loss "
            f"{row['loss']!r}; the baseline needs geometry and loss both {FROZEN!r}"
        )
    labels = arm_labels(frame)
    unknown = ~(labels.isin(ARM_ORDER) | labels.map(is_added_arm))
    if unknown.any():
        row = frame[unknown].iloc[0]
        raise EffectsError(
            f"{source}: dataset {row['dataset']!r} has geometry {row['geometry']!r} with loss "
            f"{row['loss']!r}, which is no arm of the study; the arms are {list(ARM_ORDER)}"
        )


def check_metric_levels(frame: pd.DataFrame, source: str) -> None:
    """Raise naming the first row whose metric is not scored at its level (OT only at all)."""
    wrong = ~scored_here(frame)
    if wrong.any():
        row = frame[wrong].iloc[0]
        if ANY_OT_METRIC.match(row["metric"]):
            scored = f"only at level {ALL_LEVELS!r}"
        else:
            scored = f"at the taxonomy levels and {MEAN_HIERARCHY!r}, not at {ALL_LEVELS!r}"
        raise EffectsError(
            f"{source}: metric {row['metric']!r} at level {row['level']!r} (dataset "
            f"{row['dataset']!r}); that metric is scored {scored}"
        )


def check_unique(frame: pd.DataFrame, keys: Sequence[str], source: str) -> None:
    """Raise naming the first key that occurs on more than one row."""
    duplicated = frame.duplicated(list(keys), keep=False)
    if duplicated.any():
        first = frame[duplicated].iloc[0]
        where = {key: _plain(first[key]) for key in keys}
        count = int((frame[list(keys)] == first[list(keys)]).all(axis=1).sum())
        raise EffectsError(f"{source}: duplicate rows for {where} ({count} rows, expected one)")


def validate_per_seed(frame: pd.DataFrame, source: str = "per-seed table") -> pd.DataFrame:
    """Check a per-seed table and return it with fixed dtypes and canonical row order."""
    require_columns(frame, PER_SEED_COLUMNS, source)
    if frame.empty:
        raise EffectsError(f"{source} has no rows")
    result = pd.DataFrame(index=range(len(frame)))
    for column in ("dataset", "geometry", "loss", "level", "metric"):
        result[column] = text_column(frame, column, source).to_numpy()
    result.insert(3, "seed", integer_column(frame, "seed", source).to_numpy())
    check_arms(result, source)
    check_choices(result["level"], "level", LEVEL_ORDER, source)
    check_metric_levels(result, source)
    result["value"] = value_column(frame, "value", source, PER_SEED_KEYS).to_numpy()
    check_unique(result, PER_SEED_KEYS, source)
    return canonical_order(result, ("dataset", "arm", "seed", "level", "metric"))


def read_per_seed(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read and validate a per-seed table from parquet or CSV (chosen by the file suffix)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"per-seed table {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        frame = pd.read_parquet(path)
    elif suffix == ".csv":
        frame = pd.read_csv(
            path,
            keep_default_na=False,
            na_values={"value": ["", "NaN", "nan", "NA"]},
        )
    else:
        raise EffectsError(
            f"per-seed table {path}: unknown suffix {suffix!r}; use .parquet or .csv"
        )
    return validate_per_seed(frame, source=f"per-seed table {path}")


# ------------------------------------------------------------------ from evaluation rows


def validate_effects(effects: pd.DataFrame, source: str = "effects table") -> pd.DataFrame:
    """Check an effects-by-seed table and return it with fixed dtypes and canonical order."""
    require_columns(effects, EFFECTS_BY_SEED_COLUMNS, source)
    keys = ["dataset", "level", "metric", "effect", "seed"]
    result = pd.DataFrame(
        {c: text_column(effects, c, source).to_numpy() for c in keys if c != "seed"}
    )
    added = result["effect"].map(is_added_effect)
    check_choices(result["effect"][~added], "effect", EFFECT_ORDER, source)
    result["seed"] = integer_column(effects, "seed", source).to_numpy()
    result["value"] = value_column(effects, "value", source, keys).to_numpy()
    check_unique(result, keys, source)
    return canonical_order(result[list(EFFECTS_BY_SEED_COLUMNS)], keys)
