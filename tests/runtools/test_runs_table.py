"""``hierbench runs``: three run folders beside a repository, each in its state, with its jobs
from its newest Snakemake log and its headline from its arms summary."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.runtools import runs_table
from hierbench.runtools.runs_table import list_runs, log_state, shown_rows

LOG_HEADER = "Config file(s): [PosixPath('{config}')]\nBuilding DAG of jobs...\n"


def _log(repo: Path, stamp: str, config: str, body: str) -> None:
    folder = repo / ".snakemake/log"
    folder.mkdir(parents=True, exist_ok=True)
    text = LOG_HEADER.format(config=repo / config) + body
    (folder / f"2026-12-03T{stamp}.snakemake.log").write_text(text)


def _arms(folder: Path, dataset: str, values: dict[str, float]) -> None:
    rows = [
        {
            "dataset": dataset,
            "geometry": arm[0],
            "loss": arm[2],
            "level": level,
            "metric": "map",
            "mean": value if level == "mean_hierarchy" else 0.9,
            "sd": 0.0,
            "n": 2,
        }
        for arm, value in values.items()
        for level in ("leaf", "mean_hierarchy")
    ]
    target = folder / dataset / "tables/arms_summary.parquet"
    target.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(target)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with three runs: complete (the default), failed and killed (lock left),
    and a data folder of its own (no run another test recorded in the session's is listed)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data-home"))
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "config.yaml").write_text("run: results\n")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/a.yaml").write_text("run: runs/a\n")
    (tmp_path / "configs/b.yaml").write_text("run: runs/b\n")
    (tmp_path / "configs/never.yaml").write_text("run: runs/never\n")  # no folder: not listed
    _arms(tmp_path / "results", "cub", {"E_R": 0.30, "H_R": 0.31, "E_S": 0.35, "H_S": 0.36})
    _arms(tmp_path / "runs/a", "cub", {"E_R": float("nan"), "H_R": 0.2})  # a level with no query
    (tmp_path / "runs/b").mkdir(parents=True)
    _log(tmp_path, "010000", "config.yaml", "183 of 183 steps (100%) done\n")
    _log(
        tmp_path, "020000", "config.yaml", "Nothing to be done (all requested files are present)\n"
    )
    _log(tmp_path, "020500", "config.yaml", "")  # a dry run's one-line log: skipped
    _log(tmp_path, "011000", "configs/a.yaml", "3 of 40 steps (8%) done\nError in rule train:\n")
    _log(tmp_path, "012000", "configs/b.yaml", "12 of 127 steps (9%) done\n")
    (tmp_path / ".snakemake/locks").mkdir(parents=True)
    (tmp_path / ".snakemake/locks/0.input.lock").write_text("")  # Snakemake killed
    return tmp_path


def test_three_runs_each_in_its_state_with_jobs_and_headline(repo: Path):
    rows = {row.name: row for row in list_runs(repo)}
    assert sorted(rows) == ["results", "runs/a", "runs/b"]
    done = rows["results"]
    # the newest real log had nothing to do: complete, its job counts from the run before
    assert (done.config, done.state, done.jobs_done, done.jobs_planned) == (
        "config.yaml",
        "complete",
        183,
        183,
    )
    assert done.headline == {"cub": {"E_R": 0.30, "E_S": 0.35, "H_R": 0.31, "H_S": 0.36}}
    failed = rows["runs/a"]
    assert (failed.state, failed.jobs_done, failed.jobs_planned) == ("failed", 3, 40)
    killed = rows["runs/b"]
    assert (killed.state, killed.jobs_done, killed.jobs_planned) == ("stale lock", 12, 127)
    assert killed.headline == {} and killed.last_change == ""


def test_the_cli_prints_a_table_sorted_or_json(repo: Path, capsys, monkeypatch):
    monkeypatch.chdir(repo)  # the run folders and configs as they open from here
    assert main(["runs", "--repo", str(repo / "configs")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["run", "config", "state", "jobs", "last"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["results", "config.yaml"],
        ["runs/a", "configs/a.yaml"],
        ["runs/b", "configs/b.yaml"],
    ]
    assert "E_R 0.300 E_S 0.350 H_R 0.310 H_S 0.360" in lines[1] and "183/183" in lines[1]
    assert "3/40" in lines[2] and "E_R n/a H_R 0.200" in lines[2]
    assert main(["runs", "--repo", str(repo), "--sort", "state", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["state"] for r in records] == ["complete", "failed", "stale lock"]
    assert records[1]["headline"] == {"cub": {"E_R": None, "H_R": 0.2}}
    monkeypatch.chdir(repo / "configs")  # from another folder: paths that open from there
    assert main(["runs", "--repo", str(repo), "--json"]) == 0
    [failed] = [r for r in json.loads(capsys.readouterr().out) if r["state"] == "failed"]
    assert (failed["name"], failed["config"]) == (str(repo / "runs/a"), "a.yaml")


def test_a_running_log_and_a_missing_log():
    assert log_state("5 of 9 steps (55%) done\n", running=True, locked=True) == ("running", 5, 9)
    assert log_state(None, running=False, locked=False) == ("no log", None, None)
    assert log_state("9 of 9 steps (100%) done\n", running=False, locked=True)[0] == "complete"


def test_a_run_stopped_by_ctrl_c_is_stopped_not_failed():
    """Ctrl-C ends the jobs running then with errors in the log; the run was stopped."""
    failed = "4 of 9 steps (44%) done\nError in rule train_factorial:\n"
    stopped = "Terminating processes on user request, this might take some time.\n" + failed
    assert log_state(failed, running=False, locked=False) == ("failed", 4, 9)
    assert log_state(stopped, running=False, locked=False) == ("stopped", 4, 9)
    cancelled = failed + "Cancelling snakemake on user request.\n"
    assert log_state(cancelled, running=False, locked=False)[0] == "stopped"


def test_outside_a_repository_is_one_line(tmp_path: Path, capsys):
    assert main(["runs", "--repo", str(tmp_path)]) == 2
    assert "is not inside a hierbench repository" in capsys.readouterr().err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An installed package's project folder: the user's config.yaml, and the copy `hierbench
    run` ran, in the run's logs, that Snakemake's log names."""
    (tmp_path / "config.yaml").write_text("run: runs/beetles\n")
    (tmp_path / "runs/beetles/logs").mkdir(parents=True)
    (tmp_path / "runs/beetles/logs/config.yaml").write_text("run: runs/beetles\n")
    return tmp_path


def test_a_run_the_copy_of_its_config_ran_is_listed_in_its_state(project: Path, monkeypatch):
    _log(project, "010000", "runs/beetles/logs/config.yaml", "19 of 19 steps (100%) done\n")
    [row] = list_runs(project)
    assert (row.name, row.config, row.state, row.jobs_done) == (
        "runs/beetles",
        "config.yaml",
        "complete",
        19,
    )
    _log(project, "020000", "runs/beetles/logs/config.yaml", "2 of 19 steps (10%) done\n")
    (project / ".snakemake/locks").mkdir(parents=True)
    (project / ".snakemake/locks/0.input.lock").write_text("")
    monkeypatch.setattr(runs_table, "live_runs", lambda repo: {"runs/beetles"})
    assert [(row.state, row.jobs_done) for row in list_runs(project)] == [("running", 2)]
    monkeypatch.setattr(runs_table, "live_runs", lambda repo: set())
    assert [row.state for row in list_runs(project)] == ["stale lock"]


def test_a_run_shows_the_config_the_user_gave_hierbench_run(project: Path):
    (project / "config.yaml").unlink()  # the user's config lies elsewhere: the copy names it
    _log(project, "010000", "runs/beetles/logs/config.yaml", "19 of 19 steps (100%) done\n")
    assert [row.config for row in list_runs(project)] == ["runs/beetles/logs/config.yaml"]
    own = {str(project / "runs/beetles"): "/home/me/study.yaml"}
    [row] = list_runs(project, own=own)
    assert (row.config, row.state) == ("/home/me/study.yaml", "complete")
    [shown] = shown_rows([row], project, project / "runs")
    assert (shown.name, shown.config) == ("beetles", "/home/me/study.yaml")
