"""Statistics of the Geometry × Loss factorial and their tables.

``schema`` holds the tables' columns, canonical order and validation; ``statistics`` the
per-seed rows, mean ± SD per arm and the simple effects; ``render`` the Markdown, LaTeX and
CSV renderings and the paper's layouts; ``plan`` which of those tables a per-seed table
supports (tables take the metrics they are given). The tables stage
(``hierbench.stages.tables``) publishes them.

The package's names are imported on first use (PEP 562): a job that draws a figure with
``hierbench.effects.curves`` does not pay for the statistics' SciPy import.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports name what __getattr__ re-exports)
from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The package's names and their modules, imported here for type checkers and for the code hash
# (provenance.codehash follows these imports, so an edit to any of them reruns what imports the
# package); at run time each is imported on first use by __getattr__ below.
if TYPE_CHECKING:
    from hierbench.effects.formulas import (
        EFFECT_DEFINITIONS,
        EFFECT_FORMULAS,
    )
    from hierbench.effects.plan import (
        EffectsPlan,
        plan_effects,
    )
    from hierbench.effects.render import (
        PM,
        arm_table,
        effects_table,
        format_number,
        latex_escape,
        mean_sd,
        ot_effects_table,
        ot_table,
        recall_table,
        render_csv,
        render_latex,
        render_markdown,
    )
    from hierbench.effects.schema import (
        ANY_OT_METRIC,
        ARMS_COLUMNS,
        EFFECTS_BY_SEED_COLUMNS,
        EFFECTS_SUMMARY_COLUMNS,
        EVALUATION_COLUMNS,
        OT_METRIC,
        OT_TREE_METRIC,
        PER_SEED_COLUMNS,
        PER_SEED_KEYS,
        SORT_KEYS,
        EffectsError,
        add_arm,
        arm_labels,
        canonical_order,
        read_per_seed,
        validate_effects,
        validate_per_seed,
    )
    from hierbench.effects.statistics import (
        arms_summary,
        baseline_rows,
        complete_mean_hierarchy,
        effects_by_seed,
        effects_summary,
        per_seed_from_evaluations,
    )


@cache
def _homes() -> dict[str, str]:
    """Each package-level name -> its module, read from the TYPE_CHECKING imports above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    guard = next(node for node in tree.body if isinstance(node, ast.If))
    return {
        alias.name: statement.module
        for statement in guard.body
        if isinstance(statement, ast.ImportFrom) and statement.module
        for alias in statement.names
    }


__all__ = sorted(_homes())


def __getattr__(name: str) -> Any:
    """Import a package-level name from its module on first use."""
    home = _homes().get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_homes()})
