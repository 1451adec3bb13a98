"""The Final lock: built from hashes, and evaluation refuses without it or after a change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hierbench.provenance.lock import LockError, build_lock, read_lock, verify_against_lock


def _files(tmp_path: Path) -> dict[str, list[Path]]:
    paths = {}
    for group, names in {
        "checkpoints": ["a.safetensors", "b.safetensors"],
        "sealed": ["t.parquet"],
    }.items():
        paths[group] = []
        for name in names:
            path = tmp_path / name
            path.write_bytes(name.encode())
            paths[group].append(path)
    return paths


def _lock(tmp_path: Path) -> Path:
    lock = build_lock("cub", {"training": {"epochs": 3}}, _files(tmp_path))
    path = tmp_path / "final_lock.json"
    path.write_text(json.dumps(lock))
    return path


def test_lock_records_every_artifact_and_the_config(tmp_path: Path):
    lock = read_lock(_lock(tmp_path))
    assert set(lock["artifacts"]) == {"checkpoints", "sealed"}
    assert len(lock["artifacts"]["checkpoints"]) == 2
    assert len(lock["config_sha256"]) == 64 and lock["training_finished_at"].endswith("+00:00")
    assert lock["config"] == {"training": {"epochs": 3}}


def test_unchanged_artifacts_verify(tmp_path: Path):
    path = _lock(tmp_path)
    verify_against_lock(path, [tmp_path / "a.safetensors", tmp_path / "t.parquet"])


def test_missing_lock_refuses(tmp_path: Path):
    with pytest.raises(LockError, match="no Final lock"):
        verify_against_lock(tmp_path / "final_lock.json", [])


def test_changed_checkpoint_refuses(tmp_path: Path):
    path = _lock(tmp_path)
    (tmp_path / "b.safetensors").write_bytes(b"tampered")
    with pytest.raises(LockError, match=r"b\.safetensors changed after the Final lock"):
        verify_against_lock(path, [tmp_path / "b.safetensors"])


def test_unlocked_artifact_refuses(tmp_path: Path):
    path = _lock(tmp_path)
    (tmp_path / "c.safetensors").write_bytes(b"new")
    with pytest.raises(LockError, match="not recorded in the Final lock"):
        verify_against_lock(path, [tmp_path / "c.safetensors"])


def test_malformed_lock_refuses(tmp_path: Path):
    path = tmp_path / "final_lock.json"
    path.write_text("{not json")
    with pytest.raises(LockError, match="not a valid lock"):
        read_lock(path)
    path.write_text(json.dumps({"lock_version": 99}))
    with pytest.raises(LockError, match="not a version-2 Final lock"):
        read_lock(path)


def test_a_lock_needs_checkpoints(tmp_path: Path):
    with pytest.raises(LockError, match="at least one checkpoint"):
        build_lock("cub", {}, {"checkpoints": []})
