"""A finished run names each dataset whose planned endpoints are all NaN, with the level that
left them undefined and the summary that says so; a scored dataset gets no line."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from hierbench.cli.endpoint_check import undefined_endpoint_lines
from hierbench.layout import ARMS_SUMMARY_TABLE
from hierbench.protocol import FACTORIAL_ARMS


def _arms(run: Path, dataset: str, high: float) -> None:
    """An arms summary whose high level (and so mean hierarchy mAP) is ``high`` in every arm."""
    rows = []
    for arm in FACTORIAL_ARMS:
        geometry, loss = arm.split("_")
        for level, value in (("leaf", 0.5), ("middle", 0.4), ("high", high)):
            rows.append((geometry, loss, level, "map", value))
        mean = (0.4 + high) / 2
        rows.append((geometry, loss, "mean_hierarchy", "map", mean))
    frame = pd.DataFrame(rows, columns=["geometry", "loss", "level", "metric", "mean"])
    path = run / ARMS_SUMMARY_TABLE.format(dataset=dataset)
    path.parent.mkdir(parents=True)
    frame.to_parquet(path)


def test_a_dataset_whose_endpoints_are_all_nan_is_named_with_its_level(tmp_path: Path):
    _arms(tmp_path, "beetles", math.nan)
    _arms(tmp_path, "moths", 0.3)
    [line] = undefined_endpoint_lines(tmp_path)
    assert line.startswith("warning: beetles: every planned endpoint is NaN. The high (high)")
    assert line.endswith(f"See {tmp_path / 'beetles/tables/summary.md'}")


def test_a_run_without_tables_says_nothing(tmp_path: Path):
    assert undefined_endpoint_lines(tmp_path) == []
