"""The benchmarks' common currency: one row per figure, its reference, ratio, goal and verdict.

A row is a dict with the keys of :data:`COLUMNS`. ``ratio`` is ``value / reference`` (both
measured in the same run, so the machine's drift cancels) unless the benchmark states another
paired estimate in ``note``; ``goal`` is a comparison such as ``">= 0.8"`` on the ratio, or
None for a figure recorded without a goal; ``met`` is True, False (below the goal: printed and
recorded as such, never hidden) or None (no goal, or skipped).
"""

from __future__ import annotations

import argparse
import math
import operator
from collections.abc import Callable
from typing import Any

COLUMNS = ("benchmark", "figure", "value", "reference", "ratio", "goal", "met", "unit", "note")
COMPARISONS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le}
Row = dict[str, Any]


def goal_met(ratio: float | None, goal: str | None) -> bool | None:
    """Whether ``ratio`` meets ``goal`` (``">= X"`` or ``"<= X"``); None when there is no goal."""
    if goal is None:
        return None
    comparison, _, threshold = goal.partition(" ")
    if comparison not in COMPARISONS:
        raise ValueError(f"goal {goal!r} is not '>= X' or '<= X'")
    if ratio is None or math.isnan(ratio):
        return False
    return COMPARISONS[comparison](ratio, float(threshold))


def row(
    benchmark: str,
    figure: str,
    value: float | None,
    reference: float | None,
    unit: str,
    goal: str | None,
    *,
    ratio: float | None = None,
    note: str = "",
) -> Row:
    """One figure: ``ratio`` defaults to ``value / reference``; ``met`` follows from the goal."""
    if ratio is None and value is not None and reference:
        ratio = value / reference
    return {
        "benchmark": benchmark,
        "figure": figure,
        "value": None if value is None else float(value),
        "reference": None if reference is None else float(reference),
        "ratio": None if ratio is None else float(ratio),
        "goal": goal,
        "met": goal_met(ratio, goal),
        "unit": unit,
        "note": note,
    }


def error_row(benchmark: str, message: str) -> Row:
    """A benchmark that failed to run: recorded as a missed goal, with the error as its note."""
    return row(benchmark, "error", None, None, "", None, note=message) | {
        "goal": "runs",
        "met": False,
    }


def skipped_row(benchmark: str, figure: str, reason: str) -> Row:
    """Figures that cannot be measured on this machine (no goal to meet or miss)."""
    return row(benchmark, figure, None, None, "", None, note=f"skipped: {reason}")


def studies_main(description: str, rows: Callable[[int], list[Row]], studies: int) -> int:
    """A simulation benchmark's command line: ``--studies N`` (default ``studies``), then each
    row printed as value, figure and note."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--studies", type=int, default=studies)
    args = parser.parse_args()
    for item in rows(args.studies):
        print(f"{item['value']:.3f}  {item['figure']} ({item['note']})")
    return 0
