"""A run killed mid-training recovers with `hierbench resume` and matches a clean run in another
folder, byte for byte.

The killed run builds CUB's part of the tiny run: every arm runs on CUB (NABirds adds only its
taxonomy and demo rules, whose bytes test_pipeline_stages pins), at two thirds of the cost of
the whole run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import SNAKEMAKE, TINY, TINY_LOGS, TINY_RUN

from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.verify import verify
from hierbench.runtools.compare import compare_runs_report, render_markdown
from hierbench.runtools.rundiff import compare_runs, dataset_targets, result_hashes


def _env(repo: Path) -> dict[str, str]:
    """The environment of a process in ``repo``: that copy's library, this Python's tools."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _kill_during_training(repo: Path, targets: list[str]) -> None:
    """Start the pipeline on ``targets``, SIGKILL its whole process group once a training job
    is running."""
    process = subprocess.Popen(
        [SNAKEMAKE, *targets, "--cores", "2", *TINY],  # targets first: --configfile takes many
        cwd=repo,
        env=_env(repo),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while not list((repo / TINY_LOGS).glob("*/cells/**/*.log")):  # a cell's or a bundle's
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError("the pipeline ended before any training job started")
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_killed_run_recovers_and_matches_a_clean_run(built_repo: Path, repo_copy: Path):
    targets = dataset_targets(built_repo, TINY_RUN, "cub")
    _kill_during_training(repo_copy, targets)
    assert not (repo_copy / f"{TINY_RUN}/cub/lock/final_lock.json").exists()
    resumed = subprocess.run(  # the one command a user types after a kill
        [sys.executable, "-m", "hierbench.cli", "resume", TINY_RUN, *targets],
        cwd=repo_copy,
        env=_env(repo_copy),
        capture_output=True,
        text=True,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "releasing the stale lock of a killed run" in resumed.stderr
    shutil.rmtree(built_repo / TINY_RUN / "nabirds")  # the clean run's CUB part, to compare
    assert not [p for p in (repo_copy / TINY_RUN).rglob(".*.tmp")]
    findings = verify(repo_copy / TINY_RUN, repo_copy)
    assert [f.path for f in findings if not f.passed] == []
    # The timing exceptions (the Final locks, training logs and the records that carry their
    # times) are hierbench.runtools.rundiff's; logs and benchmark timings are outside the run
    # folder.
    diff = compare_runs(built_repo, repo_copy, TINY_RUN)
    assert (diff.only_first, diff.only_second, diff.differing) == ([], [], [])
    first, skipped = result_hashes(built_repo, TINY_RUN), set(diff.exempt)
    artifacts = [p for p in first if not p.endswith(PROVENANCE_SUFFIX)]
    assert len(artifacts) > 150
    # exempt: exactly the Final lock and the training log of every cell trained
    cells = [p for p in artifacts if p.endswith("/model.safetensors")]
    timed = {p for p in artifacts if p.endswith("lock/final_lock.json")}
    timed |= {p.replace("/model.safetensors", "/train_log.parquet") for p in cells}
    assert {p for p in artifacts if p in skipped} == timed and len(timed) == 1 + len(cells)

    # `hierbench compare` agrees: two runs of one config are identical, timing aside.
    report = compare_runs_report(built_repo / TINY_RUN, repo_copy / TINY_RUN)
    assert report["identical"], render_markdown(report)
    assert render_markdown(report).startswith("identical: ")
