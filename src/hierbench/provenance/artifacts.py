"""Artifact layer: atomic writes, deterministic parquet, SHA256 and provenance sidecars.

Every stage writes its outputs through :func:`publish` (or one of the typed writers built on
it). The content goes to a temporary file in the target's folder; the file is flushed, its hash
is taken, its provenance record is written, and only then is it renamed onto the target. A crash
at any point leaves either the old target or no target, never a half-written one, and a target
that exists always has a matching record beside it (``<target>.prov.json``).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hierbench import jobcost
from hierbench.provenance.hashing import TREE_HASH_IGNORED, canonical_json, sha256_file, sha256_tree
from hierbench.provenance.records import JobContext, build_record

PROVENANCE_SUFFIX = ".prov.json"
TMP_SUFFIX = ".tmp"
FILE_MODE = 0o644  # mkstemp creates 0600 files; artifacts are meant to be read by others

# Fixed writer settings: equal tables give equal bytes for a given pyarrow version.
PARQUET_WRITE_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "version": "2.6",
    "data_page_size": 1 << 20,
}
METADATA_KEY = b"hierbench"


def provenance_path(target: str | os.PathLike[str]) -> Path:
    """Where the provenance record of ``target`` lives: a JSON sidecar beside it."""
    target = Path(target)
    return target.with_name(target.name + PROVENANCE_SUFFIX)


def remove_stale_temporaries(target: str | os.PathLike[str]) -> list[Path]:
    """Remove temporaries of ``target`` left by a killed writer (one job writes a target)."""
    target = Path(target)
    stale = sorted(target.parent.glob(f".{glob.escape(target.name)}.*{TMP_SUFFIX}"))
    for path in stale:
        if path.is_dir():  # a folder artifact's (publish_folder)
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return stale


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    On any exception the temporary file is removed and ``target`` is left untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        _fsync(tmp)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fsync(path: Path) -> None:
    """Flush a written file to disk so a rename never exposes unwritten data."""
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def publish(
    target: str | os.PathLike[str],
    write: Callable[[Path], None],
    job: JobContext,
    *,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write an artifact with ``write(tmp_path)``, record its provenance, then rename it into place.

    Any previous target is removed and the record is written before the rename, so an artifact
    never exists without a record that matches it. ``extra`` holds facts about the artifact
    worth keeping in the record (row counts, columns).
    """
    target = Path(target)
    with jobcost.charged(jobcost.PUBLISHING), atomic_path(target) as tmp:
        write(tmp)
        record = build_record(target, sha256_file(tmp), tmp.stat().st_size, job, extra=extra)
        target.unlink(missing_ok=True)
        provenance_path(target).unlink(missing_ok=True)  # a failed write leaves no stale record
        write_json_plain(record, provenance_path(target))
    return target


def record_folder(
    folder: str | os.PathLike[str], job: JobContext, *, facts: dict[str, Any] | None = None
) -> Path:
    """Write the provenance record of a folder artifact (its tree hash) beside the folder.

    For folders that their writer already published atomically (the demo datasets); the
    record's ``bytes`` is the total size of the files in the folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot record folder {folder}: it does not exist")
    with jobcost.charged(jobcost.PUBLISHING):
        record = build_record(folder, sha256_tree(folder), _tree_size(folder), job, extra=facts)
        write_json_plain(record, provenance_path(folder))
    return folder


def _tree_size(folder: Path) -> int:
    """The total size of the files in a folder (what its tree hash covers)."""
    return sum(
        p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and p.name not in TREE_HASH_IGNORED
    )


def publish_folder(
    target: str | os.PathLike[str],
    write: Callable[[Path], None],
    job: JobContext,
    *,
    facts: dict[str, Any] | None = None,
) -> Path:
    """Write a folder artifact with ``write(tmp_folder)``, record its provenance (its tree
    hash, as :func:`record_folder`), then rename it into place.

    As :func:`publish` does for a file: the folder is built beside ``target`` under a
    temporary name and its record written before the rename (a previous folder and record
    removed first), so a folder that exists always has a record that matches it.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent))
    try:
        with jobcost.charged(jobcost.PUBLISHING):
            write(tmp)
            for path in tmp.rglob("*"):
                os.chmod(path, 0o755 if path.is_dir() else FILE_MODE)
                if path.is_file():
                    _fsync(path)
            os.chmod(tmp, 0o755)  # mkdtemp makes 0700 folders; artifacts are read by others
            record = build_record(target, sha256_tree(tmp), _tree_size(tmp), job, extra=facts)
            if target.is_dir():
                shutil.rmtree(target)
            provenance_path(target).unlink(missing_ok=True)
            write_json_plain(record, provenance_path(target))
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def write_json_plain(value: Any, target: str | os.PathLike[str]) -> Path:
    """Atomically write indented, key-sorted JSON with no provenance (used for the records)."""
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(target)


def write_json(
    value: Any, target: str | os.PathLike[str], job: JobContext, *, facts: dict | None = None
) -> Path:
    """Write a JSON artifact (sorted keys, indented, trailing newline) with provenance."""
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return write_text(text, target, job, facts=facts)


def write_text(
    text: str, target: str | os.PathLike[str], job: JobContext, *, facts: dict | None = None
) -> Path:
    """Write a UTF-8 text artifact (reports, tables) with provenance."""
    return publish(target, lambda tmp: tmp.write_text(text, encoding="utf-8"), job, extra=facts)


def copy_file(
    source: str | os.PathLike[str], target: str | os.PathLike[str], job: JobContext
) -> Path:
    """Copy ``source`` byte for byte into an artifact with provenance."""
    return publish(target, lambda tmp: shutil.copyfile(source, tmp), job)


def dataframe_to_table(frame: pd.DataFrame, metadata: dict[str, Any] | None = None) -> pa.Table:
    """Convert a DataFrame to an Arrow table without pandas' own metadata, plus ours as JSON."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema_metadata = {METADATA_KEY: canonical_json(metadata or {}).encode()}
    return table.replace_schema_metadata(schema_metadata)


def write_parquet(
    frame: pd.DataFrame,
    target: str | os.PathLike[str],
    job: JobContext,
    *,
    sort_by: Sequence[str],
    metadata: dict[str, Any] | None = None,
    facts: dict[str, Any] | None = None,
) -> Path:
    """Write a DataFrame as deterministic parquet with provenance.

    Rows are sorted by ``sort_by`` (pass ``()`` only when the given order is itself canonical),
    the index is dropped, no timestamps are written, and writer settings are fixed, so equal
    content gives equal bytes. ``metadata`` is stored as canonical JSON in the schema;
    ``facts`` go into the provenance record beside the row count and columns.
    """
    missing = [column for column in sort_by if column not in frame.columns]
    if missing:
        raise KeyError(f"cannot sort {Path(target).name} by missing column(s) {missing}")
    ordered = frame.sort_values(list(sort_by), kind="mergesort") if sort_by else frame
    table = dataframe_to_table(ordered.reset_index(drop=True), metadata)
    extra = {**(facts or {}), "rows": table.num_rows, "columns": table.column_names}
    return publish(
        target, lambda tmp: pq.write_table(table, tmp, **PARQUET_WRITE_OPTIONS), job, extra=extra
    )


def read_parquet_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the metadata dictionary that :func:`write_parquet` stored in a parquet file."""
    schema = pq.read_schema(path)
    raw = (schema.metadata or {}).get(METADATA_KEY)
    return json.loads(raw) if raw else {}


def read_provenance(target: str | os.PathLike[str]) -> dict[str, Any]:
    """Load the provenance record of an artifact; a missing record is an error naming it."""
    record_path = provenance_path(target)
    if not record_path.is_file():
        raise FileNotFoundError(f"{target} has no provenance record (expected {record_path})")
    return json.loads(record_path.read_text(encoding="utf-8"))
