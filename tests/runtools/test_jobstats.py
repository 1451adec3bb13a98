"""What a run's jobs cost, per job, rule and stage, from Snakemake's benchmark files."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from hierbench.cli import main
from hierbench.runtools.jobstats import (
    NO_RECORD,
    NO_STAGE,
    BenchmarkFileError,
    job_costs,
    read_benchmark,
    render_costs,
    rule_costs,
    rule_stages,
    total_costs,
)

REPO = Path(__file__).resolve().parents[2]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _benchmark(wall: str, rss: str, cpu: str) -> str:
    """One Snakemake benchmark table with a single row."""
    return HEADER + f"{wall}\t0:00:00\t{rss}\t1.0\t1.0\t1.0\t0.0\t0.0\t50.0\t{cpu}\n"


def _job(root: Path, output: str, rule: str | None, wall: str, rss: str, cpu: str) -> None:
    """An output (with a provenance record naming ``rule`` unless None) and its benchmark."""
    artifact = root / "run" / output
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_bytes(b"x")
    if rule is not None:
        record = artifact.with_name(artifact.name + ".prov.json")
        record.write_text(json.dumps({"rule": rule, "sha256": "0" * 64}))
    benchmark = root / "logs" / (output + ".benchmark.tsv")
    benchmark.parent.mkdir(parents=True, exist_ok=True)
    benchmark.write_text(_benchmark(wall, rss, cpu))


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run of four jobs: two training cells, one features job (memory not sampled), and an
    output whose record is missing; rules in two stage files."""
    _job(tmp_path, "cub/cells/ES-42/model.safetensors", "train_cell", "10.5", "900.0", "8.0")
    _job(tmp_path, "cub/cells/HS-42/model.safetensors", "train_cell", "30.0", "950.5", "25.0")
    _job(tmp_path, "cub/features/dev.parquet", "features_dev", "100.0", "NA", "90.0")
    _job(tmp_path, "cub/orphan.parquet", None, "1.0", "10.0", "0.5")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "training.smk").write_text("rule train_cell:\n    output: 'x'\n")
    (rules / "features.smk").write_text("localrule features_dev:\n    output: 'y'\n")
    return tmp_path


def test_each_job_gets_its_rule_from_the_record_and_its_stage_from_the_rule_file(run: Path):
    jobs = job_costs(run / "run", run / "logs", rule_stages(run / "rules"))
    assert jobs["output"].tolist() == sorted(jobs["output"])
    by_output = jobs.set_index("output")
    assert by_output.loc["cub/cells/HS-42/model.safetensors", "rule"] == "train_cell"
    assert by_output.loc["cub/cells/HS-42/model.safetensors", "stage"] == "training"
    assert by_output.loc["cub/features/dev.parquet", "stage"] == "features"
    assert by_output.loc["cub/orphan.parquet", "rule"] == NO_RECORD
    assert by_output.loc["cub/orphan.parquet", "stage"] == NO_STAGE
    assert math.isnan(by_output.loc["cub/features/dev.parquet", "max_rss_mb"])
    assert by_output.loc["cub/cells/ES-42/model.safetensors", "cpu_s"] == 8.0


def test_rule_costs_sum_the_jobs_and_name_the_longest_and_largest(run: Path):
    jobs = job_costs(run / "run", run / "logs", rule_stages(run / "rules"))
    table = rule_costs(jobs).set_index("rule")
    cells = table.loc["train_cell"]
    assert cells["jobs"] == 2
    assert (cells["wall_s"], cells["cpu_s"]) == (40.5, 33.0)
    assert (cells["cpu_s_min"], cells["cpu_s_max"]) == (8.0, 25.0)
    assert cells["longest"] == "cub/cells/HS-42/model.safetensors"
    assert cells["max_rss_mb"] == 950.5
    assert cells["largest"] == "cub/cells/HS-42/model.safetensors"
    assert math.isnan(table.loc["features_dev", "max_rss_mb"])
    stages = rule_costs(jobs, by="stage").set_index("stage")
    assert stages.loc["training", "cpu_s"] == 33.0 and stages.loc[NO_STAGE, "jobs"] == 1
    totals = total_costs(jobs)
    assert totals == {"jobs": 4, "wall_s": 141.5, "cpu_s": 123.5, "max_rss_mb": 950.5}


def test_the_markdown_table_shows_every_group_and_the_totals(run: Path):
    jobs = job_costs(run / "run", run / "logs", rule_stages(run / "rules"))
    text = render_costs(rule_costs(jobs), total_costs(jobs))
    assert "| train_cell | 2 | 40 | 33 | 8–25 | 950 | cub/cells/HS-42/model.safetensors |" in text
    assert "| features_dev | 1 | 100 | 90 | 90–90 | NA | cub/features/dev.parquet |" in text
    assert text.endswith("4 jobs: 142 s of job wall time, 124 CPU s, largest peak RSS 950 MB")


def test_grouping_by_anything_else_is_refused(run: Path):
    jobs = job_costs(run / "run", run / "logs")
    with pytest.raises(ValueError, match="'rule' or 'stage', got 'dataset'"):
        rule_costs(jobs, by="dataset")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not a Snakemake benchmark table"),
        ("a\tb\n1\t2\n", "no column s, cpu_time, max_rss"),
        (HEADER, "no rows"),
    ],
)
def test_a_file_that_is_not_a_benchmark_table_is_named(tmp_path: Path, text: str, problem: str):
    path = tmp_path / "x.benchmark.tsv"
    path.write_text(text)
    with pytest.raises(BenchmarkFileError, match=re.escape(str(path)) + ".*" + problem):
        read_benchmark(path)


def test_the_jobs_command_prints_json_and_names_a_missing_log_folder(run: Path, capsys):
    args = ["jobs", str(run / "run"), "--logs", str(run / "logs"), "--rules", str(run / "rules")]
    assert main([*args, "--by", "stage", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["by"] == "stage" and report["totals"]["jobs"] == 4
    assert {group["stage"]: group["jobs"] for group in report["groups"]} == {
        NO_STAGE: 1,
        "features": 1,
        "training": 2,
    }
    assert main(["jobs", str(run / "run")]) == 2
    assert f"log folder {run / 'run'}/logs of run {run / 'run'} does not exist" in (
        capsys.readouterr().err
    )


def test_the_workflow_rules_map_to_their_stage_files():
    stages = rule_stages(REPO / "rules")
    assert stages["train_factorial"] == "training" and stages["features_dev"] == "features"
    assert stages["final_lock"] == "evaluation" and stages["splits"] == "splits"
    # rules made by inheritance (use rule ... with:) belong to the file that makes them
    assert stages["train_curvature"] == "training"
    assert stages["evaluate_frozen"] == "evaluation"
    assert set(stages.values()) <= {path.stem for path in (REPO / "rules").glob("*.smk")}
