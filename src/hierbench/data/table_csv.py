"""Line-numbered CSV files with a checked header: the reading layer of the table dataset.

Each record keeps the 1-based line it starts on (line 1 is the header), blank records are
skipped, cells are stripped, and every flaw raises :class:`TableDatasetError` naming the file
and line. :mod:`hierbench.data.table_reader` gives the rows their meaning.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hierbench.data.layouts import DatasetFormatError


class TableDatasetError(DatasetFormatError):
    """A table dataset folder is incomplete or its files disagree; names file and line."""


@dataclass(frozen=True)
class Row:
    """One non-blank data row of a CSV file: the line it starts on and its cells by column."""

    line: int
    cells: dict[str, str]


@dataclass(frozen=True)
class Table:
    """A parsed CSV file: its header's line and column names, and its data rows."""

    header_line: int
    columns: tuple[str, ...]
    rows: list[Row]


def numbered_records(path: Path) -> list[tuple[int, list[str]]]:
    """Non-blank CSV records of a UTF-8 file, each with the 1-based line it starts on."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TableDatasetError(f"{path}: not UTF-8 text ({exc})") from exc
    reader = csv.reader(io.StringIO(text, newline=""))
    records: list[tuple[int, list[str]]] = []
    end = 0
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num
            if any(cell.strip() for cell in cells):
                records.append((start, [cell.strip() for cell in cells]))
    except csv.Error as exc:
        raise TableDatasetError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from exc
    return records


def read_csv(path: Path, required: tuple[str, ...], optional: tuple[str, ...]) -> Table:
    """Parse a CSV file, check its header against the expected columns and fill every cell."""
    records = numbered_records(path)
    if not records:
        raise TableDatasetError(f"{path}: file is empty, expected a header row")
    (header_line, columns), *data = records
    _check_header(path, header_line, columns, required, optional)
    rows = [_row(path, line, columns, cells) for line, cells in data]
    return Table(header_line, tuple(columns), rows)


def column_values(path: Path, column: str) -> list[str]:
    """The distinct non-empty values of one column of a CSV file, sorted; none when the file
    cannot be read (its reader names the flaw)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
        values = [row.get(column, "").strip() for row in csv.DictReader(io.StringIO(text))]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    return sorted({value for value in values if value})


def frame_table(
    path: Path, frame: pd.DataFrame, required: tuple[str, ...], optional: tuple[str, ...]
) -> Table:
    """A table handed over in memory (a dataset kind of one's own read it), checked as a CSV
    file would be; ``path`` names its source in errors, row k at line k + 2 as under a header."""
    columns = [str(column).strip() for column in frame.columns]
    _check_header(path, 1, columns, required, optional)
    cells = frame.fillna("").astype(str).map(str.strip).itertuples(index=False, name=None)
    rows = [
        _row(path, line, columns, list(row)) for line, row in enumerate(cells, start=2) if any(row)
    ]
    return Table(1, tuple(columns), rows)


def _check_header(
    path: Path, line: int, columns: list[str], required: tuple[str, ...], optional: tuple[str, ...]
) -> None:
    """Columns must be unique, known, and include every required one."""
    expected = f"expected columns {', '.join(required)}"
    if optional:
        expected += f" and optionally {', '.join(optional)}"
    seen: set[str] = set()
    for column in columns:
        if column in seen:
            raise TableDatasetError(f"{path}:{line}: column {column!r} appears twice; {expected}")
        if column not in required + optional:
            raise TableDatasetError(f"{path}:{line}: unknown column {column!r}; {expected}")
        seen.add(column)
    for column in required:
        if column not in seen:
            raise TableDatasetError(f"{path}:{line}: missing column {column!r}; {expected}")


def _row(path: Path, line: int, columns: list[str], cells: list[str]) -> Row:
    """A data row with one non-empty cell per header column."""
    if len(cells) != len(columns):
        raise TableDatasetError(
            f"{path}:{line}: {len(cells)} cell(s) where the header has {len(columns)} "
            f"({', '.join(columns)})"
        )
    for column, cell in zip(columns, cells, strict=True):
        if not cell:
            raise TableDatasetError(f"{path}:{line}: empty cell in column {column!r}")
    return Row(line, dict(zip(columns, cells, strict=True)))
