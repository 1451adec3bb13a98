"""Verified reads, re-seals and a full disk, at unit level (the workflow cases: test_faults.py)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from hierbench.provenance.artifacts import provenance_path, write_text
from hierbench.provenance.integrity import TamperedArtifactError, verify_recorded_inputs
from hierbench.provenance.records import JobContext
from hierbench.provenance.seal import (
    SealChangedError,
    SealPaths,
    archive_seal,
    list_reseals,
    lock_changes,
    reason_for,
    reseal_history_markdown,
)
from hierbench.stages.lock import write_final_lock

JOB = JobContext(rule="splits", wildcards={"dataset": "cub"})


def _artifact(path: Path, text: str = "rows\n") -> Path:
    return write_text(text, path, JOB)


# ------------------------------------------------------------------------ verified reads


def test_untouched_inputs_and_source_files_pass(tmp_path: Path):
    source = tmp_path / "shipped.txt"
    source.write_text("no record: a source input\n")
    verify_recorded_inputs([_artifact(tmp_path / "a.txt"), source])


def test_an_edited_artifact_is_named_with_both_hashes_and_the_ways_out(tmp_path: Path):
    target = _artifact(tmp_path / "sealed/test.parquet")
    recorded = json.loads(provenance_path(target).read_text())["sha256"]
    target.write_text("rows, edited by hand\n")
    with pytest.raises(TamperedArtifactError) as error:
        verify_recorded_inputs([target])
    message = str(error.value)
    assert "sealed/test.parquet" in message and recorded in message
    assert "Restore it" in message and "snakemake --forcerun splits" in message


def test_an_artifact_missing_beside_its_record_is_named(tmp_path: Path):
    target = _artifact(tmp_path / "a.txt")
    target.unlink()
    with pytest.raises(TamperedArtifactError, match=r"a\.txt is missing"):
        verify_recorded_inputs([target])


def test_every_edited_input_is_listed_in_one_message(tmp_path: Path):
    first, second = _artifact(tmp_path / "x.txt"), _artifact(tmp_path / "y.txt", "other\n")
    first.write_text("changed\n")
    second.write_text("changed too\n")
    with pytest.raises(TamperedArtifactError) as error:
        verify_recorded_inputs([first, second])
    assert "x.txt" in str(error.value) and "y.txt" in str(error.value)


# ----------------------------------------------------------------------------- full disk


def test_a_full_disk_leaves_the_old_target_and_no_temporary(tmp_path: Path):
    target = _artifact(tmp_path / "t.txt", "old bytes\n")

    def no_space(path: Path) -> None:
        with open(path, "w") as handle:
            handle.write("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    from hierbench.provenance.artifacts import publish

    with pytest.raises(OSError, match="No space left"):
        publish(target, no_space, JOB)
    assert target.read_text() == "old bytes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt", "t.txt.prov.json"]


def test_a_full_disk_while_writing_the_record_leaves_no_half_written_file(tmp_path, monkeypatch):
    import hierbench.provenance.artifacts as artifacts

    def no_space(value, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    old = _artifact(tmp_path / "o.txt", "old\n")
    monkeypatch.setattr(artifacts, "write_json_plain", no_space)
    with pytest.raises(OSError, match="No space left"):
        write_text("new\n", tmp_path / "n.txt", JOB)
    with pytest.raises(OSError, match="No space left"):
        write_text("new\n", old, JOB)
    assert list(tmp_path.iterdir()) == []  # no target, no stale record, no temporary


# -------------------------------------------------------------------------------- re-seal


def _seal(tmp_path: Path) -> SealPaths:
    return SealPaths.of("cub", tmp_path / "results", tmp_path / "logs")


def _lock_inputs(tmp_path: Path, checkpoint_text: str = "weights") -> dict[str, list[Path]]:
    checkpoint = tmp_path / "results/cub/cells/ER-42/model.safetensors"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.write_text(checkpoint_text)
    return {"checkpoints": [checkpoint]}


def _write_lock(tmp_path: Path, config: dict, on_change: str, checkpoint: str = "weights"):
    seal = _seal(tmp_path)
    outputs = {"lock": seal.lock, "history": seal.lock.with_name("reseal_history.md")}
    return write_final_lock(
        "cub",
        config,
        _lock_inputs(tmp_path, checkpoint),
        outputs,
        JobContext(rule="final_lock"),
        seal=seal,
        on_change=on_change,
    )


def _read_the_test(tmp_path: Path) -> None:
    seal = _seal(tmp_path)
    seal.access_log.parent.mkdir(parents=True, exist_ok=True)
    seal.access_log.write_text("2026-11-30T00:00:00+00:00 cub ER-42 (evaluate_cell)\n")
    _artifact(seal.eval_dir / "ER-42.parquet", "scores\n")


def test_changes_name_config_keys_and_artifacts():
    old = {"config_sha256": "a", "config": {"training": {"lr": 5e-5, "epochs": 2}}}
    new = {"config_sha256": "b", "config": {"training": {"lr": 6e-5, "epochs": 2}}}
    old["artifacts"] = {"checkpoints": {"m": "1"}}
    new["artifacts"] = {"checkpoints": {"m": "2"}}
    assert lock_changes(old, new) == ["config training.lr", "artifact m"]
    assert reason_for(lock_changes(old, new)) == "config changed: training.lr"
    assert lock_changes(old, old) == []


def test_without_a_sealed_read_the_lock_is_rewritten_freely(tmp_path: Path):
    _write_lock(tmp_path, {"lr": 1}, "refuse")
    _write_lock(tmp_path, {"lr": 2}, "refuse")
    assert json.loads(_seal(tmp_path).lock.read_text())["config"] == {"lr": 2}


def test_refuse_stops_a_changed_lock_after_a_sealed_read_and_names_unseal(tmp_path: Path):
    _write_lock(tmp_path, {"lr": 1}, "refuse")
    before = _seal(tmp_path).lock.read_bytes()
    _read_the_test(tmp_path)
    unseal = r"hierbench unseal \S+/results cub --reason"
    with pytest.raises(SealChangedError, match=unseal) as error:
        _write_lock(tmp_path, {"lr": 2}, "refuse")
    assert "config lr" in str(error.value)
    assert _seal(tmp_path).lock.read_bytes() == before
    _write_lock(tmp_path, {"lr": 1}, "refuse")  # an unchanged lock may be rewritten


def test_archive_moves_the_old_seal_and_records_why(tmp_path: Path):
    _write_lock(tmp_path, {"lr": 1}, "archive")
    _read_the_test(tmp_path)
    _artifact(tmp_path / "results/cub/tables/summary.md", "tables from the old evaluations\n")
    _write_lock(tmp_path, {"lr": 1}, "archive", checkpoint="retrained")
    seal = _seal(tmp_path)
    (entry,) = list_reseals(tmp_path / "results")
    assert entry["reason"] == "locked artifacts changed"
    assert entry["changes"] == [f"artifact {tmp_path}/results/cub/cells/ER-42/model.safetensors"]
    folder = Path(entry["folder"])
    assert (folder / "lock/final_lock.json").is_file()
    assert (folder / "lock/test_access.log").is_file()
    assert (folder / "eval/ER-42.parquet").is_file()
    assert (folder / "eval/ER-42.parquet.prov.json").is_file()
    assert not seal.access_log.exists() and not list(seal.eval_dir.glob("*"))
    assert (folder / "tables/summary.md").is_file()  # derived from the archived evaluations
    assert not (tmp_path / "results/cub/tables").exists()
    assert "locked artifacts changed" in reseal_history_markdown("cub", seal)
    assert "locked artifacts changed" in seal.lock.with_name("reseal_history.md").read_text()


def test_reseals_are_numbered_and_need_a_reason(tmp_path: Path):
    seal = _seal(tmp_path)
    _write_lock(tmp_path, {"lr": 1}, "archive")
    assert archive_seal(seal, "first", []).name == "001"
    _write_lock(tmp_path, {"lr": 1}, "archive")
    assert archive_seal(seal, "second", []).name == "002"
    with pytest.raises(ValueError, match="needs a reason"):
        archive_seal(seal, "  ", [])


def test_a_deleted_lock_after_a_sealed_read_is_not_silent(tmp_path: Path):
    _write_lock(tmp_path, {"lr": 1}, "refuse")
    _read_the_test(tmp_path)
    _seal(tmp_path).lock.unlink()
    with pytest.raises(SealChangedError, match="previous lock is missing"):
        _write_lock(tmp_path, {"lr": 1}, "refuse")


def test_an_unknown_policy_names_the_key(tmp_path: Path):
    with pytest.raises(ValueError, match=r"seal\.on_change"):
        _write_lock(tmp_path, {"lr": 1}, "ignore")
