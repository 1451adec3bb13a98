"""``hierbench status``: where a run stands, per stage, while it runs or after.

The jobs come from ``snakemake --dag`` on the run's config (done: jobs Snakemake would not
run; to do: the others), each rule's stage from ``rules/<stage>.smk``. The jobs running now
are those whose log changed since the run's newest Snakemake log began and that have no
benchmark yet; their last log line is shown. The time left is each job to do costed at the
median wall time of its rule's finished jobs in this run (the median of every finished job for
a rule not seen yet): job seconds, which parallel jobs share.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hierbench.provenance.artifacts import provenance_path
from hierbench.runs import logs_folder
from hierbench.runtools import jobstats
from hierbench.runtools.rebuild import dag_jobs
from hierbench.runtools.runs_table import SNAKEMAKE_LOGS, run_configs

SCHEDULING_LINE = "Provided cores:"  # a run that executes jobs logs its cores; a dry run does not
# The stages in pipeline order (rules/<stage>.smk); a stage not named here comes after them.
STAGE_ORDER = (
    "inputs",
    "taxonomy",
    "data",
    "splits",
    "features",
    "training",
    "evaluation",
    "report",
)


class StatusError(ValueError):
    """A run whose status cannot be read; the message says why."""


@dataclass(frozen=True)
class RunStatus:
    """Jobs per stage, the jobs running now and the job time left."""

    run: str
    config: str
    stages: pd.DataFrame  # stage, done, to_do
    running: list[tuple[str, str]]  # (log file, its last line)
    seconds_left: float | None


def planned_jobs(repo: Path, config: str, attempts: int = 3) -> list[tuple[str, bool]]:
    """``(rule, will run)`` of every job of the run's DAG (``snakemake --dag``), asked again
    when a live run replaced a file while Snakemake read it."""
    snakemake = Path(sys.executable).with_name("snakemake")
    for attempt in range(1, attempts + 1):
        result = subprocess.run(
            [str(snakemake), "--dag", "--configfile", config],
            cwd=repo,
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        if result.returncode == 0:
            return dag_jobs(result.stdout[result.stdout.index("digraph") :])
        if attempt < attempts:
            time.sleep(1.0)
    last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
    raise StatusError(f"snakemake --dag --configfile {config} failed: {last}")


def stage_table(jobs: list[tuple[str, bool]], stages: dict[str, str]) -> pd.DataFrame:
    """Jobs done and to do per stage, in pipeline order."""
    rows = [
        {"stage": stages.get(rule, jobstats.NO_STAGE), "done": int(not runs), "to_do": int(runs)}
        for rule, runs in jobs
        if rule != "all"
    ]
    frame = pd.DataFrame(rows, columns=["stage", "done", "to_do"])
    table = frame.groupby("stage", as_index=False)[["done", "to_do"]].sum()
    rank = {stage: index for index, stage in enumerate(STAGE_ORDER)}
    order = table["stage"].map(lambda stage: (rank.get(stage, len(rank)), stage))
    return table.iloc[order.argsort(kind="stable")].reset_index(drop=True)


def last_line(path: Path) -> str:
    """The last non-empty line of a log file."""
    lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return lines[-1].strip() if lines else ""


def run_started(repo: Path) -> float | None:
    """When the newest Snakemake run of the folder began (the time in its log's name); dry
    runs and DAG printouts, which schedule nothing, are left out."""
    folder = repo / SNAKEMAKE_LOGS
    for log in sorted(folder.glob("*.snakemake.log"), reverse=True) if folder.is_dir() else []:
        text = log.read_text(encoding="utf-8", errors="replace")
        if SCHEDULING_LINE in text:
            stamp = log.name.removesuffix(".snakemake.log")
            return dt.datetime.strptime(stamp, "%Y-%m-%dT%H%M%S.%f").timestamp()
    return None


def _finished(log: Path, logs: Path, run: Path) -> bool:
    """Whether a job log's job finished: its benchmark, or the record of the output the log
    mirrors, was written after the log's last line (a rerun's log is newer than the last run's
    benchmark and record until it ends)."""
    stem = log.name.removesuffix(".log")
    written = log.stat().st_mtime
    marks = (
        log.with_name(stem + jobstats.BENCHMARK_SUFFIX),
        provenance_path(run / log.relative_to(logs).with_name(stem)),
    )
    return any(mark.exists() and mark.stat().st_mtime >= written for mark in marks)


def running_logs(repo: Path, logs: Path, run: Path) -> list[tuple[str, str]]:
    """The job logs written since the newest Snakemake run began whose job has not finished:
    the jobs running now (or stopped by a failure), each with its last line."""
    started = run_started(repo)
    if started is None or not logs.is_dir():
        return []
    return [
        (log.relative_to(repo).as_posix(), last_line(log))
        for log in sorted(logs.rglob("*.log"))
        if log.stat().st_mtime >= started and not _finished(log, logs, run)
    ]


def seconds_left(jobs: list[tuple[str, bool]], costs: pd.DataFrame) -> float | None:
    """Job seconds of the jobs to do, each at its rule's median finished wall time."""
    if costs.empty:
        return None
    by_rule = costs.groupby("rule")["wall_s"].median().to_dict()
    overall = statistics.median(costs["wall_s"])
    return float(sum(by_rule.get(rule, overall) for rule, runs in jobs if runs and rule != "all"))


def run_status(repo: Path, run: str) -> RunStatus:
    """The status of the run folder ``run`` of the repository ``repo``."""
    configs = run_configs(repo)
    if run not in configs:
        known = ", ".join(sorted(configs)) or "none yet"
        raise StatusError(f"no config's run folder is {run!r} (run folders: {known})")
    config = configs[run]
    stages = jobstats.rule_stages(repo / "rules")
    jobs = planned_jobs(repo, config)
    logs = repo / logs_folder(run)
    costs = (
        jobstats.job_costs(repo / run, logs, stages)
        if logs.is_dir()
        else pd.DataFrame(columns=jobstats.JOB_COLUMNS)
    )
    return RunStatus(
        run,
        config,
        stage_table(jobs, stages),
        running_logs(repo, logs, repo / run),
        seconds_left(jobs, costs),
    )


def status_lines(status: RunStatus) -> list[str]:
    """The status as text."""
    done, to_do = int(status.stages["done"].sum()), int(status.stages["to_do"].sum())
    lines = [f"{status.run} ({status.config}): {done} jobs done, {to_do} to do"]
    lines += status.stages.to_string(index=False).splitlines()
    if status.running:
        lines.append("jobs running now (or stopped), with their last log line:")
        lines += [f"  {log}: {line}" for log, line in status.running]
    if to_do == 0:
        lines.append("nothing left to do")
    elif status.seconds_left is None:
        lines.append("time left: unknown (no job of this run has finished yet)")
    else:
        minutes = status.seconds_left / 60
        lines.append(
            f"time left: about {minutes:.1f} min of job time (each job to do at its rule's "
            "median in this run; parallel jobs share it)"
        )
    return lines
