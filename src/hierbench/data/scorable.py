"""Which levels a dataset's sealed test draws can score, known from its labels before any run.

A level is scored in a query draw when some query has a strict positive in its gallery there
(``hierbench.relations``). The draws are those the splits stage will make: the same function on
the same labels and config block, so what is said here is what the run will meet. A level
without a valid query in any draw has no mAP, and a level of mean hierarchy mAP (middle, high)
without one leaves every planned endpoint undefined. Only label structure is read: no feature,
no score, nothing of the sealed test's results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from hierbench.data.kinds import DatasetKind
from hierbench.protocol import LEVELS
from hierbench.splits.construction import make_split_table, split_manifest

UPPER_LEVELS = ("middle", "high")  # the levels of mean hierarchy mAP: the planned endpoints
FINAL_TEST = ("final", "test")  # the sealed test side's (split, role)


@dataclass(frozen=True)
class DrawValidity:
    """Valid queries per level in each sealed query draw, and why a level has none."""

    valid: pd.DataFrame  # one row per sealed query draw: split, count, valid_leaf/middle/high
    reasons: dict[str, str]  # level -> why no draw scores it (levels every draw misses only)

    @property
    def unscorable(self) -> list[str]:
        """The levels no sealed draw can score, leaf first."""
        return [level for level in LEVELS if level in self.reasons]

    @property
    def endpoints_undefined(self) -> bool:
        """Whether mean hierarchy mAP, hence every planned endpoint, is undefined."""
        return any(level in self.reasons for level in UPPER_LEVELS)


def draw_validity(
    kind: DatasetKind, labelled: pd.DataFrame, splits: dict[str, Any], names: tuple[str, ...]
) -> DrawValidity:
    """The sealed query draws of ``labelled`` images (with level codes) under a dataset's split
    config block (``hierbench.config.split_config``), counted per level; ``names``: the
    dataset's own names of its levels, leaf first, for the reasons."""
    table, _ = make_split_table(kind, labelled, splits)
    manifest = split_manifest(table, labelled)
    sealed = manifest[manifest["sealed"]]
    queries = sealed[sealed["role"] == "query"].reset_index(drop=True)
    columns = ["split", "count", *(f"valid_{level}" for level in LEVELS)]
    valid = queries[columns].astype({f"valid_{level}": "int64" for level in LEVELS})
    test_ids = table.loc[
        (table["split"] == FINAL_TEST[0]) & (table["role"] == FINAL_TEST[1]), "image_id"
    ]
    test = labelled[labelled["image_id"].isin(test_ids)]
    reasons = {
        level: _reason(level, test, dict(zip(LEVELS, names, strict=True)))
        for level in LEVELS
        if (valid[f"valid_{level}"] == 0).all()
    }
    return DrawValidity(valid, reasons)


def _reason(level: str, test: pd.DataFrame, names: dict[str, str]) -> str:
    """Why no sealed draw scores ``level``, from the test side's composition."""
    below = {"leaf": None, "middle": "leaf", "high": "middle"}[level]
    if below is None:
        per_class = test.groupby("leaf_code").size()
        return (
            f"no {names['leaf']} has two images on the test side ({len(test)} test images of "
            f"{len(per_class)} {names['leaf']}): a query needs another image of its own "
            f"{names['leaf']} in the gallery"
        )
    parts = test.groupby(f"{level}_code")[f"{below}_code"].nunique()
    if (parts >= 2).any():
        return (
            f"the query/gallery draws leave no query a strict positive at the {names[level]} "
            "level in its gallery (too few test images: raise the query or test share)"
        )
    groups = test[f"{below}_code"].nunique()
    return (
        f"the test side holds {groups} {names[below]} group(s) in {len(parts)} {names[level]} "
        f"group(s), never two in one, and a query's strict positive at the {names[level]} level "
        f"is an image of another {names[below]} group of its own {names[level]} group (a split "
        f"with test images of every {names['leaf']}, protocol official, or more {names[below]} "
        "groups on the test side scores it)"
    )


def unscored_lines(validity: DrawValidity, names: tuple[str, ...], tail: str = "") -> list[str]:
    """One line per level no sealed draw scores, in the dataset's level names, with why (and
    ``tail`` after it)."""
    named = dict(zip(LEVELS, names, strict=True))
    return [
        f"the {named[level]} ({level}) level has no valid query in any test draw: "
        f"{validity.reasons[level]}{tail}"
        for level in validity.unscorable
    ]


def validity_lines(validity: DrawValidity, names: tuple[str, ...]) -> list[str]:
    """The valid queries per level over the sealed draws, one line per level (fewest and most
    over the draws), as check-dataset prints them."""
    valid = validity.valid
    draws = len(valid)
    lines = [f"  valid queries per test draw ({draws} draws of {valid['count'].min()} queries):"]
    for level, name in zip(LEVELS, names, strict=True):
        low, high = valid[f"valid_{level}"].min(), valid[f"valid_{level}"].max()
        span = f"{low}" if low == high else f"{low}-{high}"
        lines.append(f"    {f'{name} ({level})':<22} {span:>8}")
    return lines
