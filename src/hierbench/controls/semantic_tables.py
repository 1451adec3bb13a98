"""The semantic-alignment control's tables: the paper's Table-2 layout and paired contrasts.

Apart from the control's training side (``controls.semantic``), so that training its cells
does not depend on the table code.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from hierbench.controls.common import seeds_mean_sd
from hierbench.controls.semantic import ARM_NAMES
from hierbench.protocol import MEAN_HIERARCHY

# The paired seed differences the paper reports (its Table 2), as (minuend, subtrahend) arms.
CONTRASTS: tuple[tuple[str, str], ...] = (
    ("full", "shuffle"),
    ("leaf_parent", "leaf"),
    ("full", "leaf_parent"),
)


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


def semantic_contrasts(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The paired seed differences of mean hierarchy mAP, with positive-seed counts."""
    chosen = per_seed[(per_seed["level"] == MEAN_HIERARCHY) & (per_seed["metric"] == "map")]
    wide = chosen.pivot(index="seed", columns="variant", values="value").sort_index()
    rows = []
    for first, second in CONTRASTS:
        if first not in wide or second not in wide:
            continue
        diff = wide[first] - wide[second]
        rows.append(
            {
                "contrast": f"{ARM_NAMES[first]} − {ARM_NAMES[second]}",
                "mean": float(diff.mean()),
                "sd": float(diff.std(ddof=1)),
                "positive_seeds": int((diff > 0).sum()),
                "seeds": int(diff.notna().sum()),
            }
        )
    return pd.DataFrame(rows, columns=["contrast", "mean", "sd", "positive_seeds", "seeds"])
