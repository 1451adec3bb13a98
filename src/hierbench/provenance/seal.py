"""Re-seals: what happens when the Final lock would change after the sealed test was read.

The access log (``<run>/logs/<dataset>/lock/test_access.log``) records every read of sealed
data. Once it exists, a new Final lock that differs from the old one in anything it covers (the
config, a split, a checkpoint, an audit, a record) is never written silently. ``seal.on_change``
decides: ``refuse`` stops the lock until ``hierbench unseal [RUN] DATASET --reason ...``;
``archive`` goes on by itself with the reason "config changed" or "locked artifacts changed".
Either way the old lock, its evaluations, the tables and figures computed from them and its
access log move into ``results/<dataset>/reseals/<NNN>/`` beside a ``reseal.json`` that says why
(so a plain ``snakemake`` rebuilds what is gone: Snakemake does not rebuild missing intermediate
files under outputs that still exist); the audit and the report list every re-seal. This is the
protocol's pre-registration, enforced by code."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hierbench.layout import ACCESS_LOG, EVALUATIONS, FIGURES, FINAL_LOCK, RESEALS, TABLES, fill
from hierbench.provenance.artifacts import provenance_path, write_json_plain
from hierbench.provenance.hashing import sha256_file

ON_CHANGE_CHOICES = ("refuse", "archive")
RESEAL_RECORD = "reseal.json"


class SealChangedError(RuntimeError):
    """The lock would change after the sealed test was read, and the policy is ``refuse``."""


@dataclass(frozen=True)
class SealPaths:
    """Where a dataset's lock, evaluations, access log and archived re-seals live."""

    lock: Path
    eval_dir: Path
    access_log: Path
    reseals: Path
    derived: tuple[Path, ...] = ()  # what is computed from the evaluations: tables, figures

    @classmethod
    def of(cls, dataset: str, results: str | Path, logs: str | Path) -> SealPaths:
        """The paths of ``dataset`` under a results folder and a logs folder."""

        def under(folder: str | Path, pattern: str) -> Path:
            return Path(folder) / fill(pattern, dataset=dataset)

        return cls(
            lock=under(results, FINAL_LOCK),
            eval_dir=under(results, EVALUATIONS),
            access_log=under(logs, ACCESS_LOG),
            reseals=Path(results) / dataset / RESEALS,
            derived=(under(results, TABLES), under(results, FIGURES)),
        )

    @classmethod
    def for_lock(cls, lock: str | Path, access_log: str | Path) -> SealPaths:
        """The paths of the dataset whose lock is ``lock`` (as a rule names its files)."""
        root = Path(lock).parents[1]  # <results>/<dataset>, the lock's pattern's own depth
        paths = cls.of(root.name, root.parent, ".")
        return replace(paths, lock=Path(lock), access_log=Path(access_log))


def sealed_test_was_read(paths: SealPaths) -> bool:
    """Whether sealed data has been read under the current lock (its access log has a line)."""
    return paths.access_log.is_file() and paths.access_log.stat().st_size > 0


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested mapping (lists are leaves)."""
    if not isinstance(value, dict):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat |= _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    return flat


def lock_changes(previous: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between two locks in what they cover: config keys, then artifact paths."""
    changes = []
    if previous.get("config_sha256") != current.get("config_sha256"):
        old, new = _flatten(previous.get("config", {})), _flatten(current.get("config", {}))
        keys = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
        changes += [f"config {key}" for key in keys] or ["config"]
    old_hashes = {
        path: digest
        for group in previous.get("artifacts", {}).values()
        for path, digest in group.items()
    }
    new_hashes = {
        path: digest
        for group in current.get("artifacts", {}).values()
        for path, digest in group.items()
    }
    for path in sorted(old_hashes.keys() | new_hashes.keys()):
        if old_hashes.get(path) != new_hashes.get(path):
            changes.append(f"artifact {path}")
    return changes


def reason_for(changes: list[str]) -> str:
    """The automatic reason of an ``archive`` re-seal."""
    keys = [change.removeprefix("config ") for change in changes if change.startswith("config")]
    if keys:
        return "config changed: " + ", ".join(keys)
    return "locked artifacts changed"


def _next_folder(reseals: Path) -> Path:
    """The next numbered re-seal folder (001, 002, ...)."""
    numbers = [int(p.name) for p in reseals.glob("[0-9][0-9][0-9]") if p.is_dir()]
    return reseals / f"{max(numbers, default=0) + 1:03d}"


def _move(source: Path, folder: Path) -> list[str]:
    """Move a file and its provenance record into ``folder``; return what moved."""
    moved = []
    for path in (source, provenance_path(source)):
        if path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), folder / path.name)
            moved.append(path.as_posix())
    return moved


def archive_seal(paths: SealPaths, reason: str, changes: list[str]) -> Path:
    """Move the lock, its evaluations and the access log into the next re-seal folder."""
    if not reason.strip():
        raise ValueError("a re-seal needs a reason (hierbench unseal [RUN] DATASET --reason '...')")
    folder = _next_folder(paths.reseals)
    log = paths.access_log
    reads = log.read_text(encoding="utf-8").splitlines() if sealed_test_was_read(paths) else []
    record = {
        "reason": reason,
        "changes": changes,
        "archived_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "test_reads": len(reads),
        "first_read": reads[0] if reads else None,
        "lock_sha256": _sha256_or_none(paths.lock),
        "moved": [],
    }
    folder.mkdir(parents=True, exist_ok=False)
    record["moved"] += _move(paths.lock, folder / "lock")
    for evaluation in sorted(paths.eval_dir.rglob("*.parquet")):
        relative = evaluation.parent.relative_to(paths.eval_dir)
        record["moved"] += _move(evaluation, folder / "eval" / relative)
    record["moved"] += _move(paths.access_log, folder / "lock")
    for derived in paths.derived:  # stale without the evaluations; snakemake rebuilds them
        if derived.is_dir():
            shutil.move(str(derived), folder / derived.name)
            record["moved"].append(derived.as_posix() + "/")
    write_json_plain(record, folder / RESEAL_RECORD)
    return folder


def _sha256_or_none(path: Path) -> str | None:
    """SHA256 of a file that may be absent."""
    return sha256_file(path) if path.is_file() else None


def list_reseals(results: str | Path, pattern: str = f"*/{RESEALS}") -> list[dict[str, Any]]:
    """Every archived re-seal in the folders ``pattern`` matches under ``results``, in order."""
    found = []
    for record in sorted(Path(results).glob(f"{pattern}/*/{RESEAL_RECORD}")):
        entry = json.loads(record.read_text(encoding="utf-8"))
        found.append({"dataset": record.parts[-4], "folder": record.parent.as_posix(), **entry})
    return found


def reseal_history_markdown(dataset: str, paths: SealPaths) -> str:
    """The re-seal history of a dataset (no times, so a rebuild gives the same bytes)."""
    entries = list_reseals(paths.reseals.parent, RESEALS)
    lines = [f"# {dataset}: re-seals of the Final lock", ""]
    if not entries:
        return "\n".join([*lines, "None: the sealed test was read under one lock only.", ""])
    for entry in entries:
        lines.append(
            f"- `{entry['folder']}`: {entry['reason']}; "
            f"{entry['test_reads']} sealed read(s) archived"
        )
        lines += [f"  - {change}" for change in entry["changes"]]
    return "\n".join([*lines, ""])


def reseal_lines(reseals: list[dict[str, Any]]) -> list[str]:
    """One line per archived re-seal, for the audit's report."""
    return [
        f"RESEAL {entry['folder']}: {entry['reason']} ({entry['test_reads']} sealed read(s))"
        for entry in reseals
    ]
