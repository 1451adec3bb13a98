"""Statistics of the Geometry × Loss factorial and their tables.

``schema`` holds the tables' columns, canonical order and validation; ``statistics`` the
per-seed rows, mean ± SD per arm and the simple effects; ``render`` the Markdown, LaTeX and
CSV renderings and the paper's layouts; ``plan`` which of those tables a per-seed table
supports (tables take the metrics they are given). The tables stage
(``hierbench.stages.tables``) publishes them.

The package's names are imported on first use (PEP 562): a job that draws a figure with
``hierbench.effects.curves`` does not pay for the statistics' SciPy import.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, tuple[str, ...]] = {
    "formulas": ("EFFECT_DEFINITIONS", "EFFECT_FORMULAS"),
    "plan": ("EffectsPlan", "plan_effects"),
    "render": (
        "PM",
        "arm_table",
        "effects_table",
        "format_number",
        "latex_escape",
        "mean_sd",
        "ot_effects_table",
        "ot_table",
        "recall_table",
        "render_csv",
        "render_latex",
        "render_markdown",
    ),
    "schema": (
        "ANY_OT_METRIC",
        "ARMS_COLUMNS",
        "EFFECTS_BY_SEED_COLUMNS",
        "EFFECTS_SUMMARY_COLUMNS",
        "EVALUATION_COLUMNS",
        "EffectsError",
        "OT_METRIC",
        "OT_TREE_METRIC",
        "PER_SEED_COLUMNS",
        "PER_SEED_KEYS",
        "SORT_KEYS",
        "add_arm",
        "arm_labels",
        "canonical_order",
        "read_per_seed",
        "validate_effects",
        "validate_per_seed",
    ),
    "statistics": (
        "arms_summary",
        "baseline_rows",
        "complete_mean_hierarchy",
        "effects_by_seed",
        "effects_summary",
        "per_seed_from_evaluations",
    ),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    """Import a package-level name from its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
