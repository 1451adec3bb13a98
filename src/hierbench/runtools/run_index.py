"""The runs ``hierbench run`` started, wherever they are: a small index in the user's data
folder (``platformdirs``: ``~/.local/share/hierbench/runs.json`` on Linux, under
``$XDG_DATA_HOME`` when set), so ``hierbench runs`` lists them from any folder. Each entry is
a run folder with the folder Snakemake worked in and the config it was started on; a run
folder that no longer exists is pruned whenever the index is read."""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs

from hierbench.provenance.artifacts import atomic_path

INDEX_FILE = "runs.json"


@dataclass(frozen=True, order=True)
class IndexedRun:
    """A run ``hierbench run`` started: its folder, Snakemake's working folder, its config."""

    run: str
    working: str
    config: str


def index_path() -> Path:
    """Where the index lives: the user's data folder for hierbench."""
    return Path(platformdirs.user_data_dir("hierbench")) / INDEX_FILE


def _read(path: Path) -> list[IndexedRun]:
    """The index's entries; none when it does not exist or cannot be read (it is a cache of
    where runs are, never their record: each run folder keeps its own config and logs)."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        return [IndexedRun(**entry) for entry in entries]
    except (OSError, ValueError, TypeError):
        return []


def _write(path: Path, entries: list[IndexedRun]) -> None:
    """The entries, sorted and each once, written whole (a temporary file renamed)."""
    text = json.dumps([asdict(entry) for entry in sorted(set(entries))], indent=2)
    with atomic_path(path) as temporary:
        temporary.write_text(text + "\n", encoding="utf-8")


def indexed_runs(path: Path | None = None) -> list[IndexedRun]:
    """The runs of the index whose folders still exist, sorted (the others are pruned)."""
    path = path or index_path()
    entries = _read(path)
    kept = sorted(entry for entry in entries if Path(entry.run).is_dir())
    if len(kept) != len(entries):
        with contextlib.suppress(OSError):  # a read-only data folder: still the pruned list
            _write(path, kept)
    return kept


def record_run(run: Path, working: Path, config: Path, path: Path | None = None) -> None:
    """Add (or renew) a run in the index: its folder, the working folder and its config."""
    path = path or index_path()
    entry = IndexedRun(str(run.resolve()), str(working.resolve()), str(config.resolve()))
    others = [known for known in indexed_runs(path) if known.run != entry.run]
    _write(path, [*others, entry])
