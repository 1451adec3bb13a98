"""The artifact layer: atomic, deterministic, and always paired with a matching record."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from hierbench.provenance.artifacts import (
    atomic_path,
    copy_file,
    provenance_path,
    publish,
    publish_folder,
    read_parquet_metadata,
    read_provenance,
    write_json,
    write_parquet,
)
from hierbench.provenance.hashing import canonical_json, sha256_file, sha256_path, sha256_tree
from hierbench.provenance.records import JobContext

JOB = JobContext(
    rule="unit", wildcards={"dataset": "cub"}, params={"b": 2, "a": [1, 2]}, code="c0de"
)


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"image_id": [3, 1, 2], "name": ["c", "a", "b"], "x": [0.5, 0.25, 1.0]})


def test_equal_content_gives_byte_identical_parquet(tmp_path: Path):
    first = write_parquet(_frame(), tmp_path / "a/t.parquet", JOB, sort_by=["image_id"])
    shuffled = _frame().sample(frac=1.0, random_state=7)
    second = write_parquet(shuffled, tmp_path / "b/t.parquet", JOB, sort_by=["image_id"])
    assert first.read_bytes() == second.read_bytes()
    assert pd.read_parquet(first)["image_id"].tolist() == [1, 2, 3]


def test_parquet_keeps_our_metadata_and_drops_pandas_index(tmp_path: Path):
    frame = _frame().set_index("name")
    target = write_parquet(
        frame.reset_index(),
        tmp_path / "t.parquet",
        JOB,
        sort_by=["name"],
        metadata={"backbone": "x", "dim": 3},
    )
    assert read_parquet_metadata(target) == {"backbone": "x", "dim": 3}
    assert list(pd.read_parquet(target).columns) == ["name", "image_id", "x"]


def test_sorting_by_a_missing_column_is_an_error_naming_it(tmp_path: Path):
    with pytest.raises(KeyError, match="nope"):
        write_parquet(_frame(), tmp_path / "t.parquet", JOB, sort_by=["nope"])


def test_exception_mid_write_leaves_no_target_and_no_temporary(tmp_path: Path):
    target = tmp_path / "out/t.bin"

    def failing_writer(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        publish(target, failing_writer, JOB)
    assert list(target.parent.iterdir()) == []


def test_exception_mid_write_keeps_the_previous_target(tmp_path: Path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(ValueError), atomic_path(target) as tmp:
        tmp.write_text("new")
        raise ValueError("stop")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_record_matches_the_artifact(tmp_path: Path):
    source = tmp_path / "in.txt"
    source.write_text("1 a\n")
    job = JobContext(rule="copy", inputs=(str(source),), code="abc")
    target = copy_file(source, tmp_path / "out/copied.txt", job)
    record = read_provenance(target)
    assert record["sha256"] == sha256_file(target)
    assert record["bytes"] == target.stat().st_size
    assert record["inputs"] == {source.as_posix(): sha256_file(source)}
    assert record["rule"] == "copy" and record["code"] == "abc"
    assert record["software"]["packages"]["pandas"] == pd.__version__
    environment = record["software"]["environment"]
    assert environment["geoopt"] == "0.5.1" and environment["pyarrow"] == "26.0.1"
    assert len(environment) > 50 and list(environment) == sorted(environment)
    assert provenance_path(target).name == "copied.txt.prov.json"


def test_record_has_no_timestamp_and_is_reproducible(tmp_path: Path):
    first = write_json({"b": 1, "a": 2}, tmp_path / "1/x.json", JOB)
    second = write_json({"a": 2, "b": 1}, tmp_path / "2/x.json", JOB)
    assert first.read_bytes() == second.read_bytes()
    one, two = read_provenance(first), read_provenance(second)
    assert {k: v for k, v in one.items() if k != "path"} == {
        k: v for k, v in two.items() if k != "path"
    }
    assert not any("time" in key or "date" in key for key in one)
    assert not re.search(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:", provenance_path(first).read_text())


def test_params_recorded_as_given(tmp_path: Path):
    target = write_json([1], tmp_path / "x.json", JOB)
    assert read_provenance(target)["params"] == {"a": [1, 2], "b": 2}


def test_missing_record_is_an_error_naming_the_artifact(tmp_path: Path):
    (tmp_path / "bare.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"bare\.txt has no provenance record"):
        read_provenance(tmp_path / "bare.txt")


def test_tree_hash_depends_on_names_and_contents(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a/x.txt").write_text("1")
    before = sha256_tree(tmp_path / "a")
    (tmp_path / "a/x.txt").write_text("2")
    assert sha256_tree(tmp_path / "a") != before
    assert sha256_path(tmp_path / "a") == sha256_tree(tmp_path / "a")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        sha256_path(tmp_path / "nowhere")


def test_canonical_json_sorts_keys_and_rejects_nan():
    assert canonical_json({"b": 1, "a": [1, {"d": 0, "c": 1}]}) == '{"a":[1,{"c":1,"d":0}],"b":1}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
    assert json.loads(canonical_json({"é": 1})) == {"é": 1}


def test_temporaries_of_a_killed_writer_are_removed_by_the_next_write(tmp_path: Path):
    target = tmp_path / "features.parquet"
    stale = tmp_path / ".features.parquet.k1ll3d.tmp"
    stale.write_text("half")
    other = tmp_path / ".other.parquet.abc.tmp"
    other.write_text("another target's temporary stays")
    write_json({"a": 1}, target, JOB)
    assert not stale.exists() and other.exists()


def test_a_folder_artifact_is_renamed_into_place_with_its_record(tmp_path: Path):
    target = tmp_path / "cub" / "export"
    stale = tmp_path / "cub" / ".export.k1ll3d.tmp"
    (stale / "run").mkdir(parents=True)  # a killed writer's half-built folder

    def write(folder: Path) -> None:
        assert folder.parent == target.parent and not target.exists()
        (folder / "run").mkdir()
        (folder / "run" / "events").write_bytes(b"numbers")

    publish_folder(target, write, JOB, facts={"runs": 1})
    record = read_provenance(target)
    assert record["sha256"] == sha256_tree(target) and record["bytes"] == len(b"numbers")
    assert record["facts"] == {"runs": 1} and record["path"] == target.as_posix()
    assert not stale.exists() and sorted(p.name for p in target.parent.iterdir()) == [
        "export",
        "export.prov.json",
    ]
    assert oct(target.stat().st_mode & 0o777) == "0o755"
    assert oct((target / "run" / "events").stat().st_mode & 0o777) == "0o644"


def test_a_source_fingerprint_follows_file_content_and_refuses_a_folder(tmp_path: Path):
    from hierbench.provenance.hashing import source_fingerprint

    source = tmp_path / "aliases.json"
    source.write_text("{}")
    first = source_fingerprint([source, tmp_path / "missing.csv"])
    os.utime(source, ns=(1, 1))
    assert source_fingerprint([source, tmp_path / "missing.csv"]) == first
    source.write_text("[]")
    assert source_fingerprint([source, tmp_path / "missing.csv"]) != first
    with pytest.raises(ValueError, match="is a folder; source fingerprints take files only"):
        source_fingerprint([tmp_path])
