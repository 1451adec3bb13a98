"""Run folders (#24): each config's run in its own folder, its logs inside it (#39)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE

from hierbench.config import load_config
from hierbench.runlogs import check_no_legacy_logs, note_repository, noted_repository
from hierbench.runs import (
    DEFAULT_RUN,
    RunFolderError,
    check_run_folder,
    check_working_folder,
    is_log,
    logs_folder,
    run_folder,
)


def test_the_default_run_is_results_with_its_logs_inside():
    assert run_folder({}) == DEFAULT_RUN == "results"
    assert logs_folder("results") == "results/logs"


def test_every_run_keeps_its_logs_inside_it():
    assert run_folder({"run": "runs/tiny"}) == "runs/tiny"
    assert logs_folder("runs/tiny") == "runs/tiny/logs"
    assert is_log(Path("runs/tiny/logs/cub/lock/test_access.log"), Path("runs/tiny"))
    assert not is_log(Path("runs/tiny/cub/logs.parquet"), Path("runs/tiny"))


def test_a_run_folder_may_be_absolute():
    assert run_folder({"run": "/scratch/me/tiny"}) == "/scratch/me/tiny"
    assert logs_folder("/scratch/me/tiny") == "/scratch/me/tiny/logs"


def test_a_run_outside_the_repository_notes_which_repository_ran_it(tmp_path: Path):
    run = tmp_path / "scratch/tiny"
    assert noted_repository(run) is None
    note_repository(run.as_posix(), REPO)
    note_repository(run.as_posix(), REPO)  # again: the same note
    assert noted_repository(run) == REPO.resolve()
    assert sorted(p.name for p in (run / "logs").iterdir()) == ["repository.txt"]


@pytest.mark.parametrize(("run", "legacy"), [("results", "logs"), ("runs/tiny", "runs/tiny-logs")])
def test_logs_left_where_an_earlier_version_kept_them_stop_the_run(
    tmp_path: Path, run: str, legacy: str
):
    check_no_legacy_logs(run, tmp_path)  # none: nothing to say
    (tmp_path / legacy / "cub/lock").mkdir(parents=True)
    with pytest.raises(RunFolderError, match=rf"move them there \(mv {legacy} {run}/logs"):
        check_no_legacy_logs(run, tmp_path)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("/", "folder path"),
        ("/scratch/../x", r"'\.\.'"),
        ("runs/../results", r"'\.\.'"),
        ("runs//x", "empty"),
        ("src/run", "src/"),
        ("logs", "logs/"),
        ("results/inner", "default run"),
        ("", "folder path"),
    ],
)
def test_a_bad_run_folder_is_an_error_naming_the_key(run: str, message: str):
    with pytest.raises(RunFolderError, match=rf"config key 'run' \('{run}'\).*{message}"):
        check_run_folder(run)


def test_each_shipped_config_names_its_own_run_folder():
    folders = {
        path.name: run_folder(load_config(path))
        for path in [REPO / "config.yaml", *sorted((REPO / "configs").glob("*.yaml"))]
    }
    assert folders["config.yaml"] == "results"
    assert len(set(folders.values())) == len(folders), folders


def test_snakemake_from_another_folder_says_where_to_run(tmp_path):
    with pytest.raises(RunFolderError, match=r"run it there \(cd .*\), or add --directory"):
        check_working_folder(REPO, tmp_path)
    check_working_folder(REPO, REPO / "rules" / "..")  # the same folder: nothing to say


@pytest.mark.slow
def test_snakemake_s_from_elsewhere_stops_with_what_to_do(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-n"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert f"snakemake works in the repository {REPO}, not in {tmp_path}" in said
    assert not any(tmp_path.iterdir()) or sorted(p.name for p in tmp_path.iterdir()) == [
        ".snakemake"
    ]
