"""Code hashes: declared modules plus their hierbench imports, transitively."""

from __future__ import annotations

from pathlib import Path

import pytest

from hierbench import codehash
from hierbench.codehash import UnknownModuleError, code_hash, module_closure


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway package: a imports b (absolute), b imports c (relative), d stands alone."""
    (tmp_path / "a.py").write_text("from hierbench.b import thing\nimport numpy\n")
    (tmp_path / "b.py").write_text("from .c import other\nthing = 1\n")
    (tmp_path / "c.py").write_text("other = 2\n")
    (tmp_path / "d.py").write_text("import hierbench.c\n")
    monkeypatch.setattr(codehash, "PACKAGE_DIR", tmp_path)
    module_closure.cache_clear()
    yield tmp_path
    module_closure.cache_clear()


def test_closure_follows_absolute_and_relative_imports(fake_package: Path):
    assert module_closure(("a",)) == ("a", "b", "c")
    assert module_closure(("d",)) == ("c", "d")


def test_hash_changes_with_a_transitive_import_only(fake_package: Path):
    before_a, before_d = code_hash(["a"]), code_hash(["d"])
    (fake_package / "b.py").write_text("from .c import other\nthing = 3\n")
    assert code_hash(["a"]) != before_a
    assert code_hash(["d"]) == before_d


def test_hash_ignores_declaration_order_and_duplicates(fake_package: Path):
    assert code_hash(["a", "d"]) == code_hash(["d", "a", "a"])


def test_unknown_module_is_an_error_listing_known_ones(fake_package: Path):
    with pytest.raises(UnknownModuleError, match=r"hierbench\.nope.*'a', 'b'"):
        code_hash(["nope"])


@pytest.fixture
def fake_subpackage(fake_package: Path) -> Path:
    """Package p: its __init__ re-exports from p.x; p.x imports its sibling p.y relatively,
    p.y imports p.z by absolute dotted name, and e imports p.z directly."""
    package = fake_package / "p"
    package.mkdir()
    (package / "__init__.py").write_text("from hierbench.p.x import f\n")
    (package / "x.py").write_text("from .y import g\nfrom . import z\n")
    (package / "y.py").write_text("from hierbench.p.z import h\n")
    (package / "z.py").write_text("h = 1\n")
    (fake_package / "e.py").write_text("from hierbench.p import z\nfrom ..outside import q\n")
    return package


def test_packages_and_relative_imports_resolve(fake_subpackage: Path):
    assert module_closure(("p",)) == ("p", "p.x", "p.y", "p.z")
    assert module_closure(("p.y",)) == ("p.y", "p.z")
    assert module_closure(("e",)) == ("e", "p", "p.x", "p.y", "p.z")


def test_a_submodule_edit_reruns_only_its_importers(fake_subpackage: Path):
    before_p, before_y, before_a = code_hash(["p"]), code_hash(["p.y"]), code_hash(["a"])
    (fake_subpackage / "x.py").write_text("from .y import g\nfrom . import z\nk = 2\n")
    assert code_hash(["p"]) != before_p
    assert code_hash(["p.y"]) == before_y
    assert code_hash(["a"]) == before_a


def test_unknown_module_lists_packages_and_submodules(fake_subpackage: Path):
    with pytest.raises(UnknownModuleError, match=r"'p', 'p\.x', 'p\.y', 'p\.z'"):
        code_hash(["p.nope"])


def test_real_modules_resolve():
    closure = module_closure(("inputs",))
    assert {"inputs", "artifacts", "hashing", "provenance"} <= set(closure)
    tables = module_closure(("stages.tables",))
    assert {"effects", "effects.schema", "effects.statistics", "effects.render"} <= set(tables)
