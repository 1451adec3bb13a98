"""A wheel built from the repository runs the study with no clone: its workflow copy works in
a project folder, its shipped defaults come from the package, and the run tools find the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SPLITS = "runs/tiny/cub/splits/manifest.parquet"  # taxonomy, demo images, image table, splits


def _hierbench(project: Path, package: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `hierbench` command of the installed wheel alone (its folder first on the path)."""
    bin_folder = Path(sys.executable).parent
    env = {
        **os.environ,
        "PYTHONPATH": str(package),
        "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "PYTHONHASHSEED": "0",
    }
    return subprocess.run(
        [sys.executable, "-m", "hierbench.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )


@pytest.fixture
def installed_wheel(repo_copy: Path, tmp_path: Path) -> Path:
    """The wheel of a copy of the repository, installed into a folder of its own; the copy is
    then removed, so nothing can be read from a checkout."""
    dist, package = tmp_path / "dist", tmp_path / "package"
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(repo_copy)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("hierbench-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(package), str(wheel)],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(repo_copy)
    return package


@pytest.mark.slow
def test_an_installed_wheel_runs_the_study_in_a_project_folder(installed_wheel, tmp_path):
    project = tmp_path / "my project"
    project.mkdir()
    (project / "tiny.yaml").write_bytes((REPO / "configs/tiny.yaml").read_bytes())

    ran = _hierbench(project, installed_wheel, "run", "tiny.yaml", "--cores", "2", "--", SPLITS)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert (project / SPLITS).is_file()
    assert (project / ".snakemake").is_dir() and not (project / "Snakefile").exists()
    workflow = installed_wheel / "hierbench" / "workflow"
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
