"""SHA256 of bytes, files, folders and canonical JSON: the identities the whole pipeline uses."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20
# Marker files Snakemake drops into directory() outputs after a job: not part of the content.
TREE_HASH_IGNORED = frozenset({".snakemake_timestamp"})


def canonical_json(value: Any) -> str:
    """Serialise ``value`` as canonical JSON (sorted keys, no spaces) so equal data hash equally."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_bytes(data: bytes) -> str:
    """Hex SHA256 of a byte string."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA256 of a file's bytes, read in chunks so large feature files stay out of memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_tree(path: str | os.PathLike[str]) -> str:
    """Hex SHA256 of a folder: every file's relative POSIX path and content hash, sorted.

    Snakemake's ``.snakemake_timestamp`` marker is skipped: it is not part of the content.
    """
    root = Path(path)
    files = (p for p in root.rglob("*") if p.is_file() and p.name not in TREE_HASH_IGNORED)
    lines = [
        f"{file.relative_to(root).as_posix()}\0{sha256_file(file)}\n" for file in sorted(files)
    ]
    return sha256_bytes("".join(lines).encode())


def sha256_path(path: str | os.PathLike[str]) -> str:
    """Hex SHA256 of a file, or the tree hash of a folder; a missing path is an error naming it."""
    target = Path(path)
    if target.is_dir():
        return sha256_tree(target)
    if not target.is_file():
        raise FileNotFoundError(f"cannot hash {target}: no such file or folder")
    return sha256_file(target)


def source_fingerprint(paths: list[str | os.PathLike[str]]) -> str:
    """A cheap content identity of source files (files no rule produces: shipped class lists,
    the alias file, a checklist CSV).

    A Snakemake parameter, so that a changed source reruns its rules while a file that is only
    touched does not. A missing path contributes the word "absent". A folder is refused: a
    dataset folder enters the workflow through ``hierbench.data.fingerprint``.
    """
    parts = []
    for path in sorted(Path(p) for p in paths):
        if path.is_dir():
            raise ValueError(f"{path} is a folder; source fingerprints take files only")
        digest = sha256_file(path) if path.is_file() else "absent"
        parts.append(f"{path.as_posix()}\0{digest}")
    return sha256_bytes("\n".join(parts).encode())
