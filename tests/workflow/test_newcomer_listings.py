"""What `hierbench runs` and `hierbench status` say of a newcomer's runs (issue #62): the
installed wheel, projects under a folder whose name holds a space, every command typed in
another folder. A run is listed in its state (complete, running, stopped) with the config the
user gave `hierbench run`; after Ctrl-C the jobs it ended are failed, never running, and both
commands count the same jobs done; every path printed opens from the folder the command was
typed in, so two projects' runs of the same name read apart."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from installed import Newcomer, command_env

pytestmark = pytest.mark.slow

RUN = "runs/beetles"  # the run folder init-dataset names, beside its config


def listed(newcomer: Newcomer, run: Path) -> dict[str, Any]:
    """The row `hierbench runs --json`, typed in the other folder, gives the run folder."""
    runs = newcomer.hierbench("runs", "--json")
    assert runs.returncode == 0, runs.stderr
    [row] = [row for row in json.loads(runs.stdout) if row["name"] == str(run)]
    return row


def status_of(newcomer: Newcomer, run: Path, cwd: Path | None = None) -> dict[str, Any]:
    """`hierbench status RUN --json` typed in ``cwd`` (default: the other folder)."""
    status = newcomer.hierbench("status", str(run), "--json", cwd=cwd)
    assert status.returncode == 0, status.stderr
    return json.loads(status.stdout)


def test_a_finished_run_is_complete_with_the_users_config(newcomer, newcomer_run):
    config, ran = newcomer_run
    assert ran.returncode == 0, ran.stderr[-3000:]
    run = config.parent / RUN
    row = listed(newcomer, run)
    assert (row["state"], row["config"]) == ("complete", str(config))
    assert row["jobs_planned"] and row["jobs_done"] == row["jobs_planned"]
    table = newcomer.hierbench("runs").stdout  # columns padded with spaces
    pattern = rf"(^|\s){re.escape(str(run))}\s+{re.escape(str(config))}\s+complete\s"
    assert re.search(pattern, table, re.MULTILINE), table


def test_status_prints_paths_that_open_from_where_it_is_typed(newcomer, newcomer_run):
    config, _ = newcomer_run
    run = config.parent / RUN
    typed = newcomer.hierbench("status", str(run))
    assert typed.returncode == 0, typed.stderr
    assert typed.stdout.startswith(f"{run} ({config}): "), typed.stdout
    assert ", 0 to do" in typed.stdout.splitlines()[0]
    record = status_of(newcomer, run)
    assert (record["run"], record["config"]) == (str(run), str(config))
    assert record["jobs_done"] == listed(newcomer, run)["jobs_done"]
    inside = status_of(newcomer, Path(RUN), cwd=config.parent)  # typed in the project folder
    assert (inside["run"], inside["config"]) == (RUN, "config.yaml")


def _run_in_background(newcomer: Newcomer, config: Path) -> subprocess.Popen[str]:
    """`hierbench run CONFIG --cores 2` typed in the other folder, in a process group of its
    own (the terminal's foreground job: Ctrl-C reaches it, not pytest)."""
    return subprocess.Popen(
        [str(newcomer.venv / "bin/hierbench"), "run", str(config), "--cores", "2"],
        cwd=newcomer.elsewhere,
        env=command_env(newcomer.venv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # Ctrl-C as in a terminal, even where the suite itself runs with SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for_jobs(process: subprocess.Popen[str], log: Path, jobs: int) -> None:
    """Wait until the run's log says ``jobs`` jobs are done (the run still going)."""
    deadline = time.monotonic() + 300
    while not (log.is_file() and f"\n{jobs} of " in log.read_text(encoding="utf-8")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run did not get that far in 5 minutes"
        time.sleep(0.2)


def test_a_run_stopped_by_ctrl_c_is_listed_stopped_its_ended_jobs_failed(
    newcomer, newcomer_run, held_out_genera
):
    first, _ = newcomer_run
    config = held_out_genera  # a project of its own, stopped then resumed to its end
    run = config.parent / RUN
    process = _run_in_background(newcomer, config)
    try:
        _wait_for_jobs(process, run / "logs/snakemake.log", 2)
        live = listed(newcomer, run)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in the terminal it was typed in
        _, err = process.communicate(timeout=300)
    assert (live["state"], live["config"]) == ("running", str(config))
    assert process.returncode == 130, err
    stopped = re.search(r"^stopped: (\d+) of (\d+) jobs done", err, re.MULTILINE)
    assert stopped, err

    row = listed(newcomer, run)
    assert (row["state"], row["config"]) == ("stopped", str(config))
    done, planned = row["jobs_done"], row["jobs_planned"]
    assert done >= int(stopped[1]) >= 2 and planned == int(stopped[2])  # a job may end after
    status = status_of(newcomer, run)
    assert status["running"] == [], status
    assert (status["jobs_done"], status["jobs_done"] + status["jobs_to_do"]) == (done, planned)
    for job in status["failed"]:  # each opens from here
        assert Path(job["log"]).is_absolute() and Path(job["log"]).is_file(), job

    # two projects, each run folder runs/beetles: every listing keeps them apart
    other = first.parent / RUN
    assert listed(newcomer, other)["config"] == str(first)
    header = newcomer.hierbench("status", str(run)).stdout.splitlines()[0]
    assert header.startswith(f"{run} ({config}): {done} jobs done"), header
    assert str(other) not in header and str(first) not in header

    resumed = newcomer.hierbench("resume", str(run))  # finishes it, from the other folder
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert listed(newcomer, run)["state"] == "complete"
