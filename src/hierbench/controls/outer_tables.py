"""The outer hierarchy-disjoint splits' tables (the paper's section 5.5). The endpoint is mean
hierarchy mAP, group-macro on every dataset: mean ± SD over the splits per arm (frozen features,
matched E, matched H, SupCon), and the paper's paired per-split gains, SupCon − matched H and
matched H − matched E, at the middle and high levels and on mean hierarchy, with a t interval
over splits (each split's seeds are averaged first; each split has its own test side, so no
test image is shared between them and the splits' spread holds all the noise) and the
sign-flip test over splits.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from hierbench.effects import per_seed_from_evaluations
from hierbench.effects.intervals import DEFAULT_INTERVALS, IntervalSettings, uncertainty
from hierbench.effects.render import mean_sd
from hierbench.effects.schema import arm_labels
from hierbench.effects.variants import paired_summary
from hierbench.protocol import ARM_ORDER, MEAN_HIERARCHY

# The arms' roles, after the paper's names (its 5.5: "Frozen DINOv2", "matched Euclidean",
# "matched Hyperbolic", "Taxonomy-SupCon").
ROLES = {"frozen": "Frozen features", "E_R": "matched E", "H_R": "matched H"}
SUPCON_ROLE = "SupCon"
# The paper's paired gains per split, as (minuend, subtrahend) roles, and the levels of each.
GAINS: tuple[tuple[str, str], ...] = ((SUPCON_ROLE, "matched H"), ("matched H", "matched E"))
GAIN_LEVELS = ("middle", "high", MEAN_HIERARCHY)


def role_of(arm: str) -> str:
    """An arm's role: the frozen features, a matched regression control, or the SupCon arm."""
    return ROLES.get(arm, SUPCON_ROLE if arm.endswith("_S") else arm)


def outer_per_split(scores: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """Per-split, per-seed mAP rows of every arm under ``aggregation`` (its Q/G draws
    averaged), with a ``split`` column."""
    parts = [
        per_seed_from_evaluations(part.drop(columns="split"), aggregation).assign(split=split)
        for split, part in scores.groupby("split", sort=True)
    ]
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame["metric"] == "map"].reset_index(drop=True)
    return frame.assign(arm=arm_labels(frame))


def _by_split(per_split: pd.DataFrame, level: str = MEAN_HIERARCHY) -> pd.DataFrame:
    """mAP at ``level``, arms as columns and splits as rows (seeds averaged within a split; a
    split without a valid query at the level stays NaN rather than vanishing)."""
    chosen = per_split[per_split["level"] == level]
    return chosen.groupby(["split", "arm"], sort=True)["value"].mean().unstack("arm")


def outer_table(per_split: pd.DataFrame) -> pd.DataFrame:
    """A row per arm: its role, mean hierarchy mAP on each split, then mean ± SD over them."""
    wide = _by_split(per_split)
    rows = []
    for arm in [arm for arm in ARM_ORDER if arm in wide.columns]:
        values = wide[arm]
        entry: dict[str, Any] = {"arm": arm, "role": role_of(arm)}
        entry |= {split: float(values[split]) for split in wide.index}
        entry["mean_sd"] = mean_sd(float(values.mean()), float(values.std(ddof=1)), 4)
        rows.append(entry)
    return pd.DataFrame(rows)


def outer_gains(
    per_split: pd.DataFrame, intervals: IntervalSettings = DEFAULT_INTERVALS
) -> pd.DataFrame:
    """The paper's paired per-split gains (SupCon − matched H, matched H − matched E) at each
    of ``GAIN_LEVELS``, with the positive-split count, the t interval over splits and the
    sign-flip test over splits (``p_splits``, floor ``p_min``)."""
    rows = []
    for first, second in GAINS:
        for level in GAIN_LEVELS:
            wide = _by_split(per_split, level).rename(columns=role_of)
            if first not in wide or second not in wide:
                continue
            differences = wide[first] - wide[second]
            summary = paired_summary(differences)
            spread = uncertainty(differences.to_numpy(dtype=float), intervals)
            rows.append(
                {
                    "gain": f"{first} − {second}",
                    "level": level,
                    **{split: float(differences[split]) for split in wide.index},
                    "mean": summary["mean"],
                    "sd": summary["sd"],
                    "positive_splits": summary["positive"],
                    "splits": summary["count"],
                    "se": spread["se"],
                    "df": spread["df"],
                    "ci_low": spread["ci_low"],
                    "ci_high": spread["ci_high"],
                    "p_splits": spread["p_seeds"],
                    "p_min": spread["p_min"],
                }
            )
    return pd.DataFrame(rows)


def figure_rows(per_split: pd.DataFrame) -> pd.DataFrame:
    """The endpoint as a control figure reads it: a point per split (``seed`` = split number)."""
    chosen = per_split[per_split["level"] == MEAN_HIERARCHY]
    means = chosen.groupby(["arm", "split"], sort=True)["value"].mean().reset_index()
    return means.assign(
        variant=means["arm"],
        seed=means["split"].str.rsplit("-", n=1).str[-1].astype(int),
        metric="map",
        level=MEAN_HIERARCHY,
    )
