"""``hierbench status``: where a run stands, per stage, while it runs or after.

The jobs come from ``snakemake --dag`` on the run's config (done: jobs Snakemake would not
run; to do: the others), each rule's stage from ``rules/<stage>.smk``. The jobs running now
are those whose outputs Snakemake marks incomplete (``.snakemake/incomplete``) while a Snakemake
works on the run, the failed ones those the newest Snakemake log of the run names; with no
Snakemake live on the run (Ctrl-C, a kill), its jobs still marked incomplete ended with it, and
are failed, never running, and to do again (``--dag`` draws one that wrote its outputs before
it ended as done; Snakemake reruns it). The last line of each one's log is shown, and every path
as it opens from the folder the command was typed in. The time
left is each job to do costed at the median wall time of its rule's finished jobs in this run
(the median of every finished job for a rule not seen yet): job seconds, which parallel jobs
share. A rule no job of this run has finished yet is costed from Snakemake's own records of
jobs that wrote into the run folder before (``.snakemake/metadata``: rule, start and end), which
outlive the run folder: a run of the same config started anew is costed from the earlier one.
"""

from __future__ import annotations

import base64
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from hierbench import jobcost
from hierbench.runlogs import INFO_PREFIX
from hierbench.runs import logs_folder
from hierbench.runtools import jobstats
from hierbench.runtools.configs import run_configs, run_logs, shown_path
from hierbench.runtools.dag import dag_jobs
from hierbench.runtools.resume import live_runs
from hierbench.shipped import rules_folder, snakefile_arguments

SCHEDULING_LINE = "Provided cores:"  # a run that executes jobs logs its cores; a dry run does not
INCOMPLETE = Path(".snakemake/incomplete")  # Snakemake's markers of outputs being written
METADATA = Path(".snakemake/metadata")  # Snakemake's record of each output's job (rule, times)
# A failed job in a Snakemake log: "Error in rule X:" ... "log: PATH (check log file(s) ...)".
FAILED_JOB_LOG = re.compile(r"^\s+log: (\S+) \(check log file", re.MULTILINE)
# A job in a Snakemake log: "rule X:" (or "localrule X:"), then indented lines, "output: A, B".
JOB_RULE = re.compile(r"^(?:local)?rule (?P<rule>\w+):$")
JOB_OUTPUT = "    output: "
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


TARGET_RULE = "all"  # the Snakefile's target: a job Snakemake counts, the last of the report


class StatusError(ValueError):
    """A run whose status cannot be read; the message says why."""


@dataclass(frozen=True)
class RunStatus:
    """Jobs per stage, the jobs running now and the job time left."""

    run: str
    config: str
    stages: pd.DataFrame  # stage, done, to_do
    running: list[tuple[str, str]]  # (log file, its last line), or (output, NO_LOG_YET)
    failed: list[tuple[str, str]]  # (log file, its last line) of the newest run's failed jobs
    seconds_left: float | None
    from_earlier: bool = False  # some jobs to do costed from an earlier run of the folder


def planned_jobs(repo: Path, config: str, attempts: int = 3) -> list[tuple[str, bool]]:
    """``(rule, will run)`` of every job of the run's DAG (``snakemake --dag``), asked again
    when a live run replaced a file while Snakemake read it."""
    snakemake = Path(sys.executable).with_name("snakemake")
    for attempt in range(1, attempts + 1):
        result = subprocess.run(
            [str(snakemake), *snakefile_arguments(repo), "--dag", "--configfile", config],
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
    """Jobs done and to do per stage, in pipeline order; the target rule counts as a job of
    the report, so the totals are the job counts Snakemake and ``hierbench runs`` give."""
    stage_of = {**stages, TARGET_RULE: STAGE_ORDER[-1]}
    rows = [
        {"stage": stage_of.get(rule, jobstats.NO_STAGE), "done": int(not runs), "to_do": int(runs)}
        for rule, runs in jobs
    ]
    frame = pd.DataFrame(rows, columns=["stage", "done", "to_do"])
    table = frame.groupby("stage", as_index=False)[["done", "to_do"]].sum()
    rank = {stage: index for index, stage in enumerate(STAGE_ORDER)}
    order = table["stage"].map(lambda stage: (rank.get(stage, len(rank)), stage))
    return table.iloc[order.argsort(kind="stable")].reset_index(drop=True)


SHOWN_CHARACTERS = 120  # of a log line, at most


def last_line(path: Path) -> str:
    """The last line of a log file that says something: non-empty and not indented (the
    source line Python prints under a warning is), its time and logger left out of an INFO
    line, cut to ``SHOWN_CHARACTERS``; a progress bar's newest state (after its last ``\\r``).
    The CPU split a job appends as it exits is not what it said, and is passed over."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()  # "\r" too
    said = [
        line
        for line in lines
        if line.strip() and not line[0].isspace() and not line.startswith(jobcost.LINE_PREFIX)
    ]
    chosen = said or [line for line in lines if line.strip()]
    line = INFO_PREFIX.sub("", chosen[-1].strip()) if chosen else ""
    return line if len(line) <= SHOWN_CHARACTERS else line[: SHOWN_CHARACTERS - 1] + "…"


def newest_run_log(repo: Path, run: str) -> str | None:
    """The newest Snakemake log of the folder that ran jobs of the run folder ``run`` (dry
    runs and DAG printouts, which schedule nothing, and other runs' logs left out)."""
    return next(
        (text for named, text in run_logs(repo) if named == run and SCHEDULING_LINE in text),
        None,
    )


def log_jobs(run_log: str | None) -> list[tuple[str, list[str]]]:
    """``(rule, outputs)`` of each job a Snakemake log started, in its order."""
    jobs: list[tuple[str, list[str]]] = []
    rule = None
    for line in (run_log or "").splitlines():
        started = JOB_RULE.match(line)
        if started:
            rule = started["rule"]
        elif rule is not None and line.startswith(JOB_OUTPUT):
            jobs.append((rule, line.removeprefix(JOB_OUTPUT).split(", ")))
            rule = None
        elif not line.startswith(" "):
            rule = None
    return jobs


def ended_written_jobs(
    jobs: list[tuple[str, list[str]]], marked: set[str], exists: Callable[[str], bool]
) -> Counter[str]:
    """Per rule, the jobs a stopped run ended after they wrote every output: Snakemake still
    marks their outputs incomplete (they run again) though ``--dag`` draws them done."""
    return Counter(
        rule
        for rule, outputs in jobs
        if marked.intersection(outputs) and all(exists(output) for output in outputs)
    )


def with_ended(jobs: list[tuple[str, bool]], ended: Counter[str]) -> list[tuple[str, bool]]:
    """The DAG's jobs with, per rule, as many of its done jobs as ``ended`` counts to do
    again, so the counts are those of the run that continues it."""
    left, flipped = Counter(ended), []
    for rule, runs in jobs:
        again = not runs and left[rule] > 0
        left[rule] -= again
        flipped.append((rule, runs or again))
    return flipped


def snakemake_marked(folder: Path) -> Iterator[tuple[str, Path]]:
    """``(output path, file)`` of each of Snakemake's per-output files in ``folder``
    (``.snakemake/incomplete``, ``.snakemake/metadata``): a file is named by the base64 of
    its output's path, a long name split into folders each starting with "@"."""
    for marker in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if marker.is_file():
            parts = marker.relative_to(folder).parts
            encoded = "".join(part.removeprefix("@") for part in parts)
            try:
                output = base64.urlsafe_b64decode(encoded).decode(errors="replace")
            except ValueError:  # not one of Snakemake's names (binascii.Error is one)
                continue
            yield output, marker


def incomplete_jobs(repo: Path, run: str) -> list[tuple[str | None, list[str]]]:
    """The run's outputs Snakemake marks incomplete (those of the jobs running now, or
    killed), grouped by the cluster job id the marker holds; a local job's outputs (no id)
    each on their own."""
    prefix, jobs = f"{run}/", {}
    for output, marker in snakemake_marked(repo / INCOMPLETE):
        if not output.startswith(prefix):
            continue
        try:
            job_id = json.loads(marker.read_text(encoding="utf-8")).get("external_jobid")
        except (OSError, ValueError, AttributeError):  # not a marker this reader knows
            job_id = None
        key = (str(job_id), "") if job_id is not None else (None, output)
        jobs.setdefault(key, []).append(output)
    return [(job_id, sorted(outputs)) for (job_id, _), outputs in sorted(jobs.items(), key=str)]


def earlier_costs(repo: Path, run: str) -> pd.DataFrame:
    """``rule`` and ``wall_s`` of each job Snakemake recorded as having written into the run
    folder (its end time less its start time), one row per job, jobs of an earlier run of
    the folder included: those records outlive the run folder."""
    prefix, jobs = f"{run}/", {}
    for output, marker in snakemake_marked(repo / METADATA):
        if not output.startswith(prefix):
            continue
        try:
            record = json.loads(marker.read_text(encoding="utf-8"))
            rule, start, end = record["rule"], float(record["starttime"]), float(record["endtime"])
        except (OSError, ValueError, KeyError, TypeError):  # not a record this reader knows
            continue
        if not record.get("incomplete") and end >= start:
            jobs[(rule, start, end)] = end - start  # a job's outputs share its times
    rows = [{"rule": rule, "wall_s": wall} for (rule, _, _), wall in sorted(jobs.items())]
    return pd.DataFrame(rows, columns=["rule", "wall_s"])


NO_LOG_YET = "(no log yet: cluster job {job}, queued or starting)"


def _with_last_line(logs: list[Path], here: Path) -> list[tuple[str, str]]:
    """Each existing log, as it opens from ``here``, with its last line."""
    return [(shown_path(log, here), last_line(log)) for log in logs if log.is_file()]


def running_logs(
    repo: Path, logs: Path, run: str, here: Path | None = None
) -> list[tuple[str, str]]:
    """The logs of the jobs running now (each job's log mirrors one of its incomplete
    outputs) with their last line; a cluster job with no log yet by its first output (in
    sorted order) and ``NO_LOG_YET``; each path as it opens from ``here`` (default: ``repo``)."""
    prefix, found, here = f"{run}/", [], here or repo
    for job_id, outputs in incomplete_jobs(repo, run):
        mirrored = [logs / f"{output.removeprefix(prefix)}.log" for output in outputs]
        written = _with_last_line(mirrored, here)
        if not written and job_id is not None:
            more = f" (+{len(outputs) - 1} more)" if len(outputs) > 1 else ""
            first = shown_path(repo / outputs[0], here)
            written = [(first + more, NO_LOG_YET.format(job=job_id))]
        found += written
    return sorted(set(found))


def failed_logs(repo: Path, run_log: str | None, here: Path | None = None) -> list[tuple[str, str]]:
    """The logs of the jobs that failed in the newest run, from its Snakemake log, each as it
    opens from ``here`` (default: ``repo``)."""
    if run_log is None:
        return []
    named = FAILED_JOB_LOG.findall(run_log)
    return _with_last_line([repo / path for path in dict.fromkeys(named)], here or repo)


def seconds_left(
    jobs: list[tuple[str, bool]], costs: pd.DataFrame, earlier: pd.DataFrame | None = None
) -> tuple[float | None, bool]:
    """Job seconds of the jobs to do, each at its rule's median finished wall time in this run,
    else in the ``earlier`` jobs of the folder, else at the median of every finished job; and
    whether an earlier job's time was used."""
    earlier = earlier if earlier is not None else costs.iloc[:0]
    pool = costs if not costs.empty else earlier
    if pool.empty:
        return None, False
    own = costs.groupby("rule")["wall_s"].median().to_dict()
    before = earlier.groupby("rule")["wall_s"].median().to_dict()
    overall = statistics.median(pool["wall_s"])
    to_do = [rule for rule, runs in jobs if runs and rule != TARGET_RULE]
    seconds = sum(own.get(rule, before.get(rule, overall)) for rule in to_do)
    used_earlier = costs.empty or any(rule not in own and rule in before for rule in to_do)
    return float(seconds), used_earlier


def run_status(repo: Path, run: str, here: Path | None = None) -> RunStatus:
    """The status of the run folder ``run`` of the repository ``repo``, its paths as they
    open from ``here`` (default: ``repo``). With no Snakemake live on the run, the jobs it
    marked incomplete ended with it (Ctrl-C, a kill): failed, and to do again."""
    configs = run_configs(repo)  # a run folder not made yet included
    if run not in configs:
        known = ", ".join(sorted(configs)) or "none yet"
        raise StatusError(f"no config's run folder is {run!r} (run folders: {known})")
    config, here = configs[run], here or repo
    stages = jobstats.rule_stages(rules_folder(repo))
    jobs = planned_jobs(repo, config)
    logs = repo / logs_folder(run)
    jobs, running, failed = jobs_now(repo, run, here, jobs)
    costs = (
        jobstats.job_costs(repo / run, logs, stages)
        if logs.is_dir()
        else pd.DataFrame(columns=jobstats.JOB_COLUMNS)
    )
    uncosted = {rule for rule, runs in jobs if runs and rule != TARGET_RULE} - set(costs["rule"])
    earlier = earlier_costs(repo, run) if uncosted else None  # Snakemake's records, read if needed
    return RunStatus(
        shown_path(repo / run, here),
        shown_path(repo / config, here),
        stage_table(jobs, stages),
        running,
        failed,
        *seconds_left(jobs, costs, earlier),
    )


def jobs_now(
    repo: Path, run: str, here: Path, jobs: list[tuple[str, bool]]
) -> tuple[list[tuple[str, bool]], list[tuple[str, str]], list[tuple[str, str]]]:
    """The DAG's ``jobs``, the jobs running now and the failed ones. With no Snakemake live
    on the run, the jobs it marked incomplete ended with it (Ctrl-C, a kill): failed, never
    running, and to do again; live (or where ``/proc`` cannot tell), they run."""
    run_log = newest_run_log(repo, run)
    marked = running_logs(repo, repo / logs_folder(run), run, here)
    failed = failed_logs(repo, run_log, here)
    live = live_runs(repo)
    if live is None or run in live:
        return jobs, not_failed(marked, failed), failed
    outputs = {output for _, found in incomplete_jobs(repo, run) for output in found}
    ended = ended_written_jobs(log_jobs(run_log), outputs, lambda out: (repo / out).exists())
    return with_ended(jobs, ended), [], [*failed, *not_failed(marked, failed)]


def not_failed(
    running: list[tuple[str, str]], failed: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The running jobs less those the newest run reports failed: a job stopped by Ctrl-C
    leaves its outputs marked incomplete, and is a failed job, not a running one."""
    ended = {log for log, _ in failed}
    return [(log, line) for log, line in running if log not in ended]


def status_record(status: RunStatus) -> dict[str, Any]:
    """The status as plain data (``hierbench status --json``)."""
    stages = status.stages.astype({"done": int, "to_do": int}).to_dict(orient="records")
    return {
        "run": status.run,
        "config": status.config,
        "jobs_done": sum(stage["done"] for stage in stages),
        "jobs_to_do": sum(stage["to_do"] for stage in stages),
        "stages": stages,
        "running": [{"log": log, "last_line": line} for log, line in status.running],
        "failed": [{"log": log, "last_line": line} for log, line in status.failed],
        "seconds_left": status.seconds_left,
        "seconds_left_from_earlier_run": status.from_earlier,
    }


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
        lines.append("time left: unknown (no job of this run folder has finished yet)")
    else:
        where = "this run" + (" or an earlier run of this folder" if status.from_earlier else "")
        lines.append(
            f"time left: about {status.seconds_left / 60:.1f} min of job time (each job to do "
            f"at its rule's median in {where}; parallel jobs share it)"
        )
    return lines
