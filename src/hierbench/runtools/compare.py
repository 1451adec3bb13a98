"""Two run folders compared: which artifacts differ, why (the first differences), and how the
effect tables moved.

A run folder (``results/``, ``runs/<config>/``) holds ``<dataset>/...`` artifacts, each with its
provenance record beside it. Records are keyed by the artifact's path relative to the run folder,
and the run's own prefix in parameters and input paths is replaced by :data:`RUN_MARKER`, so runs
in different folders compare equal. As in :mod:`hierbench.runtools.rundiff`, timed artifacts
(the Final
lock, training logs) are compared by their provenance only, and an input's hash is ignored when
the input is timed. A first difference (a cause) is an artifact whose own parameters, code hash,
software (interpreter, platform, package versions, torch's device and GPU model) or inputs from
outside the run differ; artifacts that differ only through their run inputs are consequences.
Records in archived re-seals and the audit's manifest (a digest of every other record) are left
out.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hierbench.layout import RESEALS
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.verify import MANIFEST_NAME
from hierbench.runtools.pathpatterns import path_pattern
from hierbench.runtools.rundiff import is_timed
from hierbench.runtools.tablediff import compare_tables, table_lines

RUN_MARKER = "<run>/"
SHOWN_PATHS = 5  # paths listed in Markdown where a list is long
CHANGE_FIELDS = ("kind", "key", "old", "new")  # a named difference of two records
_ABSENT = object()  # a parameter or package one record lacks


class NotARunError(ValueError):
    """A folder that holds no run: missing, or with no provenance records."""


@dataclass(frozen=True)
class Run:
    """A run folder's provenance records, keyed by artifact path relative to the folder."""

    folder: Path
    records: dict[str, dict[str, Any]]


def _normalise(value: Any, prefix: str) -> Any:
    """``value`` with the run prefix of every string (the run's logs are inside it),
    recursively, replaced by its marker."""
    if isinstance(value, dict):
        return {key: _normalise(item, prefix) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalise(item, prefix) for item in value]
    if isinstance(value, str) and prefix:
        if value.startswith(prefix):
            return RUN_MARKER + value[len(prefix) :]
        if value == prefix.rstrip("/"):
            return RUN_MARKER.rstrip("/")
    return value


def _load_record(record_path: Path, relative: str) -> dict[str, Any]:
    """One record with its run prefix (the recorded path less ``relative``) made neutral."""
    record = json.loads(record_path.read_text(encoding="utf-8"))
    recorded = record["path"]
    prefix = recorded[: -len(relative)]
    if not recorded.endswith(relative) or (prefix and not prefix.endswith("/")):
        raise NotARunError(
            f"{record_path} records the path {recorded}, which does not end in {relative}: "
            "pass the run folder itself (the one holding the dataset folders)"
        )
    inputs = {_normalise(path, prefix): sha for path, sha in record["inputs"].items()}
    params = _normalise(record["params"], prefix)
    return {**record, "path": RUN_MARKER + relative, "params": params, "inputs": inputs}


def require_run(folder: Path) -> None:
    """A run folder exists and holds provenance records; else one error saying which."""
    if not folder.is_dir():
        raise NotARunError(f"{folder} is not a run: the folder does not exist")
    if next(folder.rglob(f"*{PROVENANCE_SUFFIX}"), None) is None:
        raise NotARunError(
            f"{folder} is not a run: no provenance records under it (a run folder is a "
            "config's key run, e.g. results or runs/tiny)"
        )


def load_run(folder: str | os.PathLike[str]) -> Run:
    """Every provenance record under ``folder``, keyed and normalised as the module describes."""
    folder = Path(folder)
    require_run(folder)
    records = {}
    for record_path in sorted(folder.rglob(f"*{PROVENANCE_SUFFIX}")):
        relative = record_path.relative_to(folder).as_posix().removesuffix(PROVENANCE_SUFFIX)
        if RESEALS in Path(relative).parts[:-1] or relative == MANIFEST_NAME:
            continue
        records[relative] = _load_record(record_path, relative)
    if not records:
        raise NotARunError(f"{folder} is not a run: no provenance records under {folder}")
    return Run(folder, records)


def _software(record: dict[str, Any]) -> dict[str, Any]:
    """Interpreter, platform, torch's device, GPU and thread count (CPU kernels round by thread
    count: features made on 1 and 2 threads differ), the numeric mode and torch's kernels, and
    every package version, flat."""
    software = record.get("software") or {}
    runtime = software.get("torch_runtime") or software.get("torch") or {}
    flat = {key: software.get(key) for key in ("python", "implementation", "platform")}
    flat |= {
        f"torch {key}": runtime.get(key) for key in ("device", "gpu", "threads") if key in runtime
    }
    numerics = software.get("numerics") or {}
    flat |= {
        f"numerics {key}": numerics[key] for key in ("mode", "torch_kernels") if key in numerics
    }
    return flat | dict(software.get("environment") or {}) | dict(software.get("packages") or {})


def _leaf_changes(a: Any, b: Any, key: str = "") -> list[tuple[str, Any, Any]]:
    """Dotted paths where two parameter trees differ, with both values (dicts are descended)."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for name in sorted(a.keys() | b.keys(), key=str):
            path = f"{key}.{name}" if key else str(name)
            found += _leaf_changes(a.get(name, _ABSENT), b.get(name, _ABSENT), path)
        return found
    return [] if a == b else [(key, a, b)]


def _show(value: Any) -> str:
    """A changed value as text: JSON for parameters, "absent" for a missing key."""
    if value is _ABSENT:
        return "absent"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _version(value: Any) -> str:
    """A software field as text: "absent" when one record lacks it, "none" when not installed."""
    return "absent" if value is _ABSENT else "none" if value is None else str(value)


def _split_inputs(record: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """A record's inputs from outside the run (sources) and from inside it."""
    inputs = record["inputs"]
    inside = {path: sha for path, sha in inputs.items() if path.startswith(RUN_MARKER)}
    return {path: sha for path, sha in inputs.items() if path not in inside}, inside


def record_causes(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, str]]:
    """How a record's own making differs between the runs: rule, parameters, code, software,
    source inputs (by hash) and the set of its run inputs. Empty when only data differs."""
    found = [("rule", "rule", a["rule"], b["rule"])] if a["rule"] != b["rule"] else []
    found += [
        ("param", k, _show(old), _show(new))
        for k, old, new in _leaf_changes(a["params"], b["params"])
    ]
    if a.get("code") != b.get("code"):
        found.append(("code", "code", str(a.get("code")), str(b.get("code"))))
    for key, old, new in _leaf_changes(_software(a), _software(b)):
        found.append(("software", key, _version(old), _version(new)))
    (sources_a, inside_a), (sources_b, inside_b) = _split_inputs(a), _split_inputs(b)
    for path in sorted(sources_a.keys() | sources_b.keys()):
        old, new = sources_a.get(path, "absent"), sources_b.get(path, "absent")
        found += [("source", path, old, new)] if old != new else []
    for path in sorted(inside_a.keys() ^ inside_b.keys()):
        found.append(("input", path, *(("present", "absent")[:: 1 if path in inside_a else -1])))
    return [dict(zip(CHANGE_FIELDS, change, strict=True)) for change in found]


def inputs_differ(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether a run input present in both records has a different hash (timed inputs aside)."""
    inside_a, inside_b = _split_inputs(a)[1], _split_inputs(b)[1]
    return any(
        inside_a[path] != inside_b[path]
        for path in inside_a.keys() & inside_b.keys()
        if not is_timed(path)
    )


def content_differs(path: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether an artifact differs: by its bytes, or (a timed one) by its provenance."""
    if is_timed(path):
        return bool(record_causes(a, b)) or inputs_differ(a, b)
    return a["sha256"] != b["sha256"]


def stage_of(path: str) -> str:
    """The stage an artifact belongs to: its dataset and the folder below it (``cub/cells``)."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else path


def depths(records: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Each artifact's distance from the sources along its run inputs (for ordering stages)."""
    depth: dict[str, int] = {}

    def visit(path: str, seen: frozenset[str]) -> int:
        if path not in depth:
            ups = [p.removeprefix(RUN_MARKER) for p in _split_inputs(records[path])[1]]
            ups = [p for p in ups if p in records and p not in seen]
            depth[path] = 1 + max((visit(p, seen | {path}) for p in ups), default=-1)
        return depth[path]

    for path in records:
        visit(path, frozenset())
    return depth


def _stages(a: Run, b: Run, differing: set[str]) -> list[dict[str, Any]]:
    """Every stage in pipeline order, identical or not, with its artifact count."""
    depth = depths(b.records) | depths(a.records)
    members: dict[str, list[str]] = defaultdict(list)
    for path in sorted(a.records.keys() | b.records.keys()):
        members[stage_of(path)].append(path)
    order = sorted(members, key=lambda s: (s.split("/")[0], min(depth[p] for p in members[s]), s))
    return [
        {
            "stage": stage,
            "artifacts": len(members[stage]),
            "identical": not differing.intersection(members[stage]),
        }
        for stage in order
    ]


def _cause_groups(causes: dict[str, list[dict[str, str]]], a: Run, b: Run) -> list[dict]:
    """First differences grouped by rule and identical set of changes, in path order."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for path, changes in sorted(causes.items()):
        key = tuple(tuple(change.values()) for change in changes)
        groups[(a.records[path]["rule"], key)].append(path)
    universe = sorted(a.records.keys() | b.records.keys())
    return [
        {
            "rule": rule,
            "changes": [dict(zip(CHANGE_FIELDS, change, strict=True)) for change in key],
            "count": len(paths),
            "pattern": (pattern := path_pattern(paths, universe))[0],
            "pattern_matches": pattern[1],
            "artifacts": paths,
        }
        for (rule, key), paths in sorted(groups.items(), key=lambda item: item[1][0])
    ]


def _hashes(run: Run) -> dict[str, str]:
    """The recorded SHA256 of each artifact of a run."""
    return {path: record["sha256"] for path, record in run.records.items()}


def compare_runs_report(a: Run | str | os.PathLike[str], b: Run | str | os.PathLike[str]) -> dict:
    """The comparison of run A with run B as JSON-ready data in a fixed order.

    ``causes`` groups the first differences by rule and set of changes; ``consequences`` are
    the artifacts made the same way from changed run inputs; ``unexplained`` the artifacts whose
    bytes differ though their provenance does not; ``stages`` says which stages have the same
    content in both runs (timed artifacts by their provenance).
    """
    a = a if isinstance(a, Run) else load_run(a)
    b = b if isinstance(b, Run) else load_run(b)
    common = sorted(a.records.keys() & b.records.keys())
    causes, consequences, unexplained, differing = {}, [], [], set()
    for path in common:
        record_a, record_b = a.records[path], b.records[path]
        differs = content_differs(path, record_a, record_b)
        if changes := record_causes(record_a, record_b):
            causes[path] = changes
        elif inputs_differ(record_a, record_b):
            consequences.append({"path": path, "bytes_differ": differs})
        elif differs:
            unexplained.append(path)
        if differs:
            differing.add(path)
    only_a = sorted(a.records.keys() - b.records.keys())
    only_b = sorted(b.records.keys() - a.records.keys())
    return {
        "a": str(a.folder),
        "b": str(b.folder),
        "identical": not (causes or consequences or unexplained or only_a or only_b),
        "compared": len(common),
        "timed": sum(is_timed(path) for path in common),
        "only_a": only_a,
        "only_b": only_b,
        "causes": _cause_groups(causes, a, b),
        "consequences": consequences,
        "unexplained": unexplained,
        "stages": _stages(a, b, differing | set(only_a) | set(only_b)),
        "tables": compare_tables(a.folder, b.folder, *(_hashes(run) for run in (a, b))),
    }


def _describe(change: dict[str, str]) -> str:
    """A change as Markdown: what changed, old → new (hashes shortened to 12 digits)."""
    kind, key, old, new = change["kind"], change["key"], change["old"], change["new"]
    if kind in ("code", "source"):
        old, new = old[:12], new[:12]
    label = {
        "code": "code hash",
        "source": f"source input `{key}`",
        "input": f"run input `{key}`",
    }.get(kind, f"`{key}`")
    return f"{label} {old} → {new}"


def _listing(paths: list[str]) -> str:
    """The first few of a list of paths, and how many more there are."""
    shown = ", ".join(f"`{path}`" for path in paths[:SHOWN_PATHS])
    return shown + (f", … ({len(paths) - SHOWN_PATHS} more)" if len(paths) > SHOWN_PATHS else "")


def _where(group: dict) -> str:
    """Where a group of first differences lies: its rule, artifact count and stages."""
    stages = sorted({stage_of(path) for path in group["artifacts"]})
    return f"{group['rule']}: {group['count']} artifacts in {', '.join(stages)}"


def _cause_lines(groups: list[dict]) -> list[str]:
    """One bullet per set of changes, then one sub-bullet per rule where it happened."""
    by_changes: dict[str, list[dict]] = defaultdict(list)
    for group in groups:
        by_changes[json.dumps(group["changes"])].append(group)
    lines = []
    for same in by_changes.values():
        what = ", ".join(_describe(change) for change in same[0]["changes"])
        total = sum(group["count"] for group in same)
        rules = f"{len(same)} rule" + ("s" if len(same) != 1 else "")
        lines.append(f"- {what}: {total} artifacts of {rules}")
        lines += [f"  - {_where(group)}" for group in same]
    return lines


def _provenance_lines(report: dict) -> list[str]:
    """The first differences, the consequences and the unexplained differences."""
    lines = ["## First differences", ""]
    lines += _cause_lines(report["causes"]) or [
        "none: every artifact in both was made the same way"
    ]
    if consequences := report["consequences"]:
        changed = sum(item["bytes_differ"] for item in consequences)
        lines += [
            "",
            f"Consequences: {len(consequences)} artifacts made the same way from changed run "
            f"inputs ({changed} of them with different content).",
        ]
    if report["unexplained"]:
        lines += ["", "Unexplained (content differs, provenance equal): "]
        lines[-1] += _listing(report["unexplained"])
    return lines


def _stage_lines(report: dict) -> list[str]:
    """Stages with the same content in both runs, the others, and artifacts in one run only."""
    lines = ["## Stages", ""]
    for label, flag in (("identical", True), ("differing", False)):
        names = [stage["stage"] for stage in report["stages"] if stage["identical"] is flag]
        lines += [f"{label}: {', '.join(names)}"] if names else []
    for side in ("a", "b"):
        if paths := report[f"only_{side}"]:
            lines += ["", f"Artifacts only in {side.upper()} ({len(paths)}): {_listing(paths)}"]
    return lines


def render_markdown(report: dict) -> str:
    """The report as Markdown; one line when the runs agree beyond the timing exceptions."""
    a, b = report["a"], report["b"]
    if report["identical"]:
        return (
            f"identical: {a} and {b} ({report['compared']} artifacts; "
            "timed artifacts compared by their provenance only)"
        )
    lines = [
        f"# {a} (A) vs {b} (B)",
        "",
        f"{report['compared']} artifacts in both ({report['timed']} timed, compared by their "
        f"provenance only), {len(report['only_a'])} only in A, {len(report['only_b'])} only in B.",
        "",
    ]
    lines += [*_provenance_lines(report), "", *_stage_lines(report), ""]
    lines += table_lines(report["tables"])
    return "\n".join(lines).rstrip()
