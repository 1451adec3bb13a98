"""Shipped metadata inputs: `id name` text files (CUB/NABirds classes, the NABirds tree).

They are checked line by line before they are staged, so a truncated or hand-edited file fails
here, naming the file and line, instead of corrupting the taxonomy downstream.
"""

from __future__ import annotations

from pathlib import Path

from hierbench.artifacts import copy_file
from hierbench.provenance import JobContext


class InputFormatError(ValueError):
    """A metadata file does not have the `<integer id> <text>` form on every line."""


def parse_id_name_lines(path: str | Path) -> list[tuple[int, str]]:
    """Parse `<integer id> <text>` lines; errors name the file and the 1-based line number."""
    rows: list[tuple[int, str]] = []
    seen: dict[int, int] = {}
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        head, _, rest = line.strip().partition(" ")
        if not head.isdigit() or not rest.strip():
            raise InputFormatError(f"{path}:{number}: expected '<integer id> <text>', got {line!r}")
        key = int(head)
        if key in seen:
            raise InputFormatError(f"{path}:{number}: id {key} already given on line {seen[key]}")
        seen[key] = number
        rows.append((key, rest.strip()))
    if not rows:
        raise InputFormatError(f"{path}: file is empty")
    return rows


def stage_id_name_file(source: str | Path, target: str | Path, job: JobContext) -> Path:
    """Check that ``source`` is a well-formed `id name` file, then copy it to ``target``."""
    parse_id_name_lines(source)
    return copy_file(source, target, job)
