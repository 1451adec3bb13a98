"""``hierbench run CONFIG`` from a folder outside the repository, a space in its path: the
config's relative run folder is taken from its own folder, Snakemake's output goes to the run's
logs and the terminal shows one progress line, and runs and status find the run from a third
folder; Ctrl-C stops the run with one line, and the same command continues it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

RUN = "out/tiny"
SPLITS = f"{RUN}/cub/splits/dev.parquet"
FEATURES = f"{RUN}/cub/features/dev.parquet"


def _project(repo: Path, folder: Path) -> Path:
    """A folder of the user's with the tiny config (CUB alone, run folder beside it)."""
    config = yaml.safe_load((repo / "configs/tiny.yaml").read_text())
    config["run"] = RUN
    config["datasets"]["nabirds"]["enabled"] = False
    folder.mkdir()
    (folder / "study.yaml").write_text(yaml.safe_dump(config))
    return folder


def _command(project: Path, target: str) -> list[str]:
    run = [sys.executable, "-m", "hierbench.cli", "run", "study.yaml", "--cores", "2"]
    return [*run, "--", str(project / target)]


def _environment(repo: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}


def _run(repo: Path, project: Path, target: str) -> subprocess.CompletedProcess[str]:
    """``hierbench run study.yaml`` on one target, from the project folder, to its end."""
    return subprocess.run(
        _command(project, target),
        cwd=project,
        env=_environment(repo),
        capture_output=True,
        text=True,
        check=False,
    )


def _hierbench(repo: Path, folder: Path, *args: str) -> str:
    """A hierbench command's output, run in ``folder`` with ``repo``'s library."""
    result = subprocess.run(
        [sys.executable, "-m", "hierbench.cli", *args],
        cwd=folder,
        env=_environment(repo),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_a_config_outside_the_repository_runs_from_its_own_folder(repo_copy: Path, tmp_path):
    project = _project(repo_copy, tmp_path / "my project")
    result = _run(repo_copy, project, SPLITS)
    assert result.returncode == 0, result.stderr
    assert (project / SPLITS).is_file()
    logs = project / RUN / "logs"
    assert yaml.safe_load((logs / "config.yaml").read_text())["run"] == str(project / RUN)
    assert "rule splits:" in (logs / "snakemake.log").read_text()
    assert result.stdout.splitlines()[-1].startswith("done: ")
    assert "rule splits:" not in result.stderr and "Building DAG" not in result.stderr
    assert not (repo_copy / "runs").exists()  # nothing in the repository's own run folders
    # runs and status find the run from a third folder: Snakemake's log names its config
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = _hierbench(repo_copy, elsewhere, "runs", "--repo", str(repo_copy), "--json")
    [listed] = [row for row in json.loads(runs) if row["name"] == str(project / RUN)]
    assert listed["state"] == "complete"
    status = json.loads(_hierbench(repo_copy, elsewhere, "status", str(project / RUN), "--json"))
    assert status["run"] == str(project / RUN) and status["jobs_done"] > 0


@pytest.mark.slow
def test_ctrl_c_stops_the_run_with_one_line_and_the_same_command_continues_it(
    repo_copy: Path, tmp_path
):
    project = _project(repo_copy, tmp_path / "my project")
    log = project / RUN / "logs/snakemake.log"
    process = subprocess.Popen(
        _command(project, FEATURES),
        cwd=project,
        env=_environment(repo_copy),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal, even where the suite itself runs with SIGINT ignored (a
        # background job of a script)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    while not (log.is_file() and "1 of " in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("stopped: ") and "of " in last, err
    config = shlex.quote(str(project / "study.yaml"))  # a path with a space, pasted as it is
    assert f"hierbench run {config} --cores 2 continues it" in last, last
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "Terminating processes on user request" in log.read_text()
    again = _run(repo_copy, project, FEATURES)
    assert again.returncode == 0, again.stderr
    assert (project / FEATURES).is_file()


@pytest.mark.slow
def test_plain_snakemake_takes_an_outside_configs_paths_from_its_folder(repo_copy, tmp_path):
    """One rule for paths: `snakemake --configfile` on a config outside the repository plans
    its run folder beside the config, as `hierbench run` does."""
    project = _project(repo_copy, tmp_path / "my project")
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    result = subprocess.run(
        [snakemake, "--dry-run", "--cores", "1", "--configfile", str(project / "study.yaml")],
        cwd=repo_copy,
        env=_environment(repo_copy),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert str(project / SPLITS) in result.stdout
    assert f" {RUN}/" not in result.stdout  # nothing planned under the repository's out/
