"""`hierbench audit RUN --against OTHER`: the same bytes where both runs were made in one
portable numeric mode by the same software, else every table's numbers within the tolerance;
and `audit` naming a run whose records mix numeric modes or software.

The runs are test_compare's synthetic pipelines, with their records in the real format."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_compare import SOURCE, Pipeline

from hierbench.cli import main
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.hashing import sha256_path
from hierbench.provenance.makers import mix_lines
from hierbench.runtools.against import BYTES, NUMBERS, check_against

PORTABLE = "portable-x86-64-v3"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project folder with the source file the synthetic pipelines read."""
    (tmp_path / SOURCE).parent.mkdir()
    (tmp_path / SOURCE).write_text("1 Black_footed_Albatross\n")
    return tmp_path


SUMMARY = "cub/tables/effects_summary.parquet"


def _change_cell(run: Path, table: str, value: float) -> None:
    """Another lab's table: one cell changed, its record made to match (a consistent run)."""
    path = run / table
    frame = pd.read_parquet(path)
    frame.loc[0, "mean"] = value
    frame.to_parquet(path, index=False)
    record_path = path.with_name(path.name + PROVENANCE_SUFFIX)
    record = json.loads(record_path.read_text())
    record["sha256"] = sha256_path(path)
    record_path.write_text(json.dumps(record))


def test_a_run_against_itself_elsewhere_has_the_same_bytes(root: Path):
    first = Pipeline(root, "runs/a", mode=PORTABLE).run(clock="09:00")
    second = Pipeline(root, "lab/runs/a", mode=PORTABLE).run(clock="17:45")
    report = check_against(first, second)
    assert (report["promise"], report["holds"]) == (BYTES, True)
    assert report["artifacts_differing"] == [] and report["cells_outside_tolerance"] == []


def test_one_changed_cell_is_named_by_artifact_table_row_and_column(root: Path):
    first = Pipeline(root, "runs/a", mode=PORTABLE).run()
    second = Pipeline(root, "runs/b", mode=PORTABLE).run()
    _change_cell(second, SUMMARY, 0.2501)
    report = check_against(first, second)
    assert (report["promise"], report["holds"]) == (BYTES, False)
    assert report["artifacts_differing"] == [SUMMARY]
    cell = report["cells_outside_tolerance"][0]
    assert (cell["table"], cell["column"], cell["row"]["level"]) == (SUMMARY, "mean", "leaf")


def test_other_modes_promise_numbers_within_the_tolerance(root: Path):
    first = Pipeline(root, "runs/a", mode=PORTABLE).run()
    second = Pipeline(root, "runs/b", mode="native").run(shift=0.001)
    report = check_against(first, second, tolerance=0.005)
    assert (report["promise"], report["holds"]) == (NUMBERS, True)
    assert report["artifacts_differing"] == [SUMMARY]  # other bytes, the same numbers
    beyond = check_against(first, second, tolerance=0.0005)
    assert not beyond["holds"]
    assert beyond["cells_outside_tolerance"][0]["column"] == "mean"


def test_other_software_promises_numbers(root: Path):
    first = Pipeline(root, "runs/a", mode=PORTABLE).run()
    second = Pipeline(root, "runs/b", mode=PORTABLE, torch="2.15.0").run()
    report = check_against(first, second)
    assert report["promise"] == NUMBERS and "torch" in report["why"]


def test_the_cli_says_same_or_differs_and_exits_by_it(root: Path, capsys):
    first = Pipeline(root, "runs/a", mode=PORTABLE).run()
    second = Pipeline(root, "runs/b", mode=PORTABLE).run()
    assert main(["audit", str(first), "--base", str(root), "--against", str(second)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("same bytes: ")
    _change_cell(second, SUMMARY, 0.3)
    assert main(["audit", str(first), "--base", str(root), "--against", str(second)]) == 1
    out = capsys.readouterr().out
    assert f"first artifact that differs: {SUMMARY}" in out
    assert out.splitlines()[-1].startswith("DIFFERS (bytes): ")


def test_audit_names_a_run_whose_records_mix_numeric_modes(root: Path, capsys):
    run = Pipeline(root, "runs/a", mode=PORTABLE).run()
    Pipeline(root, "runs/a", mode="native").publish("cub/eval/extra.parquet", b"x", "evaluate_cell")
    assert main(["audit", str(run), "--base", str(root)]) == 1
    out = capsys.readouterr().out
    assert "MIXED numeric mode: portable-x86-64-v3 in 18 (cub/cells/ER-42/model.safetensors" in out
    assert "native in 1 (cub/eval/extra.parquet)" in out


def test_one_mode_and_one_software_is_no_mix():
    records = [
        (f"a/{i}", {"rule": "r", "software": {"numerics": {"mode": PORTABLE}}}) for i in "12"
    ]
    records.append(("a/3", {"rule": "cli:audit", "software": {}}))  # the command line's own
    assert mix_lines(records) == []
