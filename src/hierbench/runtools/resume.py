"""Resuming a run after a kill: its stale Snakemake lock released, its killed jobs rerun.

Snakemake locks the working folder (``.snakemake/locks/``) while it runs; a killed Snakemake
leaves the lock behind and the next run refuses to start. A lock is stale when no Snakemake
process works in that folder; only a stale lock is released, never a live run's. The run's
config is the one whose ``run`` key names the run folder (``runtools.configs``).
"""

from __future__ import annotations

import os
from pathlib import Path

from hierbench.runtools.configs import config_name, config_run, config_runs, is_run_copy

LOCKS = Path(".snakemake/locks")
DEFAULT_CONFIG = "config.yaml"  # what Snakemake reads with no --configfile
PROC = Path("/proc")


class ResumeError(ValueError):
    """A run cannot be resumed as asked; the message says why and what to do."""


def lock_files(repo: Path) -> list[Path]:
    """The Snakemake lock files of a working folder (none when it is not locked)."""
    folder = repo / LOCKS
    return sorted(folder.glob("*.lock")) if folder.is_dir() else []


def live_snakemake(repo: Path, proc: Path = PROC) -> list[int]:
    """The ids of the Snakemake processes working in ``repo`` (read from ``/proc``)."""
    if not proc.is_dir():
        raise ResumeError(
            f"{proc} is not available, so a live Snakemake cannot be told from a stale lock; "
            "run `snakemake --unlock` yourself once no Snakemake runs in this folder"
        )
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            folder = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue  # a process that ended, or one of another user
        if _is_snakemake(command) and folder.resolve() == repo.resolve():
            found.append(int(entry.name))
    return sorted(found)


def _is_snakemake(command: list[bytes]) -> bool:
    """Whether a command line runs Snakemake: its program, or Python running its script or
    module."""
    names = [Path(part.decode(errors="replace")).name for part in command if part]
    if not names:
        return False
    if names[0] == "snakemake":
        return True
    python = names[0].startswith("python")
    return python and (names[1:2] == ["snakemake"] or names[1:3] == ["-m", "snakemake"])


def live_runs(repo: Path, proc: Path = PROC) -> set[str] | None:
    """The run folders (keyed as ``runtools.configs`` keys them) of the Snakemake processes
    working in ``repo`` now, each from the config it was started on; None when ``/proc``
    cannot tell."""
    try:
        pids = live_snakemake(repo, proc)
    except ResumeError:
        return None
    runs = set()
    for pid in pids:
        try:
            command = (proc / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue  # it ended since
        words = command.decode(errors="replace").split("\0")
        named = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--configfile"]
        for name in named or [DEFAULT_CONFIG]:
            run = config_run(repo, Path(config_name(repo, name)))  # relative: from the folder
            if run is not None:
                runs.add(run)
    return runs


def config_for_run(repo: Path, run: str) -> Path:
    """The config file (``runtools.configs.config_files``) whose ``run`` is ``run``: the
    user's own rather than the copy ``hierbench run`` keeps in the run's logs, when both
    name it (the copy alone for a config kept elsewhere)."""
    matches = [path for path, named in config_runs(repo) if named == run]
    own = [path for path in matches if not is_run_copy(path, run)]
    matches = own if own else matches
    if len(matches) != 1:
        found = ", ".join(str(path) for path in matches) or "none"
        raise ResumeError(
            f"run {run!r} needs exactly one config whose 'run' key names it; found {found} "
            "among config.yaml, configs/*.yaml and the configs Snakemake ran"
        )
    return matches[0]


def resume_plan(repo: Path, run: str) -> tuple[Path, bool]:
    """The run's config and whether a stale lock must be released first; an error when a
    Snakemake still works in ``repo`` (its lock is never touched)."""
    config = config_for_run(repo, run)
    live = live_snakemake(repo)
    if live:
        raise ResumeError(
            f"a Snakemake run is live in {repo} (process {', '.join(map(str, live))}); its lock "
            "is not touched: let it finish, or stop it and resume"
        )
    return config, bool(lock_files(repo))
