"""``hierbench status``: where a run stands, per stage, while it runs or after.

The jobs come from ``snakemake --dag`` on the run's config (done: jobs Snakemake would not
run; to do: the others), each rule's stage from ``rules/<stage>.smk``. The jobs running now
are those whose outputs Snakemake marks incomplete (``.snakemake/incomplete``), the failed ones
those the newest run's Snakemake log names; the last line of each one's log is shown. The time
left is each job to do costed at the median wall time of its rule's finished jobs in this run
(the median of every finished job for a rule not seen yet): job seconds, which parallel jobs
share.
"""

from __future__ import annotations

import base64
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hierbench.runs import logs_folder
from hierbench.runtools import jobstats
from hierbench.runtools.rebuild import dag_jobs
from hierbench.runtools.runs_table import SNAKEMAKE_LOGS, run_configs

SCHEDULING_LINE = "Provided cores:"  # a run that executes jobs logs its cores; a dry run does not
INCOMPLETE = Path(".snakemake/incomplete")  # Snakemake's markers of outputs being written
# A failed job in a Snakemake log: "Error in rule X:" ... "log: PATH (check log file(s) ...)".
FAILED_JOB_LOG = re.compile(r"^\s+log: (\S+) \(check log file", re.MULTILINE)
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
    failed: list[tuple[str, str]]  # (log file, its last line) of the newest run's failed jobs
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


def newest_run_log(repo: Path) -> str | None:
    """The newest Snakemake log of the folder that ran jobs (dry runs and DAG printouts, which
    schedule nothing, left out)."""
    folder = repo / SNAKEMAKE_LOGS
    for log in sorted(folder.glob("*.snakemake.log"), reverse=True) if folder.is_dir() else []:
        text = log.read_text(encoding="utf-8", errors="replace")
        if SCHEDULING_LINE in text:
            return text
    return None


def incomplete_outputs(repo: Path) -> list[str]:
    """The outputs Snakemake marks incomplete: those of the jobs running now (or killed)."""
    folder = repo / INCOMPLETE
    found = []
    for marker in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if marker.is_file():
            parts = marker.relative_to(folder).parts  # long names split, "@" before each piece
            encoded = "".join(part.removeprefix("@") for part in parts)
            found.append(base64.urlsafe_b64decode(encoded).decode(errors="replace"))
    return found


def _with_last_line(repo: Path, logs: list[Path]) -> list[tuple[str, str]]:
    """Each existing log, relative to ``repo``, with its last line."""
    return [(log.relative_to(repo).as_posix(), last_line(log)) for log in logs if log.is_file()]


def running_logs(repo: Path, logs: Path, run: str) -> list[tuple[str, str]]:
    """The logs of the jobs running now: the log each incomplete output of the run mirrors."""
    prefix = f"{run}/"
    mirrored = [
        logs / f"{output.removeprefix(prefix)}.log"
        for output in incomplete_outputs(repo)
        if output.startswith(prefix)
    ]
    return _with_last_line(repo, sorted(set(mirrored)))


def failed_logs(repo: Path, run_log: str | None) -> list[tuple[str, str]]:
    """The logs of the jobs that failed in the newest run, from its Snakemake log."""
    if run_log is None:
        return []
    named = FAILED_JOB_LOG.findall(run_log)
    return _with_last_line(repo, [repo / path for path in dict.fromkeys(named)])


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
        running_logs(repo, logs, run),
        failed_logs(repo, newest_run_log(repo)),
        seconds_left(jobs, costs),
    )


def status_lines(status: RunStatus) -> list[str]:
    """The status as text."""
    done, to_do = int(status.stages["done"].sum()), int(status.stages["to_do"].sum())
    lines = [f"{status.run} ({status.config}): {done} jobs done, {to_do} to do"]
    lines += status.stages.to_string(index=False).splitlines()
    for title, found in (("running now", status.running), ("failed", status.failed)):
        if found:
            lines.append(f"jobs {title}, with their last log line:")
            lines += [f"  {log}: {line}" for log, line in found]
    if to_do == 0 and not status.running:
        lines.append("nothing left to do")
    elif to_do == 0:
        lines.append("time left: the jobs running now")
    elif status.seconds_left is None:
        lines.append("time left: unknown (no job of this run has finished yet)")
    else:
        minutes = status.seconds_left / 60
        lines.append(
            f"time left: about {minutes:.1f} min of job time (each job to do at its rule's "
            "median in this run; parallel jobs share it)"
        )
    return lines
