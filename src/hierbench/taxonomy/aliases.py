"""The alias file: versioned human decisions (CUB class -> checklist name, and why), loaded and
validated against its JSON schema; errors name the file and the entry."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from hierbench.shipped import shipped_file

from .errors import TaxonomyError


@dataclass(frozen=True)
class AliasEntry:
    """One human decision: CUB class -> checklist common or scientific name, and why."""

    class_name: str
    target: str
    reason: str


@dataclass(frozen=True)
class AliasFile:
    """The validated alias file: aliases and manual-verification entries."""

    path: str
    version: str
    checklist: str
    aliases: tuple[AliasEntry, ...]
    manual: tuple[AliasEntry, ...]


def default_schema_path() -> Path:
    """The shipped schemas/aliases.schema.json (package data or the checkout's copy)."""
    return shipped_file("aliases.schema.json")


def load_alias_file(path: str | Path, schema_path: str | Path | None = None) -> AliasFile:
    """Load and schema-validate an alias file; errors name the file and the entry."""
    path = Path(path)
    schema_file = Path(schema_path) if schema_path else default_schema_path()
    if not schema_file.is_file():
        raise TaxonomyError(f"alias schema {schema_file} not found; pass schema_path=")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TaxonomyError(f"{path}: invalid JSON: {exc}") from exc
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(data),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    if errors:
        lines = [f"  - {_json_path(e.absolute_path, data)}: {e.message}" for e in errors]
        raise TaxonomyError(f"{path}: does not match {schema_file.name}:\n" + "\n".join(lines))
    sections = {
        k: tuple(AliasEntry(e["class"], e["target"], e["reason"]) for e in data[k])
        for k in ("aliases", "manual")
    }
    seen = [e.class_name for s in sections.values() for e in s]
    dup = sorted({c for c in seen if seen.count(c) > 1})
    if dup:
        raise TaxonomyError(
            f"{path}: class(es) listed more than once across aliases/manual: "
            f"{dup}; keep one entry per class"
        )
    return AliasFile(
        str(path), data["version"], data["checklist"], sections["aliases"], sections["manual"]
    )


def _json_path(parts: Iterable[str | int], data: dict) -> str:
    """Readable location of a schema error, with the entry's class when there is one."""
    parts = list(parts)
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts) or "<top>"
    if len(parts) >= 2 and isinstance(parts[1], int):
        entry = data[parts[0]][parts[1]]
        if isinstance(entry, dict) and "class" in entry:
            text += f" (class {entry['class']!r})"
    return text.lstrip(".")
