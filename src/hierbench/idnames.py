"""`<integer id> <name>` text files: the one reader for class lists and the NABirds tree.

CUB's and NABirds' ``classes.txt`` and NABirds' ``hierarchy.txt`` (``<child id> <parent id>``)
share one form: an integer id, whitespace, then the rest of the line. Staging, the dataset
readers and the taxonomy all parse them with :func:`read_id_name_file` (or its lazy form
:func:`iter_id_names`). What differs between callers is declared in the call, not
re-implemented: whether blank lines are allowed, what the rest of a line must look like, whether
ids must be unique, and the wording of the messages. Every error is an
:class:`IdNameFormatError` (or the subclass the caller names, so that its own ``except`` clauses
keep working) whose message starts with ``<file>:<line>:`` (or ``<file>:`` for the whole file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

PathLike = str | os.PathLike[str]

# Default wording; callers pass their own (str.format fields: line / id, first).
MALFORMED = "malformed line, expected '<integer id> <name>': {line!r}"
DUPLICATE = "duplicate id {id} (first on line {first})"
EMPTY = "file lists no ids"


class IdNameFormatError(ValueError):
    """An `<id> <name>` file is unreadable or malformed; the message names the file and line."""


class IdNameLine(NamedTuple):
    """One parsed line: its 1-based number, the id, and the rest of the line, stripped."""

    number: int
    id: int
    name: str


def numbered_lines(
    path: PathLike, *, error: type[ValueError] = IdNameFormatError
) -> list[tuple[int, str]]:
    """Every line of a UTF-8 text file with its 1-based number (a BOM and CRLF are tolerated)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc})") from exc
    return list(enumerate(text.splitlines(), start=1))


def read_id_name_file(path: PathLike, **rules: Any) -> list[IdNameLine]:
    """Every `<integer id> <name>` line of a file, in order (``rules``: see iter_id_names)."""
    return list(iter_id_names(path, **rules))


def iter_id_names(
    path: PathLike,
    *,
    name_pattern: str = r".+",
    skip_blank: bool = True,
    malformed: str = MALFORMED,
    duplicate: str | None = DUPLICATE,
    empty: str | None = EMPTY,
    error: type[IdNameFormatError] = IdNameFormatError,
) -> Iterator[IdNameLine]:
    """Parse `<integer id> <name>` lines one by one; raise ``error`` naming file and line.

    A line is its decimal id, whitespace, and a name that fully matches ``name_pattern``
    (``\\S+``: one token; ``\\d+``: an id, as in ``hierarchy.txt``); surrounding whitespace is
    ignored. Blank lines are skipped, or malformed when ``skip_blank`` is false. Messages:
    ``malformed`` (field ``line``: the line as written), ``duplicate`` (fields ``id`` and
    ``first``, the line that gave the id first; None allows repeated ids) and ``empty`` (no
    id lines at all; None allows it), each prefixed with ``<path>:<line>: `` or ``<path>: ``.
    Lazy, so a caller's own per-line checks run in line order with these.
    """
    first: dict[int, int] = {}
    for number, line in numbered_lines(path, error=error):
        if skip_blank and not line.strip():
            continue
        parts = line.strip().split(maxsplit=1)
        if (
            len(parts) != 2
            or not parts[0].isdecimal()
            or re.fullmatch(name_pattern, parts[1].strip()) is None
        ):
            raise error(f"{path}:{number}: " + malformed.format(line=line))
        key = int(parts[0])
        if duplicate is not None and key in first:
            raise error(f"{path}:{number}: " + duplicate.format(id=key, first=first[key]))
        first.setdefault(key, number)
        yield IdNameLine(number, key, parts[1].strip())
    if not first and empty is not None:
        raise error(f"{path}: {empty}")
