"""What made a run's artifacts, record by record: its numeric mode and its software. A run
whose records name more than one numeric mode, torch kernel path or software version mixes
bytes of different origins (a cluster whose nodes differ, a library upgraded between two
invocations, a mode changed mid-run), so no hash of it proves what another lab would get; the
audit names such a run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

CLI_RULE_PREFIX = "cli:"  # records the command line writes (the audit's manifest), not jobs
MODE = "numeric mode"
KERNELS = "torch kernels"  # None in a job that never loaded torch: no value, not another one
SHOWN_PATHS = 3


def maker(record: dict[str, Any]) -> dict[str, Any]:
    """The numeric mode, torch's kernels and the software versions named by one record (the
    mode is None where an older record does not name it)."""
    software = record.get("software") or {}
    numerics = software.get("numerics") or {}
    return {
        MODE: numerics.get("mode"),
        KERNELS: numerics.get("torch_kernels"),
        "python": software.get("python"),
        "platform": software.get("platform"),
        **dict(sorted((software.get("packages") or {}).items())),
    }


def maker_values(records: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, list[str]]]:
    """For each maker field, its values among the job-made records of ``(path, record)``, each
    with the paths that name it (sorted)."""
    values: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, record in sorted(records):
        if str(record.get("rule", "")).startswith(CLI_RULE_PREFIX):
            continue
        for field, value in maker(record).items():
            if value is None and field == KERNELS:
                continue
            values[field][str(value)].append(path)
    return {field: dict(found) for field, found in values.items()}


def mix_lines(records: Iterable[tuple[str, dict[str, Any]]]) -> list[str]:
    """One ``MIXED`` line per maker field with more than one value among a run's records:
    each value with its record count and its first paths, the commonest first. None for a run
    made in one numeric mode by one set of software."""
    lines = []
    for field, found in sorted(maker_values(records).items()):
        if len(found) < 2:
            continue
        ordered = sorted(found.items(), key=lambda item: (-len(item[1]), item[0]))
        parts = []
        for value, paths in ordered:
            shown = ", ".join(paths[:SHOWN_PATHS]) + (", ..." if len(paths) > SHOWN_PATHS else "")
            parts.append(f"{value} in {len(paths)} ({shown})")
        lines.append(f"MIXED {field}: " + "; ".join(parts))
    return lines
