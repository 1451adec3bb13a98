"""What a finished run says on the terminal about its planned endpoints: a dataset whose five
planned endpoints are all NaN is named, with the level that left them undefined, so a run that
scored nothing never ends as if it had scored something."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from hierbench.effects.verdicts import undefined_levels
from hierbench.layout import ARMS_SUMMARY_TABLE
from hierbench.levelnames import LEVELS_METADATA, level_labels
from hierbench.provenance.artifacts import read_parquet_metadata
from hierbench.runtools.runs_table import headline

SUMMARY_MD = "summary.md"  # beside the arms summary: the tables' reading


def undefined_endpoint_lines(run: Path) -> list[str]:
    """One warning per dataset of ``run`` whose factorial arms all have a NaN mean hierarchy
    mAP (every planned endpoint NaN), naming why and the summary that says so."""
    lines = []
    for dataset, arms in headline(run).items():
        if not arms or not all(math.isnan(value) for value in arms.values()):
            continue
        table = run / ARMS_SUMMARY_TABLE.format(dataset=dataset)
        names = read_parquet_metadata(table).get(LEVELS_METADATA) or level_labels(None)
        why = undefined_levels(pd.read_parquet(table), names)
        lines.append(
            f"warning: {dataset}: every planned endpoint is NaN. "
            f"{' '.join(why) or 'Mean hierarchy mAP is NaN in every factorial arm.'} "
            f"See {table.with_name(SUMMARY_MD)}"
        )
    return lines
