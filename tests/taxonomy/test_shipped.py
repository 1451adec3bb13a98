"""Shipped default inputs: one copy in the repository, package data in a built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from hierbench import shipped
from hierbench.shipped import SHIPPED_FILES, ShippedFileError, shipped_file


@pytest.mark.parametrize("name", sorted(SHIPPED_FILES))
def test_each_shipped_file_is_found_in_the_checkout(name: str, monkeypatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)  # not the repository: nothing may depend on the working folder
    assert shipped_file(name) == REPO / SHIPPED_FILES[name] / name


def test_package_data_comes_first(monkeypatch, tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cub_aliases.json").write_text("{}")
    monkeypatch.setattr(shipped.importlib.resources, "files", lambda package: tmp_path)
    assert shipped_file("cub_aliases.json") == tmp_path / "data" / "cub_aliases.json"


def test_a_missing_shipped_file_names_both_places(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(shipped.importlib.resources, "files", lambda package: tmp_path)
    monkeypatch.setattr(shipped, "CHECKOUT", tmp_path / "checkout")
    with pytest.raises(ShippedFileError, match=r"cub_classes\.txt is missing: .*data.*checkout"):
        shipped_file("cub_classes.txt")
    with pytest.raises(KeyError, match="shipped files"):
        shipped_file("nope.txt")


def test_the_build_step_copies_every_shipped_file_into_the_package(tmp_path: Path):
    source = tmp_path / "source"
    source.mkdir()
    for part in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / part, source / part)
    for folder in ("src", *set(SHIPPED_FILES.values())):
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("*.egg-info"))
    build = tmp_path / "build"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)],
        cwd=source,
        check=True,
        capture_output=True,
    )
    for name, folder in SHIPPED_FILES.items():
        packaged = build / "hierbench" / shipped.DATA_FOLDER / name
        assert packaged.read_bytes() == (REPO / folder / name).read_bytes(), name
    assert (build / "hierbench" / "shipped.py").is_file()
