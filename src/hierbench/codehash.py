"""Source hashes of library modules, so that editing a module reruns exactly the rules using it.

Snakemake tracks a rule's own script, not the library it imports. Each rule therefore declares
the hierbench modules it uses and passes :func:`code_hash` of them as a ``params`` value; a
changed hash is a changed parameter, and Snakemake reruns the rule. The hash covers the declared
modules and every hierbench module they import, directly or not. A package counts as its
``__init__``; a package's ``__init__`` holds re-exports only, so importing one submodule does not
make a rule depend on its siblings.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "hierbench"
PACKAGE_DIR = Path(__file__).resolve().parent


class UnknownModuleError(ValueError):
    """A rule declared a library module that does not exist."""


def _source_file(name: str) -> Path | None:
    """Source of ``hierbench.<name>``: ``<name>.py`` or a package's ``<name>/__init__.py``."""
    base = PACKAGE_DIR / name.replace(".", "/")
    for path in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def known_modules() -> list[str]:
    """Every module and package of the library, as dotted names below ``hierbench``."""
    names = []
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            names.append(".".join(parts))
    return sorted(names)


def module_path(name: str) -> Path:
    """Source file of ``hierbench.<name>``; an unknown name is an error listing the valid ones."""
    path = _source_file(name)
    if path is None:
        raise UnknownModuleError(
            f"no library module 'hierbench.{name}'; known modules: {known_modules()}"
        )
    return path


def _imported_modules(source: str, name: str) -> set[str]:
    """Names of hierbench modules that module ``name``'s source imports (absolute or relative)."""
    is_package = _source_file(name) == PACKAGE_DIR.joinpath(*name.split("."), "__init__.py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_strip_package(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = _import_base(node, name, is_package)
            if base is None:
                continue
            found.update(_submodule(base, alias.name) for alias in node.names)
            if base:
                found.add(base)
    return {module for module in found if _source_file(module) is not None}


def _import_base(node: ast.ImportFrom, name: str, is_package: bool) -> str | None:
    """The hierbench module a ``from ... import`` names ("" = the package); None if outside."""
    if node.level == 0:
        module = node.module or ""
        if module == PACKAGE:
            return ""
        return next(iter(_strip_package(module)), None)
    parts = name.split(".") if is_package else name.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*parts, *([node.module] if node.module else [])])


def _strip_package(dotted: str) -> set[str]:
    """``hierbench.x.y`` -> {``x.y``}; anything outside the package -> empty."""
    if dotted.startswith(PACKAGE + "."):
        return {dotted[len(PACKAGE) + 1 :]}
    return set()


def _submodule(base: str, name: str) -> str:
    """``from <base> import <name>``: the submodule ``<base>.<name>`` (kept only if it exists)."""
    return f"{base}.{name}" if base else name


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
        source = module_path(name).read_text(encoding="utf-8")
        pending.extend(_imported_modules(source, name) - seen)
    return tuple(sorted(seen))


def code_hash(modules: Iterable[str]) -> str:
    """SHA256 over the sources of ``modules`` and their hierbench imports, in sorted order."""
    digest = hashlib.sha256()
    for name in module_closure(tuple(sorted(set(modules)))):
        digest.update(name.encode() + b"\0")
        digest.update(module_path(name).read_bytes() + b"\0")
    return digest.hexdigest()
