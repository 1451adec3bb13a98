"""A wheel built from the repository runs the study with no clone: its workflow copy works in
a project folder, its shipped defaults come from the package, and the run tools find the run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from installed import install_wheel, run_hierbench

SPLITS = "runs/tiny/cub/splits/manifest.parquet"  # taxonomy, demo images, image table, splits


@pytest.fixture
def installed_wheel(repo_copy: Path, tmp_path: Path) -> Path:
    """A fresh venv with the wheel of a copy of the repository installed (no checkout left)."""
    return install_wheel(repo_copy, tmp_path)


def _hierbench(project: Path, venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The fresh venv's `hierbench` command, run in ``project``."""
    return run_hierbench(venv, project, *args)


@pytest.mark.slow
def test_an_installed_wheel_runs_the_study_in_a_project_folder(installed_wheel, tmp_path):
    project = tmp_path / "my project"
    project.mkdir()
    (project / "tiny.yaml").write_bytes((REPO / "configs/tiny.yaml").read_bytes())

    ran = _hierbench(project, installed_wheel, "run", "tiny.yaml", "--cores", "2", "--", SPLITS)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert (project / SPLITS).is_file()
    assert (project / ".snakemake").is_dir() and not (project / "Snakefile").exists()
    purelib = next((installed_wheel / "lib").glob("python3*/site-packages"))
    imported = subprocess.run(
        [str(installed_wheel / "bin/python"), "-c", "import hierbench; print(hierbench.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(imported).is_relative_to(purelib)  # the wheel's library, never a checkout's
    workflow = purelib / "hierbench" / "workflow"
    assert (workflow / "Snakefile").is_file()
    record = (project / "runs/tiny/cub/taxonomy/taxonomy.parquet.prov.json").read_text()
    assert str(workflow / "resources/cub_aliases.json") in record  # a shipped default

    status = _hierbench(project, installed_wheel, "status", "runs/tiny", "--json")
    assert status.returncode == 0, status.stderr
    assert '"to_do"' in status.stdout
    audit = _hierbench(project, installed_wheel, "audit", "runs/tiny")
    assert audit.returncode == 0, audit.stderr + audit.stdout
    assert " 0 failed" in audit.stdout
    listed = _hierbench(project, installed_wheel, "runs")
    assert listed.returncode == 0, listed.stderr
    assert "runs/tiny" in listed.stdout
    elsewhere = tmp_path / "elsewhere"  # a folder of no run: the index of hierbench run's runs
    elsewhere.mkdir()
    indexed = _hierbench(elsewhere, installed_wheel, "runs", "--json")
    assert indexed.returncode == 0, indexed.stderr
    [row] = [row for row in json.loads(indexed.stdout) if row["name"] == str(project / "runs/tiny")]
    assert row["state"] == "complete"
