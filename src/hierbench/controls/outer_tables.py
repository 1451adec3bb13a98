"""The outer hierarchy-disjoint splits' tables. The endpoint is mean hierarchy mAP under the
dataset's registered aggregation: mean ± SD over the splits per arm, and paired per-split gains
with a t interval over splits (each split's seeds are averaged first; each split has its own
test side, so no test image is shared between them and the splits' spread holds all the noise)
and the sign-flip test over splits.
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

# Paired gains per split, as (minuend, subtrahend) arms: each loss effect at a matched geometry,
# then each geometry effect at a matched loss.
GAINS: tuple[tuple[str, str], ...] = (
    ("E_S", "E_R"),
    ("H_S", "H_R"),
    ("H_R", "E_R"),
    ("H_S", "E_S"),
)


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


def _endpoint_by_split(per_split: pd.DataFrame) -> pd.DataFrame:
    """Mean hierarchy mAP, arms as columns and splits as rows (seeds averaged within a split; a
    split without a valid upper-level query stays NaN rather than vanishing)."""
    chosen = per_split[per_split["level"] == MEAN_HIERARCHY]
    return chosen.groupby(["split", "arm"], sort=True)["value"].mean().unstack("arm")


def outer_table(per_split: pd.DataFrame) -> pd.DataFrame:
    """A row per arm: mean hierarchy mAP on each split, then mean ± SD over the splits."""
    wide = _endpoint_by_split(per_split)
    rows = []
    for arm in [arm for arm in ARM_ORDER if arm in wide.columns]:
        values = wide[arm]
        entry: dict[str, Any] = {"arm": arm}
        entry |= {split: float(values[split]) for split in wide.index}
        entry["mean_sd"] = mean_sd(float(values.mean()), float(values.std(ddof=1)), 4)
        rows.append(entry)
    return pd.DataFrame(rows)


def outer_gains(
    per_split: pd.DataFrame, intervals: IntervalSettings = DEFAULT_INTERVALS
) -> pd.DataFrame:
    """Paired per-split gains of mean hierarchy mAP with their positive-split counts, the
    interval over splits and the sign-flip test over splits (``p_splits``, floor ``p_min``)."""
    wide = _endpoint_by_split(per_split)
    rows = []
    for first, second in GAINS:
        if first not in wide or second not in wide:
            continue
        differences = wide[first] - wide[second]
        summary = paired_summary(differences)
        spread = uncertainty(differences.to_numpy(dtype=float), intervals)
        kind = "loss at matched geometry" if first[0] == second[0] else "geometry at matched loss"
        rows.append(
            {
                "gain": f"{first} − {second}",
                "kind": kind,
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
