"""``hierbench run CONFIG``: the study on a config kept anywhere, with one progress line.

A config's relative paths mean what they say from the config's own folder (its run folder, its
datasets' folders, its plugin files and its weights file), but a config inside the repository,
whose paths are the repository's as ``snakemake --configfile`` reads them, so that
``hierbench run configs/tiny.yaml`` and ``make``'s runs share their run folders (:func:`base_of`).
The command writes the config with
those paths resolved beside the run's logs (``RUN/logs/config.yaml``, the run's record of what
it ran) and runs Snakemake on it in the repository, its full output going to
``RUN/logs/snakemake.log``; the terminal shows one line (jobs done of planned, the stage of the
newest job, the time taken and left). Ctrl-C or SIGTERM ends the run with one line saying how
far it got and the command that continues it; a failed run ends with each failed job's own
error, read from the job's log (or with the error that stopped the planning), and the log's
path.
"""

from __future__ import annotations

import copy
import itertools
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hierbench.jobcost import LINE_PREFIX as JOB_COST_LINE  # a job log's last line
from hierbench.runs import check_run_folder

RESOLVED_CONFIG = "config.yaml"  # the resolved config, in the run's logs folder
SNAKEMAKE_LOG = "snakemake.log"  # Snakemake's full output, in the run's logs folder
STEPS = re.compile(r"^(?P<done>\d+) of (?P<planned>\d+) steps \(\d+%\) done")
RULE = re.compile(r"^(?:local)?rule (?P<rule>\w+):")
FAILED_RULE = re.compile(r"^Error in rule (?P<rule>\w+):")
JOB_FIELD = re.compile(r"^ {4}(?P<field>\w+): (?P<value>.*)$")  # a field of a failed job
LOG_HINT = " (check log file(s) for error details)"  # what Snakemake adds to a failed job's log
# An exception's heading in Snakemake's output, with where it was raised when it says.
EXCEPTION = re.compile(r"^(?P<name>\w*(?:Error|Exception))(?: in file (?P<where>.+, line \d+))?:$")
WRAPPER = "RuleException"  # the heading around a failed job's error
TRACEBACK = "Traceback (most recent call last):"
FRAME = '  File "'  # a traceback's frame line
FILE_REFERENCE = re.compile(r"^(?P<file>.+\.py):(?P<name>\w+)$")  # a plugin named by its file
# Dataset keys that name a file or folder of the user's (the others are names or settings).
DATASET_PATH_KEYS = ("root", "classes", "hierarchy", "example_taxonomy")


class LaunchError(ValueError):
    """The config cannot be run as given; the message names the key or file."""


def base_of(config: Path, repository: Path) -> Path:
    """The folder a config's relative paths start from: the repository for a config inside it,
    else the config's own folder."""
    config = config.resolve()
    return repository if config.is_relative_to(repository.resolve()) else config.parent


def _resolved(value: str, folder: Path) -> str:
    """A path from the config's folder: absolute as given, else joined to the folder."""
    return value if Path(value).is_absolute() else str((folder / value).resolve())


def resolve_config_paths(
    config: dict[str, Any], folder: Path, repository: Path, overlay: bool = False
) -> dict[str, Any]:
    """The config with every path it holds taken from ``folder`` (:func:`base_of`): absolute,
    but the run folder, which is relative to the repository where it lies inside it (the form
    the run folder key accepts); an ``overlay`` (keys merged over another file) gets no run
    folder it does not name."""
    resolved = copy.deepcopy(config)
    if not overlay or "run" in config:
        run = Path(_resolved(str(config.get("run", "results")), folder))
        resolved["run"] = (
            run.relative_to(repository).as_posix() if run.is_relative_to(repository) else str(run)
        )
    for entry in (resolved.get("datasets") or {}).values():
        for key in DATASET_PATH_KEYS:
            if isinstance(entry, dict) and isinstance(entry.get(key), str):
                entry[key] = _resolved(entry[key], folder)
        taxonomy = entry.get("taxonomy") if isinstance(entry, dict) else None
        if isinstance(taxonomy, dict):
            for key in ("aliases", "checklist"):
                if isinstance(taxonomy.get(key), str) and taxonomy[key] != "default":
                    taxonomy[key] = _resolved(taxonomy[key], folder)
    for group in (resolved.get("plugins") or {}).values():
        for name, reference in (group or {}).items():
            found = FILE_REFERENCE.match(str(reference))
            if found:
                group[name] = f"{_resolved(found['file'], folder)}:{found['name']}"
    weights = (resolved.get("backbone") or {}).get("weights")
    if isinstance(weights, str) and ":" not in weights:
        resolved["backbone"]["weights"] = _resolved(weights, folder)
    if "run" in resolved:
        check_run_folder(resolved["run"])
    return resolved


def _merge(into: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``into`` key by key, as Snakemake merges config files."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def config_from_files(
    config: dict[str, Any],
    files: Iterable[Path],
    overrides: dict[str, Any],
    working: Path,
    workflow: Path | None = None,
) -> dict[str, Any]:
    """The config plain ``snakemake --configfile`` ran, with each file's relative paths taken
    from that file's folder by the same rule as ``hierbench run`` (:func:`base_of`), merged in
    order with the ``--config`` overrides last; ``config`` itself when every file lies in the
    working folder (a checkout's configs: their paths are the repository's, as recorded) or
    is the ``workflow``'s own (an installed package's demo config runs in the working folder,
    never inside the package)."""
    working = working.resolve()
    own = [working, *([workflow.resolve()] if workflow is not None else [])]
    files = [Path(path).resolve() for path in files]
    inside = [any(path.is_relative_to(folder) for folder in own) for path in files]
    if all(inside):
        return config
    merged: dict[str, Any] = {}
    for index, path in enumerate(files):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        base = working if inside[index] else base_of(path, working)
        _merge(merged, resolve_config_paths(raw, base, working, index > 0))
    return _merge(merged, dict(overrides))


def snakemake_command(
    snakemake: str, config: Path, cores: str, profile: str | None, extra: Iterable[str]
) -> list[str]:
    """The Snakemake command line of a run (started in its working folder); the user's
    arguments first, as ``--configfile`` takes every word that follows it."""
    command = [snakemake, *extra, "--cores", cores]
    if profile:
        command += ["--profile", profile]
    return [*command, "--configfile", str(config)]


def shipped_profile(profile: str | None, workflow: Path, working: Path) -> str | None:
    """A profile as given, or the workflow's own (``profiles/slurm``) when an installed
    package runs in a folder that has none of that name."""
    if profile and not (working / profile).exists() and (workflow / profile).is_dir():
        return str(workflow / profile)
    return profile


@dataclass
class Progress:
    """How far a run is, read from Snakemake's output one line at a time."""

    done: int = 0
    planned: int | None = None
    stage: str = "planning"

    def read(self, line: str, stages: dict[str, str]) -> bool:
        """Take in one output line; whether it changed what the progress line shows."""
        steps = STEPS.match(line.strip())
        if steps:
            self.done, self.planned = int(steps["done"]), int(steps["planned"])
            return True
        rule = RULE.match(line.strip())
        if rule:
            self.stage = stages.get(rule["rule"], rule["rule"])
            return True
        return False


def continue_command(config: Path, cores: str) -> str:
    """The command that continues (or reruns) a run, quoted to be pasted as it is."""
    return f"hierbench run {shlex.quote(str(config))} --cores {shlex.quote(cores)}"


def stopped_line(progress: Progress, config: Path, cores: str, log: Path) -> str:
    """The one line a stopped run ends with."""
    planned = "?" if progress.planned is None else progress.planned
    return (
        f"stopped: {progress.done} of {planned} jobs done (at {progress.stage}); "
        f"{continue_command(config, cores)} continues it (log: {shlex.quote(str(log))})"
    )


@dataclass
class FailedJob:
    """A job Snakemake reports failed: its rule and log files, as its output names them."""

    rule: str
    logs: tuple[str, ...] = ()


def failed_jobs(output: list[str]) -> list[FailedJob]:
    """The jobs of Snakemake's ``Error in rule`` blocks, in order, each once."""
    jobs: list[FailedJob] = []
    job = None
    for line in output:
        started = FAILED_RULE.match(line)
        if started:
            job = FailedJob(started["rule"])
            jobs.append(job)
            continue
        if job is None or not line.startswith(" "):
            job = None  # a line not indented ends the job's block
            continue
        field = JOB_FIELD.match(line)
        if field and field["field"] == "log":
            job.logs = tuple(field["value"].removesuffix(LOG_HINT).split(", "))
    unique = {(job.rule, job.logs): job for job in jobs}
    return list(unique.values())


def job_message(log_text: str) -> list[str]:
    """The error a job's log ends with: the exception of its last traceback (a bug's type and
    message), else hierbench's own ``error:`` line and the lines under it (a user error, see
    :func:`hierbench.jobs.report_user_errors`); none when the log holds neither."""
    lines = [
        line.rstrip()
        for line in log_text.splitlines()
        if line.strip() and not line.startswith(JOB_COST_LINE)
    ]
    tracebacks = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
    if tracebacks:
        frames = lines[tracebacks[-1] + 1 :]
        return list(itertools.dropwhile(lambda line: line.startswith(" "), frames))
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    return lines[errors[-1] :] if errors else []


def job_lines(job: FailedJob, working: Path) -> list[str]:
    """A failed job as the terminal shows it: its rule, the error its log ends with, and the
    log's path."""
    message: list[str] = []
    for log in job.logs:
        path = working / log  # a relative log path is the working folder's
        if path.is_file():
            message += job_message(path.read_text(encoding="utf-8", errors="replace"))
    if not message:
        message = ["(its log holds no error message: the full log may say why)"]
    logs = ", ".join(shlex.quote(str(working / log)) for log in job.logs)
    return [f"Error in rule {job.rule}:"] + [f"  {line}" for line in message] + [f"  log: {logs}"]


def planning_lines(output: list[str]) -> list[str]:
    """The error that stopped Snakemake before any job ran: the exception's message (the
    lines under its ``NameError in file F, line N:`` heading, less the traceback), then where
    it was raised; Snakemake's last lines when no such heading is found."""
    for index, line in enumerate(output):
        heading = EXCEPTION.match(line.rstrip())
        if heading is None or heading["name"] == WRAPPER:
            continue
        message = list(
            itertools.takewhile(
                lambda text: text.strip() and not text.startswith(FRAME), output[index + 1 :]
            )
        )
        where = f"  (raised in file {heading['where']})" if heading["where"] else ""
        first = f"{heading['name']}: {message[0].strip()}" if message else heading["name"]
        return [first, *(text.rstrip() for text in message[1:]), *([where] if where else [])]
    return [line.rstrip() for line in output if line.strip()][-5:]


def failed_lines(output: list[str], log: Path, working: Path) -> list[str]:
    """What a failed run ends with: each failed job with the error its log ends with (or the
    error that stopped the planning), then where the full log is. ``working`` is the folder
    Snakemake ran in, which relative log paths start from."""
    jobs = failed_jobs(output)
    lines = [line for job in jobs for line in job_lines(job, working)] if jobs else []
    lines = lines or planning_lines(output)
    return [*lines, f"failed: the full log is {shlex.quote(str(log))}"]


def run_environment() -> dict[str, str]:
    """The environment of the Snakemake process: this one, offline for model hubs."""
    return {**os.environ, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")}
