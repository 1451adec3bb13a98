"""Which configs a repository's runs come from: ``config.yaml``, ``configs/*.yaml``, and every
other config file inside the repository that a Snakemake run was started on (its log names
it, ``.snakemake/log/``), such as a variant beside the shipped ones. Each names its run folder
with its ``run`` key (relative to the repository, or absolute)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from hierbench.runs import DEFAULT_RUN

SNAKEMAKE_LOGS = Path(".snakemake/log")
CONFIG_LINE = re.compile(r"Config file\(s\): \[(?P<files>.*)\]")


def snakemake_logs(repo: Path) -> Iterator[tuple[Path, str]]:
    """Each Snakemake log of the repository with its text, newest first (read one by one)."""
    folder = repo / SNAKEMAKE_LOGS
    for log in sorted(folder.glob("*.snakemake.log"), reverse=True) if folder.is_dir() else []:
        yield log, log.read_text(encoding="utf-8", errors="replace")


def log_config(text: str, repo: Path) -> str | None:
    """The (first) config file a Snakemake log names: relative to ``repo``, or absolute for one
    outside it (``hierbench run`` keeps a config of any folder beside its run's logs); None
    when it names none."""
    match = CONFIG_LINE.search(text)
    first = re.search(r"'([^']+)'", match.group("files")) if match else None
    if not first:
        return None
    path = Path(first.group(1))
    path = path if path.is_absolute() else repo / path
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def config_files(repo: Path) -> list[Path]:
    """The repository's config files, relative to it: ``config.yaml``, ``configs/*.yaml``,
    then the others Snakemake logs name (sorted; absolute outside the repository), each once
    and only while it exists."""
    shipped = [repo / "config.yaml", *sorted((repo / "configs").glob("*.yaml"))]
    found = [path.relative_to(repo) for path in shipped if path.is_file()]
    named = {log_config(text, repo) for _, text in snakemake_logs(repo)}
    others = sorted(Path(name) for name in named - {None} if (repo / name).is_file())
    return found + [path for path in others if path not in found]


def config_runs(repo: Path) -> list[tuple[Path, str]]:
    """Each readable config of the repository (``config_files``) with the run folder its
    ``run`` key names."""
    found = []
    for path in config_files(repo):
        try:
            data = yaml.safe_load((repo / path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue  # not a config this can read; `hierbench config` names the flaw
        run = data.get("run", DEFAULT_RUN) if isinstance(data, dict) else None
        if isinstance(run, str):
            found.append((path, _run_from(path, run)))
    return found


def _run_from(config: Path, run: str) -> str:
    """A config's run folder as its runs are keyed: as written for a config inside the
    repository; for one outside it (``config`` absolute), a relative folder is taken from the
    config's own folder, as ``hierbench run`` takes it (so a config of another copy of the
    repository, named by a log this copy inherited, keys that copy's run, not this one's)."""
    if not config.is_absolute() or Path(run).is_absolute():
        return run
    return (config.parent / run).resolve().as_posix()


def run_configs(repo: Path, existing: bool = False) -> dict[str, str]:
    """Each run folder (only those that exist, with ``existing``) with the config, relative
    to ``repo``, whose ``run`` names it (the first in ``config_files`` order when several do)."""
    found: dict[str, str] = {}
    for config, run in config_runs(repo):
        if not existing or (repo / run).is_dir():
            found.setdefault(run, config.as_posix())
    return found


def run_key(repo: Path, run: Path) -> str:
    """The run folder ``run`` as the configs' ``run`` keys name it (relative to ``repo``, or
    absolute), however its path was typed; a folder no config names, relative to ``repo``
    where it lies inside it."""
    target = run.resolve()
    for _, named in config_runs(repo):
        if (repo / named).resolve() == target:
            return named
    try:
        return target.relative_to(repo.resolve()).as_posix()
    except ValueError:
        return target.as_posix()
