"""``hierbench status``: jobs done and to do per stage, the jobs running (or stopped) with their
last log line, and the job time left from the run's own finished jobs; on a finished run, a run
with jobs to do, and a run whose job failed."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import SNAKEMAKE, TINY_LOGS, TINY_RUN

from hierbench.runtools.status import (
    RunStatus,
    running_logs,
    seconds_left,
    stage_table,
    status_lines,
)

STAGES = {"fit": "training", "score": "evaluation", "tables": "report", "all": "report"}


def test_jobs_per_stage_in_pipeline_order():
    jobs = [("tables", True), ("score", False), ("score", True), ("fit", False), ("all", True)]
    table = stage_table(jobs, STAGES)
    assert table.to_dict("list") == {
        "stage": ["training", "evaluation", "report"],
        "done": [1, 1, 0],
        "to_do": [0, 1, 1],
    }


def test_time_left_is_each_job_at_its_rules_median():
    costs = pd.DataFrame({"rule": ["fit", "fit", "fit", "score"], "wall_s": [10.0, 20, 90, 4]})
    jobs = [("fit", True), ("score", True), ("tables", True), ("fit", False)]
    assert seconds_left(jobs, costs) == 20 + 4 + 15  # tables: the median of every job, 15
    assert seconds_left(jobs, costs.iloc[:0]) is None


def test_a_job_log_without_a_benchmark_since_the_run_began_is_running(tmp_path: Path):
    (tmp_path / ".snakemake/log").mkdir(parents=True)
    old = tmp_path / "logs/a/done.parquet.log"
    old.parent.mkdir(parents=True)
    old.write_text("finished\n")
    past = time.time() - 60
    os.utime(old, (past, past))
    started = dt.datetime.fromtimestamp(time.time() - 30).strftime("%Y-%m-%dT%H%M%S.%f")
    (tmp_path / f".snakemake/log/{started}.snakemake.log").write_text(
        "Building DAG\nProvided cores: 2\n"
    )
    later = dt.datetime.fromtimestamp(time.time() + 5).strftime("%Y-%m-%dT%H%M%S.%f")
    (tmp_path / f".snakemake/log/{later}.snakemake.log").write_text(
        "Building DAG\nJob stats:\n"
    )  # dry: skipped
    (tmp_path / "logs/a/cell.parquet.benchmark.tsv").write_text("s\n1\n")  # the last run's
    os.utime(tmp_path / "logs/a/cell.parquet.benchmark.tsv", (past, past))
    live = tmp_path / "logs/a/cell.parquet.log"
    live.write_text("epoch 1/3\nepoch 2/3\n\n")
    finished = tmp_path / "logs/a/table.parquet.log"
    finished.write_text("wrote it\n")
    (tmp_path / "logs/a/table.parquet.benchmark.tsv").write_text("s\n1\n")
    quiet = tmp_path / "logs/a/figure.png.log"  # a job without a benchmark, its output recorded
    quiet.write_text("drew it\n")
    (tmp_path / "results/a").mkdir(parents=True)
    (tmp_path / "results/a/figure.png.prov.json").write_text("{}")
    found = running_logs(tmp_path, tmp_path / "logs", tmp_path / "results")
    assert found == [("logs/a/cell.parquet.log", "epoch 2/3")]


def test_the_lines_say_what_is_left():
    stages = pd.DataFrame({"stage": ["training"], "done": [2], "to_do": [3]})
    lines = status_lines(
        RunStatus("runs/x", "configs/x.yaml", stages, [("l.log", "epoch 2/3")], 150)
    )
    assert lines[0] == "runs/x (configs/x.yaml): 2 jobs done, 3 to do"
    assert "  l.log: epoch 2/3" in lines and "about 2.5 min of job time" in lines[-1]


@pytest.mark.slow
def test_status_of_a_finished_a_running_and_a_failed_run(built_repo: Path):
    finished = status_in(built_repo)
    assert ", 0 to do" in finished.splitlines()[0] and "nothing left to do" in finished
    assert "running now" not in finished
    # running: a real run of the tiny config, its factorial retrained in the background
    (built_repo / f"{TINY_RUN}/cub/cells/ER-42/model.safetensors").unlink()
    env = {**os.environ, "PYTHONPATH": str(built_repo / "src"), "HF_HUB_OFFLINE": "1"}
    run = subprocess.Popen(
        [SNAKEMAKE, "--cores", "2", "--configfile", "configs/tiny.yaml"],
        cwd=built_repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen = []
    try:
        while run.poll() is None and not any("running now" in text for text in seen):
            seen.append(status_in(built_repo))
    finally:
        run.wait(timeout=600)
    live = next(text for text in seen if "running now" in text)
    assert ", 0 to do" not in live.splitlines()[0] and "time left: about" in live
    assert f"{TINY_LOGS}/" in live.split("running now", 1)[1]
    assert run.returncode == 0 and "nothing left to do" in status_in(built_repo)
    # failed: a job's log written after the run began, its job never finished
    broken = built_repo / TINY_LOGS / "cub/tables/summary.md.log"
    (built_repo / f"{TINY_RUN}/cub/tables/summary.md").unlink()
    broken.write_text("starting\nValueError: something went wrong\n")
    failed = status_in(built_repo)
    assert f"{TINY_LOGS}/cub/tables/summary.md.log: ValueError: something went wrong" in failed
    assert "time left: about" in failed


def status_in(repo: Path) -> str:
    """``hierbench status runs/tiny`` run in ``repo`` (its own library first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "hierbench.cli", "status", TINY_RUN],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
