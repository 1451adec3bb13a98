"""A wheel built from the repository runs the study with no clone: its workflow copy works in
a project folder, its shipped defaults come from the package, and the run tools find the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO

SPLITS = "runs/tiny/cub/splits/manifest.parquet"  # taxonomy, demo images, image table, splits


def _hierbench(project: Path, venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The fresh venv's `hierbench` command, its folder first on the path (no PYTHONPATH)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        HF_HUB_OFFLINE="1",
        PYTHONHASHSEED="0",
    )
    return subprocess.run(
        [str(venv / "bin/hierbench"), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def _fresh_venv(folder: Path) -> Path:
    """A new venv whose dependencies are this environment's (a path entry: its editable
    hierbench is not), with the `snakemake` command pip would have put in its bin/."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin/python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    snakemake = folder / "bin/snakemake"
    snakemake.write_text(
        f"#!{python}\nimport sys\nfrom snakemake.cli import main\nsys.exit(main())\n"
    )
    snakemake.chmod(0o755)
    return folder


@pytest.fixture
def installed_wheel(repo_copy: Path, tmp_path: Path) -> Path:
    """A fresh venv with the wheel of a copy of the repository installed; the copy is then
    removed, so nothing can be read from a checkout. Returns the venv."""
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(repo_copy)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("hierbench-*.whl")
    venv = _fresh_venv(tmp_path / "venv")
    into_venv = [sys.executable, "-m", "pip", "-q", "--python", str(venv / "bin/python")]
    subprocess.run(
        [*into_venv, "install", "--no-deps", str(wheel)], check=True, capture_output=True
    )
    shutil.rmtree(repo_copy)
    return venv


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
