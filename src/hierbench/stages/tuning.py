"""Tuning-selection stage: pick each geometry's temperature from validation scores."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from hierbench.artifacts import write_parquet
from hierbench.provenance import JobContext
from hierbench.tuning import select_temperatures

log = logging.getLogger(__name__)


def write_selection(
    scores: list[str | Path], out_table: str | Path, job: JobContext
) -> pd.DataFrame:
    """Read every tuning score file and write the candidates with the winners flagged."""
    records = [json.loads(Path(p).read_text(encoding="utf-8")) for p in scores]
    table = select_temperatures(records)
    write_parquet(table, out_table, job, sort_by=["geometry", "tau"])
    log.info("temperature selection:\n%s", table.to_string(index=False))
    return table
