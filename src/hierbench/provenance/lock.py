"""The Final lock: nothing reads the sealed test data until everything tunable is frozen.

The lock is written only after every final cell and the fairness audit succeeded. It records
the SHA256 of the resolved config and of every artifact the evaluation depends on (taxonomy,
both feature artifacts, both split manifests and the sealed split table, every checkpoint and
every audit), the config itself (so that a re-seal can name the keys that changed) and when
training finished. Evaluation verifies a checkpoint and the sealed
artifacts against the lock before it reads any test data, and refuses on any mismatch.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hierbench.provenance.hashing import canonical_json, sha256_bytes, sha256_path

LOCK_VERSION = 2


class LockError(RuntimeError):
    """The lock is missing, malformed, or disagrees with an artifact; evaluation must not run."""


def config_digest(config: dict[str, Any]) -> str:
    """SHA256 of a resolved config's canonical JSON."""
    return sha256_bytes(canonical_json(config).encode("utf-8"))


def training_finished_at(checkpoints: Iterable[str | Path]) -> str:
    """When training finished: the newest checkpoint's modification time, ISO 8601 UTC."""
    newest = max(Path(p).stat().st_mtime for p in checkpoints)
    return dt.datetime.fromtimestamp(newest, tz=dt.UTC).isoformat(timespec="seconds")


def build_lock(
    dataset: str,
    config: dict[str, Any],
    artifacts: dict[str, list[str | Path]],
) -> dict[str, Any]:
    """The lock document: the config hash and, per artifact group, each path with its SHA256."""
    groups = {
        group: {Path(p).as_posix(): sha256_path(p) for p in sorted(map(str, paths))}
        for group, paths in sorted(artifacts.items())
    }
    if not groups.get("checkpoints"):
        raise LockError(f"{dataset}: a lock needs at least one checkpoint")
    return {
        "lock_version": LOCK_VERSION,
        "dataset": dataset,
        "config_sha256": config_digest(config),
        "config": config,
        "artifacts": groups,
        "training_finished_at": training_finished_at(groups["checkpoints"]),
    }


def read_lock(path: str | Path) -> dict[str, Any]:
    """Load a lock; a missing or malformed one is a :class:`LockError` saying what to run."""
    path = Path(path)
    if not path.is_file():
        raise LockError(
            f"no Final lock at {path}: the sealed test data may not be read before every final "
            "cell and the fairness audit have finished (run the final_lock rule)"
        )
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise LockError(f"{path} is not a valid lock: {error}") from None
    if lock.get("lock_version") != LOCK_VERSION or "artifacts" not in lock:
        raise LockError(f"{path} is not a version-{LOCK_VERSION} Final lock")
    return lock


def verify_against_lock(lock_path: str | Path, paths: Iterable[str | Path]) -> dict[str, Any]:
    """Check that each path is recorded in the lock with its current SHA256; else refuse."""
    lock = read_lock(lock_path)
    recorded = {p: h for group in lock["artifacts"].values() for p, h in group.items()}
    for path in paths:
        key = Path(path).as_posix()
        if key not in recorded:
            raise LockError(
                f"{key} is not recorded in the Final lock {lock_path}; refusing to evaluate"
            )
        actual = sha256_path(path)
        if actual != recorded[key]:
            raise LockError(
                f"{key} changed after the Final lock {lock_path} (locked {recorded[key][:12]}, "
                f"now {actual[:12]}); refusing to evaluate"
            )
    return lock
