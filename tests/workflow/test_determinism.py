"""A run killed mid-training recovers with `hierbench resume` and matches a clean run in another
folder, byte for byte, though it ran as another machine would: limited to AVX2 and on one core.

The killed run builds CUB's part of the tiny run: every arm runs on CUB (NABirds adds only its
taxonomy and demo rules, whose bytes test_pipeline_stages pins), at two thirds of the cost of
the whole run. The clean run is the suite's shared one, made as this machine is (AVX-512 where
it has it) with --cores 2; the killed run is made with the variables that limit torch, MKL and
oneDNN to AVX2 (as an AVX2-only x86-64 machine would run) and, up to the kill, --cores 1 (its
backbone passes among it: they once rounded by the core count), then resumed at the default
cores. Equal bytes show the numeric mode (hierbench.provenance.numerics) holds the run to one
kernel path and one thread per job whatever the machine and --cores."""

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
from hierbench.runtools.against import BYTES, against_lines, check_against
from hierbench.runtools.compare import compare_runs_report, render_markdown
from hierbench.runtools.rundiff import compare_runs, dataset_targets, result_hashes

# An x86-64 machine without AVX-512, as torch (ATen), MKL and oneDNN would see it.
AVX2_ONLY = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
}


def _env(repo: Path, machine: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process in ``repo``: that copy's library, this Python's tools, and
    the variables of the ``machine`` it runs as."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1", **(machine or {})}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _kill_during_training(repo: Path, targets: list[str]) -> None:
    """Start the pipeline on ``targets`` on one core as an AVX2-only machine, SIGKILL its whole
    process group once a training job is running."""
    process = subprocess.Popen(
        [SNAKEMAKE, *targets, "--cores", "1", *TINY],  # targets first: --configfile takes many
        cwd=repo,
        env=_env(repo, AVX2_ONLY),
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


def test_a_killed_run_on_another_machine_recovers_and_matches_a_clean_run(
    built_repo: Path, repo_copy: Path
):
    targets = dataset_targets(built_repo, TINY_RUN, "cub")
    _kill_during_training(repo_copy, targets)
    assert not (repo_copy / f"{TINY_RUN}/cub/lock/final_lock.json").exists()
    resumed = subprocess.run(  # the one command a user types after a kill
        [sys.executable, "-m", "hierbench.cli", "resume", TINY_RUN, *targets],
        cwd=repo_copy,
        env=_env(repo_copy, AVX2_ONLY),
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

    # `hierbench audit --against` agrees: the same bytes, as promised between two portable runs.
    against = check_against(repo_copy / TINY_RUN, built_repo / TINY_RUN)
    assert (against["promise"], against["holds"]) == (BYTES, True), against_lines(against)

    # `hierbench compare` agrees: two runs of one config are identical, timing aside.
    report = compare_runs_report(built_repo / TINY_RUN, repo_copy / TINY_RUN)
    assert report["identical"], render_markdown(report)
    assert render_markdown(report).startswith("identical: ")
