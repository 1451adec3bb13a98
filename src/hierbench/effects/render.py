"""Renderings of the effect tables: Markdown, LaTeX, CSV, and the paper's layouts.

No I/O: each function returns text or a frame; the tables stage writes them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from hierbench.effects.intervals import P_SEEDS
from hierbench.effects.schema import (
    ANY_OT_METRIC,
    ARMS_COLUMNS,
    EFFECTS_SUMMARY_COLUMNS,
    RECALL_METRIC,
    SORT_KEYS,
    EffectsError,
    add_arm,
    canonical_order,
    require_columns,
)
from hierbench.protocol import ALL_LEVELS, MEAN_HIERARCHY

PM = "±"
NO_OT = "OT metric (ot@K or ot_tree@… rows)"


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


def mean_sd(mean: float, sd: float, digits: int, *, signed: bool = False) -> str:
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
    require_columns(arms, ARMS_COLUMNS, "arms summary")
    chosen = add_arm(_select(arms, "metric", metric, "arms summary"))
    chosen = chosen.assign(
        cell=[mean_sd(m, s, digits) for m, s in zip(chosen["mean"], chosen["sd"], strict=True)]
    )
    return _wide(chosen, ["dataset", "arm"], "level")


def recall_table(arms: pd.DataFrame, *, digits: int = 4) -> pd.DataFrame:
    """Recall@K per arm and level: rows (dataset, arm, level), one "mean ± SD" column per K."""
    require_columns(arms, ARMS_COLUMNS, "arms summary")
    chosen = add_arm(arms[arms["metric"].astype(str).str.match(RECALL_METRIC)])
    if chosen.empty:
        raise EffectsError("arms summary has no Recall@K metric (r@K rows)")
    chosen = chosen.assign(
        cell=[mean_sd(m, s, digits) for m, s in zip(chosen["mean"], chosen["sd"], strict=True)]
    )
    return _wide(chosen, ["dataset", "arm", "level"], "metric")


def ot_table(arms: pd.DataFrame, *, digits: int = 4) -> pd.DataFrame:
    """The OT scores per arm (lower is better): rows (dataset, arm), one "mean ± SD" column per
    metric, ot@K by K, then ot_tree@K by K and ot_tree@tree."""
    require_columns(arms, ARMS_COLUMNS, "arms summary")
    chosen = add_arm(arms[arms["metric"].astype(str).str.match(ANY_OT_METRIC.pattern)])
    if chosen.empty:
        raise EffectsError(f"arms summary has no {NO_OT}")
    chosen = chosen.assign(
        cell=[mean_sd(m, s, digits) for m, s in zip(chosen["mean"], chosen["sd"], strict=True)]
    )
    return _wide(chosen, ["dataset", "arm"], "metric")


def _wide(frame: pd.DataFrame, rows: list[str], columns: str) -> pd.DataFrame:
    """Pivot the ``cell`` texts to rows × columns in canonical order; gaps become ""."""
    wide = frame.pivot(index=rows, columns=columns, values="cell").fillna("")
    ordered = sorted(wide.columns, key=SORT_KEYS[columns])
    wide = wide[ordered].reset_index()
    wide.columns = [str(c) for c in wide.columns]
    return canonical_order(wide, rows)


def interval_text(low: float, high: float, digits: int) -> str:
    """ "[low, high]" with signed ends; "" when the interval is undefined."""
    if math.isnan(low) or math.isnan(high):
        return ""
    ends = (format_number(float(v), digits, signed=True) for v in (low, high))
    return "[{}, {}]".format(*ends)


# The column that says what an effect whose interval holds zero still rules out.
RULES_OUT = "rules out (interval holds 0)"


def holds_zero(row: pd.Series) -> bool:
    """Whether the row's interval exists and holds zero."""
    low, high = float(row["ci_low"]), float(row["ci_high"])
    return math.isfinite(low) and math.isfinite(high) and low <= 0 <= high


def ruled_out_text(row: pd.Series, digits: int = 4) -> str:
    """What a null endpoint rules out ("below −0.0050 and above +0.0073"); "" when its
    interval excludes zero or is undefined."""
    if not holds_zero(row):
        return ""
    low = format_number(float(row["ci_low"]), digits, signed=True)
    high = format_number(float(row["ci_high"]), digits, signed=True)
    return f"below {low} and above {high}"


def p_text(p: float, floor: float) -> str:
    """A sign-flip p-value beside its floor with this many seeds: "0.25 (floor 0.25)"."""
    return "" if math.isnan(p) else f"{p:.3g} (floor {floor:.3g})"


def effects_table(
    effects: pd.DataFrame,
    metric: str = "map",
    level: str = MEAN_HIERARCHY,
    *,
    digits: int = 4,
    interval_level: float = 0.95,
) -> pd.DataFrame:
    """Paper layout: rows (dataset, effect), signed "mean ± SD" and positive seeds ("3/3"),
    then ours: the interval at ``interval_level``, the sign-flip p-value over seeds with its
    floor, and what an effect whose interval holds zero still rules out."""
    require_columns(effects, EFFECTS_SUMMARY_COLUMNS, "effects summary")
    chosen = _select(effects, "metric", metric, "effects summary")
    chosen = _select(chosen, "level", level, f"effects summary (metric {metric!r})")
    table = pd.DataFrame(
        {
            "dataset": chosen["dataset"].astype(str).to_numpy(),
            "effect": chosen["effect"].astype(str).to_numpy(),
            f"mean {PM} SD": [
                mean_sd(m, s, digits, signed=True)
                for m, s in zip(chosen["mean"], chosen["sd"], strict=True)
            ],
            "positive seeds": [
                f"{int(p)}/{int(n)}"
                for p, n in zip(chosen["positive_seeds"], chosen["n"], strict=True)
            ],
            f"{interval_level:.0%} interval": [
                interval_text(low, high, digits)
                for low, high in zip(chosen["ci_low"], chosen["ci_high"], strict=True)
            ],
            P_SEEDS: [
                p_text(p, floor)
                for p, floor in zip(chosen["p_seeds"], chosen["p_min"], strict=True)
            ],
            RULES_OUT: [ruled_out_text(row, digits) for _, row in chosen.iterrows()],
        }
    )
    return canonical_order(table, ("dataset", "effect"))


def ot_effects_table(
    effects: pd.DataFrame, *, digits: int = 4, interval_level: float = 0.95
) -> pd.DataFrame:
    """Effects on every OT score (ot@K, ot_tree@…): rows (dataset, metric, effect) in the layout
    of effects_table.

    OT is lower-is-better, so a negative effect is an improvement and "positive seeds" counts
    the seeds on which the difference made the score worse.
    """
    require_columns(effects, EFFECTS_SUMMARY_COLUMNS, "effects summary")
    metrics = sorted(
        {m for m in effects["metric"].astype(str) if ANY_OT_METRIC.match(m)},
        key=SORT_KEYS["metric"],
    )
    if not metrics:
        raise EffectsError(f"effects summary has no {NO_OT}")
    parts = [
        effects_table(
            effects, metric, ALL_LEVELS, digits=digits, interval_level=interval_level
        ).assign(metric=metric)
        for metric in metrics
    ]
    table = pd.concat(parts, ignore_index=True)
    table = table[
        ["dataset", "metric", *[c for c in table.columns if c not in ("dataset", "metric")]]
    ]
    return canonical_order(table, ("dataset", "metric", "effect"))
