"""A dataset folder's content identity: the files that make the dataset (its layout's tables, its
taxonomy's tables and the images they list), each with its size and SHA256.

The workflow takes a dataset through these identities, never through the folder itself, so
only a changed file reruns anything: touching the folder or a file, or leaving a stray file in
it, schedules nothing. The layout's tables, the taxonomy's and the images are three identities, so
a changed image reruns the feature extraction and what follows, not the image table or the
splits, and a taxonomy edit reruns the taxonomy and what follows, not the features. Hashing every
image of NABirds takes a minute, so hashes are kept in a cache keyed by path, size and
modification time: an unchanged collection is not read again.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from hierbench.data.kinds import DatasetKind, builtin_kind
from hierbench.provenance.hashing import canonical_json, sha256_bytes, sha256_file

PARTS = ("layout", "taxonomy", "images")  # the three identities of a dataset
COLUMNS = ("path", "bytes", "sha256")
ABSENT = "absent"  # the hash of a listed file that does not exist (its reader names it)


class FingerprintError(ValueError):
    """A dataset's content identity cannot be taken; the message names the file or part."""


def part_files(root: str | os.PathLike[str], kind: str | DatasetKind, part: str) -> list[str]:
    """The files of one part of a dataset: its layout's tables, its taxonomy's, or the images
    its layout lists (a layout that cannot be read lists none: its reader reports it)."""
    entry = kind if isinstance(kind, DatasetKind) else builtin_kind(kind, FingerprintError)
    if part == "layout":
        return sorted(entry.layout_files)
    if part == "taxonomy":
        return sorted(entry.taxonomy_files)
    if part == "images":
        return entry.listed_images(Path(root))
    raise FingerprintError(f"no dataset part {part!r}; parts: {list(PARTS)}")


class HashCache:
    """SHA256 of files by absolute path, valid while their size and modification time hold;
    kept as a JSON file (written atomically, so that a reader never sees half of it)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self.entries: dict[str, list] = {}
        self.changed = False
        if self.path and self.path.is_file():
            try:
                self.entries = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.entries = {}  # a damaged cache is rebuilt, never trusted

    def sha256(self, file: Path) -> tuple[int, str]:
        """The file's size and SHA256 (size -1 and ``ABSENT`` when it does not exist)."""
        try:
            status = file.stat()
        except FileNotFoundError:
            return -1, ABSENT
        key = str(file.resolve())
        cached = self.entries.get(key)
        if cached and cached[0] == status.st_size and cached[1] == status.st_mtime_ns:
            return status.st_size, cached[2]
        digest = sha256_file(file)
        self.entries[key] = [status.st_size, status.st_mtime_ns, digest]
        self.changed = True
        return status.st_size, digest

    def save(self) -> None:
        """Write the cache when it learnt something (atomically)."""
        if not (self.path and self.changed):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(self.entries, stream, sort_keys=True)
        os.replace(temporary, self.path)
        self.changed = False


def file_table(
    root: str | os.PathLike[str], files: Iterable[str], cache: HashCache
) -> pd.DataFrame:
    """One row per file (relative path, bytes, SHA256), sorted by path."""
    root = Path(root)
    rows = [(relative, *cache.sha256(root / relative)) for relative in sorted(set(files))]
    cache.save()
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({"bytes": "int64"})


def fingerprint(
    root: str | os.PathLike[str],
    kind: str | DatasetKind,
    part: str,
    cache_file: str | os.PathLike[str] | None,
) -> pd.DataFrame:
    """The file table of one part of a dataset folder."""
    return file_table(root, part_files(root, kind, part), HashCache(cache_file))


def identity(table: pd.DataFrame) -> str:
    """One SHA256 for a file table: what a rule's params hold, so that it reruns when a file
    of the part changes and only then."""
    rows = table[list(COLUMNS)].astype({"bytes": int}).to_dict(orient="records")
    return sha256_bytes(canonical_json(rows).encode())


def weights_identity(
    path: str | os.PathLike[str], cache_file: str | os.PathLike[str] | None
) -> str:
    """The SHA256 of a weights file of any size, read once while its size and time hold."""
    cache = HashCache(cache_file)
    size, digest = cache.sha256(Path(path))
    cache.save()
    if size < 0:
        raise FingerprintError(f"weights file {path} does not exist")
    return digest
