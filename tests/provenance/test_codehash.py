"""Code hashes: declared modules plus their hierbench imports, transitively."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from hierbench.provenance import codehash
from hierbench.provenance.codehash import UnknownModuleError, code_hash, module_closure


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
    closure = module_closure(("data.inputs",))
    covered = {"data.inputs", "provenance.artifacts", "provenance.hashing", "provenance.records"}
    assert covered <= set(closure)
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


# ---- the hash is of behaviour: comments, docstrings and layout do not count

SOURCE = '''"""Module docstring."""

import math


class Scale:
    """Class docstring."""

    factor = 2.0  # a comment

    def apply(self, value: float) -> float:
        """Method docstring."""
        return value * self.factor


async def fetch(x):
    "Async docstring."
    return math.sqrt(x)


def later():
    x = 1
    "not a docstring: a statement after the first"
    return x
'''


@pytest.mark.parametrize(
    "edited",
    [
        SOURCE + "# a comment appended\n",
        SOURCE.replace('"""Method docstring."""', '"""A rewritten docstring,\n\n    longer."""'),
        SOURCE.replace('    "Async docstring."\n', ""),
        SOURCE.replace('"""Module docstring."""\n', ""),
        SOURCE.replace("factor = 2.0  # a comment", "factor = (\n        2.0\n    )"),
        ast.unparse(ast.parse(SOURCE)),
        "\n\n".join(SOURCE.splitlines()) + "\n",
    ],
    ids=[
        "comment",
        "docstring",
        "docstring-removed",
        "module-docstring",
        "layout",
        "unparse",
        "blank-lines",
    ],
)
def test_comments_docstrings_and_layout_leave_the_hash(edited: str):
    assert codehash.normalised_hash(edited) == codehash.normalised_hash(SOURCE)


@pytest.mark.parametrize(
    "edited",
    [
        SOURCE.replace("factor = 2.0", "factor = 3.0"),
        SOURCE.replace("value * self", "value / self"),
        SOURCE.replace("math.sqrt", "math.exp"),
        SOURCE.replace("not a docstring", "not a docstrinG"),
        SOURCE.replace("value: float)", "value: int)"),
        SOURCE.replace("x = 1\n", "x = 1\n    x = x\n"),
    ],
    ids=["constant", "operator", "name", "later-string", "annotation", "statement"],
)
def test_any_change_to_code_changes_the_hash(edited: str):
    assert codehash.normalised_hash(edited) != codehash.normalised_hash(SOURCE)


def test_normalised_form_keeps_names_and_constants_but_not_docstrings():
    form = codehash.normalised_form(SOURCE)
    assert "factor" in form and "2.0" in form and "not a docstring" in form
    assert "docstring." not in form and "comment" not in form


def test_a_rule_hash_ignores_comments_in_its_imports(fake_package: Path):
    before = code_hash(["a"])
    (fake_package / "c.py").write_text('"""Docs."""\n\n# note\nother = 2  # two\n')
    assert code_hash(["a"]) == before


REAL_MODULES = ["metrics.engine", "losses.supcon", "losses.regression", "geometry.poincare"]


def _edits_without_behaviour(source: str) -> dict[str, str]:
    """A comment, a docstring and a whole-file reformat of a real module's source."""
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree, clean=False)
    assert docstring, "the module has a docstring to edit"
    return {
        "comment": source + "\n# a comment a user appended\n",
        "docstring": source.replace(docstring, docstring + "\n\nA paragraph added.", 1),
        "reformat": ast.unparse(tree),
    }


@pytest.mark.parametrize("module", REAL_MODULES)
def test_real_modules_hash_the_same_after_edits_without_behaviour(module: str):
    source = codehash.module_path(module).read_text(encoding="utf-8")
    reference = codehash.normalised_hash(source)
    for kind, edited in _edits_without_behaviour(source).items():
        assert edited != source
        assert codehash.normalised_hash(edited) == reference, kind


def test_a_rules_script_counts_by_behaviour(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text('"""Train."""\nfrom x import y\n\ny(1)\n')
    before = code_hash(["data.inputs"], [script])
    assert before != code_hash(["data.inputs"])
    script.write_text('"""Train a cell."""\nfrom x import y  # the call\n\n\ny(1)\n')
    assert code_hash(["data.inputs"], [script]) == before
    script.write_text('"""Train."""\nfrom x import y\n\ny(2)\n')
    assert code_hash(["data.inputs"], [script]) != before


def test_a_missing_script_is_an_error_naming_it(tmp_path: Path):
    with pytest.raises(UnknownModuleError, match=r"no workflow script .*gone\.py"):
        code_hash(["data.inputs"], [tmp_path / "gone.py"])


def _forget_this_process() -> None:
    """As a new process starts: nothing parsed in memory, the facts cache read anew."""
    for cached in (
        codehash._disk_cache,
        codehash._module_facts,
        codehash._file_hash,
        codehash.module_closure,
    ):
        cached.cache_clear()


def test_parsed_files_are_kept_between_processes_and_give_the_same_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    script = Path(codehash.__file__).parents[3] / "workflow_scripts/evaluate.py"
    _forget_this_process()
    cold = code_hash(["stages.evaluation"], [script])
    cache = codehash.cache_path()
    assert cache.parent == tmp_path / "cache" / "hierbench" and cache.is_file()
    entries = json.loads(cache.read_text())
    assert any(key.startswith("stages.evaluation:evaluation.py:") for key in entries)
    assert any(key.startswith("file:") for key in entries)  # the script
    _forget_this_process()
    assert code_hash(["stages.evaluation"], [script]) == cold  # from the cache: the same
    # the cache is what the next process reads: a changed entry changes the hash it gives
    key = next(key for key in entries if key.startswith("stages.evaluation:"))
    entries[key]["hash"] = "0" * 64
    cache.write_text(json.dumps(entries))
    _forget_this_process()
    assert code_hash(["stages.evaluation"], [script]) != cold
    cache.write_text("{not json")  # an unreadable cache is rebuilt, the hashes unchanged
    _forget_this_process()
    assert code_hash(["stages.evaluation"], [script]) == cold
    assert json.loads(cache.read_text())[key]["hash"] != "0" * 64
    # an edited file's entry replaces its earlier one: the cache does not grow with edits
    edited = tmp_path / "edited.py"
    for text in ("x = 1\n", "x = 2\n"):
        edited.write_text(text)
        _forget_this_process()
        code_hash(["stages.evaluation"], [edited])
    kept = [key for key in json.loads(cache.read_text()) if key.startswith(f"file:{edited}:")]
    assert len(kept) == 1
    _forget_this_process()
