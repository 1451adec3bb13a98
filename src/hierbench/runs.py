"""Where a run lives: the config's ``run`` folder for its artifacts and locks, and the folder
of its logs, so that runs of several configs stay side by side.

The default run is ``results`` with its logs in ``logs`` (the demo's folders). Any other run
folder ``R`` keeps its logs in ``R-logs`` beside it, outside the folder that is audited and
compared.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

DEFAULT_RUN = "results"
DEFAULT_LOGS = "logs"
LOGS_SUFFIX = "-logs"
# Top-level folders of the repository a run must not write into.
RESERVED = frozenset(
    {
        "benchmarks",
        "configs",
        "docs",
        "logs",
        "profiles",
        "report",
        "resources",
        "rules",
        "schemas",
        "src",
        "tests",
        "tools",
        "workflow_scripts",
        ".snakemake",
        ".git",
    }
)


class RunFolderError(ValueError):
    """A ``run`` folder the pipeline cannot write a run into."""


def check_run_folder(run: str) -> str:
    """``run`` as a clean relative POSIX path, or an error naming the config key ``run``."""
    path = PurePosixPath(run)
    problem = None
    if not run or path.is_absolute() or "\\" in run:
        problem = "must be a relative folder path with / separators"
    elif any(part in {"", ".", ".."} for part in run.split("/")):
        problem = "must not contain empty, '.' or '..' parts"
    elif path.parts[0] in RESERVED:
        problem = f"must not be inside the repository's {path.parts[0]}/ folder"
    elif run.endswith(LOGS_SUFFIX):
        problem = f"must not end with {LOGS_SUFFIX!r} (that names a run's log folder)"
    elif run != DEFAULT_RUN and path.parts[0] == DEFAULT_RUN:
        problem = f"must not be inside the default run's folder {DEFAULT_RUN}/"
    if problem:
        raise RunFolderError(f"config key 'run' ({run!r}) {problem}")
    return run


def run_folder(config: dict[str, Any]) -> str:
    """The folder every artifact and lock of this config's run lives under."""
    return check_run_folder(config.get("run", DEFAULT_RUN))


def logs_folder(run: str) -> str:
    """The folder of a run's logs and benchmark timings: ``logs`` for the default run, else
    the run folder's name with ``-logs`` appended."""
    return DEFAULT_LOGS if run == DEFAULT_RUN else run + LOGS_SUFFIX


def check_working_folder(repository: str | Path, working: str | Path) -> None:
    """Snakemake must work in the repository (its relative paths, run folders and locks are
    there): from another folder, say how to get there instead of naming a missing file."""
    if Path(repository).resolve() != Path(working).resolve():
        raise RunFolderError(
            f"snakemake works in the repository {repository}, not in {working}: run it there "
            f"(cd {repository}), or add --directory {repository}"
        )
