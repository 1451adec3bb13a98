"""Statistics of the Geometry × Loss factorial and their tables.

``schema`` holds the tables' columns, canonical order and validation; ``statistics`` the
per-seed rows, mean ± SD per arm and the simple effects; ``render`` the Markdown, LaTeX and
CSV renderings and the paper's layouts; ``plan`` which of those tables a per-seed table
supports (tables take the metrics they are given). The tables stage
(``hierbench.stages.tables``) publishes them.
"""

from hierbench.effects.formulas import EFFECT_DEFINITIONS, EFFECT_FORMULAS
from hierbench.effects.plan import EffectsPlan, plan_effects
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

__all__ = [
    "ANY_OT_METRIC",
    "ARMS_COLUMNS",
    "EFFECTS_BY_SEED_COLUMNS",
    "EFFECTS_SUMMARY_COLUMNS",
    "EFFECT_DEFINITIONS",
    "EFFECT_FORMULAS",
    "EVALUATION_COLUMNS",
    "OT_METRIC",
    "OT_TREE_METRIC",
    "PER_SEED_COLUMNS",
    "PER_SEED_KEYS",
    "PM",
    "SORT_KEYS",
    "EffectsError",
    "EffectsPlan",
    "add_arm",
    "arm_labels",
    "arm_table",
    "arms_summary",
    "baseline_rows",
    "canonical_order",
    "complete_mean_hierarchy",
    "effects_by_seed",
    "effects_summary",
    "effects_table",
    "format_number",
    "latex_escape",
    "mean_sd",
    "ot_effects_table",
    "ot_table",
    "per_seed_from_evaluations",
    "plan_effects",
    "read_per_seed",
    "recall_table",
    "render_csv",
    "render_latex",
    "render_markdown",
    "validate_effects",
    "validate_per_seed",
]
