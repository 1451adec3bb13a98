"""Taxonomy stage: the CUB checklist match, the NABirds tree, a table dataset's taxonomy.csv,
and the shuffled control."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hierbench.data.kinds import BUILTIN_KINDS, TABLE_KIND, DatasetKind
from hierbench.protocol import LEVEL_NAMES
from hierbench.provenance.artifacts import write_json, write_parquet, write_text
from hierbench.provenance.records import JobContext
from hierbench.taxonomy import (
    DEFAULT_FUZZY_MARGIN,
    DEFAULT_FUZZY_THRESHOLD,
    check_taxonomy_consistency,
    load_alias_file,
    load_checklist,
    match_cub_classes,
    match_report_markdown,
    nabirds_taxonomy,
    read_cub_classes,
    shuffle_taxonomy,
)

log = logging.getLogger(__name__)


def _metadata(dataset: str, levels: tuple[str, str, str], **extra: object) -> dict[str, object]:
    """Parquet metadata of a taxonomy table: the dataset and what its levels are called."""
    leaf, middle, high = levels
    return {"dataset": dataset, "levels": {"leaf": leaf, "middle": middle, "high": high}, **extra}


def _counts(table: pd.DataFrame) -> dict[str, int]:
    """Number of distinct groups per level."""
    return {level: int(table[level].nunique()) for level in ("leaf", "middle", "high")}


def build_cub_taxonomy(
    classes: str | Path,
    aliases: str | Path,
    out_table: str | Path,
    out_report: str | Path,
    job: JobContext,
    *,
    checklist: str = "default",
    checklist_columns: dict[str, str] | None = None,
    alias_schema: str | Path | None = None,
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
    fuzzy_margin: float = DEFAULT_FUZZY_MARGIN,
    dataset: str = "cub",
) -> pd.DataFrame:
    """Match CUB's class list to a checklist; write taxonomy.parquet and the match report."""
    species = load_checklist(checklist, checklist_columns)
    alias_file = load_alias_file(aliases, alias_schema)
    table = match_cub_classes(
        read_cub_classes(classes),
        species,
        alias_file,
        fuzzy_threshold=fuzzy_threshold,
        fuzzy_margin=fuzzy_margin,
    )
    check_taxonomy_consistency(table)
    source = {"source": species.source, "version": species.version, "sha256": species.sha256}
    facts = {
        "checklist": source,
        "alias_file_version": alias_file.version,
        "levels": _counts(table),
        "methods": {k: int(v) for k, v in sorted(table["method"].value_counts().items())},
    }
    write_parquet(
        table,
        out_table,
        job,
        sort_by=["class_id"],
        metadata=_metadata(dataset, LEVEL_NAMES["cub"], checklist=source),
        facts=facts,
    )
    write_text(
        match_report_markdown(table, checklist=species, alias_path=str(aliases)), out_report, job
    )
    log.info("CUB taxonomy: %s; methods %s", facts["levels"], facts["methods"])
    return table


def build_nabirds_taxonomy(
    classes: str | Path,
    hierarchy: str | Path,
    out_table: str | Path,
    job: JobContext,
    *,
    dataset: str = "nabirds",
) -> pd.DataFrame:
    """Read NABirds' tree into the generic taxonomy table and write it."""
    table = nabirds_taxonomy(classes, hierarchy)
    check_taxonomy_consistency(table)
    write_parquet(
        table,
        out_table,
        job,
        sort_by=["class_id"],
        metadata=_metadata(dataset, LEVEL_NAMES["nabirds"]),
        facts={"levels": _counts(table)},
    )
    log.info("NABirds taxonomy: %s", _counts(table))
    return table


def build_table_taxonomy(
    dataset: str,
    root: str | Path,
    levels: tuple[str, str, str],
    out_table: str | Path,
    job: JobContext,
    *,
    kind: DatasetKind = BUILTIN_KINDS[TABLE_KIND],
) -> pd.DataFrame:
    """Read a collection's taxonomy (a table dataset's taxonomy.csv, checked with its
    images.csv; a kind of one's own, its tables) and write it."""
    if kind.read_dataset is None:
        raise ValueError(f"dataset kind {kind.name!r} keeps no taxonomy in its folder")
    table = kind.read_dataset(Path(root)).taxonomy
    check_taxonomy_consistency(table)
    write_parquet(
        table,
        out_table,
        job,
        sort_by=["class_id"],
        metadata=_metadata(dataset, levels),
        facts={"levels": _counts(table)},
    )
    log.info("%s taxonomy: %s", dataset, _counts(table))
    return table


def build_shuffled_taxonomy(
    taxonomy: str | Path,
    out_table: str | Path,
    out_report: str | Path,
    job: JobContext,
    *,
    dataset: str,
    seed: int,
    levels: tuple[str, str, str],
    fixed_points: str | int = "minimum",
) -> pd.DataFrame:
    """Write the structure-preserving shuffled control taxonomy, keeping ``fixed_points``
    middle groups under their high group, and its fixed-point report (which setting, and the
    count kept)."""
    shuffled, report = shuffle_taxonomy(pd.read_parquet(taxonomy), seed, fixed_points)
    write_parquet(
        shuffled,
        out_table,
        job,
        sort_by=["class_id"],
        metadata=_metadata(dataset, levels, shuffle=report),
        facts={"shuffle": report},
    )
    write_json(report, out_report, job)
    log.info("shuffled %s taxonomy: %s", dataset, report)
    return shuffled
