"""``hierbench status``: jobs done and to do per stage, the jobs running (or stopped) with their
last log line, and the job time left from the run's own finished jobs (or an earlier run's); on a
finished run, a running one, a run whose job failed, and one started anew."""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from conftest import SNAKEMAKE, TINY_LOGS, TINY_RUN

from hierbench.runlogs import INFO_PREFIX, LOG_FORMAT
from hierbench.runtools import status
from hierbench.runtools.status import (
    NO_LOG_YET,
    RunStatus,
    earlier_costs,
    ended_written_jobs,
    failed_logs,
    jobs_now,
    last_line,
    log_jobs,
    newest_run_log,
    not_failed,
    running_logs,
    seconds_left,
    stage_table,
    status_lines,
    status_record,
    with_ended,
)

STAGES = {"fit": "training", "score": "evaluation", "tables": "report", "all": "report"}


def test_jobs_per_stage_in_pipeline_order():
    """The target rule is a job as Snakemake counts it: one count everywhere."""
    jobs = [("tables", True), ("score", False), ("score", True), ("fit", False), ("all", True)]
    table = stage_table(jobs, {key: value for key, value in STAGES.items() if key != "all"})
    assert table.to_dict("list") == {
        "stage": ["training", "evaluation", "report"],
        "done": [1, 1, 0],
        "to_do": [0, 1, 2],
    }
    assert int(table[["done", "to_do"]].to_numpy().sum()) == len(jobs)


def test_time_left_is_each_job_at_its_rules_median():
    costs = pd.DataFrame({"rule": ["fit", "fit", "fit", "score"], "wall_s": [10.0, 20, 90, 4]})
    jobs = [("fit", True), ("score", True), ("tables", True), ("fit", False)]
    assert seconds_left(jobs, costs) == (20 + 4 + 15, False)  # tables: every job's median, 15
    assert seconds_left(jobs, costs.iloc[:0]) == (None, False)


def test_rules_not_run_yet_are_costed_from_an_earlier_run_of_the_folder():
    costs = pd.DataFrame({"rule": ["fit", "fit"], "wall_s": [10.0, 30]})
    earlier = pd.DataFrame({"rule": ["fit", "score", "score"], "wall_s": [99.0, 6, 8]})
    jobs = [("fit", True), ("score", True), ("tables", True)]
    assert seconds_left(jobs, costs, earlier) == (20 + 7 + 20, True)  # fit: this run's
    assert seconds_left([("fit", True)], costs, earlier) == (20, False)
    assert seconds_left(jobs, costs.iloc[:0], earlier) == (99 + 7 + 8, True)  # all earlier


def _metadata(repo: Path, output: str, record: dict) -> None:
    """A Snakemake metadata record of ``output`` (named by its path's base64)."""
    name = base64.urlsafe_b64encode(output.encode()).decode()
    path = repo / ".snakemake/metadata" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def test_earlier_jobs_come_from_snakemakes_records_of_the_run_folder(tmp_path: Path):
    fit = {"rule": "fit", "starttime": 100.0, "endtime": 130.0, "incomplete": False}
    _metadata(tmp_path, "runs/x/cub/cells/E/model.safetensors", fit)
    _metadata(tmp_path, "runs/x/cub/cells/E/record.json", fit)  # the same job's other output
    _metadata(tmp_path, "runs/x/cub/tables/a.md", {"rule": "tables", "starttime": 5, "endtime": 9})
    _metadata(tmp_path, "runs/other/a.md", {"rule": "tables", "starttime": 0, "endtime": 50})
    _metadata(tmp_path, "runs/x/cub/b.md", {"rule": "tables", "starttime": None, "endtime": 1})
    _metadata(tmp_path, "runs/x/cub/c.md", {**fit, "incomplete": True})
    (tmp_path / ".snakemake/metadata/not-base64!").write_text("{}")
    assert earlier_costs(tmp_path, "runs/x").to_dict("list") == {
        "rule": ["fit", "tables"],
        "wall_s": [30.0, 4.0],
    }
    assert earlier_costs(tmp_path / "nothing", "runs/x").empty


def test_running_jobs_are_snakemakes_incomplete_outputs_and_failed_ones_its_log(tmp_path: Path):
    logs = tmp_path / "runs/x/logs"
    (logs / "cub/cells").mkdir(parents=True)
    (logs / "cub/cells/ER-42.parquet.log").write_text("epoch 1/3\nepoch 2/3\n\n")
    (logs / "cub/tables/summary.md.log").parent.mkdir(parents=True)
    (logs / "cub/tables/summary.md.log").write_text("starting\nValueError: no rows\n")
    long_name = "runs/x/cub/cells/ER-42.parquet"
    encoded = base64.urlsafe_b64encode(long_name.encode()).decode()
    marker = tmp_path / ".snakemake/incomplete" / f"@{encoded[:10]}" / encoded[10:]
    marker.parent.mkdir(parents=True)  # a long name is split into "@"-prefixed folders
    marker.write_text("{}")
    other = base64.urlsafe_b64encode(b"runs/other/a.parquet").decode()
    (tmp_path / ".snakemake/incomplete" / other).write_text("{}")  # another run's output
    for output in ("runs/x/cub/eval/ER-42.parquet", "runs/x/cub/eval/ER-42_summary.parquet"):
        queued = base64.urlsafe_b64encode(output.encode()).decode()  # a cluster job's outputs
        (tmp_path / ".snakemake/incomplete" / queued).write_text('{"external_jobid": "28"}')
    secondary = base64.urlsafe_b64encode(b"runs/x/cub/cells/ER-42.json").decode()
    (tmp_path / ".snakemake/incomplete" / secondary).write_text("{}")  # a local job's 2nd output
    assert running_logs(tmp_path, logs, "runs/x") == [
        ("runs/x/cub/eval/ER-42.parquet (+1 more)", NO_LOG_YET.format(job="28")),
        ("runs/x/logs/cub/cells/ER-42.parquet.log", "epoch 2/3"),
    ]
    scratch = tmp_path.with_name(tmp_path.name + "-scratch")  # a run outside the repository
    outside = base64.urlsafe_b64encode(f"{scratch}/cub/a.parquet".encode()).decode()
    (tmp_path / ".snakemake/incomplete" / outside).write_text('{"external_jobid": "7"}')
    assert running_logs(tmp_path, scratch / "logs", str(scratch)) == [
        (f"{scratch}/cub/a.parquet", NO_LOG_YET.format(job="7"))
    ]
    run_log = (
        "Provided cores: 2\nError in rule effect_tables:\n    jobid: 3\n"
        "    log: runs/x/logs/cub/tables/summary.md.log (check log file(s) for error details)\n"
    )
    assert failed_logs(tmp_path, run_log) == [
        ("runs/x/logs/cub/tables/summary.md.log", "ValueError: no rows")
    ]
    assert failed_logs(tmp_path, None) == []


def test_a_job_the_newest_run_reports_failed_is_not_running():
    """Ctrl-C leaves a job's outputs marked incomplete and the run's log names it failed: it
    is listed once, as failed."""
    running = [("a.log", "epoch 2/3"), ("b.log", "epoch 1/3")]
    failed = [("a.log", "KeyboardInterrupt")]
    assert not_failed(running, failed) == [("b.log", "epoch 1/3")]
    assert not_failed(running, []) == running


def test_the_record_holds_what_the_lines_say():
    stages = pd.DataFrame({"stage": ["splits", "training"], "done": [1, 2], "to_do": [0, 3]})
    status = RunStatus("runs/x", "configs/x.yaml", stages, [("l.log", "e 2")], [], 150.0)
    record = status_record(status)
    assert (record["jobs_done"], record["jobs_to_do"], record["seconds_left"]) == (3, 3, 150.0)
    assert record["stages"][1] == {"stage": "training", "done": 2, "to_do": 3}
    assert record["running"] == [{"log": "l.log", "last_line": "e 2"}] and record["failed"] == []
    assert json.loads(json.dumps(record)) == record


def test_the_lines_say_what_is_left():
    stages = pd.DataFrame({"stage": ["training"], "done": [2], "to_do": [3]})
    lines = status_lines(
        RunStatus("runs/x", "configs/x.yaml", stages, [("l.log", "epoch 2/3")], [], 150)
    )
    assert lines[0] == "runs/x (configs/x.yaml): 2 jobs done, 3 to do"
    assert lines[-3:-1] == ["jobs running now, with their last log line:", "  l.log: epoch 2/3"]
    assert "about 2.5 min of job time" in lines[-1] and "earlier" not in lines[-1]
    earlier = status_lines(RunStatus("runs/x", "configs/x.yaml", stages, [], [], 60, True))
    assert "median in this run or an earlier run of this folder; parallel" in earlier[-1]


def test_a_log_line_is_shown_without_its_time_and_logger_and_cut(tmp_path: Path):
    log = tmp_path / "job.log"
    log.write_text(
        "2026-12-03 06:20:14,618 INFO hierbench.training.trainer: cub ES-42 epoch 3/3\n"
        "2026-12-03 06:20:15,001 WARNING hierbench.x: kept\n"
    )
    assert last_line(log) == "2026-12-03 06:20:15,001 WARNING hierbench.x: kept"
    log.write_text("2026-12-03 06:20:14,618 INFO hierbench.training.trainer: cub epoch 3/3\n")
    assert last_line(log) == "cub epoch 3/3"
    log.write_text("x" * 500)
    assert len(last_line(log)) == 120 and last_line(log).endswith("…")
    log.write_text("INFO x\n/a/b.py:9: FutureWarning: deprecated\n  warnings.warn(\n\n")
    assert last_line(log) == "/a/b.py:9: FutureWarning: deprecated"
    log.write_text("features:  10%|#  | 1/10\rfeatures:  20%|##  | 2/10")  # a progress bar
    assert last_line(log) == "features:  20%|##  | 2/10"
    log.write_text("    only indented\n")
    assert last_line(log) == "only indented"
    log.write_text("")
    assert last_line(log) == ""


@pytest.mark.slow
def test_status_of_a_finished_a_running_and_a_failed_run(built_repo: Path):
    finished = status_in(built_repo)
    assert ", 0 to do" in finished.splitlines()[0] and "nothing left to do" in finished
    record = json.loads(status_in(built_repo, "--json"))
    assert record["jobs_to_do"] == 0 and record["jobs_done"] > 0 and record["running"] == []
    assert "running now" not in finished
    # running: a real run of the tiny config in the background, every table job to do again
    # (the intervals' replicates changed in the config)
    config = built_repo / "configs/tiny.yaml"
    config.write_text(config.read_text() + "\neffects:\n  intervals: {replicates: 4000}\n")
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
    # failed: a run whose table job fails; the job's log and its last line are named
    summary = built_repo / f"{TINY_RUN}/cub/tables/summary.md"
    summary.unlink()
    per_seed = built_repo / f"{TINY_RUN}/cub/eval/ER-42_summary.parquet"
    per_seed.write_bytes(b"not a parquet file")
    assert run_tiny(built_repo).returncode != 0
    failed = status_in(built_repo)
    assert "jobs failed, with their last log line:" in failed
    assert f"{TINY_LOGS}/cub/tables/summary.md.log: " in failed
    assert "time left: about" in failed and "earlier" not in failed
    # started anew: with the run folder (and its timings) gone, every job is to do, costed
    # from Snakemake's records of the folder's earlier run
    shutil.rmtree(built_repo / TINY_RUN)
    anew = status_in(built_repo)
    assert ": 0 jobs done, " in anew.splitlines()[0]
    assert "time left: about" in anew and "or an earlier run of this folder" in anew


def run_tiny(repo: Path) -> subprocess.CompletedProcess[str]:
    """The tiny config run in ``repo`` to its end, its output kept."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [SNAKEMAKE, "--cores", "2", "--configfile", "configs/tiny.yaml"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def status_in(repo: Path, *options: str) -> str:
    """``hierbench status runs/tiny`` run in ``repo`` (its own library first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "hierbench.cli", "status", TINY_RUN, *options],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_info_prefix_matches_what_a_job_log_writes():
    record = logging.LogRecord(
        "hierbench.training.trainer", logging.INFO, "", 0, "epoch 3/3", (), None
    )
    line = logging.Formatter(LOG_FORMAT).format(record)
    assert line != "epoch 3/3" and INFO_PREFIX.sub("", line) == "epoch 3/3"


STOPPED_LOG = """Provided cores: 2
[Sun Dec  6 02:51:42 2026]
localrule image_fingerprint:
    output: runs/b/data/image_files.parquet
    log: runs/b/logs/data/image_files.parquet.log
    jobid: 7
[Sun Dec  6 02:51:44 2026]
localrule taxonomy_table:
    input: runs/b/data/taxonomy_files.parquet, runs/b/data/images.parquet
    output: runs/b/taxonomy/taxonomy.parquet, runs/b/taxonomy/levels.json
    log: runs/b/logs/taxonomy/taxonomy.parquet.log
    jobid: 9
rule train:
    output: runs/b/cells/ER-42.parquet
    jobid: 11
4 of 19 steps (21%) done
Terminating processes on user request, this might take some time.
"""


def test_jobs_a_stopped_run_ended_after_writing_are_to_do_again():
    """Ctrl-C ends a job after it wrote its outputs: Snakemake keeps them marked incomplete
    and reruns the job, while --dag draws it done; a job whose output is missing is to do
    in the DAG already, and is not counted twice."""
    jobs = log_jobs(STOPPED_LOG)
    assert jobs == [
        ("image_fingerprint", ["runs/b/data/image_files.parquet"]),
        ("taxonomy_table", ["runs/b/taxonomy/taxonomy.parquet", "runs/b/taxonomy/levels.json"]),
        ("train", ["runs/b/cells/ER-42.parquet"]),
    ]
    marked = {"runs/b/taxonomy/taxonomy.parquet", "runs/b/cells/ER-42.parquet"}
    written = {"runs/b/data/image_files.parquet", *jobs[1][1]}  # train's output is missing
    ended = ended_written_jobs(jobs, marked, written.__contains__)
    assert ended == {"taxonomy_table": 1}
    assert ended_written_jobs(jobs, marked, lambda output: False) == {}
    dag = [("taxonomy_table", False), ("train", True), ("image_fingerprint", False)]
    assert with_ended(dag, ended) == [
        ("taxonomy_table", True),
        ("train", True),
        ("image_fingerprint", False),
    ]
    assert with_ended(dag, Counter({"train": 1})) == dag  # to do already
    assert log_jobs(None) == []


def test_the_newest_log_of_the_run_is_read_not_another_runs(tmp_path: Path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/a.yaml").write_text("run: runs/a\n")
    (tmp_path / "configs/b.yaml").write_text("run: runs/b\n")
    folder = tmp_path / ".snakemake/log"
    folder.mkdir(parents=True)
    for stamp, config in (("1", "a"), ("2", "b"), ("3", "a")):
        header = f"Config file(s): ['configs/{config}.yaml']\n"
        body = "Provided cores: 2\n" if stamp != "3" else "Building DAG of jobs...\n"
        (folder / f"2026-12-0{stamp}T000000.snakemake.log").write_text(header + body + stamp)
    assert newest_run_log(tmp_path, "runs/a").endswith("1")  # log 3 is a DAG printout
    assert newest_run_log(tmp_path, "runs/b").endswith("2")
    assert newest_run_log(tmp_path, "runs/c") is None


def test_logs_are_shown_as_they_open_from_where_status_is_typed(tmp_path: Path):
    logs = tmp_path / "runs/x/logs"
    (logs / "cub").mkdir(parents=True)
    (logs / "cub/a.parquet.log").write_text("epoch 1/3\n")
    marker = base64.urlsafe_b64encode(b"runs/x/cub/a.parquet").decode()
    (tmp_path / ".snakemake/incomplete").mkdir(parents=True)
    (tmp_path / ".snakemake/incomplete" / marker).write_text("{}")
    elsewhere = tmp_path.with_name(tmp_path.name + "-elsewhere")
    assert running_logs(tmp_path, logs, "runs/x", elsewhere) == [
        (str(logs / "cub/a.parquet.log"), "epoch 1/3")
    ]
    assert running_logs(tmp_path, logs, "runs/x", tmp_path / "runs") == [
        ("x/logs/cub/a.parquet.log", "epoch 1/3")
    ]
    run_log = "    log: runs/x/logs/cub/a.parquet.log (check log file(s) for error details)\n"
    assert failed_logs(tmp_path, run_log, elsewhere) == [
        (str(logs / "cub/a.parquet.log"), "epoch 1/3")
    ]


def test_a_stopped_runs_marked_jobs_are_failed_and_to_do_a_live_runs_are_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/x.yaml").write_text("run: runs/x\n")
    (tmp_path / ".snakemake/log").mkdir(parents=True)
    (tmp_path / ".snakemake/log/2026-12-06T000000.snakemake.log").write_text(
        "Config file(s): ['configs/x.yaml']\nProvided cores: 2\n"
        "localrule make_a:\n    output: runs/x/a.parquet\n    jobid: 1\n"
        "Terminating processes on user request, this might take some time.\n"
    )
    (tmp_path / "runs/x/logs").mkdir(parents=True)
    (tmp_path / "runs/x/a.parquet").write_text("written before Ctrl-C")
    (tmp_path / "runs/x/logs/a.parquet.log").write_text("made a\n")
    marker = base64.urlsafe_b64encode(b"runs/x/a.parquet").decode()
    (tmp_path / ".snakemake/incomplete").mkdir()
    (tmp_path / ".snakemake/incomplete" / marker).write_text("{}")
    dag = [("make_a", False), ("all", True)]  # --dag draws the ended job done
    log = ("runs/x/logs/a.parquet.log", "made a")
    monkeypatch.setattr(status, "live_runs", lambda repo: set())
    assert jobs_now(tmp_path, "runs/x", tmp_path, dag) == (
        [("make_a", True), ("all", True)],
        [],
        [log],
    )
    monkeypatch.setattr(status, "live_runs", lambda repo: {"runs/x"})
    assert jobs_now(tmp_path, "runs/x", tmp_path, dag) == (dag, [log], [])
