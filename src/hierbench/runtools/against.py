"""One run checked against another (``hierbench audit RUN --against OTHER``): the same bytes
where the promise is bytes, else every table's numbers within the stated tolerance.

The promise is bytes when both runs were made in one portable numeric mode by the same
software (:mod:`hierbench.provenance.numerics`, :mod:`hierbench.provenance.makers`): then every
artifact but the timed ones (the Final lock, the training logs) must have the same SHA256, and
the first that does not is named (the one nearest the sources; what it feeds differs with it).
Otherwise (another mode, architecture or software) the promise is numbers: every numeric cell
of every table within :data:`TOLERANCE` of the other run's, the first cell outside it named by
its table, row and column.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from hierbench.provenance.hashing import sha256_path
from hierbench.provenance.makers import KERNELS, MODE, maker_values
from hierbench.provenance.numerics import PORTABLE
from hierbench.runtools.compare import Run, depths, load_run
from hierbench.runtools.rundiff import is_timed
from hierbench.runtools.tablediff import compare_tables

BYTES = "bytes"
NUMBERS = "numbers"
# The largest difference of a table's number between two runs in different numeric modes or
# software that still counts as the same number (docs/reproducibility.md says where it comes
# from).
TOLERANCE = 0.005


def _single_makers(run: Run) -> dict[str, str | None]:
    """Each maker field's one value in ``run`` (None where its records mix values)."""
    found = maker_values(run.records.items())
    return {field: next(iter(v)) if len(v) == 1 else None for field, v in found.items()}


def promise(a: Run, b: Run) -> tuple[str, str]:
    """Which promise holds between two runs (bytes or numbers), and why, in a clause."""
    made_a, made_b = _single_makers(a), _single_makers(b)
    mode_a, mode_b = made_a.get(MODE), made_b.get(MODE)
    if mode_a is None or mode_b is None:
        return NUMBERS, "a run mixes numeric modes or names none"
    if mode_a != mode_b or not mode_a.startswith(PORTABLE):
        return NUMBERS, f"numeric modes {mode_a} and {mode_b}"
    fields = sorted((made_a.keys() | made_b.keys()) - {MODE, KERNELS})
    apart = [f for f in fields if made_a.get(f) is None or made_a.get(f) != made_b.get(f)]
    if apart:
        return NUMBERS, "the runs' software differs or is mixed (" + ", ".join(apart) + ")"
    return BYTES, f"both in the numeric mode {mode_a} with the same software"


def file_hashes(run: Run) -> dict[str, str | None]:
    """The SHA256 of each recorded artifact of ``run`` as it is on disk now (None when
    missing): a run's files are compared, not what its records say of them."""
    hashes = {}
    for path in run.records:
        target = run.folder / path
        hashes[path] = sha256_path(target) if target.exists() else None
    return hashes


def _first_artifact(
    a: Run, b: Run, hashes_a: dict[str, str | None], hashes_b: dict[str, str | None]
) -> tuple[list[str], list[str], list[str]]:
    """The untimed artifacts whose bytes differ, those only in A and only in B, each ordered
    from the sources on (depth, then path)."""
    depth = depths(b.records) | depths(a.records)

    def order(paths: set[str]) -> list[str]:
        return sorted(paths, key=lambda path: (depth.get(path, 0), path))

    common = {p for p in a.records.keys() & b.records.keys() if not is_timed(p)}
    differing = {p for p in common if hashes_a[p] is None or hashes_a[p] != hashes_b[p]}
    return (
        order(differing),
        order({p for p in a.records.keys() - b.records.keys() if not is_timed(p)}),
        order({p for p in b.records.keys() - a.records.keys() if not is_timed(p)}),
    )


def _outside(cell: dict[str, Any], tolerance: float) -> bool:
    """Whether a numeric cell of two runs differs by more than ``tolerance`` (a value on one
    side only, or an infinity, does unless both sides hold the same)."""
    first, second = cell.get("a"), cell.get("b")
    if first is None or second is None:
        return (first is None) != (second is None)
    if math.isinf(first) or math.isinf(second):
        return first != second
    return abs(second - first) > tolerance


def table_cells_outside(tables: dict[str, Any], tolerance: float) -> list[dict[str, Any]]:
    """Every table cell of :func:`~hierbench.runtools.tablediff.compare_tables` whose numbers
    differ by more than ``tolerance``, and every row one run lacks, in table order."""
    found = []
    for table in tables["differing"]:
        numeric = {column["name"] for column in table["columns"] if column["numeric"]}
        for row in table["rows"]:
            if row["in"] != "both":
                found.append(
                    {
                        "table": table["table"],
                        "row": row["key"],
                        "column": None,
                        "a": None,
                        "b": None,
                        "only_in": row["in"].upper(),
                    }
                )
                continue
            for column, cell in row["cells"].items():
                if column in numeric and _outside(cell, tolerance):
                    found.append(
                        {
                            "table": table["table"],
                            "row": row["key"],
                            "column": column,
                            "a": cell["a"],
                            "b": cell["b"],
                            "only_in": None,
                        }
                    )
    return found


def _present(hashes: dict[str, str | None]) -> dict[str, str]:
    """The hashes of the artifacts on disk."""
    return {path: sha for path, sha in hashes.items() if sha is not None}


def check_against(
    run: str | os.PathLike[str], other: str | os.PathLike[str], tolerance: float = TOLERANCE
) -> dict[str, Any]:
    """Run ``run`` checked against ``other``: the promise, whether it holds, and the first
    artifact, table and cell that breaks it, as JSON-ready data."""
    a, b = load_run(run), load_run(other)
    kind, why = promise(a, b)
    hashes_a, hashes_b = file_hashes(a), file_hashes(b)
    differing, only_a, only_b = _first_artifact(a, b, hashes_a, hashes_b)
    tables = compare_tables(Path(run), Path(other), _present(hashes_a), _present(hashes_b))
    tolerance = 0.0 if kind == BYTES else tolerance  # bytes: the first cell that differs at all
    cells = table_cells_outside(tables, tolerance)
    missing_tables = tables["only_a"] + tables["only_b"]
    broken = (differing or only_a or only_b) if kind == BYTES else (cells or missing_tables)
    return {
        "promise": kind,
        "why": why,
        "holds": not broken,
        "tolerance": tolerance,
        "artifacts_compared": len(a.records.keys() & b.records.keys()),
        "artifacts_differing": differing,
        "only_in_run": only_a,
        "only_in_other": only_b,
        "tables_identical": tables["identical"],
        "tables_differing": [table["table"] for table in tables["differing"]],
        "tables_missing": missing_tables,
        "cells_outside_tolerance": cells,
    }


def _cell_line(cell: dict[str, Any]) -> str:
    """A table cell outside the tolerance, as a sentence naming its table, row and column."""
    row = ", ".join(f"{key} {value}" for key, value in cell["row"].items())
    if cell["only_in"]:
        return f"table {cell['table']}, row ({row}): only in {cell['only_in']}"
    return (
        f"table {cell['table']}, row ({row}), column {cell['column']}: "
        f"{cell['a']} in this run, {cell['b']} in the other"
    )


def against_lines(report: dict[str, Any]) -> list[str]:
    """The check as a person reads it: the promise and why, the first artifact and cell that
    break it, then one closing line that starts with ``same`` or ``DIFFERS``."""
    kind = report["promise"]
    lines = [f"promise: the same {kind} ({report['why']})"]
    if report["artifacts_differing"]:
        lines.append(
            f"first artifact that differs: {report['artifacts_differing'][0]} "
            f"({len(report['artifacts_differing'])} differ in all)"
        )
    for side, key in (("this run", "only_in_run"), ("the other run", "only_in_other")):
        if report[key]:
            lines.append(f"only in {side}: {report[key][0]} ({len(report[key])} in all)")
    cells = report["cells_outside_tolerance"]
    if cells:
        lines.append(
            f"first cell outside ±{report['tolerance']}: {_cell_line(cells[0])} "
            f"({len(cells)} in all)"
        )
    for table in report["tables_missing"]:
        lines.append(f"table only in one run: {table}")
    differing_tables = len(report["tables_differing"])
    summary = (
        f"{report['artifacts_compared']} artifacts compared; tables: "
        f"{report['tables_identical']} identical, {differing_tables} differing"
    )
    if report["holds"]:
        within = "" if kind == BYTES else f", every number within ±{report['tolerance']}"
        lines.append(f"same {kind}: {summary}{within}")
    else:
        lines.append(f"DIFFERS ({kind}): {summary}")
    return lines
