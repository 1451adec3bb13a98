"""benchmarks/run_all.py: rows with their goals, the parquet and Markdown outputs, the exit
status (1 when any goal is missed, after both outputs are written), and a quick run of every
benchmark into a temporary folder."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import REPO, TINY_LOGS, TINY_RUN

from hierbench import jobcost
from hierbench.runtools.jobstats import job_cost_splits, job_costs, rule_stages

BENCHMARKS = REPO / "benchmarks"


def _module(name: str):
    if str(BENCHMARKS) not in sys.path:  # the scripts import their sibling benchrows
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"test_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


FACTS = {"mode": "quick", "demo": False, "cpu_threads": 2, "load_average": 0.5}


def _rows():
    rows = _module("benchrows")
    return [
        rows.row("features", "stage vs bare", 90.0, 100.0, "images/s", ">= 0.8"),
        rows.row("workflow", "dag vs empty", 6.0, 1.0, "s", "<= 5"),
        rows.row("render", "rate | goal rate", 270.0, 58.3, "images/s", ">= 1", note="constant"),
        rows.row("workflow", "demo end to end", 3600.0, None, "s", None, note="no reference"),
        rows.skipped_row("gpu", "every GPU figure", "no CUDA"),
        rows.error_row("training", "exit status 1: boom"),
    ]


def test_a_row_divides_by_its_reference_and_judges_its_goal():
    rows = _module("benchrows")
    assert rows.row("b", "f", 90.0, 100.0, "u", ">= 0.8")["ratio"] == pytest.approx(0.9)
    assert rows.row("b", "f", 90.0, 100.0, "u", ">= 0.8")["met"] is True
    assert rows.row("b", "f", 70.0, 100.0, "u", ">= 0.8")["met"] is False
    assert rows.row("b", "f", 3.0, 1.0, "s", "<= 2")["met"] is False
    assert rows.row("b", "f", 3.0, 1.0, "s", "<= 2", ratio=1.5)["met"] is True  # paired ratio
    assert rows.row("b", "f", 3.0, None, "s", None)["met"] is None
    assert tuple(rows.error_row("b", "x")) == rows.COLUMNS
    assert rows.error_row("b", "x")["met"] is False
    with pytest.raises(ValueError, match="goal"):
        rows.goal_met(1.0, "> 1")


def test_missed_goals_are_written_printed_and_fail_the_run(tmp_path, capsys):
    run_all = _module("run_all")
    parquet, markdown = tmp_path / "out" / "results.parquet", tmp_path / "docs" / "bench.md"
    assert run_all.finish(_rows(), parquet, markdown, FACTS) == 1

    table = pd.read_parquet(parquet)
    assert list(table.columns) == list(run_all.COLUMNS)
    assert list(table["benchmark"]) == sorted(table["benchmark"])
    assert str(table["met"].dtype) == "boolean"
    met = dict(zip(table["figure"], table["met"], strict=True))
    assert met["stage vs bare"] and met["dag vs empty"] is not pd.NA and not met["dag vs empty"]
    assert not met["error"] and pd.isna(met["demo end to end"]) and pd.isna(met["every GPU figure"])
    facts = json.loads(pq.read_schema(parquet).metadata[run_all.METADATA_KEY])
    assert facts == FACTS

    text = markdown.read_text()
    assert "Mode: **quick**" in text and "2 CPU thread(s)" in text and "average 0.5" in text
    assert "| workflow | dag vs empty | 6.00 s | 1.00 s | 6.00 | <= 5 | **no** |" in text
    assert (
        "| features | stage vs bare | 90.0 images/s | 100 images/s | 0.90 | >= 0.8 | yes |" in text
    )
    assert "| workflow | demo end to end | 3,600 s |  |  |  |  |" in text
    assert (
        "| rate \\| goal rate |" in text
        and "skipped: no CUDA" in text
        and "exit status 1: boom" in text
    )
    printed = capsys.readouterr().out
    assert "GOAL NOT MET: workflow: dag vs empty: ratio 6.00, goal <= 5" in printed
    assert "GOAL NOT MET: training: error" in printed
    assert not list(parquet.parent.glob(".*.tmp")) and not list(markdown.parent.glob(".*.tmp"))


def test_a_run_with_every_goal_met_exits_0_and_rewrites_the_same_bytes(tmp_path):
    run_all = _module("run_all")
    rows = [r for r in _rows() if r["met"] is not False]
    parquet, markdown = tmp_path / "results.parquet", tmp_path / "bench.md"
    assert run_all.finish(rows, parquet, markdown, FACTS) == 0
    first = parquet.read_bytes(), markdown.read_bytes()
    assert run_all.finish(list(reversed(rows)), parquet, markdown, FACTS) == 0
    assert (parquet.read_bytes(), markdown.read_bytes()) == first  # sorted, no timestamps


def test_only_one_benchmark_keeps_the_others_rows_and_says_so(tmp_path):
    run_all = _module("run_all")
    rows = _module("benchrows")
    parquet, markdown = tmp_path / "results.parquet", tmp_path / "bench.md"
    run_all.finish([r for r in _rows() if r["met"] is not False], parquet, markdown, FACTS)
    again = [rows.row("features", "stage vs bare", 95.0, 100.0, "images/s", ">= 0.8")]
    now = {**FACTS, "mode": "full", "load_average": 1.5}
    merged, facts = run_all.keep_the_others(again, now, ["features"], parquet)
    assert [r["value"] for r in merged if r["benchmark"] == "features"] == [95.0]
    assert {r["benchmark"] for r in merged} == {"features", "workflow", "render", "gpu"}
    origin = {"mode": "quick", "load_average": 0.5}
    assert facts["kept"] == {"gpu": origin, "render": origin, "workflow": origin}
    run_all.finish(merged, parquet, markdown, facts)
    text = markdown.read_text()
    assert (
        "This run measured features (`--only`); the other rows are kept from earlier runs: "
        "gpu, render, workflow (mode quick, load average 0.5)." in text
    )
    # a second --only run keeps each row's own origin: features now comes from the full run
    later_rows = [rows.row("render", "rate | goal rate", 1.0, 1.0, "images/s", ">= 1")]
    _, later = run_all.keep_the_others(later_rows, FACTS, ["render"], parquet)
    assert later["kept"]["workflow"] == origin
    assert later["kept"]["features"] == {"mode": "full", "load_average": 1.5}


def test_a_benchmark_that_fails_becomes_a_missed_goal_with_its_error(monkeypatch):
    """The child process fails (it does not know the name): one error row, not a lost run."""
    run_all = _module("run_all")
    monkeypatch.setitem(run_all.BENCHMARKS, "broken", run_all.BENCHMARKS["gpu"])
    [found] = run_all.measure_apart("broken", quick=True)
    assert (found["benchmark"], found["figure"], found["met"]) == ("broken", "error", False)
    assert "exit status 1" in found["note"] and "KeyError" in found["note"]


def test_the_committed_page_comes_from_run_all():
    text = (REPO / "docs" / "benchmarks.md").read_text()
    assert "Generated by benchmarks/run_all.py" in text and "Mode: **" in text
    table = pd.read_parquet(REPO / "benchmarks" / "results.parquet")
    assert set(table["benchmark"]) >= set(_module("run_all").BENCHMARKS)


@pytest.mark.slow  # every benchmark at quick sizes: about a minute on 2 cores
def test_the_quick_run_measures_every_benchmark(tmp_path):
    parquet, markdown = tmp_path / "results.parquet", tmp_path / "benchmarks.md"
    result = subprocess.run(
        [
            sys.executable,
            BENCHMARKS / "run_all.py",
            "--quick",
            "--parquet",
            parquet,
            "--markdown",
            markdown,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    table = pd.read_parquet(parquet)
    assert set(table["benchmark"]) == set(_module("run_all").BENCHMARKS)
    errors = table[table["figure"] == "error"]
    assert errors.empty, errors["note"].tolist()
    measured = table[~table["note"].str.startswith("skipped:")]
    # a share (coverage, a rate) may be 0 and lies in [0, 1]; every other figure is positive
    shares = measured["unit"] == "share"
    assert measured.loc[shares, "value"].between(0, 1).all()
    assert (measured.loc[~shares, "value"] > 0).all()
    assert (measured["ratio"].notna() | measured["goal"].isna()).all()
    assert (result.returncode == 1) == (table["met"] == False).any()  # noqa: E712
    assert "Mode: **quick**" in markdown.read_text()


@pytest.mark.slow
def test_the_breakdown_splits_a_runs_cpu_by_stage_and_kind_of_cost(built_repo):
    breakdown = _module("breakdown")
    stages = rule_stages(REPO / "rules")
    jobs = job_cost_splits(built_repo / TINY_LOGS, stages)
    sampled = job_costs(built_repo / TINY_RUN, built_repo / TINY_LOGS, stages)
    # every job that ran a workflow script wrote its split: every job with a benchmark file,
    # and the small ones without one (inputs, locks, selections)
    assert set(sampled["output"]) < set(jobs["output"])
    unsampled = jobs[~jobs["output"].isin(sampled["output"])]
    assert "stage_input" in set(unsampled["rule"])
    assert not set(unsampled["rule"]) & set(sampled["rule"])  # rules without a benchmark file
    assert (jobs[list(jobcost.KINDS)] >= 0).all().all()
    assert (jobs[jobcost.START_UP] > 0).all()
    training = jobs[jobs["stage"] == "training"]
    trainers = training[training["rule"].str.startswith("train_")]
    assert len(trainers) and (trainers[jobcost.LOADING] > 0).all()  # each reads its features
    assert (training[jobcost.PUBLISHING] > 0).all()  # and publishes what it made
    own = float(jobs[list(jobcost.KINDS)].to_numpy().sum())
    total = own + 100.0  # as if Snakemake and the job shells had taken 100 CPU s
    table = breakdown.cost_breakdown(built_repo, TINY_RUN, total)
    assert table["cpu_s"].sum() == pytest.approx(total)
    assert table["share"].sum() == pytest.approx(1.0)
    assert table.iloc[-1]["stage"] == breakdown.SNAKEMAKE_OVERHEAD
    assert table.iloc[-1]["cpu_s"] == pytest.approx(100.0)
    rows = table.set_index("stage")
    assert rows.loc["training", "jobs"] == len(training)
    kinds = list(breakdown.KIND_COLUMNS.values())
    assert rows.loc["training", kinds].sum() == pytest.approx(rows.loc["training", "cpu_s"])
    assert rows.loc["training", "compute_s"] == pytest.approx(training[jobcost.COMPUTE].sum())
    assert rows.loc["training", "benchmark_cpu_s"] == pytest.approx(
        sampled.loc[sampled["stage"] == "training", "cpu_s"].sum()
    )
    measured = table.iloc[:-1]["cpu_s"].tolist()
    assert measured == sorted(measured, reverse=True)  # largest first
    assert "| total |" in breakdown.render(table, total)
    # with Snakemake's own process measured apart, the rest is the job shells'
    split = breakdown.cost_breakdown(built_repo, TINY_RUN, total, snakemake_cpu_s=30.0)
    tail = split.iloc[-2:].set_index("stage")["cpu_s"]
    assert tail.to_dict() == pytest.approx({breakdown.SNAKEMAKE_OWN: 30.0, breakdown.UNSPLIT: 70.0})
    assert split["cpu_s"].sum() == pytest.approx(total)
    # named rules' share of the jobs' CPU (issue #63's cost goal for the pictures)
    pictured = ["pictures", "training_curves"]
    shares = breakdown.rules_share(built_repo, TINY_RUN, pictured).set_index("rule")
    for rule in pictured:
        mine = jobs[jobs["rule"] == rule]
        assert shares.loc[rule, "jobs"] == len(mine) > 0
        assert shares.loc[rule, "share"] == pytest.approx(
            mine[list(jobcost.KINDS)].to_numpy().sum() / own
        )
    assert shares.loc["together", "share"] == pytest.approx(shares.loc[pictured, "share"].sum())
    assert "| together |" in breakdown.render_rules(shares.reset_index())
    with pytest.raises(SystemExit, match="no job of rule"):
        breakdown.rules_share(built_repo, TINY_RUN, ["picturez"])


@pytest.mark.slow  # starts Snakemake
def test_snakemake_under_the_launcher_reports_its_own_cpu(tmp_path):
    workflow = _module("workflow")
    (tmp_path / "Snakefile").write_text(
        'rule all:\n    input: "x.txt"\n\nrule x:\n    output: "x.txt"\n'
        "    shell: \"python -c 'sum(range(3 * 10**7))' && touch {output}\"\n"
    )
    cost = workflow.snakemake_cost(tmp_path, "--cores", "1")
    assert (tmp_path / "x.txt").is_file()
    assert 0 < cost.snakemake_cpu < cost.cpu  # the job's process is the launcher's child
    assert cost.seconds > 0
