"""Fault injection on the tiny config: each fault gives a named error, and no artifact is left
half-written or silently replaced. (Unit-level faults, a full disk among them: test_integrity.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import SNAKEMAKE, TINY, TINY_LOGS, TINY_RUN, TINY_SEEDS, scheduled_rules, snakemake

from hierbench.provenance.artifacts import provenance_path
from hierbench.provenance.hashing import sha256_file

LOCK = f"{TINY_RUN}/cub/lock/final_lock.json"
SUMMARY = f"{TINY_RUN}/cub/tables/summary.md"
EVALUATION = f"{TINY_RUN}/cub/eval/ER-42_summary.parquet"


def _env(repo: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _bytes(repo: Path, *paths: str) -> dict[str, bytes]:
    return {path: (repo / path).read_bytes() for path in paths}


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _temporaries(repo: Path) -> list[Path]:
    return sorted((repo / TINY_RUN).rglob(".*.tmp"))


def _hierbench(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hierbench.cli", *args],
        cwd=repo,
        env=_env(repo),
        capture_output=True,
        text=True,
    )


# ------------------------------------------------------------------- edited artifacts


@pytest.mark.parametrize(
    "artifact",
    [
        f"{TINY_RUN}/cub/splits/sealed/test.parquet",
        f"{TINY_RUN}/cub/features/dev.parquet",
        f"{TINY_RUN}/cub/cells/ER-42/model.safetensors",
        f"{TINY_RUN}/cub/taxonomy/taxonomy.parquet",
    ],
)
def test_a_hand_edited_artifact_stops_the_run_and_nothing_flows_on(built_repo: Path, artifact):
    kept = _bytes(built_repo, LOCK, SUMMARY, EVALUATION)
    _flip_a_byte(built_repo / artifact)
    result = snakemake(built_repo, *TINY, check=False)
    assert result.returncode != 0
    assert f"{artifact} does not match its provenance record" in result.stdout
    rule = json.loads(provenance_path(built_repo / artifact).read_text())["rule"]
    assert f"snakemake --forcerun {rule}" in result.stdout
    assert _bytes(built_repo, LOCK, SUMMARY, EVALUATION) == kept
    assert _temporaries(built_repo) == []


# ------------------------------------------------------- the seal after a sealed read


def _edit_the_audit_and_its_record(repo: Path) -> None:
    """An edited artifact whose record was edited to match: it passes the verified read."""
    audit = repo / f"{TINY_RUN}/cub/audit/fairness.parquet"
    audit.write_bytes(audit.read_bytes() + b"\0")
    record_path = provenance_path(audit)
    record = json.loads(record_path.read_text())
    record["sha256"], record["bytes"] = sha256_file(audit), audit.stat().st_size
    record_path.write_text(json.dumps(record))


def _with_policy(repo: Path, policy: str) -> tuple[str, str]:
    config = yaml.safe_load((repo / "configs/tiny.yaml").read_text())
    config["seal"] = {"on_change": policy}
    (repo / f"configs/tiny-{policy}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return ("--configfile", f"configs/tiny-{policy}.yaml")


def test_refuse_stops_a_changed_lock_until_unseal(built_repo: Path):
    refuse = _with_policy(built_repo, "refuse")
    assert "Nothing to be done" in snakemake(built_repo, "-n", *refuse).stdout  # policy only
    kept = _bytes(built_repo, LOCK, EVALUATION)
    _edit_the_audit_and_its_record(built_repo)
    stopped = snakemake(built_repo, *refuse, check=False)
    assert stopped.returncode != 0
    assert f"hierbench unseal {TINY_RUN} cub --reason" in stopped.stdout
    assert f"artifact {TINY_RUN}/cub/audit/fairness.parquet" in stopped.stdout
    assert _bytes(built_repo, LOCK, EVALUATION) == kept

    unsealed = _hierbench(
        built_repo,
        "unseal",
        TINY_RUN,
        "cub",
        "--reason",
        "audit table rebuilt by hand",
    )
    assert unsealed.returncode == 0, unsealed.stderr
    snakemake(built_repo, *refuse)
    reseal = json.loads((built_repo / f"{TINY_RUN}/cub/reseals/001/reseal.json").read_text())
    assert reseal["reason"] == "audit table rebuilt by hand"
    archive = built_repo / f"{TINY_RUN}/cub/reseals/001"
    assert (archive / "eval/ER-42_summary.parquet").read_bytes() == kept[EVALUATION]
    assert (archive / "tables/summary.md").is_file() and (archive / "figures").is_dir()
    assert (built_repo / EVALUATION).read_bytes() == kept[EVALUATION]  # rebuilt, same draws
    audit = _hierbench(built_repo, "audit", TINY_RUN)
    assert audit.returncode == 0, audit.stdout
    assert f"RESEAL {TINY_RUN}/cub/reseals/001: audit table rebuilt by hand" in audit.stdout
    history = (built_repo / f"{TINY_RUN}/cub/lock/reseal_history.md").read_text()
    assert "audit table rebuilt by hand" in history


def test_archive_records_the_reseal_and_goes_on(built_repo: Path):
    _edit_the_audit_and_its_record(built_repo)
    snakemake(built_repo, *TINY)
    reseal = json.loads((built_repo / f"{TINY_RUN}/cub/reseals/001/reseal.json").read_text())
    assert reseal["reason"] == "locked artifacts changed"
    assert reseal["changes"] == [f"artifact {TINY_RUN}/cub/audit/fairness.parquet"]
    # the factorial's cells (four per seed) and the frozen baseline read the sealed test
    assert reseal["test_reads"] >= 4 * len(TINY_SEEDS) + 1
    assert (built_repo / f"{TINY_LOGS}/cub/lock/test_access.log").is_file()  # the new seal's reads
    assert not (built_repo / f"{TINY_RUN}/nabirds/reseals").exists()
    # the pictures read the old seal's test data: archived with its figures, and drawn anew
    archived = built_repo / f"{TINY_RUN}/cub/reseals/001/figures/galleries.png"
    assert archived.is_file() and (built_repo / f"{TINY_RUN}/cub/figures/galleries.png").is_file()
    audit = _hierbench(built_repo, "audit", TINY_RUN)
    assert audit.returncode == 0, audit.stdout
    assert f"RESEAL {TINY_RUN}/cub/reseals/001: locked artifacts changed" in audit.stdout


# ------------------------------------------------------------------------- SIGKILL


def _kill_once_running(repo: Path, target: str, log: str) -> None:
    """Force one job to rerun and SIGKILL the whole run as soon as that job has started."""
    (repo / log).unlink(missing_ok=True)
    process = subprocess.Popen(
        [SNAKEMAKE, "--cores", "2", *TINY, "--force", target],
        cwd=repo,
        env=_env(repo),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not (repo / log).is_file():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the run ended before {target} started")
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.parametrize(
    "target",
    [f"{TINY_RUN}/cub/features/dev.parquet", f"{TINY_RUN}/cub/eval/ER-42.parquet"],
    ids=["features", "evaluation"],
)
def test_a_killed_job_reruns_to_identical_bytes(built_repo: Path, target: str):
    before = sha256_file(built_repo / target)
    log = target.replace(f"{TINY_RUN}/", f"{TINY_LOGS}/", 1) + ".log"
    _kill_once_running(built_repo, target, log)
    snakemake(built_repo, "--unlock", *TINY)
    snakemake(built_repo, target, *TINY)  # the target first: --configfile takes many values
    assert sha256_file(built_repo / target) == before
    assert _temporaries(built_repo) == []


# ---------------------------------------------------------------- two runs at once


def test_a_second_run_in_the_same_folder_is_refused(built_repo: Path):
    target = f"{TINY_RUN}/cub/features/dev.parquet"
    log = built_repo / (target.replace(f"{TINY_RUN}/", f"{TINY_LOGS}/", 1) + ".log")
    log.unlink(missing_ok=True)
    before = sha256_file(built_repo / target)
    first = subprocess.Popen(
        [SNAKEMAKE, "--cores", "2", *TINY, "--force", target],  # a job's threads set its bytes
        cwd=built_repo,
        env=_env(built_repo),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not log.is_file():  # the job has started: its old output is gone, the lock held
        assert first.poll() is None and time.monotonic() < deadline, "the first run never started"
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGSTOP)  # held mid-job, so the second run meets a steady folder
    try:
        second = snakemake(built_repo, *TINY, "--force", target, check=False)
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    assert second.returncode != 0
    assert "cannot be locked" in second.stdout
    first.communicate(timeout=600)
    assert first.returncode == 0
    assert sha256_file(built_repo / target) == before


# ----------------------------------------------------------- broken real-data folders


def _as_real_folder(repo: Path) -> tuple[Path, tuple[str, str]]:
    """The rendered CUB demo copied out as a real dataset folder, and a config that reads it."""
    root = repo / "data/CUB_200_2011"
    shutil.copytree(repo / f"{TINY_RUN}/cub/demo/CUB_200_2011", root)
    config = yaml.safe_load((repo / "configs/tiny.yaml").read_text())
    config["datasets"]["cub"] |= {"source": "folder", "root": "data/CUB_200_2011"}
    config["datasets"]["cub"].pop("demo")
    (repo / "configs/tiny-folder.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root, ("--configfile", "configs/tiny-folder.yaml")


def _first_image(root: Path, line: int = 0) -> tuple[str, Path]:
    image_id, relative = (root / "images.txt").read_text().splitlines()[line].split(" ", 1)
    return image_id, root / "images" / relative


def test_a_dataset_folder_enters_the_workflow_through_its_content(built_repo: Path):
    """Touching the folder or a file, or a stray file, schedules nothing; a changed image
    schedules its features and what follows, never the image table or the splits."""
    root, config = _as_real_folder(built_repo)
    target = f"{TINY_RUN}/cub/features/dev.parquet"
    snakemake(built_repo, target, *config)
    assert scheduled_rules(built_repo, target, *config) == {}
    _, image = _first_image(root)
    os.utime(root)
    os.utime(image)
    (root / "images" / "notes.txt").write_text("a stray file")
    assert scheduled_rules(built_repo, target, *config) == {}
    image.write_bytes(image.read_bytes() + b"\0")  # the same picture, other bytes
    expected = {"image_fingerprint": 1, "backbone_features": 1, "features_dev": 1}
    assert scheduled_rules(built_repo, target, *config) == expected


def test_every_corrupt_jpeg_in_a_dataset_folder_is_named_in_one_run(built_repo: Path):
    root, config = _as_real_folder(built_repo)
    corrupt = [_first_image(root, line) for line in (0, -1)]  # the first and the last image
    for _, image in corrupt:
        image.write_bytes(image.read_bytes()[:200])
    # the backbone's pass over every image (the crops pass reads a subset, and may run first)
    whole = f"{TINY_RUN}/cub/features/backbone/images.parquet"
    result = snakemake(built_repo, whole, *config, check=False)
    assert result.returncode != 0
    assert re.search(r"\b2 of \d+ images cannot be read", result.stdout), result.stdout[-3000:]
    for image_id, image in corrupt:
        assert f"'{image_id}'" in result.stdout
        assert str(image.relative_to(built_repo)) in result.stdout


def test_an_image_listed_but_missing_is_named(built_repo: Path):
    root, config = _as_real_folder(built_repo)
    _, image = _first_image(root)
    image.unlink()
    result = snakemake(built_repo, *config, check=False)
    assert result.returncode != 0
    assert "images.txt" in result.stdout and image.name in result.stdout
