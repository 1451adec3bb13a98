"""Tables stage, the companion cells' ranking sensitivity: their per-seed mAP ranked by distance
and by exterior angle, and the ``companion_angle`` table (``hierbench.effects.companion_angle``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.effects import PER_SEED_KEYS
from hierbench.effects.companion_angle import ranking_per_seed, ranking_table
from hierbench.effects.intervals import IntervalSettings, interval_settings
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.effects.table_files import write_table
from hierbench.levelnames import level_labels
from hierbench.protocol import ANGLE_RANKING, DISTANCE_RANKING
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext

log = logging.getLogger(__name__)


def _labelled(paths: list[str | Path], ranking: str) -> pd.DataFrame:
    """The rows of evaluation files (summaries or per-query), each labelled with the ranking
    that produced it."""
    frame = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    return frame.assign(ranking=ranking)


def _query_contrasts(
    per_query: tuple[list[str | Path], list[str | Path]] | None,
    aggregation: str,
    settings: IntervalSettings,
) -> dict[str, QueryContrasts] | None:
    """Per companion arm, its per-query rows under both rankings as paired contrasts (None
    without per-query rows: the difference's interval is then over seeds only)."""
    if per_query is None:
        return None
    distance, angle = per_query
    frame = pd.concat(
        [_labelled(distance, DISTANCE_RANKING), _labelled(angle, ANGLE_RANKING)],
        ignore_index=True,
    )
    arms = frame["geometry"].astype(str) + "_" + frame["loss"].astype(str)
    return {
        str(arm): QueryContrasts(part, aggregation, settings, label="ranking")
        for arm, part in frame.groupby(arms, sort=True)
    }


def build_companion_angle_table(
    dataset: str,
    distance_summaries: list[str | Path],
    angle_summaries: list[str | Path],
    outputs: dict[str, list[str]],
    job: JobContext,
    *,
    aggregation: str,
    levels: tuple[str, str, str] | None = None,
    intervals: Mapping[str, Any] | None = None,
    per_query: tuple[list[str | Path], list[str | Path]] | None = None,
) -> pd.DataFrame:
    """Write the per-seed rows and the ranking table (parquet, Markdown, LaTeX, CSV) of the
    companion cells under the dataset's registered aggregation; the difference's interval at the
    config's ``effects.intervals`` (the test images' share from ``per_query`` when given)."""
    summaries = pd.concat(
        [
            _labelled(distance_summaries, DISTANCE_RANKING),
            _labelled(angle_summaries, ANGLE_RANKING),
        ],
        ignore_index=True,
    )
    per_seed = ranking_per_seed(summaries, aggregation)
    keys = ["ranking", *PER_SEED_KEYS]
    write_parquet(per_seed[[*keys, "value"]], outputs["per_seed"][0], job, sort_by=keys)
    settings = interval_settings(intervals)
    table = ranking_table(per_seed, settings, _query_contrasts(per_query, aggregation, settings))
    stem = Path(outputs["table"][0]).with_suffix("")
    metadata = {"interval_settings": settings.metadata()}
    write_table(table, stem, job, labels=level_labels(levels), metadata=metadata)
    log.info("%s companion ranking table (%s): %d rows", dataset, aggregation, len(table))
    return per_seed
