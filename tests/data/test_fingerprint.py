"""A dataset's content identity (hierbench.data.fingerprint): the files its layout lists, each
hashed once per version, so that a touched file or a stray one changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from table_collections import table_dataset_folder

from hierbench.data import fingerprint as fp
from hierbench.data.kinds import BUILTIN_KINDS


def _cub(root: Path) -> Path:
    """A two-image CUB-layout folder (its tables only need to list the images)."""
    (root / "images/001.A").mkdir(parents=True)
    (root / "images.txt").write_text("1 001.A/a.jpg\n2 001.A/b b.jpg\n")
    for name in BUILTIN_KINDS["cub"].layout_files[1:]:
        (root / name).write_text(f"{name}\n")
    (root / "images/001.A/a.jpg").write_bytes(b"a")
    (root / "images/001.A/b b.jpg").write_bytes(b"bb")
    return root


def test_the_images_part_lists_exactly_the_images_the_layout_names(tmp_path: Path):
    root = _cub(tmp_path / "cub")
    (root / "images/stray.txt").write_text("not listed")
    assert fp.part_files(root, "cub", "images") == ["images/001.A/a.jpg", "images/001.A/b b.jpg"]
    assert fp.part_files(root, "cub", "layout") == sorted(BUILTIN_KINDS["cub"].layout_files)
    table = table_dataset_folder(tmp_path / "mine")
    assert fp.part_files(table, "table", "images") == [
        "a/10.jpg",
        "a/9.jpg",
        "gull/1.jpg",
        "tern.jpg",
        "z.jpg",
    ]


def test_a_touched_file_or_a_stray_file_keeps_the_identity_and_an_edit_changes_it(tmp_path: Path):
    root = _cub(tmp_path / "cub")
    cache = tmp_path / "cache.json"
    first = fp.identity(fp.fingerprint(root, "cub", "images", cache))
    image = root / "images/001.A/a.jpg"
    os.utime(image, ns=(1, 1))  # touched: a new time, the same bytes
    (root / "images/001.A/new.jpg").write_bytes(b"stray")
    assert fp.identity(fp.fingerprint(root, "cub", "images", cache)) == first
    image.write_bytes(b"A")  # same size, other bytes
    assert fp.identity(fp.fingerprint(root, "cub", "images", cache)) != first


def test_an_unchanged_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = _cub(tmp_path / "cub")
    cache = tmp_path / "cache.json"
    fp.fingerprint(root, "cub", "images", cache)
    read = []
    monkeypatch.setattr(fp, "sha256_file", lambda path: read.append(path) or "x")
    fp.fingerprint(root, "cub", "images", cache)
    assert read == []
    os.utime(root / "images/001.A/a.jpg", ns=(5, 5))
    fp.fingerprint(root, "cub", "images", cache)
    assert read == [root / "images/001.A/a.jpg"]


def test_a_listed_file_that_is_missing_is_marked_absent_for_its_reader_to_name(tmp_path: Path):
    root = _cub(tmp_path / "cub")
    (root / "images/001.A/b b.jpg").unlink()
    table = fp.fingerprint(root, "cub", "images", None)
    assert table.set_index("path").loc["images/001.A/b b.jpg", "sha256"] == fp.ABSENT


def test_unknown_kinds_and_parts_are_errors_naming_the_known_ones(tmp_path: Path):
    with pytest.raises(fp.FingerprintError, match=r"unknown dataset kind .moths.; built-in kinds"):
        fp.part_files(tmp_path, "moths", "images")
    with pytest.raises(fp.FingerprintError, match=r"no dataset part 'all'; parts: \['layout'"):
        fp.part_files(tmp_path, "cub", "all")


def test_a_damaged_cache_is_rebuilt(tmp_path: Path):
    root = _cub(tmp_path / "cub")
    cache = tmp_path / "cache.json"
    cache.write_text("{not json")
    assert len(fp.fingerprint(root, "cub", "layout", cache)) == len(
        BUILTIN_KINDS["cub"].layout_files
    )
    assert cache.read_text().startswith("{")
