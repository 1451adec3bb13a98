"""Source hashes of library modules, so that editing a module reruns exactly the rules using it.

Snakemake tracks a rule's own script, not the library it imports. Each rule therefore declares
the hierbench modules it uses and passes :func:`code_hash` of them as a ``params`` value; a
changed hash is a changed parameter, and Snakemake reruns the rule. The hash covers the declared
modules and every hierbench module they import, directly or not.
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


def module_path(name: str) -> Path:
    """Source file of ``hierbench.<name>``; an unknown name is an error listing the valid ones."""
    path = PACKAGE_DIR / f"{name.replace('.', '/')}.py"
    if not path.is_file():
        known = sorted(p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__")
        raise UnknownModuleError(f"no library module 'hierbench.{name}'; known modules: {known}")
    return path


def _imported_modules(source: str) -> set[str]:
    """Names of hierbench modules that a module's source imports (absolute or relative)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_strip_package(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 0 and not base.startswith(PACKAGE):
                continue
            prefix = _strip_package(base) if node.level == 0 else ({base} if base else set())
            for alias in node.names:
                found.update(_candidates(prefix, alias.name))
    return {name for name in found if (PACKAGE_DIR / f"{name.replace('.', '/')}.py").is_file()}


def _strip_package(dotted: str) -> set[str]:
    """``hierbench.x.y`` -> {``x.y``}; anything outside the package -> empty."""
    if dotted.startswith(PACKAGE + "."):
        return {dotted[len(PACKAGE) + 1 :]}
    return set()


def _candidates(prefix: set[str], name: str) -> set[str]:
    """Possible module names for ``from <prefix> import <name>`` (a module or an attribute)."""
    if not prefix:
        return {name}
    return {p for p in prefix} | {f"{p}.{name}" for p in prefix}


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
        pending.extend(_imported_modules(module_path(name).read_text(encoding="utf-8")) - seen)
    return tuple(sorted(seen))


def code_hash(modules: Iterable[str]) -> str:
    """SHA256 over the sources of ``modules`` and their hierbench imports, in sorted order."""
    digest = hashlib.sha256()
    for name in module_closure(tuple(sorted(set(modules)))):
        digest.update(name.encode() + b"\0")
        digest.update(module_path(name).read_bytes() + b"\0")
    return digest.hexdigest()
