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


def test_real_modules_resolve():
    closure = module_closure(("inputs",))
    assert {"inputs", "artifacts", "hashing", "provenance"} <= set(closure)
    tables = module_closure(("stages.tables",))
    assert {"effects", "effects.schema", "effects.statistics", "effects.render"} <= set(tables)


@pytest.fixture
def fake_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway package with a subpackage: absolute, relative and parent-relative imports.

    pkg/__init__ re-exports from .sub and imports sibling module .other with ``from . import``;
    pkg/sub imports .helper and, two dots up, the top-level module ``base``; ``user`` imports
    pkg.sub absolutely; pkg/unused is imported by nothing; ``pkg.py`` is shadowed by the package.
    """
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .sub import thing\nfrom . import other\n")
    (pkg / "sub.py").write_text("from .helper import value\nfrom .. import base\nthing = 1\n")
    (pkg / "helper.py").write_text("value = 2\n")
    (pkg / "other.py").write_text("import json\n")
    (pkg / "unused.py").write_text("x = 3\n")
    (tmp_path / "pkg.py").write_text("shadowed = True\n")
    (tmp_path / "base.py").write_text("y = 4\n")
    (tmp_path / "user.py").write_text("from hierbench.pkg.sub import thing\n")
    (tmp_path / "whole.py").write_text("from hierbench import pkg\n")
    monkeypatch.setattr(codehash, "PACKAGE_DIR", tmp_path)
    module_closure.cache_clear()
    yield tmp_path
    module_closure.cache_clear()


def test_a_package_name_is_its_init(fake_tree: Path):
    assert codehash.module_path("pkg") == fake_tree / "pkg" / "__init__.py"
    assert codehash.module_path("pkg.sub") == fake_tree / "pkg" / "sub.py"


def test_a_declared_package_covers_what_its_init_imports_relatively(fake_tree: Path):
    assert module_closure(("pkg",)) == ("base", "pkg", "pkg.helper", "pkg.other", "pkg.sub")
    assert module_closure(("whole",)) == (
        "base",
        "pkg",
        "pkg.helper",
        "pkg.other",
        "pkg.sub",
        "whole",
    )


def test_a_submodule_covers_its_own_imports_but_not_the_package_init(fake_tree: Path):
    assert module_closure(("user",)) == ("base", "pkg.helper", "pkg.sub", "user")
    assert module_closure(("pkg.sub",)) == ("base", "pkg.helper", "pkg.sub")


def test_editing_a_submodule_changes_the_hash_of_the_package_and_its_users(fake_tree: Path):
    before = {name: code_hash([name]) for name in ("pkg", "user", "pkg.other", "pkg.unused")}
    (fake_tree / "pkg" / "helper.py").write_text("value = 5\n")
    module_closure.cache_clear()
    after = {name: code_hash([name]) for name in before}
    assert after["pkg"] != before["pkg"] and after["user"] != before["user"]
    assert after["pkg.other"] == before["pkg.other"]
    assert after["pkg.unused"] == before["pkg.unused"]


def test_unknown_module_lists_packages_and_submodules(fake_tree: Path):
    with pytest.raises(UnknownModuleError) as error:
        code_hash(["pkg.nope"])
    assert "'pkg', 'pkg.helper', 'pkg.other', 'pkg.sub', 'pkg.unused'" in str(error.value)


def test_the_real_taxonomy_package_is_covered_by_its_stage():
    closure = set(module_closure(("stages.taxonomy",)))
    assert {"taxonomy", "taxonomy.matching", "taxonomy.shuffle", "taxonomy.nabirds"} <= closure
    assert {"taxonomy.checklist", "taxonomy.aliases", "idnames", "protocol"} <= closure
    assert "taxonomy" not in module_closure(("taxonomy.shuffle",))
