"""Shipped metadata inputs: `id name` text files (CUB/NABirds classes, the NABirds tree).

They are checked line by line before they are staged, so a truncated or hand-edited file fails
here, naming the file and line, instead of corrupting the taxonomy downstream.
"""

from __future__ import annotations

from pathlib import Path

from hierbench.idnames import IdNameFormatError, read_id_name_file
from hierbench.provenance.artifacts import copy_file
from hierbench.provenance.records import JobContext


class InputFormatError(IdNameFormatError):
    """A metadata file does not have the `<integer id> <text>` form on every line."""


def parse_id_name_lines(path: str | Path) -> list[tuple[int, str]]:
    """Parse `<integer id> <text>` lines; errors name the file and the 1-based line number.

    Stricter than the readers downstream: a blank line, a repeated id or an empty file fails.
    """
    rows = read_id_name_file(
        path,
        skip_blank=False,
        malformed="expected '<integer id> <text>', got {line!r}",
        duplicate="id {id} already given on line {first}",
        empty="file is empty",
        error=InputFormatError,
    )
    return [(row.id, row.name) for row in rows]


def stage_id_name_file(source: str | Path, target: str | Path, job: JobContext) -> Path:
    """Check that ``source`` is a well-formed `id name` file, then copy it to ``target``."""
    parse_id_name_lines(source)
    return copy_file(source, target, job)
