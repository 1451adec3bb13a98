"""Temperature selection for Taxonomy-SupCon, from validation scores only.

For each geometry independently, the candidate with the highest validation score (the mean of
strict middle and strict high mAP under the dataset's registered aggregation: CUB query-micro,
NABirds group-macro) wins; exact ties go to the smaller temperature.
A temperature pinned in the config (``datasets.<dataset>.tau.<geometry>``) overrides tuning.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.cells.spec import CellSpec, cell_spec
from hierbench.protocol import LEVELS, SUPCON

SELECTION_COLUMNS = ("geometry", "tau", "score", "map_leaf", "map_middle", "map_high", "selected")


class TuningError(ValueError):
    """Temperature selection is impossible (no finite score) or the selection file is unusable."""


def hierarchy_scores(summary: pd.DataFrame) -> dict[str, float]:
    """mAP per level of a validation summary frame and ``score``, the mean of the middle and
    high mAP (NaN where a level has no valid query; the score skips a NaN level)."""
    by_level = summary.set_index("level")["map"]
    scores = {f"map_{level}": float(by_level.get(level, math.nan)) for level in LEVELS}
    upper = [scores[key] for key in ("map_middle", "map_high") if math.isfinite(scores[key])]
    scores["score"] = sum(upper) / len(upper) if upper else math.nan
    return scores


def select_temperatures(scores: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Every candidate with its score and a ``selected`` flag: one winner per geometry."""
    frame = pd.DataFrame(list(scores))
    if frame.empty:
        raise TuningError("no tuning scores to select from")
    # Missing values arrive as JSON null: make every score column float (NaN).
    frame = frame.astype({c: float for c in SELECTION_COLUMNS[2:6] if c in frame})
    frame = frame.sort_values(["geometry", "tau"], kind="mergesort").reset_index(drop=True)
    frame["selected"] = False
    for geometry, group in frame.groupby("geometry", sort=True):
        finite = group[group["score"].map(math.isfinite)]
        if finite.empty:
            raise TuningError(f"geometry {geometry}: no candidate has a finite validation score")
        best = finite["score"].max()
        winner = finite[finite["score"] == best]["tau"].min()
        frame.loc[(frame["geometry"] == geometry) & (frame["tau"] == winner), "selected"] = True
    return frame[list(SELECTION_COLUMNS)]


def selected_tau(
    dataset: str, geometry: str, config: dict[str, Any], selection: str | Path | None
) -> float:
    """The temperature a final S cell uses: pinned in the config, else the tuning winner."""
    pinned = config["datasets"][dataset]["tau"].get(geometry)
    if pinned is not None:
        return float(pinned)
    if selection is None:
        raise TuningError(
            f"{dataset} {geometry}: datasets.{dataset}.tau.{geometry} is not pinned and no "
            "tuning selection was given"
        )
    frame = pd.read_parquet(selection)
    chosen = frame[(frame["geometry"] == geometry) & frame["selected"]]
    if len(chosen) != 1:
        raise TuningError(
            f"{selection}: expected one selected tau for {geometry}, found {len(chosen)}"
        )
    return float(chosen["tau"].iloc[0])


def final_spec(
    dataset: str,
    geometry: str,
    loss: str,
    seed: int,
    config: dict[str, Any],
    selection: str | Path | None,
    **options: Any,
) -> CellSpec:
    """A factorial-recipe cell's spec, its τ (an S cell's) from the config or ``selection``;
    ``options`` as :func:`hierbench.cells.spec.cell_spec` takes them."""
    tau = selected_tau(dataset, geometry, config, selection) if loss == SUPCON else None
    return cell_spec(dataset, geometry, loss, seed, config, tau=tau, **options)
