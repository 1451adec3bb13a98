"""Staging the shipped `id name` metadata files (hierbench.data.inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from hierbench.data.inputs import InputFormatError, stage_id_name_file
from hierbench.provenance.artifacts import provenance_path, read_provenance
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.records import JobContext

SHIPPED = ["cub_classes.txt", "nabirds_classes.txt", "nabirds_hierarchy.txt"]


def _job(*inputs: Path) -> JobContext:
    return JobContext(
        rule="stage_input",
        wildcards={"dataset": "cub", "name": "classes.txt"},
        params={"kind": "classes"},
        inputs=tuple(str(p) for p in inputs),
        code="c0de",
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_stage_byte_for_byte(name: str, tmp_path: Path):
    source = REPO / "resources" / name
    target = tmp_path / "results/inputs" / name
    assert stage_id_name_file(source, target, _job(source)) == target
    assert target.read_bytes() == source.read_bytes()


def test_staging_writes_a_provenance_record(tmp_path: Path):
    source = tmp_path / "classes.txt"
    # Odd but valid: padding, runs of spaces, non-ASCII names, CRLF endings, no final newline.
    source.write_bytes("  1 001.Black_footed_Albatross  \r\n2 Grive à  collier\r\n10 x".encode())
    target = tmp_path / "staged/classes.txt"
    stage_id_name_file(str(source), str(target), _job(source))
    assert target.read_bytes() == source.read_bytes()
    record = read_provenance(target)
    assert record["sha256"] == sha256_file(source)
    assert record["bytes"] == source.stat().st_size
    assert record["path"] == target.as_posix()
    assert (record["rule"], record["code"]) == ("stage_input", "c0de")
    assert record["wildcards"] == {"dataset": "cub", "name": "classes.txt"}
    assert record["params"] == {"kind": "classes"}
    assert record["inputs"] == {source.as_posix(): sha256_file(source)}


def test_staging_replaces_an_earlier_copy(tmp_path: Path):
    source, target = tmp_path / "hierarchy.txt", tmp_path / "staged.txt"
    target.write_text("stale\n")
    source.write_text("1 0\n2 0\n")
    stage_id_name_file(source, target, _job(source))
    assert target.read_text() == "1 0\n2 0\n"
    assert read_provenance(target)["sha256"] == sha256_file(source)


BROKEN = {
    "name missing": ("1 Birds\n2\n3 Ducks\n", 2),
    "only spaces after the id": ("1 Birds\n2 Ducks\n3    \n", 3),
    "id not an integer": ("1 Birds\nx2 Ducks\n", 2),
    "negative id": ("-1 Birds\n", 1),
    "blank line": ("1 Birds\n\n2 Ducks\n", 2),
    "duplicate id": ("1 Birds\n2 Ducks\n1 Geese\n", 3),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_malformed_line_is_an_error_naming_file_and_line(case: str, tmp_path: Path):
    text, line = BROKEN[case]
    source = tmp_path / "classes.txt"
    source.write_text(text)
    target = tmp_path / "staged/classes.txt"
    with pytest.raises(InputFormatError) as raised:
        stage_id_name_file(source, target, _job(source))
    assert f"{source}:{line}:" in str(raised.value)
    assert not target.exists() and not provenance_path(target).exists()


def test_empty_file_is_an_error_naming_it(tmp_path: Path):
    source = tmp_path / "empty.txt"
    source.write_text("")
    with pytest.raises(InputFormatError, match="empty"):
        stage_id_name_file(source, tmp_path / "staged.txt", _job(source))
    assert not (tmp_path / "staged.txt").exists()


def test_a_malformed_file_leaves_the_earlier_copy_and_record(tmp_path: Path):
    source, target = tmp_path / "classes.txt", tmp_path / "staged/classes.txt"
    source.write_text("1 Birds\n")
    stage_id_name_file(source, target, _job(source))
    record = provenance_path(target).read_bytes()
    source.write_text("1 Birds\n2\n")
    with pytest.raises(InputFormatError, match=r"classes\.txt:2:"):
        stage_id_name_file(source, target, _job(source))
    assert target.read_text() == "1 Birds\n"
    assert provenance_path(target).read_bytes() == record


def test_the_format_error_is_a_value_error():
    assert issubclass(InputFormatError, ValueError)
