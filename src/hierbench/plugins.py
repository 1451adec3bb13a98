"""Plugins from outside the package, of every kind (objectives, geometries, metrics, datasets):
how a config names one and how it is found and loaded.

A config entry names an implementation by import path (``package.module:NAME``), by file
(``path/to/file.py:NAME``, from the config's folder like its other relative paths, made
absolute by :mod:`hierbench.runtools.launch` before they get here) or by a Python entry point
of the kind's group (``entry-point:NAME``; ``hierbench.objectives``, ``hierbench.geometries``,
``hierbench.metrics``, ``hierbench.datasets``), as pytest and Snakemake load their plugins.
Planning the workflow needs only the plugin's source file (its code hash is that of the jobs
that use it), found here without running the plugin, so the rules stay torch-free and a plugin
that cannot be found stops the run before it starts; the jobs that use a plugin load it
(:func:`load_plugin`).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

ENTRY_POINT_PREFIX = "entry-point:"


class PluginError(ValueError):
    """A plugin cannot be found or loaded; the message names the config key."""


def configured(config: Mapping[str, Any], kind: str) -> dict[str, str]:
    """The plugins of ``kind`` a config names (``plugins.<kind>``), by the name each goes by."""
    return dict((config.get("plugins", {}) or {}).get(kind, {}) or {})


def dataset_plugins(plugins: Mapping[str, Any], kind: str | None = None) -> dict[str, Any]:
    """The configured plugins as they concern one dataset: of the dataset kinds, its own
    ``kind`` alone (none without one), so that a kind of one's own never re-seals another."""
    concern = {group: named for group, named in plugins.items() if group != "datasets"}
    kinds = plugins.get("datasets", {}) or {}
    if kind in kinds:
        concern["datasets"] = {kind: kinds[kind]}
    return concern


def split_reference(
    reference: str, key: str, group: str, error: type[PluginError] = PluginError
) -> tuple[str, str]:
    """``(module or file, NAME)`` of a ``module:NAME`` or ``file.py:NAME`` reference, or of
    the entry point of ``group`` it names."""
    if reference.startswith(ENTRY_POINT_PREFIX):
        point = entry_point(reference.removeprefix(ENTRY_POINT_PREFIX), key, group, error)
        return point.module, point.attr
    where, separator, name = reference.rpartition(":")
    if not separator or not where or not name:
        raise error(
            f"{key}: {reference!r} is not 'package.module:NAME', 'file.py:NAME' or "
            f"'{ENTRY_POINT_PREFIX}NAME'"
        )
    return where, name


def entry_point(
    name: str, key: str, group: str, error: type[PluginError] = PluginError
) -> metadata.EntryPoint:
    """The installed entry point ``name`` of ``group``."""
    points = {point.name: point for point in metadata.entry_points(group=group)}
    if name not in points:
        raise error(
            f"{key}: no entry point {name!r} in group {group!r}; installed: {sorted(points)}"
        )
    return points[name]


def plugin_source(
    reference: str, key: str, group: str, error: type[PluginError] = PluginError
) -> Path:
    """The file that defines the plugin ``reference`` names, found without running it; an
    error naming ``key`` when the file or module is missing or does not define NAME."""
    where, name = split_reference(reference, key, group, error)
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise error(f"{key}: {no_file(path)}")
    else:
        try:
            spec = importlib.util.find_spec(where)
        except (ImportError, ValueError) as found:
            raise error(f"{key}: cannot find module {where!r}: {found}") from None
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            raise error(f"{key}: cannot find module {where!r} (a Python source file)")
        path = Path(spec.origin)
    defined = top_level_names(path)
    if name not in defined:
        raise error(f"{key}: {where} defines no {name!r}; it defines {sorted(defined)}")
    return path.resolve()


def no_file(path: Path) -> str:
    """What a missing plugin file is, naming the folder it was looked for in: a config's
    relative path is made absolute from the config's folder before it gets here (see
    docs/configuration.md), one left relative is the working folder's."""
    if path.is_absolute():
        return f"no file {path.name} in {path.parent}"
    return f"no file {path} in {Path.cwd()} (the working folder)"


def top_level_names(path: Path) -> set[str]:
    """The names a Python file binds at its top level (assignments, definitions, imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
        if isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def load_plugin(
    reference: str, key: str, group: str, error: type[PluginError] = PluginError
) -> Any:
    """The object a reference names, its module run."""
    if reference.startswith(ENTRY_POINT_PREFIX):
        return entry_point(reference.removeprefix(ENTRY_POINT_PREFIX), key, group, error).load()
    where, attribute = split_reference(reference, key, group, error)
    if where.endswith(".py"):
        module = _module_from_file(Path(where), key, error)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as found:
            raise error(f"{key}: cannot import {where!r}: {found}") from None
    if not hasattr(module, attribute):
        names = sorted(n for n in vars(module) if not n.startswith("_"))
        raise error(f"{key}: {module.__name__} has no {attribute!r}; it has {names}")
    return getattr(module, attribute)


def _module_from_file(path: Path, key: str, error: type[PluginError]) -> Any:
    """The Python file at ``path``, imported under a name of its own."""
    if not path.is_file():
        raise error(f"{key}: {no_file(path)}")
    name = f"hierbench_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise error(f"{key}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
