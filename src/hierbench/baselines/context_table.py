"""The baselines table: the paper's context rows (frozen features, PCA, HIER-style) beside the
factorial's four arms, mAP per level and mean hierarchy mAP, mean ± SD over training seeds.

Every arm is read under the dataset's registered aggregation from its evaluation summaries on
the sealed draws; the per-seed rows carry a ``variant`` column naming the arm.
"""

from __future__ import annotations

import pandas as pd

from hierbench.effects.variants import per_seed_of_arms, seeds_mean_sd
from hierbench.protocol import (
    ARM_ORDER,
    BASELINE_ARMS,
    FROZEN,
    HIER,
    LEVELS,
    MEAN_HIERARCHY,
    PCA,
)

LEVELS_SHOWN: tuple[str, ...] = (*LEVELS, MEAN_HIERARCHY)
ARM_TITLES = {FROZEN: "Frozen features", PCA: "PCA-{dimensions}", HIER: "HIER-style"}


class BaselinesError(ValueError):
    """The baselines' inputs are unusable; the message names the arm."""


def baselines_per_seed(summaries: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """Per-seed mAP rows of every arm (its Q/G draws averaged within each training seed)."""
    missing = set(BASELINE_ARMS) - set(summaries["arm"].astype(str))
    if missing:
        raise BaselinesError(f"the baselines table has no evaluation of {sorted(missing)}")
    return per_seed_of_arms(summaries, aggregation)


def arm_order(arms: list[str]) -> list[str]:
    """The context baselines first, then the factorial's arms, each in protocol order."""
    factorial = [arm for arm in ARM_ORDER if arm not in BASELINE_ARMS]
    return [arm for arm in (*BASELINE_ARMS, *factorial) if arm in arms]


def baselines_table(per_seed: pd.DataFrame, dimensions: int) -> pd.DataFrame:
    """A row per arm: its kind, then mAP per level and mean hierarchy mAP (mean ± SD)."""
    rows = []
    for arm in arm_order(sorted(set(per_seed["variant"]))):
        part = per_seed[per_seed["variant"] == arm]
        title = ARM_TITLES.get(arm, arm).format(dimensions=dimensions)
        entry: dict[str, str | int] = {
            "arm": title,
            "kind": "context" if arm in BASELINE_ARMS else "factorial",
        }
        for level in LEVELS_SHOWN:
            entry[level] = seeds_mean_sd(part[part["level"] == level]["value"])
        entry["seeds"] = int(part["seed"].nunique())
        rows.append(entry)
    return pd.DataFrame(rows)
