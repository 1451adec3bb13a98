"""Fairness audit of the factorial: the cells of a seed differ only in geometry and objective.

Checks, per dataset: equal trainable-parameter counts (205,600 for 768-D features); identical
initial-weight hash and identical per-epoch batch-order hashes across the cells of each seed;
equal update counts (epochs x full batches; a baseline with an epoch budget of its own is held
to that budget, its batch order compared over its epochs); each checkpoint, reloaded into a
fresh head, reproduces the trained model's outputs exactly; hyperbolic embeddings inside the
ball.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from hierbench.cells.spec import budget_group

AUDIT_COLUMNS = ("check", "scope", "passed", "detail")


class AuditError(RuntimeError):
    """A fairness check failed; the message names the cells and what differs."""


def projector_parameters(in_dim: int, hidden_dim: int, embedding_dim: int) -> int:
    """Trainable parameters of Linear -> BatchNorm -> ReLU -> Dropout -> Linear."""
    return (
        in_dim * hidden_dim
        + hidden_dim
        + 2 * hidden_dim
        + hidden_dim * embedding_dim
        + embedding_dim
    )


def _row(check: str, scope: str, passed: bool, detail: str) -> dict[str, Any]:
    return {"check": check, "scope": scope, "passed": bool(passed), "detail": detail}


def _same(records: list[dict[str, Any]], key: str) -> tuple[bool, str]:
    """Whether every record has the same value of ``key``, and which cells differ if not."""
    groups: dict[str, list[str]] = defaultdict(list)
    for record in records:
        groups[repr(record[key])].append(record["cell"])
    if len(groups) == 1:
        return True, f"{len(records)} cells agree"
    parts = [f"{sorted(cells)}" for cells in groups.values()]
    return False, f"{key} differs between cell groups " + " vs ".join(parts)


def check_records(
    records: list[dict[str, Any]],
    *,
    epochs: int,
    batch_size: int,
    own_epochs: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """The checks that need only the cells' training records. ``own_epochs`` maps a cell group
    (the HIER-style baseline's loss, the curvature control) to an epoch budget of its own that
    its cells are held to instead (``cellspec.own_epoch_budgets``)."""
    rows = []
    first = records[0]
    spec = first["spec"]
    expected = projector_parameters(first["feature_dim"], spec["hidden_dim"], spec["embedding_dim"])
    counts = {r["cell"]: r["parameters"] for r in records}
    wrong = {cell: n for cell, n in counts.items() if n != expected}
    rows.append(
        _row(
            "parameter_count",
            "all cells",
            not wrong,
            f"expected {expected}" + (f"; differ: {wrong}" if wrong else ""),
        )
    )
    by_seed: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_seed[record["spec"]["seed"]].append(record)
    for seed, group in sorted(by_seed.items()):
        passed, detail = _same(group, "initial_weight_hash")
        rows.append(_row("initial_weights", f"seed {seed}", passed, detail))
        passed, detail = _same_batch_order(group)
        rows.append(_row("batch_order", f"seed {seed}", passed, detail))
        rows += _extra_weight_rows(seed, group)
    rows += _update_count_rows(records, epochs, batch_size, own_epochs or {})
    for record in records:
        diff = record["reload_max_abs_diff"]
        rows.append(_row("reload_in_training", record["cell"], diff == 0.0, f"max abs diff {diff}"))
    return rows


def check_reload(cell: str, recorded_sha256: str, recomputed_sha256: str) -> dict[str, Any]:
    """A checkpoint reloaded by the audit reproduces the outputs recorded at training time."""
    same = recorded_sha256 == recomputed_sha256
    detail = (
        "outputs identical"
        if same
        else f"recorded {recorded_sha256[:12]} != reloaded {recomputed_sha256[:12]}"
    )
    return _row("reload_in_audit", cell, same, detail)


def check_inside_ball(cell: str, max_norm: float, curvature: float) -> dict[str, Any]:
    """The largest hyperbolic embedding norm is strictly inside the ball of radius 1/sqrt(c)."""
    radius = 1 / math.sqrt(curvature)
    return _row(
        "inside_ball", cell, max_norm < radius, f"max norm {max_norm:.6f} < radius {radius:.6f}"
    )


def audit_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The audit's rows as a table, in a stable order."""
    return pd.DataFrame(rows, columns=list(AUDIT_COLUMNS)).sort_values(
        ["check", "scope"], kind="mergesort"
    )


def raise_on_failure(table: pd.DataFrame, dataset: str) -> None:
    """Fail with every failed check, naming the cells and what differs."""
    failed = table[~table["passed"]]
    if len(failed):
        lines = [f"{r.check} [{r.scope}]: {r.detail}" for r in failed.itertuples()]
        raise AuditError(f"{dataset}: fairness audit failed:\n  " + "\n  ".join(lines))


def _same_batch_order(group: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether a seed's cells drew the same batches each epoch; a cell with a shorter budget of
    its own is compared over its epochs (the first ones of everyone's shared stream)."""
    shortest = min(len(record["batch_order_hashes"]) for record in group)
    trimmed = [
        {**record, "batch_order_hashes": record["batch_order_hashes"][:shortest]}
        for record in group
    ]
    passed, detail = _same(trimmed, "batch_order_hashes")
    if shortest < max(len(record["batch_order_hashes"]) for record in group):
        detail += f" over the first {shortest} epochs (the shortest budget)"
    return passed, detail


def _update_count_rows(
    records: list[dict[str, Any]], epochs: int, batch_size: int, own_epochs: Mapping[str, int]
) -> list[dict[str, Any]]:
    """Every cell ran its budget (epochs x full batches) and the cells of one budget agree: the
    factorial's epochs, or, for a group in ``own_epochs``, its own (a row of its own)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[budget_group(record, dict(own_epochs))].append(record)
    rows = []
    for group_name, group in sorted(groups.items()):
        budget = own_epochs.get(group_name, epochs)
        if len(groups) == 1:
            scope = "all cells"
        elif group_name:
            scope = f"{group_name} cells, own budget"
        else:
            scope = "cells of the factorial budget"
        expected = {r["cell"]: budget * (r["train_examples"] // batch_size) for r in group}
        bad = {r["cell"]: r["updates"] for r in group if r["updates"] != expected[r["cell"]]}
        passed, detail = _same(group, "updates")
        rows.append(
            _row(
                "update_count",
                scope,
                passed and not bad,
                f"{group[0]['updates']} updates ({group[0]['updates_per_epoch']} per epoch)"
                + (f"; expected {expected}, got {bad}" if bad else "")
                + ("" if passed else f"; {detail}"),
            )
        )
    return rows


def _extra_weight_rows(seed: int, group: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parameters beyond the shared projector (a learnable curvature, an objective's group
    embeddings and temperature) listed per cell: cells of a seed that share one must have
    initialised it identically (they all draw it from the same separate generator)."""
    holders: dict[str, dict[str, str]] = defaultdict(dict)
    for record in group:
        for name, digest in record.get("initial_extra_hashes", {}).items():
            holders[name][record["cell"]] = digest
    rows = []
    for name, by_cell in sorted(holders.items()):
        passed = len(set(by_cell.values())) == 1
        cells = ", ".join(sorted(by_cell))
        detail = f"{name} in {cells}" + ("" if passed else f": differs {by_cell}")
        rows.append(_row("extra_initial_weights", f"seed {seed}", passed, detail))
    return rows
