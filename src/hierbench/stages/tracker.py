"""Tracker-export stage (issue #63): a dataset's training curves, duration searches and sealed
results written as one folder of the configured tracker's own files (``tracker``), recorded
as a folder artifact."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from hierbench.cells.cell_folders import cell_folder
from hierbench.provenance.artifacts import publish_folder
from hierbench.provenance.records import JobContext
from hierbench.trackers import tracker_module
from hierbench.trackers.contents import (
    TrackerRun,
    cell_run,
    duration_search_runs,
    result_runs,
)

log = logging.getLogger(__name__)


def table_name(path: str | Path) -> str:
    """A results table's name in the export: its file's stem (``per_seed``,
    ``semantic_per_seed``, ``outer_per_split``)."""
    return Path(path).stem


def export_runs(
    logs: list[str | Path], searches: list[str | Path], tables: list[str | Path]
) -> list[TrackerRun]:
    """Every run of a dataset's export: each cell's train log, each duration search's
    validation scores and each per-seed results table's rows."""
    runs = [cell_run(cell_folder(path), pd.read_parquet(path)) for path in logs]
    records = [json.loads(Path(path).read_text(encoding="utf-8")) for path in searches]
    runs += duration_search_runs(records)
    for path in tables:
        runs += result_runs(table_name(path), pd.read_parquet(path))
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise ValueError(f"two runs of the export share a name: {twice[:3]}")
    return runs


def build_tracker_export(
    tracker: str,
    dataset: str,
    logs: list[str | Path],
    searches: list[str | Path],
    tables: list[str | Path],
    out_folder: str | Path,
    job: JobContext,
) -> Path:
    """Write a dataset's runs as ``tracker``'s files into ``out_folder`` (a folder artifact,
    recorded beside it), from its cells' train logs, its duration searches' records and its
    sealed per-seed results tables."""
    writer = tracker_module(tracker)
    runs = export_runs(logs, searches, tables)
    facts = {"tracker": tracker, "runs": len(runs), "scalars": sum(len(r.scalars) for r in runs)}
    publish_folder(out_folder, lambda folder: writer.write_export(folder, runs), job, facts=facts)
    log.info("%s: %d runs exported to %s (%s)", dataset, len(runs), out_folder, tracker)
    return Path(out_folder)
