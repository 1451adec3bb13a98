"""Which configs a repository's runs come from: ``config.yaml``, ``configs/*.yaml``, and every
other config file inside the repository that a Snakemake run was started on (its log names
it, ``.snakemake/log/``), such as a variant beside the shipped ones. Each names its run folder
with its ``run`` key (relative to the repository, or absolute)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from hierbench.runs import DEFAULT_RUN, logs_folder

SNAKEMAKE_LOGS = Path(".snakemake/log")
# The copy `hierbench run` keeps of the config it ran, in the run's logs (launch.RESOLVED_CONFIG;
# not imported, so the run tools never import the launcher).
RESOLVED_CONFIG = "config.yaml"
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
    return config_name(repo, first.group(1)) if first else None


def config_name(repo: Path, name: str) -> str:
    """A config file as the configs of ``repo`` are named: relative to it (a relative
    ``name`` is taken from it), or absolute for one outside it."""
    path = (repo / name).resolve()
    try:
        return path.relative_to(repo.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def config_files(repo: Path) -> list[Path]:
    """The repository's config files, relative to it: ``config.yaml``, ``configs/*.yaml``,
    then the others Snakemake logs name (sorted; absolute outside the repository), each once
    and only while it exists."""
    shipped = [repo / "config.yaml", *sorted((repo / "configs").glob("*.yaml"))]
    found = [path.relative_to(repo) for path in shipped if path.is_file()]
    named = {log_config(text, repo) for _, text in snakemake_logs(repo)}
    others = sorted(Path(name) for name in named - {None} if (repo / name).is_file())
    return found + [path for path in others if path not in found]


def config_run(repo: Path, path: Path) -> str | None:
    """The run folder a config file's ``run`` key names, keyed as ``config_runs`` keys it
    (``path`` relative to ``repo``, or absolute); None for a file this cannot read as a
    config (`hierbench config` names the flaw)."""
    try:
        data = yaml.safe_load((repo / path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    run = data.get("run", DEFAULT_RUN) if isinstance(data, dict) else None
    return _run_from(path, run) if isinstance(run, str) else None


def config_runs(repo: Path) -> list[tuple[Path, str]]:
    """Each readable config of the repository (``config_files``) with the run folder its
    ``run`` key names."""
    found = []
    for path in config_files(repo):
        run = config_run(repo, path)
        if run is not None:
            found.append((path, run))
    return found


def run_logs(repo: Path) -> Iterator[tuple[str, str]]:
    """``(run folder, text)`` of each Snakemake log of the repository whose config names a
    run folder, newest first: a run's logs whichever of its configs they name (the user's
    file, or the copy ``hierbench run`` ran, which names the same folder)."""
    runs: dict[str, str | None] = {}
    for _, text in snakemake_logs(repo):
        config = log_config(text, repo)
        if config is not None and config not in runs:
            runs[config] = config_run(repo, Path(config))
        run = runs.get(config) if config is not None else None
        if run is not None:
            yield run, text


def is_run_copy(config: str | Path, run: str) -> bool:
    """Whether ``config`` is the copy ``hierbench run`` keeps of a config in the run's logs
    (``RUN/logs/config.yaml``: what it ran, with its paths resolved), not the user's file."""
    return Path(config).as_posix() == f"{logs_folder(run)}/{RESOLVED_CONFIG}"


def shown_path(path: Path, here: Path) -> str:
    """A path as it opens from the folder ``here``: relative to it when it lies inside it,
    else absolute (so two projects' run folders of the same name never read alike)."""
    target, folder = path.resolve(), here.resolve()
    return target.relative_to(folder).as_posix() if target.is_relative_to(folder) else str(target)


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
