"""The rebuild map: which rules a dry run reruns after an edit to each library module or to a
config key of each stage, measured on a complete run and published as a table.

Each rule declares the library modules it runs (``code("stages.x")`` in ``rules/*.smk``); an
edit to module M changes the code hash of exactly the rules whose import closure holds M, and
Snakemake reruns those and everything downstream. Modules that reach the same set of rules
rerun the same jobs, so one dry run per such group measures every module of it.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import json
import queue
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from hierbench.provenance import codehash
from hierbench.provenance.codehash import known_modules, module_closure, module_path
from hierbench.runtools.page_sections import section, with_section

# A rule's header: ``rule NAME:`` (or ``localrule``), ``use rule PARENT as CHILD with:``, or
# ``for ITEM in FAMILY():``, a family of rules generated from a registry of
# :mod:`hierbench.cellkinds` (each rule named ``ITEM.ATTRIBUTE`` by its ``name:`` directive).
RULE_HEADER = re.compile(
    r"^(?:[ \t]*(?:local)?rule\s+(?P<name>\w+)\s*"  # indented: inside an ``if``
    r"|[ \t]*use rule (?P<parent>\w+) as (?P<child>\w+) with"
    r"|for (?P<item>\w+) in (?P<family>\w+)\(\))\s*:",
    re.MULTILINE,
)
GENERATED_NAME = re.compile(r"\bname:\s*(?P<item>\w+)\.(?P<attribute>\w+)")
# The registry a generated family loops over: imported by name, as the workflow imports it
# (it plans from the config, a layer above the run tools).
FAMILY_REGISTRY = "hierbench.cellkinds"
CODE_CALL = re.compile(r"\bcode\([^)]*\)")
# An edit that changes behaviour in every module and breaks none: one more global name.
PROBE_LINE = "\n_REBUILD_PROBE = 1\n"
# The rebuild map's markers in its page of the user guide (docs/rebuilds.md).
PAGE_SECTION = "rebuild-map"  # the generated section of docs/rebuilds.md (runtools.page_sections)

# Config keys probed, one or more per stage, each with the value the edit sets (tiny config).
CONFIG_PROBES: tuple[tuple[str, Any], ...] = (
    ("datasets.cub.taxonomy.fuzzy_margin", 6),
    ("datasets.cub.splits.validation_fraction", 0.3),
    ("backbone.image_size", 72),
    ("tuning.epochs", 3),
    ("training.lr", 6.0e-5),
    ("datasets.cub.controls.baselines.hier.margin", 0.2),
    ("datasets.cub.controls.semantic.tau", 0.2),
    ("companion.temperature", 0.1),
    ("evaluation.ot_ks", [5, 10]),
)

RebuildMap = dict[str, dict[str, dict[str, int]]]
# The map's rows for an edit to each example plugin, which need the example's own run: the
# workflow tests that edit them measure them (tests/workflow/test_extend.py,
# test_dataset_kind.py); the rest of the map is measured here.
PLUGIN_ROWS = "plugins"
Scheduler = Callable[[Sequence[str]], Mapping[str, int]]


class RuleBlock(NamedTuple):
    """One rule as a rule file spells it."""

    path: Path
    name: str
    parent: str | None
    body: str


class RebuildMapError(ValueError):
    """A rule file or a config probe the rebuild map cannot read."""


def rule_blocks(rules_dir: Path) -> Iterator[RuleBlock]:
    """Every rule of ``rules_dir/*.smk`` as written: its name, the rule it inherits from
    (``use rule A as B with:``) and its body's text, in file order."""
    for path in sorted(rules_dir.glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        headers = list(RULE_HEADER.finditer(text))
        for header, following in zip(headers, [*headers[1:], None], strict=False):
            body = text[header.end() : following.start() if following else len(text)]
            if header["family"]:
                for name, text_of_rule in generated_rules(
                    header["family"], header["item"], body, path
                ):
                    yield RuleBlock(path, name, None, text_of_rule)
                continue
            name, parent = header["name"] or header["child"], header["parent"]
            yield RuleBlock(path, name, parent, body)


def generated_rules(family: str, item: str, body: str, path: Path) -> list[tuple[str, str]]:
    """The rules a ``for ITEM in FAMILY():`` loop generates, each as its name (``ITEM.ATTRIBUTE``
    of its ``name:`` directive) and its body with every string attribute of its entry spelled
    out (``code(trained.stage, ...)`` reads as ``code("stages.training", ...)``)."""
    named = GENERATED_NAME.search(body)
    if not named or named["item"] != item:
        raise RebuildMapError(
            f"{path}: the rules of 'for {item} in {family}()' need 'name: {item}.<attribute>'"
        )
    registry = importlib.import_module(FAMILY_REGISTRY)
    if not callable(getattr(registry, family, None)):
        raise RebuildMapError(f"{path}: {FAMILY_REGISTRY} has no family {family}()")
    attribute = re.compile(rf"\b{item}\.(\w+)\b")

    def spelled(entry: Any) -> str:
        def value(match: re.Match[str]) -> str:
            found = getattr(entry, match[1])
            return json.dumps(found) if isinstance(found, str) else match[0]

        return attribute.sub(value, body)

    entries = getattr(registry, family)()
    return [(getattr(entry, named["attribute"]), spelled(entry)) for entry in entries]


def code_declarations(rules_dir: Path) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """Every rule of ``rules_dir/*.smk`` with a ``code(...)`` declaration, its own or the one
    it inherits: its module names and its ``script=`` name."""
    declared: dict[str, tuple[tuple[str, ...], str | None]] = {}
    for block in rule_blocks(rules_dir):
        calls = CODE_CALL.findall(block.body)
        where = f"{block.path}: rule {block.name}"
        if len(calls) > 1:
            raise RebuildMapError(f"{where} declares code() twice")
        if calls:
            declared[block.name] = _code_arguments(calls[0], where)
        elif block.parent in declared:
            declared[block.name] = declared[block.parent]
    return declared


def _code_arguments(call: str, where: str) -> tuple[tuple[str, ...], str | None]:
    """The string modules and the ``script`` keyword of one ``code(...)`` call's text (its
    ``files``, a config's plugin files outside the library, are not the map's to probe)."""
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call) or not all(
        isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        for arg in [*node.args, *(k.value for k in node.keywords if k.arg != "files")]
    ):
        raise RebuildMapError(f"{where}: code() takes string literals only, got {call}")
    script = {k.arg: k.value.value for k in node.keywords if k.arg != "files"}.get("script")
    return tuple(arg.value for arg in node.args), script


def declared_modules(rules_dir: Path) -> dict[str, tuple[str, ...]]:
    """Every rule of ``rules_dir/*.smk`` with a ``code(...)`` declaration: its module names."""
    return {rule: modules for rule, (modules, _) in code_declarations(rules_dir).items()}


def affected_rules(module: str, declared: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The rules whose code hash covers ``module`` (it is in their import closure)."""
    return frozenset(
        rule
        for rule, modules in declared.items()
        if module in module_closure(tuple(sorted(set(modules))))
    )


def module_groups(declared: Mapping[str, Sequence[str]]) -> dict[frozenset[str], list[str]]:
    """Library modules grouped by the set of rules an edit to them reaches, sorted."""
    groups: dict[frozenset[str], list[str]] = {}
    for module in known_modules():
        groups.setdefault(affected_rules(module, declared), []).append(module)
    return dict(sorted(groups.items(), key=lambda item: item[1][0]))


@contextlib.contextmanager
def probe_edit(path: Path) -> Iterator[None]:
    """Append :data:`PROBE_LINE` to a source file, restoring its bytes afterwards."""
    original = path.read_bytes()
    path.write_bytes(original + PROBE_LINE.encode())
    try:
        yield
    finally:
        path.write_bytes(original)


def overlay(key: str, value: Any) -> dict[str, Any]:
    """A config overlay setting one dotted key (Snakemake deep-merges ``--configfile``s)."""
    tree: dict[str, Any] = {}
    node = tree
    *parents, leaf = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return tree


@dataclass(frozen=True)
class Workspace:
    """A copy of a complete run that probes may edit: its ``src/hierbench``, a dry run's job
    counts per rule for extra Snakemake arguments, and a writer that stores a config overlay
    and returns the arguments that add it."""

    package_dir: Path
    scheduled: Scheduler
    write_overlay: Callable[[dict[str, Any]], Sequence[str]]


def measure(rules_dir: Path, workspaces: Sequence[Workspace]) -> RebuildMap:
    """Dry-run every module group and config probe against a complete run.

    Probes run in parallel, one at a time in each workspace (each a separate copy of the same
    complete run, so that one probe's edit never meets another's). A clean tree must schedule
    nothing in any of them.
    """
    if not workspaces:
        raise RebuildMapError("measure needs at least one workspace")
    for workspace in workspaces:
        if dict(workspace.scheduled(())):
            raise RebuildMapError(
                f"the run in {workspace.package_dir.parents[1]} is not complete: a dry run "
                "schedules jobs before any edit"
            )
    groups = list(module_groups(declared_modules(rules_dir)).values())

    def module_probe(members: list[str], workspace: Workspace) -> dict[str, int]:
        relative = module_path(members[0]).relative_to(module_path_root())
        with probe_edit(workspace.package_dir / relative):
            return dict(sorted(workspace.scheduled(()).items()))

    def config_probe(key: str, value: Any, workspace: Workspace) -> dict[str, int]:
        extra = workspace.write_overlay(overlay(key, value))
        return dict(sorted(workspace.scheduled(extra).items()))

    probes = [partial(module_probe, members) for members in groups]
    probes += [partial(config_probe, key, value) for key, value in CONFIG_PROBES]
    results = _in_workspaces(probes, workspaces)
    module_results, config_results = results[: len(groups)], results[len(groups) :]
    modules = {
        member: rules
        for members, rules in zip(groups, module_results, strict=True)
        for member in members
    }
    config = {key: rules for (key, _), rules in zip(CONFIG_PROBES, config_results, strict=True)}
    return {"modules": modules, "config": config}


def _in_workspaces(
    probes: Sequence[Callable[[Workspace], dict[str, int]]], workspaces: Sequence[Workspace]
) -> list[dict[str, int]]:
    """Each probe's result, in order, each run in whichever workspace is free."""
    free: queue.SimpleQueue[Workspace] = queue.SimpleQueue()
    for workspace in workspaces:
        free.put(workspace)

    def run(probe: Callable[[Workspace], dict[str, int]]) -> dict[str, int]:
        workspace = free.get()
        try:
            return probe(workspace)
        finally:
            free.put(workspace)

    with ThreadPoolExecutor(max_workers=len(workspaces)) as pool:
        return list(pool.map(run, probes))


def module_path_root() -> Path:
    """The folder :func:`module_path` resolves module names in (the running hierbench)."""
    return codehash.PACKAGE_DIR


# Families of rules shown as one entry when every member reruns (prefix or suffix, label).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("taxonomy_", "taxonomy_*"),
    ("demo_", "demo_*"),
    ("features_", "features_*"),
    ("train_", "train_*"),
    ("evaluate_", "evaluate_*"),
    ("_tables", "*_tables"),
)


def _family(rule: str) -> str | None:
    """The label of the family ``rule`` belongs to, if any."""
    for part, label in FAMILIES:
        if rule.startswith(part) or rule.endswith(part):
            return label
    return None


def rule_list(rules: Mapping[str, int], universe: frozenset[str] = frozenset()) -> str:
    """``rule ×count`` for each rule that reruns, or "nothing"; a family whose every member
    in ``universe`` reruns is one ``family ×total`` entry."""
    shown = {rule: count for rule, count in rules.items() if rule != "all"}
    if not shown:
        return "nothing"
    for _, label in FAMILIES:
        members = {rule for rule in universe if _family(rule) == label}
        if len(members) > 1 and members <= shown.keys():
            total = sum(shown.pop(rule) for rule in members)
            shown[label] = total
    return ", ".join(f"{rule} ×{count}" for rule, count in sorted(shown.items()))


def _jobs(rules: Mapping[str, int]) -> int:
    """The number of jobs a dry run reruns (the ``all`` target aside)."""
    return sum(count for rule, count in rules.items() if rule != "all")


def _escaped(text: str) -> str:
    """A family's ``*`` escaped, so that Markdown does not read ``*_tables ×8, evaluate_*`` as
    emphasis."""
    return text.replace("*", "\\*")


def render_markdown(rebuild: RebuildMap) -> str:
    """Three tables: module groups (cheapest first), config keys and the example plugins
    (measured by the workflow tests that edit them), with the rules they rerun and their jobs."""
    universe = frozenset(rule for rules in rebuild["modules"].values() for rule in rules)
    by_rules: dict[str, list[str]] = {}
    totals: dict[str, int] = {}
    for module, rules in rebuild["modules"].items():
        text = _escaped(rule_list(rules, universe))
        by_rules.setdefault(text, []).append(module)
        totals[text] = _jobs(rules)
    lines = [
        "| Edit this module | Jobs | These rules rerun (jobs on the tiny config) |",
        "|---|---:|---|",
    ]
    for text in sorted(by_rules, key=lambda key: (totals[key], by_rules[key][0])):
        names = ", ".join(f"`{module}`" for module in sorted(by_rules[text]))
        lines.append(f"| {names} | {totals[text]} | {text} |")
    lines += ["", "| Edit this config key | Jobs | These rules rerun |", "|---|---:|---|"]
    for key, rules in sorted(rebuild["config"].items()):
        lines.append(f"| `{key}` | {_jobs(rules)} | {_escaped(rule_list(rules, universe))} |")
    lines += ["", "| Edit this example plugin | Jobs | These rules rerun |", "|---|---:|---|"]
    for plugin, rules in sorted(rebuild.get(PLUGIN_ROWS, {}).items()):
        lines.append(f"| `{plugin}` | {_jobs(rules)} | {_escaped(rule_list(rules, universe))} |")
    return "\n".join(lines) + "\n"


def page_section(page: str) -> str:
    """The text between the rebuild map's markers in its page (docs/rebuilds.md)."""
    return section(page, PAGE_SECTION)


def with_page_section(page: str, table: str) -> str:
    """The page with the rebuild map's section replaced by ``table``."""
    return with_section(page, PAGE_SECTION, table)
