"""Where a run lives: the config's ``run`` folder for its artifacts, locks and logs, so that
runs of several configs stay side by side and one folder holds everything of a run.

The default run is ``results`` (the demo's). A run folder is relative to the repository or
absolute (a scratch disk). Its logs and job timings are in its ``logs/`` subfolder, which the
audit and the run comparison leave out (they hold times, not results; ``runlogs`` says what
else is kept there).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from hierbench.shipped import is_packaged

DEFAULT_RUN = "results"
LOGS = "logs"  # a run's subfolder of job logs, timings and hash caches (never a dataset name)
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
    """``run`` as a clean POSIX path (relative to the repository, or absolute), or an error
    naming the config key ``run``."""
    path = PurePosixPath(run)
    relative = run.removeprefix("/")
    problem = None
    if not relative or "\\" in run:
        problem = "must be a folder path with / separators"
    elif any(part in {"", ".", ".."} for part in relative.split("/")):
        problem = "must not contain empty, '.' or '..' parts"
    elif path.is_absolute():
        pass  # a folder anywhere: the repository's own folders are named relatively
    elif path.parts[0] in RESERVED:
        problem = f"must not be inside the repository's {path.parts[0]}/ folder"
    elif run != DEFAULT_RUN and path.parts[0] == DEFAULT_RUN:
        problem = f"must not be inside the default run's folder {DEFAULT_RUN}/"
    if problem:
        raise RunFolderError(f"config key 'run' ({run!r}) {problem}")
    return run


def run_folder(config: dict[str, Any]) -> str:
    """The folder every artifact and lock of this config's run lives under."""
    return check_run_folder(config.get("run", DEFAULT_RUN))


def logs_folder(run: str) -> str:
    """The folder of a run's logs and benchmark timings: its ``logs/`` subfolder."""
    return f"{run.rstrip('/')}/{LOGS}"


def is_log(path: Path, run: Path) -> bool:
    """Whether ``path`` (a file under the run folder ``run``) lies in the run's logs."""
    return (run / LOGS) in path.parents


def check_working_folder(repository: str | Path, working: str | Path) -> None:
    """A checkout's Snakemake must work in the repository (its relative paths, run folders and
    locks are there): from another folder, say how to get there instead of naming a missing
    file. An installed package's workflow works in any folder (``hierbench run`` uses the
    config's)."""
    if is_packaged(repository):
        return
    if Path(repository).resolve() != Path(working).resolve():
        raise RunFolderError(
            f"snakemake works in the repository {repository}, not in {working}: run it there "
            f"(cd {repository}), or add --directory {repository}"
        )
