"""Sets of artifact paths described compactly: a short list, or glob patterns per folder.

A pattern's ``*`` stands for part of one path component (never a ``/``); where the differing
components share a start or an end up to a separator (``-``, ``_``, ``.``), the pattern keeps
it (``ER-*``, ``*_summary.parquet``).
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict

SEPARATORS = "-_."  # where a pattern's shared start or end of a component may stop


def matches(path: str, pattern: str) -> bool:
    """Whether ``path`` matches ``pattern`` component by component (``*`` stays in one)."""
    parts, globs = path.split("/"), pattern.split("/")
    return len(parts) == len(globs) and all(
        fnmatch.fnmatchcase(part, glob) for part, glob in zip(parts, globs, strict=True)
    )


def _common_start(names: list[str]) -> str:
    """The characters all ``names`` start with."""
    length = 0
    while all(len(name) > length and name[length] == names[0][length] for name in names):
        length += 1
    return names[0][:length]


def _component_pattern(names: list[str]) -> str:
    """One path component matching all ``names``: their shared part, or a ``*`` in between."""
    if len(set(names)) == 1:
        return names[0]
    prefix = _common_start(names)
    prefix = prefix[: max(prefix.rfind(sep) for sep in SEPARATORS) + 1]
    suffix = _common_start([name[::-1] for name in names])[::-1]
    cut = [suffix.find(sep) for sep in SEPARATORS if sep in suffix]
    suffix = suffix[min(cut) :] if cut else ""
    if len(prefix) + len(suffix) > min(len(name) for name in names):
        return "*"
    return f"{prefix}*{suffix}"


def path_pattern(paths: list[str], universe: list[str]) -> tuple[str, int]:
    """A compact description of ``paths`` and how many ``universe`` paths it matches: up to
    three paths listed, else one pattern per top two folders and depth (``cub/cells/*/*``)."""
    if len(paths) <= 3:
        return ", ".join(f"`{path}`" for path in sorted(paths)), len(paths)
    groups: dict[tuple[str, ...], list[list[str]]] = defaultdict(list)
    for path in paths:
        parts = path.split("/")
        groups[(*parts[:2], str(len(parts)))].append(parts)
    patterns = [
        "/".join(_component_pattern(list(column)) for column in zip(*group, strict=True))
        for _, group in sorted(groups.items())
    ]
    matched = [path for path in universe if any(matches(path, pat) for pat in patterns)]
    return ", ".join(f"`{pattern}`" for pattern in patterns), len(matched)
