"""A run killed mid-training recovers and matches a clean run in another folder, byte for byte."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import SNAKEMAKE, TINY, snakemake

from hierbench.artifacts import PROVENANCE_SUFFIX
from hierbench.hashing import sha256_file
from hierbench.manifest import verify


# Artifacts that hold a time by design, listed: the Final lock records when training
# finished; a cell's train_log.parquet records each epoch's wall seconds. Logs (logs/) and
# Snakemake benchmark timings (logs/**/*.benchmark.tsv) are outside results/.
def _timed(path: str) -> bool:
    return path.endswith("lock/final_lock.json") or path.endswith("/train_log.parquet")


def _hashes(repo: Path) -> dict[str, str]:
    return {
        p.relative_to(repo).as_posix(): sha256_file(p)
        for p in (repo / "results").rglob("*")
        if p.is_file() and p.name != ".snakemake_timestamp"
    }


def _mentions_lock(record_path: Path) -> bool:
    """Records whose inputs include a Final lock (their input hash carries its time)."""
    record = json.loads(record_path.read_text())
    return any(path.endswith("final_lock.json") for path in record["inputs"])


def _kill_during_training(repo: Path) -> None:
    """Start the pipeline, SIGKILL its whole process group once a training job is running."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    process = subprocess.Popen(
        [SNAKEMAKE, "--cores", "2", *TINY],
        cwd=repo,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while not list((repo / "logs").glob("*/cells/*/model.safetensors.log")):
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError("the pipeline ended before any training job started")
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_killed_run_recovers_and_matches_a_clean_run(built_repo: Path, repo_copy: Path):
    _kill_during_training(repo_copy)
    assert not (repo_copy / "results/cub/lock/final_lock.json").exists()
    snakemake(repo_copy, "--unlock", *TINY)
    snakemake(repo_copy, *TINY)
    assert not [p for p in (repo_copy / "results").rglob(".*.tmp")]
    findings = verify(repo_copy / "results", repo_copy)
    assert [f.path for f in findings if not f.passed] == []
    first, second = _hashes(built_repo), _hashes(repo_copy)
    assert first.keys() == second.keys()
    skipped = {p for p in first if _timed(p.removesuffix(PROVENANCE_SUFFIX))}
    skipped |= {
        p for p in first if p.endswith(PROVENANCE_SUFFIX) and _mentions_lock(built_repo / p)
    }
    differing = sorted(p for p in first if p not in skipped and first[p] != second[p])
    assert differing == []
    artifacts = [p for p in first if not p.endswith(PROVENANCE_SUFFIX)]
    assert len(artifacts) > 200
    # two locks, and the training logs of 24 factorial, 6 curvature, 12 semantic, 3 HIER-style,
    # 12 outer-split and 12 companion cells
    assert len([p for p in artifacts if p in skipped]) == 2 + 2 * 12 + 6 + 12 + 3 + 12 + 12
