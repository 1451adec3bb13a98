"""Statistics of the 2×2 factorial: per-seed tables, per-arm mean ± SD, simple effects, tables.

SPEC "Statistics and effect tables": the three Q/G perturbations are averaged within each
training seed; the training seeds are the statistical units (mean ± sample SD, ddof = 1).

Formats (every frame returned here is in canonical order: datasets and seeds ascending, arms
frozen, E_R, H_R, E_S, H_S, levels leaf, middle, high, mean_hierarchy, metrics map then r@K by
K, effects geom_R, geom_S, loss_E, loss_H, int; the index is a plain range):

- per-seed table: ``dataset, geometry, loss, seed, level, metric, value`` (long format), one row
  per (dataset, geometry, loss, seed, level, metric). ``geometry`` is E or H and ``loss`` R or S;
  the frozen-feature baseline is kept in the same table with geometry = loss = ``frozen`` (seed
  -1 when it comes from the evaluation stage). ``value`` is a finite float or NaN.
- arms summary: ``dataset, geometry, loss, level, metric, mean, sd, n``, frozen included.
- effects by seed: ``dataset, level, metric, effect, seed, value`` from the four factorial arms
  of the same seed; the frozen baseline takes no part.
- effects summary: ``dataset, level, metric, effect, mean, sd, n, positive_seeds``.

NaN values (a level without valid queries) are skipped by the summaries: ``n`` counts the
non-NaN values, ``sd`` is NaN when ``n`` < 2 and ``positive_seeds`` counts values > 0.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.typing import SeriesGroupBy

from hierbench.artifacts import write_parquet, write_text
from hierbench.provenance import JobContext

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

FROZEN = "frozen"
GEOMETRIES: tuple[str, ...] = ("E", "H")
LOSSES: tuple[str, ...] = ("R", "S")
FACTORIAL_ARMS: tuple[str, ...] = ("E_R", "E_S", "H_R", "H_S")
ARM_ORDER: tuple[str, ...] = (FROZEN, "E_R", "H_R", "E_S", "H_S")
LEVEL_ORDER: tuple[str, ...] = ("leaf", "middle", "high", "mean_hierarchy")
EFFECT_ORDER: tuple[str, ...] = ("geom_R", "geom_S", "loss_E", "loss_H", "int")
# Each effect computed from a frame with one column per arm (rows are seeds).
EFFECT_FORMULAS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "geom_R": lambda arm: arm["H_R"] - arm["E_R"],
    "geom_S": lambda arm: arm["H_S"] - arm["E_S"],
    "loss_E": lambda arm: arm["E_S"] - arm["E_R"],
    "loss_H": lambda arm: arm["H_S"] - arm["H_R"],
    "int": lambda arm: (arm["H_S"] - arm["E_S"]) - (arm["H_R"] - arm["E_R"]),
}
EFFECT_DEFINITIONS: dict[str, str] = {
    "geom_R": "H_R - E_R",
    "geom_S": "H_S - E_S",
    "loss_E": "E_S - E_R",
    "loss_H": "H_S - H_R",
    "int": "(H_S - E_S) - (H_R - E_R)",
}
RECALL_METRIC = re.compile(r"^r@(\d+)$")
PM = "±"


class EffectsError(ValueError):
    """A statistics input is malformed; the message names the table, column and rows involved."""


# ------------------------------------------------------------------------------ ordering


def _listed_key(order: Sequence[str]) -> Callable[[Any], tuple]:
    """Sort key that puts the listed values first, in list order, then the rest by name."""
    rank = {value: index for index, value in enumerate(order)}
    return lambda value: (rank.get(value, len(rank)), str(value))


def _metric_key(metric: Any) -> tuple:
    """Sort key of metric names: map, then r@K by K, then the rest by name."""
    match = RECALL_METRIC.match(str(metric))
    if metric == "map":
        return (0, 0, "")
    return (1, int(match.group(1)), "") if match else (2, 0, str(metric))


SORT_KEYS: dict[str, Callable[[Any], tuple]] = {
    "arm": _listed_key(ARM_ORDER),
    "level": _listed_key(LEVEL_ORDER),
    "effect": _listed_key(EFFECT_ORDER),
    "metric": _metric_key,
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


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    """Raise naming the source and every required column it lacks."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise EffectsError(
            f"{source} lacks column(s) {missing}; it needs {list(columns)} "
            f"(found {[str(c) for c in frame.columns]})"
        )


def _text_column(frame: pd.DataFrame, column: str, source: str) -> pd.Series:
    """A label column as plain strings; empty or missing labels are an error."""
    values = frame[column]
    blank = values.isna() | (values.astype(str).str.strip() == "")
    if blank.any():
        row = int(np.flatnonzero(blank.to_numpy())[0])
        raise EffectsError(f"{source}: column {column!r} is empty in row {row}")
    return values.astype(str)


def _integer_column(frame: pd.DataFrame, column: str, source: str) -> pd.Series:
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


def _value_column(frame: pd.DataFrame, column: str, source: str, keys: Sequence[str]) -> pd.Series:
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


def _check_choices(values: pd.Series, column: str, allowed: Sequence[str], source: str) -> None:
    """Raise naming the invalid values of a column and the allowed ones."""
    invalid = sorted(set(values.tolist()) - set(allowed))
    if invalid:
        raise EffectsError(
            f"{source}: column {column!r} has invalid value(s) {invalid}; expected one of "
            f"{list(allowed)}"
        )


def _check_arms(frame: pd.DataFrame, source: str) -> None:
    """Geometry E/H with loss R/S, or both "frozen" for the baseline."""
    _check_choices(frame["geometry"], "geometry", (*GEOMETRIES, FROZEN), source)
    _check_choices(frame["loss"], "loss", (*LOSSES, FROZEN), source)
    mixed = (frame["geometry"] == FROZEN) != (frame["loss"] == FROZEN)
    if mixed.any():
        row = frame[mixed].iloc[0]
        raise EffectsError(
            f"{source}: dataset {row['dataset']!r} has geometry {row['geometry']!r} with loss "
            f"{row['loss']!r}; the baseline needs geometry and loss both {FROZEN!r}"
        )


def _check_unique(frame: pd.DataFrame, keys: Sequence[str], source: str) -> None:
    """Raise naming the first key that occurs on more than one row."""
    duplicated = frame.duplicated(list(keys), keep=False)
    if duplicated.any():
        first = frame[duplicated].iloc[0]
        where = {key: _plain(first[key]) for key in keys}
        count = int((frame[list(keys)] == first[list(keys)]).all(axis=1).sum())
        raise EffectsError(f"{source}: duplicate rows for {where} ({count} rows, expected one)")


def validate_per_seed(frame: pd.DataFrame, source: str = "per-seed table") -> pd.DataFrame:
    """Check a per-seed table and return it with fixed dtypes and canonical row order."""
    _require_columns(frame, PER_SEED_COLUMNS, source)
    if frame.empty:
        raise EffectsError(f"{source} has no rows")
    result = pd.DataFrame(index=range(len(frame)))
    for column in ("dataset", "geometry", "loss", "level", "metric"):
        result[column] = _text_column(frame, column, source).to_numpy()
    result.insert(3, "seed", _integer_column(frame, "seed", source).to_numpy())
    _check_arms(result, source)
    _check_choices(result["level"], "level", LEVEL_ORDER, source)
    result["value"] = _value_column(frame, "value", source, PER_SEED_KEYS).to_numpy()
    _check_unique(result, PER_SEED_KEYS, source)
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


def _metric_columns(summaries: pd.DataFrame) -> list[str]:
    """The metric columns of evaluation summaries: map and every r@K, in canonical order."""
    found = [str(c) for c in summaries.columns if c == "map" or RECALL_METRIC.match(str(c))]
    return sorted(found, key=_metric_key)


def _check_evaluation_arms(rows: pd.DataFrame, source: str) -> None:
    """Each row's arm must match its geometry and loss (E_R, …, or frozen)."""
    _check_arms(rows, source)
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
    return values.rename("value").reset_index().assign(level="mean_hierarchy")


def per_seed_from_evaluations(
    summaries: pd.DataFrame, aggregation: str = "query_micro"
) -> pd.DataFrame:
    """Per-seed table from evaluation summaries: mean over Q/G draws, plus mean_hierarchy.

    The frozen baseline stays in the table (geometry = loss = "frozen"); a NaN in any draw
    makes that seed's value NaN rather than silently averaging fewer draws.
    """
    source = "evaluation summaries"
    _require_columns(summaries, EVALUATION_COLUMNS, source)
    available = sorted(set(summaries["aggregation"].astype(str).tolist()))
    if aggregation not in available:
        raise EffectsError(f"{source} hold no {aggregation!r} rows; available: {available}")
    metrics = _metric_columns(summaries)
    rows = summaries[summaries["aggregation"].astype(str) == aggregation]
    identity = ["dataset", "arm", "geometry", "loss", "level"]
    rows = pd.DataFrame({c: _text_column(rows, c, source).to_numpy() for c in identity}).assign(
        seed=_integer_column(rows, "seed", source).to_numpy(),
        qg_seed=_integer_column(rows, "qg_seed", source).to_numpy(),
        **{m: _value_column(rows, m, source, identity).to_numpy() for m in metrics},
    )
    _check_evaluation_arms(rows, source)
    _check_unique(rows, ["dataset", "arm", "seed", "qg_seed", "level"], source)
    _check_qg_seeds(rows, source)
    rows = canonical_order(rows, ("dataset", "arm", "seed", "level", "qg_seed"))
    keys = ["dataset", "geometry", "loss", "seed", "level"]
    means = rows.groupby(keys, sort=True)[metrics].mean(skipna=False).reset_index()
    long = means.melt(id_vars=keys, value_vars=metrics, var_name="metric", value_name="value")
    long = pd.concat([long, _mean_hierarchy_rows(long, source)], ignore_index=True)
    return validate_per_seed(long[list(PER_SEED_COLUMNS)], source=source)


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


def _check_complete_arms(factorial: pd.DataFrame) -> None:
    """Every (dataset, level, metric, seed) needs all four arms; raise naming the first gap."""
    keys = ["dataset", "level", "metric", "seed"]
    present = (
        factorial.assign(present=True)
        .set_index([*keys, "arm"])["present"]
        .unstack("arm", fill_value=False)
        .reindex(columns=list(FACTORIAL_ARMS), fill_value=False)
    )
    for key, row in present.iterrows():
        missing = [arm for arm in FACTORIAL_ARMS if not row[arm]]
        if missing:
            dataset, level, metric, seed = key
            raise EffectsError(
                f"per-seed table: dataset {dataset!r}, seed {seed} lacks arm(s) {missing} "
                f"(level {level!r}, metric {metric!r}); every seed needs all of "
                f"{list(FACTORIAL_ARMS)}"
            )


def effects_by_seed(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The five simple effects of each seed from its four factorial arms (frozen ignored)."""
    frame = validate_per_seed(per_seed)
    factorial = frame[frame["geometry"] != FROZEN].assign(arm=arm_labels)
    if factorial.empty:
        raise EffectsError("per-seed table holds only frozen-baseline rows; no factorial arms")
    _check_complete_arms(factorial)
    keys = ["dataset", "level", "metric", "seed"]
    wide = factorial.set_index([*keys, "arm"])["value"].unstack("arm")
    columns = {effect: formula(wide) for effect, formula in EFFECT_FORMULAS.items()}
    effects = pd.DataFrame(columns, index=wide.index).reset_index()
    long = effects.melt(id_vars=keys, value_vars=list(EFFECT_ORDER), var_name="effect")
    long = long.astype({"effect": "str", "value": "float64"})
    order = ("dataset", "level", "metric", "effect", "seed")
    return canonical_order(long[list(EFFECTS_BY_SEED_COLUMNS)], order)


def validate_effects(effects: pd.DataFrame, source: str = "effects table") -> pd.DataFrame:
    """Check an effects-by-seed table and return it with fixed dtypes and canonical order."""
    _require_columns(effects, EFFECTS_BY_SEED_COLUMNS, source)
    keys = ["dataset", "level", "metric", "effect", "seed"]
    result = pd.DataFrame(
        {c: _text_column(effects, c, source).to_numpy() for c in keys if c != "seed"}
    )
    _check_choices(result["effect"], "effect", EFFECT_ORDER, source)
    result["seed"] = _integer_column(effects, "seed", source).to_numpy()
    result["value"] = _value_column(effects, "value", source, keys).to_numpy()
    _check_unique(result, keys, source)
    return canonical_order(result[list(EFFECTS_BY_SEED_COLUMNS)], keys)


def effects_summary(effects: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sample SD over seeds of every effect, with the number of seeds above zero."""
    frame = validate_effects(effects)
    keys = ["dataset", "level", "metric", "effect"]
    groups = frame.groupby(keys, sort=True)["value"]
    summary = _summarise(groups)
    summary["positive_seeds"] = groups.agg(lambda v: int((v > 0).sum())).astype("int64")
    summary = summary.reset_index()
    return canonical_order(summary[list(EFFECTS_SUMMARY_COLUMNS)], keys)


# ----------------------------------------------------------------------------- rendering


def format_number(value: Any, digits: int = 4, *, signed: bool = False) -> str:
    """A number with fixed decimals ("NaN" for missing, no negative zero); text passes through."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return "NaN"
        rounded = round(float(value), digits) + 0.0
        return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"
    return str(value)


def _cells(frame: pd.DataFrame, digits: int) -> list[list[str]]:
    """Every cell of a frame as text, numbers with ``digits`` decimals."""
    return [[format_number(v, digits) for v in row] for row in frame.itertuples(index=False)]


def _is_numeric(frame: pd.DataFrame, column: Any) -> bool:
    """Whether a column holds numbers (right-aligned in tables)."""
    series = frame[column]
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def render_markdown(frame: pd.DataFrame, *, digits: int = 4) -> str:
    """A GitHub-style pipe table of a frame (numbers right-aligned, fixed decimals)."""

    def escape(text: str) -> str:
        return text.replace("|", "\\|")

    header = "| " + " | ".join(escape(str(c)) for c in frame.columns) + " |"
    rule = "|" + "|".join("---:" if _is_numeric(frame, c) else "---" for c in frame.columns) + "|"
    body = ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in _cells(frame, digits)]
    return "\n".join([header, rule, *body]) + "\n"


LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    PM: r"$\pm$",
}


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX tabular (special characters escaped, ± as $\\pm$)."""
    return "".join(LATEX_ESCAPES.get(char, char) for char in text)


def render_latex(frame: pd.DataFrame, *, digits: int = 4) -> str:
    """A plain LaTeX tabular of a frame (\\hline rules, escaped text, no timestamps)."""
    spec = "".join("r" if _is_numeric(frame, c) else "l" for c in frame.columns)
    header = " & ".join(latex_escape(str(c)) for c in frame.columns) + r" \\"
    body = [" & ".join(latex_escape(c) for c in row) + r" \\" for row in _cells(frame, digits)]
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\hline", header, r"\hline", *body, r"\hline"]
    return "\n".join([*lines, r"\end{tabular}"]) + "\n"


def render_csv(frame: pd.DataFrame, *, digits: int = 6) -> str:
    """CSV text of a frame with a fixed float format ("NaN" for missing, no negative zero)."""
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    rounded = frame.copy()
    rounded[floats] = rounded[floats].round(digits) + 0.0
    return rounded.to_csv(
        index=False, float_format=f"%.{digits}f", na_rep="NaN", lineterminator="\n"
    )


def _mean_sd(mean: float, sd: float, digits: int, *, signed: bool = False) -> str:
    """ "mean ± sd" text; the mean alone when the SD is undefined (fewer than two seeds)."""
    text = format_number(float(mean), digits, signed=signed)
    if math.isnan(mean) or math.isnan(sd):
        return text
    return f"{text} {PM} {format_number(float(sd), digits)}"


def _select(frame: pd.DataFrame, column: str, value: str, source: str) -> pd.DataFrame:
    """Rows whose ``column`` equals ``value``; none is an error listing what is there."""
    chosen = frame[frame[column] == value]
    if chosen.empty:
        available = sorted(set(frame[column].tolist()), key=SORT_KEYS.get(column))
        raise EffectsError(f"{source} has no {column} {value!r}; available: {available}")
    return chosen


def arm_table(arms: pd.DataFrame, metric: str = "map", *, digits: int = 4) -> pd.DataFrame:
    """Paper layout: rows (dataset, arm), one "mean ± SD" column per level for one metric."""
    _require_columns(arms, ARMS_COLUMNS, "arms summary")
    chosen = add_arm(_select(arms, "metric", metric, "arms summary"))
    chosen = chosen.assign(
        cell=[_mean_sd(m, s, digits) for m, s in zip(chosen["mean"], chosen["sd"], strict=True)]
    )
    return _wide(chosen, ["dataset", "arm"], "level")


def recall_table(arms: pd.DataFrame, *, digits: int = 4) -> pd.DataFrame:
    """Recall@K per arm and level: rows (dataset, arm, level), one "mean ± SD" column per K."""
    _require_columns(arms, ARMS_COLUMNS, "arms summary")
    chosen = add_arm(arms[arms["metric"].astype(str).str.match(RECALL_METRIC)])
    if chosen.empty:
        raise EffectsError("arms summary has no Recall@K metric (r@K rows)")
    chosen = chosen.assign(
        cell=[_mean_sd(m, s, digits) for m, s in zip(chosen["mean"], chosen["sd"], strict=True)]
    )
    return _wide(chosen, ["dataset", "arm", "level"], "metric")


def _wide(frame: pd.DataFrame, rows: list[str], columns: str) -> pd.DataFrame:
    """Pivot the ``cell`` texts to rows × columns in canonical order; gaps become ""."""
    wide = frame.pivot(index=rows, columns=columns, values="cell").fillna("")
    ordered = sorted(wide.columns, key=SORT_KEYS[columns])
    wide = wide[ordered].reset_index()
    wide.columns = [str(c) for c in wide.columns]
    return canonical_order(wide, rows)


def effects_table(
    effects: pd.DataFrame, metric: str = "map", level: str = "mean_hierarchy", *, digits: int = 4
) -> pd.DataFrame:
    """Paper layout: rows (dataset, effect), signed "mean ± SD" and positive seeds ("3/3")."""
    _require_columns(effects, EFFECTS_SUMMARY_COLUMNS, "effects summary")
    chosen = _select(effects, "metric", metric, "effects summary")
    chosen = _select(chosen, "level", level, f"effects summary (metric {metric!r})")
    table = pd.DataFrame(
        {
            "dataset": chosen["dataset"].astype(str).to_numpy(),
            "effect": chosen["effect"].astype(str).to_numpy(),
            f"mean {PM} SD": [
                _mean_sd(m, s, digits, signed=True)
                for m, s in zip(chosen["mean"], chosen["sd"], strict=True)
            ],
            "positive seeds": [
                f"{int(p)}/{int(n)}"
                for p, n in zip(chosen["positive_seeds"], chosen["n"], strict=True)
            ],
        }
    )
    return canonical_order(table, ("dataset", "effect"))


# -------------------------------------------------------------------------------- writing


def _write_renderings(frame: pd.DataFrame, stem: Path, job: JobContext, csv: bool) -> list[Path]:
    """Write the Markdown, LaTeX (and optionally CSV) renderings of one table."""
    paths = [
        write_text(render_markdown(frame), stem.with_suffix(".md"), job),
        write_text(render_latex(frame), stem.with_suffix(".tex"), job),
    ]
    if csv:
        paths.append(write_text(render_csv(frame), stem.with_suffix(".csv"), job))
    return paths


def write_effects(
    per_seed: pd.DataFrame | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    job: JobContext,
) -> dict[str, Path]:
    """Re-aggregate a per-seed table into arm and effect tables (parquet, md, tex, csv).

    Writes ``arms_summary``, ``effects_by_seed`` and ``effects_summary`` as .parquet, .md,
    .tex and .csv, plus the paper tables ``table_arms_map``, ``table_effects_map`` (mean
    hierarchy) and ``table_recall`` as .md and .tex. Returns the paths keyed by file name.
    """
    frame = per_seed if isinstance(per_seed, pd.DataFrame) else read_per_seed(per_seed)
    frame = validate_per_seed(frame)
    out = Path(out_dir)
    arms = arms_summary(frame)
    by_seed = effects_by_seed(frame)
    summary = effects_summary(by_seed)
    facts = {"datasets": sorted(set(frame["dataset"].tolist()))}
    tables = {"arms_summary": arms, "effects_by_seed": by_seed, "effects_summary": summary}
    paths: list[Path] = []
    for name, table in tables.items():
        metadata = {"table": name, "sd": "sample, ddof=1, over seeds"}
        if name != "arms_summary":
            metadata["effects"] = EFFECT_DEFINITIONS
        target = out / f"{name}.parquet"
        paths.append(write_parquet(table, target, job, sort_by=(), metadata=metadata, facts=facts))
        paths.extend(_write_renderings(table, out / name, job, csv=True))
    paper = {
        "table_arms_map": arm_table(arms, "map"),
        "table_effects_map": effects_table(summary, "map", "mean_hierarchy"),
        "table_recall": recall_table(arms),
    }
    for name, table in paper.items():
        paths.extend(_write_renderings(table, out / name, job, csv=False))
    return {path.name: path for path in paths}
