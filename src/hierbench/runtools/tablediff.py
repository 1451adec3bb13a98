"""Two runs' tables, row by row: values of A and B side by side, and Δ = B − A.

The tables are the parquets under ``<dataset>/tables/`` and ``<dataset>/outer/`` of a run
folder; those whose recorded bytes differ are read and diffed, the others only counted.

Rows are matched on key columns: a leading run of the columns both tables share that are text
(or integer seed and id columns) and that identifies every row of each table once (see
:func:`key_columns`). The tables' formatted value columns (a "mean ± SD" text) come after their
keys, so they can be compared rather than joined on. When no such run of columns exists, rows
are matched by their order.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.layout import OUTER_FOLDER, TABLES
from hierbench.levelnames import LEVEL_COLUMN, LEVELS_METADATA
from hierbench.provenance.artifacts import read_parquet_metadata

ROW_ORDER = "#row"  # the key shown when rows are matched by their order
# The folders below a dataset that hold tables: its own and the outer splits'.
TABLE_FOLDERS = tuple(p.removeprefix("{dataset}/") for p in (TABLES, OUTER_FOLDER))
MARKDOWN_ROWS = 20  # differing rows a table shows in Markdown (the JSON report has them all)


def _is_number(series: pd.Series) -> bool:
    """A numeric column (booleans are not: they are labels, with no Δ)."""
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _key_candidate(name: str, a: pd.Series, b: pd.Series) -> bool:
    """A column that may identify rows: text, booleans, or integers named like a seed or an id."""
    if not (_is_number(a) or _is_number(b)):
        return True
    integer = pd.api.types.is_integer_dtype(a) and pd.api.types.is_integer_dtype(b)
    return integer and (name.endswith("seed") or name == "id" or name.endswith("_id"))


def _matched(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> int:
    """How many rows of A find a row of B with the same ``keys``."""
    return len(set(a[keys].itertuples(index=False)) & set(b[keys].itertuples(index=False)))


def key_columns(a: pd.DataFrame, b: pd.DataFrame) -> list[str] | None:
    """The key columns rows are matched on, or None when rows must be matched by order.

    Of the leading runs of candidate columns that identify rows once in both tables, the
    longest that matches as many rows as the shortest does: every identifying column is shown,
    but a text value that changed (a formatted "mean ± SD") does not break the match.
    """
    shared = [name for name in a.columns if name in b.columns]
    candidates = [name for name in shared if _key_candidate(name, a[name], b[name])]
    unique = [
        candidates[:end]
        for end in range(1, len(candidates) + 1)
        if not (a.duplicated(candidates[:end]).any() or b.duplicated(candidates[:end]).any())
    ]
    if not unique:
        return None
    most = _matched(a, b, unique[0])
    return next(keys for keys in reversed(unique) if _matched(a, b, keys) == most)


def plain(value: Any) -> Any:
    """A cell as a JSON value: numpy scalars as Python numbers, NaN and missing as None."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _rows(frame: pd.DataFrame, keys: list[str] | None) -> dict[tuple, dict[str, Any]]:
    """The table's rows as plain dicts, keyed by their key values (or their position)."""
    records = [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]
    if keys is None:
        return {(position,): row for position, row in enumerate(records)}
    return {tuple(row[k] for k in keys): row for row in records}


def _cell(a: Any, b: Any, numeric: bool) -> dict[str, Any]:
    """One column of a differing row: A, B and (for numbers on both sides) Δ = B − A."""
    cell: dict[str, Any] = {"a": a, "b": b}
    if numeric:
        both = isinstance(a, int | float) and isinstance(b, int | float)
        cell["delta"] = b - a if both else None
    return cell


def diff_table(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """The rows of two tables whose values differ (or that one table lacks), JSON-ready.

    Returns the key columns, how rows were matched, the value columns that differ somewhere
    (and whether each is numeric), the differing rows in A's order then B's, and the columns
    only one table has.
    """
    keys = key_columns(a, b)
    shared = [name for name in a.columns if name in b.columns]
    values = [name for name in shared if name not in (keys or [])]
    numeric = {name: _is_number(a[name]) and _is_number(b[name]) for name in values}
    rows_a, rows_b = _rows(a, keys), _rows(b, keys)
    order = list(rows_a) + [key for key in rows_b if key not in rows_a]
    key_names = keys or [ROW_ORDER]
    differing = []
    for key in order:
        row_a, row_b = rows_a.get(key), rows_b.get(key)
        cells = {}
        for name in values:
            value_a = None if row_a is None else row_a[name]
            value_b = None if row_b is None else row_b[name]
            if row_a is None or row_b is None or value_a != value_b:
                cells[name] = _cell(value_a, value_b, numeric[name])
        if cells:
            side = (
                "both" if row_a is not None and row_b is not None else "a" if row_b is None else "b"
            )
            differing.append(
                {"key": dict(zip(key_names, key, strict=True)), "in": side, "cells": cells}
            )
    changed = [name for name in values if any(name in row["cells"] for row in differing)]
    return {
        "keys": key_names,
        "matched_by": "keys" if keys else "row order",
        "columns": [{"name": name, "numeric": numeric[name]} for name in changed],
        "rows": differing,
        "columns_only_a": [name for name in a.columns if name not in b.columns],
        "columns_only_b": [name for name in b.columns if name not in a.columns],
    }


def _show(value: Any, delta: bool = False) -> str:
    """A cell for Markdown: numbers to six significant digits, Δ signed, missing as blank."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value).replace("|", "\\|")
    if isinstance(value, int):
        return f"{value:+d}" if delta else str(value)
    return f"{value:+.4g}" if delta else f"{value:.6g}"


def render_table_diff(name: str, diff: dict[str, Any], limit: int = MARKDOWN_ROWS) -> list[str]:
    """Markdown lines for one differing table: heading, how rows matched, rows side by side."""
    rows = diff["rows"]
    how = (
        f"rows matched on {', '.join(diff['keys'])}"
        if diff["matched_by"] == "keys"
        else ("rows matched by order (no key columns identify them)")
    )
    sides = {side: sum(row["in"] == side for row in rows) for side in ("a", "b")}
    notes = [f"differing rows: {len(rows)}"] + [
        f"{count} only in {side.upper()}" for side, count in sides.items() if count
    ]
    lines = [f"### `{name}`", "", f"{how}; {', '.join(notes)}."]
    for side in ("a", "b"):
        if diff[f"columns_only_{side}"]:
            lines.append(
                f"Columns only in {side.upper()}: {', '.join(diff[f'columns_only_{side}'])}."
            )
    if not rows and not (diff["columns_only_a"] or diff["columns_only_b"]):
        return [f"`{name}`: the same values (the files differ in encoding or metadata).", ""]
    if not rows:
        return [*lines, ""]
    named = diff.get("levels") or {}  # the dataset's level names, for the reader
    header = list(diff["keys"])
    for column in diff["columns"]:
        shown = named.get(column["name"], column["name"])
        header += [f"{shown} A", f"{shown} B"] + ([f"{shown} Δ"] if column["numeric"] else [])
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows[:limit]:
        cells = [_show(_named_key(key, row["key"][key], named)) for key in diff["keys"]]
        for column in diff["columns"]:
            cell = row["cells"].get(column["name"])
            if cell is None:
                cells += ["="] * (3 if column["numeric"] else 2)
                continue
            cells += [_show(cell["a"]), _show(cell["b"])]
            cells += [_show(cell["delta"], delta=True)] if column["numeric"] else []
        lines.append("| " + " | ".join(cells) + " |")
    if len(rows) > limit:
        lines.append(f"… {len(rows) - limit} more rows (see --json)")
    return [*lines, ""]


def _named_key(column: str, value: Any, named: dict[str, str]) -> Any:
    """A key cell as a person reads it: a level key in the ``level`` column by its name."""
    return named.get(value, value) if column == LEVEL_COLUMN else value


def table_paths(hashes: dict[str, str]) -> set[str]:
    """The table parquets among a run's artifact paths (relative to the run folder)."""
    return {
        path
        for path in hashes
        if path.endswith(".parquet")
        and len(parts := path.split("/")) > 2
        and parts[1] in TABLE_FOLDERS
    }


def _level_names(table: Path) -> dict[str, str]:
    """The level names a table's parquet metadata records (none for an older run's table)."""
    if not table.is_file():
        return {}
    return dict(read_parquet_metadata(table).get(LEVELS_METADATA, {}))


def _read_table(folder: Path, path: str) -> pd.DataFrame:
    """A recorded table of a run; a table whose file is missing is an error naming it."""
    target = folder / path
    if not target.is_file():
        raise FileNotFoundError(f"{target} has a provenance record but no file")
    return pd.read_parquet(target)


def compare_tables(
    folder_a: str | os.PathLike[str],
    folder_b: str | os.PathLike[str],
    hashes_a: dict[str, str],
    hashes_b: dict[str, str],
) -> dict[str, Any]:
    """The tables of two runs (artifact path to recorded SHA256 each): how many are identical,
    each differing one diffed, and those in one run only."""
    tables_a, tables_b = table_paths(hashes_a), table_paths(hashes_b)
    common = sorted(tables_a & tables_b)
    changed = [path for path in common if hashes_a[path] != hashes_b[path]]
    folder_a, folder_b = Path(folder_a), Path(folder_b)
    return {
        "identical": len(common) - len(changed),
        "differing": [
            {
                "table": p,
                **diff_table(_read_table(folder_a, p), _read_table(folder_b, p)),
                "levels": _level_names(folder_b / p) or _level_names(folder_a / p),
            }
            for p in changed
        ],
        "only_a": sorted(tables_a - tables_b),
        "only_b": sorted(tables_b - tables_a),
    }


def table_lines(tables: dict[str, Any]) -> list[str]:
    """The Markdown section of :func:`compare_tables`: counts, one-run tables, each diff."""
    lines = [
        "## Tables",
        "",
        f"identical: {tables['identical']}, differing: {len(tables['differing'])}.",
    ]
    for side in ("a", "b"):
        if tables[f"only_{side}"]:
            names = ", ".join(f"`{name}`" for name in tables[f"only_{side}"])
            lines.append(f"Tables only in {side.upper()}: {names}")
    lines.append("")
    detailed = [table for table in tables["differing"] if is_summary_table(table["table"])]
    for table in detailed:
        lines += render_table_diff(table["table"], table)
    if others := [table for table in tables["differing"] if table not in detailed]:
        lines += ["Other differing tables (every row in `--json`):", ""]
        lines += [f"- `{table['table']}`: {len(table['rows'])} differing rows" for table in others]
    return lines


# Tables shown row by row in Markdown: a dataset's summary tables (arms, effects, baselines),
# not its per-seed tables, the controls' tables or the outer splits' scores.
PER_SEED_MARKERS = ("per_seed", "by_seed", "per_split", "scores")


def is_summary_table(name: str) -> bool:
    """Whether a table (a path relative to the run) is one of a dataset's summary tables."""
    parts = name.split("/")
    return (
        len(parts) == 3
        and parts[1] == TABLE_FOLDERS[0]
        and not any(marker in parts[2] for marker in PER_SEED_MARKERS)
    )
