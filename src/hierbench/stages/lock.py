"""Final-lock stage: the hashes of everything the sealed evaluation may depend on, and the
guard that refuses or archives a changed lock after the sealed test was read.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hierbench.provenance.artifacts import write_json, write_text
from hierbench.provenance.lock import build_lock
from hierbench.provenance.records import JobContext
from hierbench.provenance.seal import (
    ON_CHANGE_CHOICES,
    SealChangedError,
    SealPaths,
    archive_seal,
    lock_changes,
    reason_for,
    reseal_history_markdown,
    sealed_test_was_read,
)
from hierbench.runs import DEFAULT_RUN

log = logging.getLogger(__name__)


def _previous_lock(path: Path) -> dict[str, Any] | None:
    """The lock a rebuild would replace (an unreadable one counts as covering nothing)."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return {}


def _unseal_command(dataset: str, seal: SealPaths) -> str:
    """The `hierbench unseal` command for this dataset's run (its folder named unless default)."""
    run = seal.lock.parents[2].as_posix()
    where = "" if run == DEFAULT_RUN else f" {run}"
    return f'hierbench unseal{where} {dataset} --reason "..."'


def _guard_the_seal(
    dataset: str,
    lock: dict[str, Any],
    previous: dict[str, Any] | None,
    seal: SealPaths,
    on_change: str,
) -> None:
    """After a sealed read, a lock that changes what it covers is refused or archived."""
    if on_change not in ON_CHANGE_CHOICES:
        raise ValueError(
            f"seal.on_change must be one of {list(ON_CHANGE_CHOICES)}, got {on_change!r}"
        )
    if not sealed_test_was_read(seal):
        return
    changes = ["the previous lock is missing"] if previous is None else lock_changes(previous, lock)
    if not changes:
        return
    if on_change == "refuse":
        raise SealChangedError(
            f"{dataset}: the sealed test was read under the Final lock {seal.lock.as_posix()} "
            f"({seal.access_log.as_posix()}), and the new lock differs in: {'; '.join(changes)}. "
            f"seal.on_change is 'refuse': run `{_unseal_command(dataset, seal)}` to "
            "archive the old lock, its evaluations and the access log, then run snakemake again"
        )
    folder = archive_seal(seal, reason_for(changes), changes)
    log.warning("%s re-sealed (%s); the old seal is archived in %s", dataset, changes, folder)


def write_final_lock(
    dataset: str,
    config: dict[str, Any],
    artifacts: dict[str, list[str | Path]],
    outputs: dict[str, str | Path],
    job: JobContext,
    *,
    seal: SealPaths,
    on_change: str,
) -> dict[str, Any]:
    """Write the Final lock of a dataset (its inputs exist only once training and audit passed)
    and its re-seal history; a lock that would change after a sealed read is guarded first."""
    lock = build_lock(dataset, config, artifacts)
    _guard_the_seal(dataset, lock, _previous_lock(Path(outputs["lock"])), seal, on_change)
    write_json(lock, outputs["lock"], job)
    write_text(reseal_history_markdown(dataset, seal), outputs["history"], job)
    log.info("%s Final lock: %d checkpoints", dataset, len(lock["artifacts"]["checkpoints"]))
    return lock
