"""Behaviour hashes of library modules, so that editing a module reruns exactly the rules using it.

Snakemake tracks a rule's own script, not the library it imports. Each rule therefore declares
the hierbench modules it uses and passes :func:`code_hash` of them as a ``params`` value; a
changed hash is a changed parameter, and Snakemake reruns the rule. The hash covers the declared
modules and every hierbench module they import, directly or not.

A module is hashed by its syntax tree (Python's ``ast``) with docstrings removed, not by its
text: comments, docstrings, blank lines and formatting change nothing, while any change to
names, constants or structure changes the hash. The tree's printed form is Python's own, so a
new Python minor version may change every hash once (the software record changes with it).

A name is a module (``taxonomy.shuffle`` is ``taxonomy/shuffle.py``) or a package (``taxonomy``
is ``taxonomy/__init__.py``). Declaring a package covers its ``__init__`` and hence whatever it
imports; declaring or importing a submodule covers that submodule and its imports, not the
package's ``__init__`` (which only re-exports), so a rule can declare a finer module.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import platformdirs

PACKAGE = "hierbench"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/hierbench, above this package
INIT = "__init__.py"
# What parsing a file gave, by its bytes' SHA256, kept between processes: Snakemake plans every
# run by hashing each rule's code, and parsing the library is most of that work. Keyed on the
# Python version too, whose syntax trees print differently.
CACHE_FILE = f"codehash-py{sys.version_info.major}{sys.version_info.minor}.json"


class UnknownModuleError(ValueError):
    """A rule declared a library module that does not exist."""


def _source(name: str) -> Path | None:
    """Source file of ``hierbench.<name>``: ``<name>/__init__.py`` or ``<name>.py``, else None."""
    if not name:
        return None
    base = PACKAGE_DIR.joinpath(*name.split("."))
    for path in (base / INIT, base.with_name(base.name + ".py")):
        if path.is_file():
            return path
    return None


def known_modules() -> list[str]:
    """Every module and package name under hierbench (``inputs``, ``taxonomy``, ``taxonomy.x``)."""
    names = []
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            names.append(".".join(parts))
    return sorted(names)


def module_path(name: str) -> Path:
    """Source file of ``hierbench.<name>``; an unknown name is an error listing the valid ones."""
    path = _source(name)
    if path is None:
        raise UnknownModuleError(
            f"no library module 'hierbench.{name}'; known modules: {known_modules()}"
        )
    return path


def _package_of(name: str) -> str:
    """The package that relative imports in module ``name`` start from ('' is hierbench)."""
    path = _source(name)
    if path is not None and path.name == INIT:
        return name
    return name.rpartition(".")[0]


DOCSTRING_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """``tree`` with the docstring of the module and of every class and function removed."""
    for node in ast.walk(tree):
        if not isinstance(node, DOCSTRING_OWNERS) or not node.body:
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            node.body = node.body[1:]
    return tree


def normalised_form(source: str) -> str:
    """A module's behaviour as text: its syntax tree without docstrings, as ``ast.dump`` prints
    it (no comments, no layout, no line numbers; every name, constant and statement kept)."""
    return _dump(ast.parse(source))


def _dump(tree: ast.Module) -> str:
    """:func:`normalised_form` of a parsed module (its docstrings are removed in place)."""
    return ast.dump(_without_docstrings(tree), include_attributes=False)


def normalised_hash(source: str) -> str:
    """SHA256 of :func:`normalised_form`: equal for sources that differ only in comments,
    docstrings or formatting."""
    return hashlib.sha256(normalised_form(source).encode()).hexdigest()


def _imported_names(name: str, tree: ast.Module) -> set[str]:
    """Every name module ``name`` imports from hierbench that may be a module (an imported
    attribute's name included: which of them are modules depends on the package's files)."""
    found: set[str] = set()
    for node in _import_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_strip_package(alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module != PACKAGE and not (node.module or "").startswith(PACKAGE + "."):
                    continue
                prefix = node.module[len(PACKAGE) + 1 :]
            else:
                prefix = _relative_base(_package_of(name), node.level, node.module)
                if prefix is None:
                    continue
            for alias in node.names:
                found.update(_candidates(prefix, alias.name))
    return found


def _import_statements(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, nested ones (in functions, classes, branches)
    included; expressions cannot hold one, so only statement bodies are visited."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, None) or ():
                if isinstance(child, ast.Import | ast.ImportFrom):
                    yield child
                elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                    pending.append(child)


def _strip_package(dotted: str) -> set[str]:
    """``hierbench.x.y`` -> {``x.y``}; anything outside the package -> empty."""
    if dotted.startswith(PACKAGE + "."):
        return {dotted[len(PACKAGE) + 1 :]}
    return set()


def _relative_base(package: str, level: int, module: str | None) -> str | None:
    """What ``from <level dots><module> import`` names inside ``package``; None above hierbench."""
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, *([module] if module else [])])


def _candidates(prefix: str, name: str) -> set[str]:
    """Possible module names for ``from <prefix> import <name>`` (a module or an attribute)."""
    if not prefix:
        return {name}
    return {prefix, f"{prefix}.{name}"}


def cache_path() -> Path:
    """Where parsed files' facts are kept: the user's cache folder for hierbench."""
    return Path(platformdirs.user_cache_dir("hierbench")) / CACHE_FILE


@functools.cache
def _disk_cache() -> dict[str, Any]:
    """The facts cache as read once per process (empty when missing or unreadable)."""
    try:
        found = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = {}
    entries = found if isinstance(found, dict) else {}
    return {"entries": entries, "changed": False}


def _cached(key: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, or what it gave for ``key`` (``<file>:<SHA256>``) in an earlier process;
    an entry of the same file with other contents (an earlier edit) is dropped."""
    cache = _disk_cache()
    entries = cache["entries"]
    if key not in entries:
        file = key.rpartition(":")[0]
        for stale in [known for known in entries if known.rpartition(":")[0] == file]:
            del entries[stale]
        entries[key] = compute()
        cache["changed"] = True
    return entries[key]


def _save_cache() -> None:
    """Write the facts cache whole (a temporary file renamed) if this process added to it; a
    folder that cannot be written only costs the next process the parsing."""
    cache = _disk_cache()
    if not cache["changed"]:
        return
    path = cache_path()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(cache["entries"], sort_keys=True), encoding="utf-8")
        temporary.replace(path)
        cache["changed"] = False
    temporary.unlink(missing_ok=True)


@functools.cache
def module_closure(names: tuple[str, ...]) -> tuple[str, ...]:
    """The declared modules plus every hierbench module they import, transitively, sorted."""
    pending = list(names)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_path(name)
        pending.extend(_module_facts(name, path, path.stat().st_mtime_ns)[0] - seen)
    return tuple(sorted(seen))


@functools.cache
def _module_facts(name: str, path: Path, mtime_ns: int) -> tuple[frozenset[str], str]:
    """The hierbench modules that module ``name`` (at ``path``, as modified at ``mtime_ns``)
    imports, and its :func:`normalised_hash`: each file is parsed once per process, as every
    rule's closure shares most, and once per content across processes (the facts cache)."""
    source = path.read_bytes()

    def parse() -> dict[str, Any]:
        tree = ast.parse(source.decode("utf-8"))
        imported = sorted(_imported_names(name, tree))
        return {"imports": imported, "hash": hashlib.sha256(_dump(tree).encode()).hexdigest()}

    key = f"{name}:{path.name}:{hashlib.sha256(source).hexdigest()}"  # a package's __init__
    facts = _cached(key, parse)  # resolves relative imports from itself, a module from above
    imports = frozenset(module for module in facts["imports"] if _source(module) is not None)
    return imports, facts["hash"]


def module_hash(name: str) -> str:
    """The :func:`normalised_hash` of one library module's source."""
    path = module_path(name)
    return _module_facts(name, path, path.stat().st_mtime_ns)[1]


@functools.cache
def _file_hash(path: Path, mtime_ns: int) -> str:
    """:func:`normalised_hash` of a Python file (as modified at ``mtime_ns``), parsed once per
    content (the facts cache)."""
    source = path.read_bytes()
    key = f"file:{path}:{hashlib.sha256(source).hexdigest()}"
    return _cached(key, lambda: normalised_hash(source.decode("utf-8")))


def script_hash(path: str | Path) -> str:
    """The :func:`normalised_hash` of a workflow script: its behaviour, not its text."""
    path = Path(path)
    if not path.is_file():
        raise UnknownModuleError(f"no workflow script {path}")
    return _file_hash(path.resolve(), path.stat().st_mtime_ns)


def code_hash(modules: Iterable[str], scripts: Iterable[str | Path] = ()) -> str:
    """SHA256 over the normalised forms of ``modules`` and their hierbench imports, in sorted
    order, then of the rule's workflow ``scripts``: what a rule runs, whatever its comments
    and layout (so the workflow drops Snakemake's script-mtime ``code`` trigger)."""
    digest = hashlib.sha256()
    for name in module_closure(tuple(sorted(set(modules)))):
        digest.update(name.encode() + b"\0")
        digest.update(module_hash(name).encode() + b"\0")
    for script in scripts:
        digest.update(b"script\0" + Path(script).name.encode() + b"\0")
        digest.update(script_hash(script).encode() + b"\0")
    _save_cache()
    return digest.hexdigest()


SCRIPT_PART = "script"
PART_LENGTH = 16  # hex digits of each part's hash: enough to tell an edit, short in the plan


def code_parts(modules: Iterable[str], script: str | Path) -> dict[str, str]:
    """What :func:`code_hash` covers, part by part: each module of the closure of ``modules``
    (``hierbench.<name>``) and the workflow ``script``, with a prefix of its normalised hash.
    A rule passes them to its jobs, which check them as they start (:func:`changed_parts`)."""
    parts = {
        f"{PACKAGE}.{name}": module_hash(name)[:PART_LENGTH]
        for name in module_closure(tuple(sorted(set(modules))))
    }
    parts[SCRIPT_PART] = script_hash(script)[:PART_LENGTH]
    _save_cache()
    return parts


def changed_parts(planned: dict[str, str], script: str | Path) -> list[str]:
    """The parts of ``planned`` (:func:`code_parts` when the run was planned) whose code is not
    what it was: an edited or removed module, a module newly imported, or the script. Empty
    when the job is about to run exactly the code its run was planned with."""
    prefix = f"{PACKAGE}."
    declared = [name[len(prefix) :] for name in planned if name.startswith(prefix)]
    try:
        now = code_parts([name for name in declared if _source(name) is not None], script)
    except UnknownModuleError:
        return [SCRIPT_PART]
    changed = {name for name in planned.keys() | now.keys() if planned.get(name) != now.get(name)}
    return sorted(changed)
