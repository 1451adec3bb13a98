"""The index of runs `hierbench run` started (hierbench.runtools.run_index): each run once, its
newest config, pruned of folders that are gone, and listed by `hierbench runs` from anywhere."""

from __future__ import annotations

import json
from pathlib import Path

from hierbench.cli import main
from hierbench.runtools.run_index import IndexedRun, index_path, indexed_runs, record_run


def test_the_index_lives_in_the_users_data_folder(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert index_path() == tmp_path / "hierbench" / "runs.json"


def test_a_run_is_recorded_once_and_pruned_when_its_folder_is_gone(tmp_path: Path):
    index = tmp_path / "data" / "runs.json"
    first, second = tmp_path / "p/out/a", tmp_path / "p/out/b"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    record_run(first, tmp_path / "p", tmp_path / "p/a.yaml", index)
    record_run(second, tmp_path / "p", tmp_path / "p/b.yaml", index)
    record_run(first, tmp_path / "p", tmp_path / "p/a2.yaml", index)  # renewed, not doubled
    p = tmp_path / "p"
    assert indexed_runs(index) == [
        IndexedRun(str(first), str(p), str(p / "a2.yaml")),
        IndexedRun(str(second), str(p), str(p / "b.yaml")),
    ]
    second.rmdir()
    assert [entry.run for entry in indexed_runs(index)] == [str(first)]
    assert [entry["run"] for entry in json.loads(index.read_text())] == [str(first)]  # pruned


def test_an_unreadable_index_is_empty_and_rewritten_by_the_next_run(tmp_path: Path):
    index = tmp_path / "runs.json"
    index.write_text("{not json")
    assert indexed_runs(index) == []
    (tmp_path / "out").mkdir()
    record_run(tmp_path / "out", tmp_path, tmp_path / "c.yaml", index)
    assert [entry.run for entry in indexed_runs(index)] == [str(tmp_path / "out")]


def test_runs_lists_the_indexed_runs_from_a_folder_of_no_run(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    project = tmp_path / "project"
    run = project / "out"
    (run / "logs").mkdir(parents=True)
    (project / ".snakemake/log").mkdir(parents=True)
    (run / "logs/config.yaml").write_text(f"run: {run}\n")
    log = project / ".snakemake/log/2026-12-04T100000.000000.snakemake.log"
    log.write_text(f"Config file(s): ['{run / 'logs/config.yaml'}']\n3 of 3 steps (100%) done\n")
    record_run(run, project, project / "study.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["runs", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    # the config the user ran, not the copy `hierbench run` keeps in the run's logs
    assert row["name"] == str(run) and row["config"] == str(project / "study.yaml")
    assert row["state"] == "complete" and row["jobs_done"] == 3
    run.joinpath("logs/config.yaml").unlink()
    (run / "logs").rmdir()
    run.rmdir()  # gone: pruned, and a folder of no run is an error again
    assert main(["runs"]) == 2
    assert "is not inside a hierbench repository" in capsys.readouterr().err
