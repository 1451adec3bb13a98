"""What a tracker export holds, whatever the tracker: a list of runs, each a name (a path below
the export's folder), its scalars by tag and step, and, for a trial of a comparison, its
hyperparameters.

- ``cells/<cell>``: a trained cell's train log, one scalar ``train/<column>`` per epoch for
  each number the trainer logs (the loss, each level's loss, the gradient norm, a validation
  score where one was measured); not the epoch's wall seconds, a time rather than a result.
- ``searches/<search>/<arm>``: a duration search's validation score per epoch
  (``validation/score``), the semantic control's and each outer split's.
- ``results/<table>/<row>``: the sealed results, one run per arm and seed of each per-seed
  table (``sealed/<level>/<metric>`` at step 0), a trial with the row's arm and seed as its
  hyperparameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

CELLS, SEARCHES, RESULTS = "cells", "searches", "results"
# A train log's columns that are not exported: the step itself, the update counter, and the
# epoch's wall seconds (different on every run: a time, not a result).
NOT_EXPORTED = frozenset({"epoch", "updates", "seconds"})
# A per-seed table's columns that are not a row's identity, and those that do not name its run
# (one export folder per dataset).
VALUE_COLUMNS = frozenset({"level", "metric", "value"})
UNNAMED = frozenset({"dataset", "seed"})
SEEDLESS = -1  # the seed of a seedless arm (the frozen features, PCA) in a per-seed table
NAME_PART = re.compile(r"^[A-Za-z0-9_.@=+-]+$")

HParamValue = str | int | float | bool


@dataclass(frozen=True)
class Scalar:
    """One number of a run: its tag, its step (an epoch, or 0) and its value."""

    tag: str
    step: int
    value: float


@dataclass(frozen=True)
class TrackerRun:
    """One run of the export: its name, its scalars and, for a trial, its hyperparameters."""

    name: str
    scalars: tuple[Scalar, ...]
    hparams: Mapping[str, HParamValue] = field(default_factory=dict)


def _part(value: Any, where: str) -> str:
    """One part of a run's name, checked to be a plain folder name."""
    text = str(value)
    if not NAME_PART.match(text):
        raise ValueError(f"{where}: {text!r} cannot name a tracker run (a folder name)")
    return text


def cell_run(cell: str, log: pd.DataFrame) -> TrackerRun:
    """The run of one trained cell (``cell``: its folder below ``cells/``) from its train log."""
    if "epoch" not in log.columns:
        raise ValueError(f"train log of cell {cell} has no 'epoch' column")
    columns = [c for c in log.columns if c not in NOT_EXPORTED and _numeric(log[c])]
    rows = log.sort_values("epoch", kind="mergesort")
    scalars = tuple(  # epoch by epoch, as a training loop writes them: no step goes back
        Scalar(f"train/{column}", int(row["epoch"]), float(row[column]))
        for _, row in rows.iterrows()
        for column in columns
    )
    parts = [_part(part, f"cell {cell}") for part in cell.split("/")]
    return TrackerRun("/".join([CELLS, *parts]), scalars)


def _numeric(column: pd.Series) -> bool:
    """Whether a column holds numbers (booleans aside)."""
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def search_runs(search: str, arms: Mapping[str, Iterable[float | None]]) -> list[TrackerRun]:
    """The runs of one duration search: each arm's validation score per epoch (from 1; a
    score that was not finite, None in the record, is left out)."""
    return [
        TrackerRun(
            f"{SEARCHES}/{_part(search, 'search')}/{_part(arm, f'search {search}')}",
            tuple(
                Scalar("validation/score", epoch, float(score))
                for epoch, score in enumerate(scores, start=1)
                if score is not None
            ),
        )
        for arm, scores in sorted(arms.items())
    ]


def duration_search_runs(records: Iterable[Mapping[str, Any]]) -> list[TrackerRun]:
    """The runs of the duration searches' records: a semantic arm's ``duration.json`` (``arm``,
    ``scores``) and an outer split's ``durations.json`` (``outer``, ``arms``)."""
    semantic: dict[str, list[float | None]] = {}
    runs = []
    for record in records:
        if "outer" in record:
            arms = {arm: entry["scores"] for arm, entry in record["arms"].items()}
            runs += search_runs(record["outer"], arms)
        else:
            semantic[record["arm"]] = record["scores"]
    return (search_runs("semantic", semantic) if semantic else []) + runs


def row_name(identity: Mapping[str, Any]) -> str:
    """A per-seed table row's run name: its arm's values joined by ``_`` (each once), then
    ``-<seed>`` unless the arm is seedless (``E_R-42``, ``c1_r0.4_H_R-2024``, ``frozen``)."""
    seed = identity.get("seed", SEEDLESS)
    values = [_part(v, "results row") for k, v in identity.items() if k not in UNNAMED]
    arm = "_".join(dict.fromkeys(values))
    return arm if int(seed) == SEEDLESS else f"{arm}-{int(seed)}"


def result_runs(table: str, frame: pd.DataFrame) -> list[TrackerRun]:
    """The runs of one sealed per-seed table: one per arm and seed, a trial whose
    hyperparameters are the table's name and the row's dataset, arm columns and seed."""
    missing = {"level", "metric", "value"} - set(frame.columns)
    if missing:
        raise ValueError(f"results table {table} lacks column(s) {sorted(missing)}")
    keys = [c for c in frame.columns if c not in VALUE_COLUMNS]
    runs = []
    for values, rows in frame.groupby(keys, sort=True, dropna=False):
        identity = dict(zip(keys, values, strict=True))
        scalars = tuple(
            Scalar(f"sealed/{row.level}/{row.metric}", 0, float(row.value))
            for row in rows.sort_values(["level", "metric"]).itertuples()
        )
        hparams = {"table": table} | {k: _hparam(v) for k, v in identity.items()}
        name = f"{RESULTS}/{_part(table, 'table')}/{row_name(identity)}"
        runs.append(TrackerRun(name, scalars, hparams))
    return runs


def _hparam(value: Any) -> HParamValue:
    """A table cell as a hyperparameter value (numpy scalars as Python's)."""
    return value.item() if hasattr(value, "item") else value
