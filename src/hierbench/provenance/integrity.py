"""Verified reads: a job reads a pipeline artifact only while it matches its own provenance record.

Snakemake reruns the consumers of a file edited by hand as if it were a newer input; without
this check an edited split, feature file or checkpoint would flow on into the lock and the
tables. Every job therefore compares each input that carries a record (``<path>.prov.json``,
written by :func:`hierbench.provenance.artifacts.publish`) with the SHA256 in that record
before it reads
anything. The job hashes its inputs for its own record anyway (``provenance.input_hash``,
cached), so the check costs one comparison. Source inputs (shipped files, dataset folders,
weights) have no record; their content fingerprints are rule parameters instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from hierbench.provenance.artifacts import provenance_path
from hierbench.provenance.records import input_hash


class TamperedArtifactError(RuntimeError):
    """An input artifact no longer matches its provenance record; the job must not read it."""


def _mismatch(path: Path) -> str | None:
    """What is wrong with an input that carries a record, or None (no record, or it matches)."""
    record_path = provenance_path(path)
    if not record_path.is_file():
        return None
    record = json.loads(record_path.read_text(encoding="utf-8"))
    if not path.exists():
        return f"{path.as_posix()} is missing but its record {record_path.as_posix()} remains"
    recorded, now = record["sha256"], input_hash(path)
    if now == recorded:
        return None
    return (
        f"{path.as_posix()} does not match its provenance record: recorded sha256 {recorded}, "
        f"now {now}. It was changed after rule '{record['rule']}' wrote it. Restore it, or "
        f"rebuild it with `snakemake --forcerun {record['rule']}`"
    )


def verify_recorded_inputs(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Raise :class:`TamperedArtifactError` naming every input that differs from its record."""
    problems = [problem for path in paths if (problem := _mismatch(Path(path)))]
    if problems:
        raise TamperedArtifactError(
            "refusing to read input(s) that no longer match their provenance records:\n- "
            + "\n- ".join(problems)
        )
