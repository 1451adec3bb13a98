"""Fairness-audit stage: check every final cell of a dataset before the test may be read."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hierbench.cells.checkpoints import (
    VERIFICATION_ROWS,
    embed,
    load_checkpoint,
    verification_digest,
)
from hierbench.cells.spec import CellSpec
from hierbench.features.store import role_data
from hierbench.protocol import POINCARE
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext
from hierbench.training.fairness_audit import (
    audit_table,
    check_inside_ball,
    check_records,
    check_reload,
    raise_on_failure,
)

log = logging.getLogger(__name__)


def audit_cells(
    dataset: str,
    records: list[str | Path],
    checkpoints: list[str | Path],
    features: str | Path,
    splits: str | Path,
    config: dict[str, Any],
    out_table: str | Path,
    job: JobContext,
    *,
    own_epochs: Mapping[str, int] | None = None,
) -> None:
    """Run the fairness audit; write audit/fairness.parquet only if every check passes.
    ``own_epochs``: a baseline's epoch budget of its own, by loss (``own_epoch_budgets``)."""
    loaded = [json.loads(Path(p).read_text(encoding="utf-8")) for p in records]
    training = config["training"]
    rows = check_records(
        loaded,
        epochs=training["epochs"],
        batch_size=training["batch_size"],
        own_epochs=own_epochs,
    )
    x, _ = role_data(features, splits, "final", "train")
    for record, checkpoint in zip(loaded, checkpoints, strict=True):
        spec = CellSpec.from_record(record)
        model = load_checkpoint(checkpoint, spec, x.shape[1])
        digest = verification_digest(embed(model, x[:VERIFICATION_ROWS]))
        rows.append(check_reload(record["cell"], record["verification_sha256"], digest))
        if spec.geometry == POINCARE:
            norms = np.linalg.norm(embed(model, x), axis=1)
            rows.append(check_inside_ball(record["cell"], float(norms.max()), spec.curvature))
    table = audit_table(rows)
    log.info("%s fairness audit:\n%s", dataset, table.to_string(index=False))
    raise_on_failure(table, dataset)
    write_parquet(table, out_table, job, sort_by=["check", "scope"], metadata={"dataset": dataset})
