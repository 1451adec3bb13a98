"""``hierbench runs``: the run folders beside a repository in one table, the way ``dvc exp
show`` lists experiments.

A run folder is the ``run`` of a config (``runtools.configs``) that exists.
Its state and job counts come from the newest Snakemake log of that config
(``.snakemake/log/``): ``N of M steps`` gives the jobs done and planned, a failed job's message
makes it failed (unless Ctrl-C or SIGTERM stopped it: then it is stopped), and a live Snakemake
started on that config makes it running. A lock left by
a Snakemake that no longer runs is a stale lock (``hierbench resume`` releases it). The
headline is each dataset's mean hierarchy mAP per factorial arm, from its arms summary.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from hierbench.layout import ARMS_SUMMARY_TABLE
from hierbench.protocol import FACTORIAL_ARMS, MEAN_HIERARCHY
from hierbench.runtools.configs import log_config, run_configs, snakemake_logs
from hierbench.runtools.index import IndexedRun
from hierbench.runtools.resume import PROC, ResumeError, live_snakemake, lock_files

STEPS_LINE = re.compile(r"^(?P<done>\d+) of (?P<planned>\d+) steps \(\d+%\) done", re.MULTILINE)
FAILED_LINES = ("Exiting because a job execution failed", "Error in rule ")
# What Snakemake logs when Ctrl-C or SIGTERM stops it: the jobs it ends then are not failures.
STOPPED_LINES = ("Terminating processes on user request", "Cancelling snakemake on user request")
NOTHING_LINE = "Nothing to be done"
DEFAULT_CONFIG = "config.yaml"
SORT_KEYS = ("name", "config", "state", "jobs", "last_change")
ARMS_SUMMARY = ARMS_SUMMARY_TABLE.removeprefix("{dataset}/")  # below a dataset's folder


@dataclass
class RunRow:
    """One run folder: where, from which config, its state, jobs and headline."""

    name: str
    config: str
    state: str
    jobs_done: int | None
    jobs_planned: int | None
    last_change: str
    headline: dict[str, dict[str, float]] = field(default_factory=dict)


def logs_by_config(repo: Path) -> dict[str, list[str]]:
    """Per config, its Snakemake logs that ran or planned jobs, newest first (dry runs and DAG
    printouts, which log only their first line, are skipped); every log read once."""
    found: dict[str, list[str]] = {}
    for _, text in snakemake_logs(repo):
        config = log_config(text, repo)
        if config is not None and (
            STEPS_LINE.search(text) or NOTHING_LINE in text or any(f in text for f in FAILED_LINES)
        ):
            found.setdefault(config, []).append(text)
    return found


def _running_configs(repo: Path) -> set[str] | None:
    """The configs a live Snakemake in ``repo`` was started on (None: /proc cannot tell)."""
    try:
        pids = live_snakemake(repo)
    except ResumeError:
        return None
    configs = set()
    for pid in pids:
        words = (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
        named = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--configfile"]
        for name in named or [DEFAULT_CONFIG]:
            path = (repo / name).resolve()  # a relative name is relative to the run's folder
            if path.is_relative_to(repo.resolve()):
                configs.add(path.relative_to(repo.resolve()).as_posix())
    return configs


def log_state(text: str | None, running: bool, locked: bool) -> tuple[str, int | None, int | None]:
    """The state of a run and its jobs done and planned, from its newest log."""
    if running:
        state = "running"
    elif text is None:
        return ("stale lock" if locked else "no log"), None, None
    elif any(line in text for line in FAILED_LINES) and not any(
        line in text for line in STOPPED_LINES
    ):
        state = "failed"
    else:
        state = "stopped"
    steps = STEPS_LINE.findall(text or "")
    done, planned = (int(steps[-1][0]), int(steps[-1][1])) if steps else (None, None)
    if state == "stopped" and (NOTHING_LINE in (text or "") or (steps and done == planned)):
        state = "complete"
    elif state == "stopped" and locked:
        state = "stale lock"
    return state, done, planned


def last_change(folder: Path) -> str:
    """When the newest file of a run folder changed (UTC, to the second)."""
    newest = max((entry.stat().st_mtime for entry in folder.rglob("*")), default=None)
    if newest is None:
        return ""
    return dt.datetime.fromtimestamp(newest, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def headline(folder: Path) -> dict[str, dict[str, float]]:
    """Per dataset of the run, the mean hierarchy mAP of each factorial arm."""
    found = {}
    for summary in sorted(folder.glob(f"*/{ARMS_SUMMARY}")):
        arms = pd.read_parquet(summary)
        chosen = arms[(arms["level"] == MEAN_HIERARCHY) & (arms["metric"] == "map")]
        labels = chosen["geometry"].astype(str) + "_" + chosen["loss"].astype(str)
        values = dict(zip(labels, chosen["mean"].astype(float), strict=True))
        found[summary.parents[1].name] = {
            arm: values[arm] for arm in FACTORIAL_ARMS if arm in values
        }
    return found


def list_runs(repo: Path, sort: str = "name") -> list[RunRow]:
    """Every run folder beside ``repo``, sorted by ``sort`` (one of :data:`SORT_KEYS`)."""
    if sort not in SORT_KEYS:
        raise ValueError(f"--sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    running = _running_configs(repo) or set()
    locked = bool(lock_files(repo))
    rows, all_logs = [], logs_by_config(repo)
    for run, config in run_configs(repo, existing=True).items():
        logs = all_logs.get(config, [])
        state, done, planned = log_state(logs[0] if logs else None, config in running, locked)
        if state == "complete" and done is None:  # a rerun that had nothing to do
            counted = [STEPS_LINE.findall(text)[-1] for text in logs if STEPS_LINE.search(text)]
            done, planned = (int(counted[0][0]), int(counted[0][1])) if counted else (None, None)
        folder = repo / run
        rows.append(
            RunRow(run, config, state, done, planned, last_change(folder), headline(folder))
        )
    return sorted_rows(rows, sort)


def sorted_rows(rows: list[RunRow], sort: str) -> list[RunRow]:
    """The rows sorted by ``sort`` (one of :data:`SORT_KEYS`), the newest change first."""
    key = {
        "jobs": lambda row: (row.jobs_done or 0, row.name),
        "last_change": lambda row: (row.last_change, row.name),
    }.get(sort, lambda row: (getattr(row, sort), row.name))
    return sorted(rows, key=key, reverse=sort == "last_change")


def indexed_rows(entries: list[IndexedRun], sort: str = "name") -> list[RunRow]:
    """The rows of runs ``hierbench run`` started elsewhere (``runtools.index``), each read in
    its own working folder and named by its absolute path."""
    rows = []
    for working in sorted({entry.working for entry in entries}):
        folder = Path(working)
        wanted = {entry.run for entry in entries if entry.working == working}
        for row in list_runs(folder, sort) if folder.is_dir() else []:
            run = str((folder / row.name).resolve())
            if run in wanted:
                config = str((folder / row.config).resolve())
                rows.append(replace(row, name=run, config=config))
    return rows


def _arms_text(arms: dict[str, float]) -> str:
    """``E_R 0.132 H_R 0.137 ...`` for one dataset's headline; ``n/a`` where the run has no
    value (a level with no query)."""
    return " ".join(
        f"{arm} {value:.3f}" if math.isfinite(value) else f"{arm} n/a"
        for arm, value in arms.items()
    )


def runs_text(rows: list[RunRow]) -> str:
    """The runs as a text table, a headline column per dataset."""
    if not rows:
        return "no run folder: no config's run folder exists yet"
    datasets = sorted({name for row in rows for name in row.headline})
    table = pd.DataFrame(
        {
            "run": [row.name for row in rows],
            "config": [row.config for row in rows],
            "state": [row.state for row in rows],
            "jobs": [
                "" if row.jobs_planned is None else f"{row.jobs_done}/{row.jobs_planned}"
                for row in rows
            ],
            "last change (UTC)": [row.last_change for row in rows],
            **{
                f"{dataset} mean hierarchy mAP": [
                    _arms_text(row.headline.get(dataset, {})) for row in rows
                ]
                for dataset in datasets
            },
        }
    )
    return table.to_string(index=False)


def runs_json(rows: list[RunRow]) -> list[dict]:
    """The runs as JSON-ready records (a value that is not a number is null)."""
    records = [asdict(row) for row in rows]
    for record in records:
        record["headline"] = {
            dataset: {arm: value if math.isfinite(value) else None for arm, value in arms.items()}
            for dataset, arms in record["headline"].items()
        }
    return records
