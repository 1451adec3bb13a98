"""The outer hierarchy-disjoint splits: does the factorial's reading hold on held-out groups?

Each outer split holds out whole middle groups (CUB genera, NABirds parents) of the development
data. E_R, H_R, E_S and H_S are trained on its train side with the factorial's recipe and
temperatures, and scored with the frozen features on its test side's query/gallery draws. The
splits lie inside the development data, so no seal is involved. The endpoint is mean hierarchy
mAP under the dataset's registered aggregation: mean ± SD over the splits per arm, and paired
per-split gains.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from hierbench.effects import per_seed_from_evaluations
from hierbench.effects.render import mean_sd
from hierbench.effects.schema import arm_labels
from hierbench.effects.variants import paired_summary
from hierbench.protocol import ARM_ORDER, GEOMETRIES, LOSSES, MEAN_HIERARCHY, cell_name

# Paired gains per split, as (minuend, subtrahend) arms: each loss effect at a matched geometry,
# then each geometry effect at a matched loss.
GAINS: tuple[tuple[str, str], ...] = (
    ("E_S", "E_R"),
    ("H_S", "H_R"),
    ("H_R", "E_R"),
    ("H_S", "E_S"),
)


class OuterSplitError(ValueError):
    """The outer splits' configuration or inputs are unusable; the message names the key."""


def outer_enabled(config: dict[str, Any], dataset: str) -> bool:
    """Whether a dataset trains and scores its outer splits."""
    block = config["datasets"][dataset].get("controls", {}).get("outer", {})
    return bool(block.get("enabled", False))


def outer_splits(config: dict[str, Any], dataset: str) -> list[str]:
    """The outer split names of a dataset (``outer-1`` …), none when the control is off."""
    if not outer_enabled(config, dataset):
        return []
    count = config["datasets"][dataset]["splits"]["outer"]["count"]
    if count < 1:
        raise OuterSplitError(
            f"datasets.{dataset}.controls.outer is enabled but "
            f"datasets.{dataset}.splits.outer.count is {count}: there is no outer split to train"
        )
    return [f"outer-{k}" for k in range(1, count + 1)]


def outer_seeds(config: dict[str, Any], dataset: str) -> list[int]:
    """The training seeds of every outer split's cells."""
    return list(config["datasets"][dataset]["controls"]["outer"]["seeds"])


def outer_cells(config: dict[str, Any], dataset: str) -> list[str]:
    """The cell names each outer split trains (every factorial cell at the outer seeds)."""
    seeds = outer_seeds(config, dataset)
    return [cell_name(g, loss, seed) for g in GEOMETRIES for loss in LOSSES for seed in seeds]


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


def outer_gains(per_split: pd.DataFrame) -> pd.DataFrame:
    """Paired per-split gains of mean hierarchy mAP with their positive-split counts."""
    wide = _endpoint_by_split(per_split)
    rows = []
    for first, second in GAINS:
        if first not in wide or second not in wide:
            continue
        differences = wide[first] - wide[second]
        summary = paired_summary(differences)
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
