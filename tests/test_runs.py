"""Run folders (#24): each config's run in its own folder, its logs beside it."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import REPO, SNAKEMAKE

from hierbench.config import load_config
from hierbench.runs import (
    DEFAULT_RUN,
    RunFolderError,
    check_run_folder,
    check_working_folder,
    logs_folder,
    run_folder,
)


def test_the_default_run_is_results_with_logs_in_logs():
    assert run_folder({}) == DEFAULT_RUN == "results"
    assert logs_folder("results") == "logs"


def test_another_run_keeps_its_logs_beside_it():
    assert run_folder({"run": "runs/tiny"}) == "runs/tiny"
    assert logs_folder("runs/tiny") == "runs/tiny-logs"


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("/abs/run", "relative"),
        ("runs/../results", r"'\.\.'"),
        ("runs//x", "empty"),
        ("src/run", "src/"),
        ("logs", "logs/"),
        ("runs/tiny-logs", "-logs"),
        ("results/inner", "default run"),
        ("", "relative"),
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
