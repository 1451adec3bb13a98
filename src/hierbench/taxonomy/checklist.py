"""Species checklists: the offline default (PyPI birdnames' eBird/Clements 2024) or a user CSV,
mapped onto canonical columns and validated, plus the fingerprint that reruns matching."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .errors import TaxonomyError

CHECKLIST_COLUMNS = ("common_name", "scientific_name", "family", "order")
DEFAULT_CHECKLIST = "default"

_DEFAULT_CSV = "data/processed/ebird_2024_taxonomy.csv"
_DEFAULT_MAP = {
    "common_name": "ebird_common_name",
    "scientific_name": "scientific_name",
    "family": "ebird_family",
    "order": "ebird_order",
}


@dataclass(frozen=True, eq=False)
class Checklist:
    """A species checklist with canonical columns plus where it came from."""

    table: pd.DataFrame  # columns CHECKLIST_COLUMNS, one row per species
    source: str
    version: str
    sha256: str


def canonical_family(value: str) -> str:
    """Strip a trailing '(gloss)': 'Parulidae (New World Warblers)' is 'Parulidae'."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", value).strip()


def load_default_checklist() -> Checklist:
    """Load birdnames' eBird/Clements 2024 species list, the offline default."""
    resource = importlib.resources.files("birdnames").joinpath(_DEFAULT_CSV)
    data = resource.read_bytes()
    table = _table_from_bytes(data, f"birdnames/{_DEFAULT_CSV}", _DEFAULT_MAP, None, "")
    version = importlib.metadata.version("birdnames") + "/2024"
    return Checklist(table, "birdnames:ebird_2024", version, hashlib.sha256(data).hexdigest())


def load_checklist_csv(
    path: str | Path,
    columns: dict[str, str],
    *,
    category_column: str | None = None,
    category_value: str = "species",
    source: str | None = None,
    version: str | None = None,
) -> Checklist:
    """Load a user checklist CSV, mapping its column names onto the canonical ones.

    ``columns`` maps canonical names (common_name, scientific_name, family, optional order)
    to CSV headers. With ``category_column`` only rows whose value equals ``category_value``
    are kept (eBird: ``CATEGORY`` == ``species``).
    """
    path = Path(path)
    unknown = sorted(set(columns) - set(CHECKLIST_COLUMNS))
    if unknown:
        raise TaxonomyError(
            f"{path}: unknown canonical column(s) {unknown}; use {list(CHECKLIST_COLUMNS)}"
        )
    data = path.read_bytes()
    table = _table_from_bytes(data, str(path), columns, category_column, category_value)
    digest = hashlib.sha256(data).hexdigest()
    return Checklist(
        table, source or f"csv:{path.name}", version or f"sha256:{digest[:12]}", digest
    )


def load_checklist(spec: str, columns: dict[str, str] | None = None) -> Checklist:
    """Load the checklist a config names: "default" (birdnames eBird 2024) or a CSV path.

    ``columns`` holds the CSV's column names for common_name, scientific_name, family and
    order (empty: the checklist has none), plus category (empty: every row is a species) and
    species_value (the category value of species rows).
    """
    if spec == DEFAULT_CHECKLIST:
        return load_default_checklist()
    columns = columns or {}
    mapping = {key: columns[key] for key in CHECKLIST_COLUMNS if columns.get(key)}
    category = columns.get("category") or None
    return load_checklist_csv(
        spec,
        mapping,
        category_column=category,
        category_value=columns.get("species_value", "species"),
    )


def checklist_fingerprint(spec: str) -> str:
    """SHA256 of the checklist's bytes: a DAG parameter, so a changed checklist reruns matching."""
    if spec == DEFAULT_CHECKLIST:
        return hashlib.sha256(
            importlib.resources.files("birdnames").joinpath(_DEFAULT_CSV).read_bytes()
        ).hexdigest()
    path = Path(spec)
    if not path.is_file():
        raise TaxonomyError(
            f"checklist file {spec} does not exist (config key datasets.cub.taxonomy.checklist)"
        )
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _table_from_bytes(
    data: bytes, label: str, columns: dict[str, str], category: str | None, value: str
) -> pd.DataFrame:
    """Parse checklist CSV bytes into the canonical, validated species table."""
    try:
        raw = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaxonomyError(f"{label}: not UTF-8 ({exc}); re-save the checklist as UTF-8") from exc
    needed = {c: columns.get(c) for c in CHECKLIST_COLUMNS}
    for canon in ("common_name", "scientific_name", "family"):
        if needed[canon] is None:
            raise TaxonomyError(f"{label}: no CSV column given for required '{canon}'")
    wanted = [c for c in [*needed.values(), category] if c is not None]
    for col in wanted:
        if col not in raw.columns:
            raise TaxonomyError(
                f"{label}: column '{col}' not found; columns are {list(raw.columns)}"
            )
    if category is not None:
        raw = raw[raw[category].str.strip() == value]
    table = pd.DataFrame({c: raw[h].str.strip() if h else "" for c, h in needed.items()})
    table["family"] = table["family"].map(canonical_family)
    return _validate_table(table.reset_index(drop=True), label)


def _validate_table(table: pd.DataFrame, label: str) -> pd.DataFrame:
    """Reject empty checklists, blank names and duplicated scientific names."""
    if table.empty:
        raise TaxonomyError(f"{label}: no species rows (check the category filter)")
    for col in ("common_name", "scientific_name", "family"):
        blank = table.index[table[col] == ""].tolist()
        if blank:
            raise TaxonomyError(
                f"{label}: {len(blank)} species row(s) with empty '{col}' "
                f"(0-based species rows {blank[:5]})"
            )
    dup = sorted(table.loc[table["scientific_name"].duplicated(), "scientific_name"])
    if dup:
        raise TaxonomyError(f"{label}: duplicated scientific names {dup[:5]}")
    return table
