"""What a run's ``logs/`` folder holds beside the job logs, and how its lines read: the note
naming the repository that ran the run (so the CLI finds a run folder on a scratch disk from
any folder), the check that no logs were left where an earlier version kept them, and the
format of a job log's lines.

Apart from ``runs`` on purpose: the stages' code hashes cover ``runs`` (a rule reruns when it
changes), while nothing here changes what a job computes.
"""

from __future__ import annotations

import re
from pathlib import Path

from hierbench.runs import DEFAULT_RUN, LOGS, RunFolderError, logs_folder

LEGACY_LOGS_SUFFIX = "-logs"  # where a run's logs were before they moved inside it
DEFAULT_RUN_LEGACY_LOGS = "logs"  # the default run's logs before they moved inside it
REPOSITORY_NOTE = "repository.txt"  # in a run's logs: the repository that ran it
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # a job log's lines
# The part of a LOG_FORMAT line before its message, for an INFO line.
INFO_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO [\w.]+: ")


def check_no_legacy_logs(run: str, repository: str | Path) -> None:
    """Stop when the run's logs still lie where an earlier version kept them (``logs/`` for
    the default run, ``RUN-logs`` beside any other): its access log of sealed reads must move
    with the run, never be left behind while a new, empty one starts."""
    legacy = DEFAULT_RUN_LEGACY_LOGS if run == DEFAULT_RUN else run + LEGACY_LOGS_SUFFIX
    if (Path(repository) / legacy).is_dir():
        new = logs_folder(run)
        raise RunFolderError(
            f"the logs of run {run} now live inside it, in {new}/, but {legacy}/ holds them "
            f"from an earlier version (with the log of sealed test reads): move them there "
            f"(mv {legacy} {new}, if {new}/ does not exist yet) and run again; the run's jobs "
            "rerun once, since the paths of their logs changed"
        )


def note_repository(run: str, repository: str | Path) -> None:
    """Write which repository runs the run into its logs (how the CLI finds a run folder
    that lies outside the repository)."""
    note = Path(repository) / logs_folder(run) / REPOSITORY_NOTE
    note.parent.mkdir(parents=True, exist_ok=True)
    text = f"{Path(repository).resolve()}\n"
    if not note.is_file() or note.read_text(encoding="utf-8") != text:
        temporary = note.with_name(f".{note.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(note)


def noted_repository(run: Path) -> Path | None:
    """The repository a run folder's logs name as the one that ran it, if any."""
    note = run / LOGS / REPOSITORY_NOTE
    return Path(note.read_text(encoding="utf-8").strip()) if note.is_file() else None
