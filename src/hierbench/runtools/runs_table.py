"""``hierbench runs``: the run folders beside a repository in one table, the way ``dvc exp
show`` lists experiments.

A run folder is the ``run`` of a config (``runtools.configs``) that exists.
Its state and job counts come from the newest Snakemake log of a config naming that folder
(``.snakemake/log/``; the user's config or the copy ``hierbench run`` ran, kept in the run's
logs): ``N of M steps`` gives the jobs done and planned, a failed job's message makes it failed
(unless Ctrl-C or SIGTERM stopped it: then it is stopped), and a live Snakemake started on a
config naming that folder makes it running. A lock left by a Snakemake that no longer runs is
a stale lock (``hierbench resume`` releases it). The headline is each dataset's mean hierarchy
mAP per factorial arm, from its arms summary.
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
from hierbench.runtools.configs import run_configs, run_logs, shown_path
from hierbench.runtools.resume import live_runs, lock_files
from hierbench.runtools.run_index import IndexedRun

STEPS_LINE = re.compile(r"^(?P<done>\d+) of (?P<planned>\d+) steps \(\d+%\) done", re.MULTILINE)
FAILED_LINES = ("Exiting because a job execution failed", "Error in rule ")
# What Snakemake logs when Ctrl-C or SIGTERM stops it: the jobs it ends then are not failures.
STOPPED_LINES = ("Terminating processes on user request", "Cancelling snakemake on user request")
NOTHING_LINE = "Nothing to be done"
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


def logs_by_run(repo: Path) -> dict[str, list[str]]:
    """Per run folder, its Snakemake logs that ran or planned jobs, newest first, whichever of
    its configs they name (dry runs and DAG printouts, which log only their first line, are
    skipped); every log read once."""
    found: dict[str, list[str]] = {}
    for run, text in run_logs(repo):
        if STEPS_LINE.search(text) or NOTHING_LINE in text or any(f in text for f in FAILED_LINES):
            found.setdefault(run, []).append(text)
    return found


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


def list_runs(repo: Path, sort: str = "name", own: dict[str, str] | None = None) -> list[RunRow]:
    """Every run folder beside ``repo``, sorted by ``sort`` (one of :data:`SORT_KEYS`); a run
    ``own`` names (its absolute folder) shows the config the user ran, not the copy that
    ``hierbench run`` keeps in its logs."""
    own = own or {}
    if sort not in SORT_KEYS:
        raise ValueError(f"--sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    running = live_runs(repo) or set()
    locked = bool(lock_files(repo))
    rows, all_logs = [], logs_by_run(repo)
    for run, config in run_configs(repo, existing=True).items():
        logs = all_logs.get(run, [])
        state, done, planned = log_state(logs[0] if logs else None, run in running, locked)
        if state == "complete" and done is None:  # a rerun that had nothing to do
            counted = [STEPS_LINE.findall(text)[-1] for text in logs if STEPS_LINE.search(text)]
            done, planned = (int(counted[0][0]), int(counted[0][1])) if counted else (None, None)
        folder = repo / run
        config = own.get(str(folder.resolve()), config)
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
    """The rows of runs ``hierbench run`` started elsewhere (``runtools.run_index``), each read in
    its own working folder and named by its absolute path."""
    rows, own = [], user_configs(entries)
    for working in sorted({entry.working for entry in entries}):
        folder = Path(working)
        wanted = {entry.run for entry in entries if entry.working == working}
        for row in list_runs(folder, sort, own) if folder.is_dir() else []:
            run = str((folder / row.name).resolve())
            if run in wanted:
                config = str((folder / row.config).resolve())
                rows.append(replace(row, name=run, config=config))
    return rows


def user_configs(entries: list[IndexedRun]) -> dict[str, str]:
    """Each indexed run folder with the config file the user gave ``hierbench run``."""
    return {entry.run: entry.config for entry in entries}


def shown_rows(rows: list[RunRow], repo: Path, here: Path) -> list[RunRow]:
    """The rows with their run folder and config as paths that open from ``here`` (relative
    to it inside it, else absolute; ``repo``'s rows are named from ``repo``), so two
    projects' runs of the same name read apart."""
    return [
        replace(
            row,
            name=shown_path(repo / row.name, here),
            config=shown_path(repo / row.config, here),
        )
        for row in rows
    ]


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
