"""The baselines table: the paper's context rows (frozen features, PCA, HIER-style) beside the
factorial's four arms, mAP per level and mean hierarchy mAP, mean ± SD over training seeds;
and each arm's difference from the frozen features (what training adds to the backbone).

Every arm is read under the dataset's registered aggregation from its evaluation summaries on
the sealed draws; the per-seed rows carry a ``variant`` column naming the arm.
"""

from __future__ import annotations

import pandas as pd

from hierbench.effects.intervals import DEFAULT_INTERVALS, IntervalSettings
from hierbench.effects.query_contrasts import SEEDLESS, QueryContrasts
from hierbench.effects.variants import (
    PAIRED_COLUMNS,
    deterministic_contrast,
    paired_contrast,
    per_seed_of_arms,
    seeds_mean_sd,
)
from hierbench.protocol import (
    ARM_ORDER,
    BASELINE_ARMS,
    FACTORIAL_KIND,
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
            "kind": "context" if arm in BASELINE_ARMS else FACTORIAL_KIND,
        }
        for level in LEVELS_SHOWN:
            entry[level] = seeds_mean_sd(part[part["level"] == level]["value"])
        entry["seeds"] = int(part["seed"].nunique())
        rows.append(entry)
    return pd.DataFrame(rows)


DIFFERENCE_COLUMNS = ("arm", "level", *PAIRED_COLUMNS)


def baselines_differences(
    per_seed: pd.DataFrame,
    dimensions: int,
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    query: QueryContrasts | None = None,
) -> pd.DataFrame:
    """Each arm's mAP minus the frozen features' at every level and on mean hierarchy, per
    training seed (the frozen features do not train: one value serves every seed), with the
    t interval (with the test images' shared variance from ``query``'s per-query rows,
    labelled by arm, when given; else over seeds) and the sign-flip test. A deterministic arm
    (PCA) has no seeds: its interval is over the test images alone and it has no sign-flip
    test."""
    frozen = per_seed[per_seed["variant"] == FROZEN].set_index("level")["value"]
    rows = []
    for arm in arm_order(sorted(set(per_seed["variant"]) - {FROZEN})):
        part = per_seed[per_seed["variant"] == arm]
        for level in LEVELS_SHOWN:
            at_level = part[part["level"] == level].set_index("seed")["value"].sort_index()
            differences = at_level - float(frozen[level])
            noise = query.checked(arm, FROZEN, level, differences) if query else None
            if list(differences.index) == [SEEDLESS]:  # PCA: deterministic, no seed to test
                summary = deterministic_contrast(float(differences.iloc[0]), intervals, noise)
            else:
                summary = paired_contrast(differences, intervals, noise)
            rows.append(
                {
                    "arm": ARM_TITLES.get(arm, arm).format(dimensions=dimensions),
                    "level": level,
                    **summary,
                }
            )
    return pd.DataFrame(rows, columns=list(DIFFERENCE_COLUMNS))
