"""The artifact audit: every artifact checked against its provenance record, and the manifest.

For each record under a results folder: the artifact exists and has the recorded SHA256, and
every recorded input still has the recorded SHA256. Files without a record are reported too
(files inside a recorded folder are covered by the folder's tree hash). The manifest is one
row per artifact: path, SHA256, size, rule, wildcards, parameter hash, code hash, input hashes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench.layout import RESEALS
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.hashing import (
    TREE_HASH_IGNORED,
    canonical_json,
    sha256_bytes,
    sha256_path,
)
from hierbench.runs import is_log

MANIFEST_NAME = "MANIFEST.parquet"


@dataclass
class Finding:
    """The verdict on one artifact: passed, or the problems found."""

    path: str
    problems: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Whether the artifact and all its recorded inputs match."""
        return not self.problems


def _archived(path: Path, results: Path) -> bool:
    """Whether a path lies in an archived re-seal (listed by the audit, not verified)."""
    return RESEALS in path.relative_to(results).parts[:-1]


def _records(results: Path) -> list[Path]:
    """Every provenance record under ``results`` outside archived re-seals, sorted."""
    return sorted(p for p in results.rglob(f"*{PROVENANCE_SUFFIX}") if not _archived(p, results))


def _artifact_of(record_path: Path) -> Path:
    """The artifact a record describes (the record's name without the suffix)."""
    return record_path.with_name(record_path.name.removesuffix(PROVENANCE_SUFFIX))


def unrecorded(results: Path) -> list[Path]:
    """Files under ``results`` with no record, outside every recorded folder and the run's
    logs."""
    recorded = {_artifact_of(p) for p in _records(results)}
    folders = [p for p in recorded if p.is_dir()]
    loose = []
    for path in sorted(results.rglob("*")):
        if not path.is_file() or path.name.endswith(PROVENANCE_SUFFIX):
            continue
        if path in recorded or path.name in TREE_HASH_IGNORED or path.name.startswith("."):
            continue
        if any(folder in path.parents for folder in folders) or _archived(path, results):
            continue
        if is_log(path, results):
            continue
        loose.append(path)
    return loose


def verify(results: str | Path, base: str | Path = ".") -> list[Finding]:
    """Check every artifact under ``results`` against its record; paths resolve from ``base``."""
    results, base = Path(results), Path(base)
    cache: dict[str, str | None] = {}

    def current(path: str) -> str | None:
        if path not in cache:
            target = base / path
            cache[path] = sha256_path(target) if target.exists() else None
        return cache[path]

    findings = []
    for record_path in _records(results):
        artifact = _artifact_of(record_path)
        record = json.loads(record_path.read_text(encoding="utf-8"))
        finding = Finding(path=artifact.as_posix(), record=record)
        if not artifact.exists():
            finding.problems.append("artifact missing")
        elif sha256_path(artifact) != record["sha256"]:
            finding.problems.append(f"sha256 mismatch (recorded {record['sha256'][:12]})")
        for path, recorded_hash in sorted(record.get("inputs", {}).items()):
            now = current(path)
            if now is None:
                finding.problems.append(f"input {path} missing")
            elif now != recorded_hash:
                finding.problems.append(f"input {path} changed (recorded {recorded_hash[:12]})")
        findings.append(finding)
    for path in unrecorded(results):
        findings.append(Finding(path=path.as_posix(), problems=["no provenance record"]))
    return findings


def manifest_table(findings: list[Finding]) -> pd.DataFrame:
    """One row per recorded artifact, for ``MANIFEST.parquet``."""
    rows = []
    for finding in findings:
        record = finding.record
        if not record:
            continue
        rows.append(
            {
                "path": record["path"],
                "sha256": record["sha256"],
                "bytes": record["bytes"],
                "rule": record["rule"],
                "wildcards": canonical_json(record.get("wildcards", {})),
                "params_sha256": sha256_bytes(canonical_json(record.get("params", {})).encode()),
                "code": record.get("code", ""),
                "inputs": canonical_json(record.get("inputs", {})),
                "software": canonical_json(record.get("software", {})),
                "verified": finding.passed,
            }
        )
    return pd.DataFrame(rows)


def report_lines(findings: list[Finding]) -> list[str]:
    """Human-readable lines: each failure with its problems, then the closing count."""
    lines = [f"FAIL {f.path}: {'; '.join(f.problems)}" for f in findings if not f.passed]
    failed = sum(not f.passed for f in findings)
    lines.append(f"{len(findings) - failed} artifacts verified, {failed} failed")
    return lines


def report_json(findings: list[Finding], reseals: list[dict[str, Any]] | None = None) -> str:
    """Machine-readable findings: every artifact, its verdict, problems and software."""
    items = [
        {
            "path": f.path,
            "passed": f.passed,
            "problems": f.problems,
            "rule": f.record.get("rule"),
            "software": f.record.get("software"),
        }
        for f in findings
    ]
    failed = sum(not f.passed for f in findings)
    summary = {"verified": len(findings) - failed, "failed": failed}
    document = {"artifacts": items, "summary": summary, "reseals": reseals or []}
    return json.dumps(document, indent=2, sort_keys=True)
