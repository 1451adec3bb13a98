"""The semantic-alignment control's tables: the paper's Table-2 layout and paired contrasts.

Apart from the control's training side (``controls.semantic``), so that training its cells
does not depend on the table code.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from hierbench.controls.semantic import ARM_NAMES
from hierbench.effects.intervals import DEFAULT_INTERVALS, IntervalSettings
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.effects.variants import PAIRED_COLUMNS, paired_contrast, seeds_mean_sd
from hierbench.protocol import MEAN_HIERARCHY

# The paired seed differences of the paper's Table 2 (its text reports Full − Shuffle at
# Parent, Supergroup and mean hierarchy, Leaf+Parent − Leaf and Full − Leaf+Parent on mean
# hierarchy, and Full − Leaf+Parent's change at Parent), each given here at every level; any
# further arm (a shuffle of another fixed-point setting, say) is compared with Full.
CONTRASTS: tuple[tuple[str, str], ...] = (
    ("full", "shuffle"),
    ("leaf_parent", "leaf"),
    ("full", "leaf_parent"),
)
CONTRAST_LEVELS = ("leaf", "middle", "high", MEAN_HIERARCHY)
CONTRAST_COLUMNS = ("contrast", "level", *PAIRED_COLUMNS)


def arm_order(arms: list[str]) -> list[str]:
    """Arms in the paper's order (leaf, leaf + parent, full, shuffle), any others after, sorted."""
    known = [name for name in ARM_NAMES if name in arms]
    return known + sorted(set(arms) - set(known))


# The paper's Table 2 columns: (column, level, metric).
TABLE_COLUMNS = (
    ("Class R@1", "leaf", "r@1"),
    ("Class mAP", "leaf", "map"),
    ("middle mAP", "middle", "map"),
    ("high mAP", "high", "map"),
    ("mean hierarchy", MEAN_HIERARCHY, "map"),
)


def semantic_table(per_seed: pd.DataFrame, epochs: dict[str, int]) -> pd.DataFrame:
    """The paper's Table-2 layout: a row per arm, mean ± SD over seeds, and its epochs."""
    rows = []
    for arm in arm_order(sorted(set(per_seed["variant"]))):
        part = per_seed[per_seed["variant"] == arm]
        entry: dict[str, Any] = {"arm": ARM_NAMES.get(arm, arm), "epochs": epochs.get(arm, 0)}
        for column, level, metric in TABLE_COLUMNS:
            chosen = part[(part["level"] == level) & (part["metric"] == metric)]["value"]
            entry[column] = seeds_mean_sd(chosen)
        rows.append(entry)
    return pd.DataFrame(rows)


def contrast_pairs(arms: list[str]) -> list[tuple[str, str]]:
    """The contrasts a run's arms support: the paper's three, then Full − each further arm."""
    pairs = [(a, b) for a, b in CONTRASTS if a in arms and b in arms]
    extra = [arm for arm in arm_order(arms) if arm not in ARM_NAMES]
    return pairs + [("full", arm) for arm in extra if "full" in arms]


def semantic_contrasts(
    per_seed: pd.DataFrame,
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    query: QueryContrasts | None = None,
) -> pd.DataFrame:
    """The paper's paired seed differences of mAP (Table 2), each at every level and on mean
    hierarchy, with positive and negative seed counts, the signs in seed order, and the t
    interval (with the test images' share from ``query``'s per-query rows when given, else over
    seeds) with the sign-flip test."""
    chosen = per_seed[per_seed["metric"] == "map"]
    levels = [level for level in CONTRAST_LEVELS if level in set(chosen["level"])]
    rows = []
    for first, second in contrast_pairs(sorted(set(chosen["variant"]))):
        for level in levels:
            at_level = chosen[chosen["level"] == level]
            wide = at_level.pivot(index="seed", columns="variant", values="value").sort_index()
            differences = wide[first] - wide[second]
            noise = query.checked(first, second, level, differences) if query else None
            rows.append(
                {
                    "contrast": f"{ARM_NAMES.get(first, first)} − {ARM_NAMES.get(second, second)}",
                    "level": level,
                    **paired_contrast(differences, intervals, noise),
                }
            )
    return pd.DataFrame(rows, columns=list(CONTRAST_COLUMNS))
