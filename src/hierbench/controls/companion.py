"""The companion method's tables: E_A and L_A beside the factorial's SupCon arms, and the
contrasts the issue of the method asks for, paired by training seed.

- loss A − S at each geometry: E_A − E_S (Euclidean), L_A − H_S (hyperbolic: the Lorentz and
  Poincaré models of the same space);
- geometry under A: L_A − E_A.
"""

from __future__ import annotations

import pandas as pd

from hierbench.controls.common import paired_summary, seeds_mean_sd
from hierbench.protocol import LEVELS, MEAN_HIERARCHY

ARMS: tuple[str, ...] = ("E_S", "H_S", "E_A", "L_A")
CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("E_A", "E_S", "loss A − S, Euclidean"),
    ("L_A", "H_S", "loss A − S, hyperbolic"),
    ("L_A", "E_A", "geometry L − E under A"),
)
LEVELS_SHOWN: tuple[str, ...] = (*LEVELS, MEAN_HIERARCHY)


def companion_table(per_seed: pd.DataFrame) -> pd.DataFrame:
    """A row per arm: mAP per level and mean hierarchy mAP, mean ± SD over seeds."""
    rows = []
    for arm in [arm for arm in ARMS if arm in set(per_seed["variant"])]:
        part = per_seed[per_seed["variant"] == arm]
        entry: dict[str, str | int] = {"arm": arm}
        for level in LEVELS_SHOWN:
            entry[level] = seeds_mean_sd(part[part["level"] == level]["value"])
        entry["seeds"] = int(part["seed"].nunique())
        rows.append(entry)
    return pd.DataFrame(rows)


def companion_contrasts(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Paired seed differences of mean hierarchy mAP with positive-seed counts."""
    chosen = per_seed[per_seed["level"] == MEAN_HIERARCHY]
    wide = chosen.pivot(index="seed", columns="variant", values="value").sort_index()
    rows = []
    for first, second, meaning in CONTRASTS:
        if first not in wide or second not in wide:
            continue
        summary = paired_summary(wide[first] - wide[second])
        rows.append(
            {
                "contrast": f"{first} − {second}",
                "meaning": meaning,
                "mean": summary["mean"],
                "sd": summary["sd"],
                "positive_seeds": summary["positive"],
                "seeds": summary["count"],
            }
        )
    return pd.DataFrame(rows)
