"""The Snakemake workflow: a real run with provenance, and source-input invalidation (the
rebuild map of code and config edits is tests/runtools/test_rebuild_map.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import TINY, TINY_LOGS, TINY_RUN, TINY_SEEDS, dag_jobs, scheduled_rules, snakemake

from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.hashing import sha256_path
from hierbench.runs import is_log
from hierbench.runtools.jobstats import NO_RECORD, NO_STAGE, job_costs, rule_stages
from hierbench.runtools.rebuild_map import rule_blocks

# configs/tiny.yaml runs every control on CUB only: the curvature control at 2 points, its base
# point and its matched E_R, and the semantic control's 4 arms, each x the training seeds; the
# baselines (PCA, a HIER-style cell per seed); the outer splits (each of 3 splits: its arms' epochs
# chosen on its validation side, then matched E_R, matched H_R and SupCon, each at seed 42).
SEEDS = len(TINY_SEEDS)
OUTER_SCORING = {"score_outer_split": 3, "outer_tables": 1}
CUB_CONTROL = {
    "train_curvature": 4,  # a bundle per point, its cell of each seed
    "evaluate_curvature_cell": 4,  # a job per point: its cell of each seed
    "curvature_tables": 1,
    "select_semantic_duration": 4,
    "train_semantic": 4,  # a bundle per arm
    "evaluate_semantic_cell": 4,  # a job per arm
    "semantic_tables": 1,
    "fit_pca": 1,
    "train_hier_cell": SEEDS,
    "evaluate_pca": 1,
    "evaluate_hier_cell": 1,  # every seed's cell in one job
    "baselines_tables": 1,
    "select_outer_durations": 3,
    "train_outer": 3 * 3,
    **OUTER_SCORING,
}
# An alias edit reruns the CUB taxonomy and everything after it, companion cells included;
# never the demo's images nor the backbone (the feature slices join the new labels).
CUB_AFTER_TAXONOMY = {
    "taxonomy_cub": 1,
    "taxonomy_shuffled": 1,
    "splits": 1,
    "features_dev": 1,
    "features_dev_crops": 1,
    "features_sealed_test": 1,
    "tune": 1,
    "tuning_selection": 1,
    "train_factorial": 1,
    "fairness_audit": 1,
    "final_lock": 1,
    "evaluate_cell": 1,  # the whole factorial in one job
    "evaluate_frozen": 1,
    "train_companion_cell": 2 * SEEDS,
    "evaluate_companion_cell": 1,
    "evaluate_companion_angle": 1,
    "companion_angle_tables": 1,
    "effect_tables": 1,
    "figures": 1,
    "tau_curves": 1,
    "training_curves": 6,  # every kind of cell CUB trains: factorial, companion, the controls'
    "duration_curves": 1,  # the semantic and outer controls' epoch searches
    "pictures": 1,  # the galleries and embedding views, drawn from the sealed test
    "tensorboard_export": 1,  # configs/tiny.yaml exports to TensorBoard (tracker)
    **CUB_CONTROL,
    "all": 1,
}


def _scheduled(repo: Path) -> dict[str, int]:
    return dict(scheduled_rules(repo, *TINY))


def test_run_stages_inputs_with_provenance_and_logs(built_repo: Path):
    staged = built_repo / f"{TINY_RUN}/nabirds/inputs/hierarchy.txt"
    record = json.loads(staged.with_name("hierarchy.txt.prov.json").read_text())
    assert record["sha256"] == sha256_path(staged)
    assert record["rule"] == "stage_input"
    assert record["wildcards"] == {"dataset": "nabirds", "name": "hierarchy"}
    shipped = built_repo / "resources/nabirds_hierarchy.txt"
    assert record["inputs"] == {"resources/nabirds_hierarchy.txt": sha256_path(shipped)}
    assert (built_repo / f"{TINY_LOGS}/nabirds/inputs/hierarchy.txt.log").is_file()


def test_every_job_of_a_run_has_its_cost_rule_and_stage(built_repo: Path):
    """`hierbench jobs`: every benchmark file of the tiny run belongs to an output whose record
    names a rule defined in a stage file, and holds the job's measured time."""
    jobs = job_costs(
        built_repo / TINY_RUN, built_repo / TINY_LOGS, rule_stages(built_repo / "rules")
    )
    blocks = list(rule_blocks(built_repo / "rules"))
    measured = {block.name for block in blocks if "benchmark:" in block.body}
    measured |= {block.name for block in blocks if block.parent in measured}
    planned = scheduled_rules(built_repo, *TINY, "--forceall")
    assert len(jobs) == sum(count for rule, count in planned.items() if rule in measured) > 90
    assert NO_RECORD not in set(jobs["rule"]) and NO_STAGE not in set(jobs["stage"])
    assert (jobs["wall_s"] > 0).all() and jobs["cpu_s"].notna().all()
    assert {"data", "features", "training", "evaluation"} <= set(jobs["stage"])


def test_a_complete_run_leaves_nothing_to_do(built_repo: Path):
    assert _scheduled(built_repo) == {}


def _artifacts(results: Path) -> list[Path]:
    """Files and folders that must carry a record (the run's logs aside): folders with a
    record count as one."""
    folders = [
        p.with_name(p.name.removesuffix(PROVENANCE_SUFFIX)) for p in results.rglob("*.prov.json")
    ]
    folders = [p for p in folders if p.is_dir()]
    files = [
        p
        for p in results.rglob("*")
        if p.is_file()
        and not p.name.endswith(PROVENANCE_SUFFIX)
        and not any(folder in p.parents for folder in folders)
        and not is_log(p, results)
    ]
    return files + folders


def test_every_artifact_has_a_matching_provenance_record(built_repo: Path):
    artifacts = _artifacts(built_repo / TINY_RUN)
    assert len(artifacts) >= 150
    for artifact in artifacts:
        record = json.loads(artifact.with_name(artifact.name + PROVENANCE_SUFFIX).read_text())
        assert record["sha256"] == sha256_path(artifact), artifact


def test_alias_file_change_reruns_cub_taxonomy_and_what_follows(built_repo: Path):
    aliases = built_repo / "resources/cub_aliases.json"
    data = json.loads(aliases.read_text())
    data["version"] = "2"
    aliases.write_text(json.dumps(data, indent=2))
    assert _scheduled(built_repo) == CUB_AFTER_TAXONOMY


def test_touching_inputs_without_changing_them_reruns_nothing(built_repo: Path):
    touched = ("resources/cub_aliases.json", "resources/cub_classes.txt", "configs/tiny.yaml")
    scripts = ("workflow_scripts/train_bundle.py", "src/hierbench/metrics/engine.py")
    for path in (*touched, *scripts):
        os.utime(built_repo / path)
    for path in (built_repo / f"{TINY_RUN}/cub/splits").glob("*.parquet"):
        os.utime(path)
    assert _scheduled(built_repo) == {}


def test_editing_a_shipped_class_list_reruns_its_stage(built_repo: Path):
    hierarchy = built_repo / "resources/nabirds_hierarchy.txt"
    hierarchy.write_text(hierarchy.read_text() + "\n")
    scheduled = _scheduled(built_repo)
    assert scheduled["stage_input"] == 1 and scheduled["taxonomy_nabirds"] == 1


def test_broken_shipped_file_fails_naming_file_and_line(repo_copy: Path):
    classes = repo_copy / "resources/cub_classes.txt"
    lines = classes.read_text().splitlines()
    lines[4] = "five 005.Crested_Auklet"
    classes.write_text("\n".join(lines) + "\n")
    result = snakemake(repo_copy, *TINY, check=False)
    assert result.returncode != 0
    assert "resources/cub_classes.txt:5: expected '<integer id> <text>'" in result.stdout
    assert not (repo_copy / f"{TINY_RUN}/cub/inputs/classes.txt").exists()


# As `snakemake --dag dot` prints it: tabs before jobs, spaces after the closing brace.
DOT = r"""digraph snakemake_dag {
    graph[bgcolor=white, margin=0];
    node[shape=box, style=rounded, fontname=sans,                 fontsize=10, penwidth=2];
    edge[penwidth=2, color=grey];
	0[label = "all", color = "0.00 0.6 0.85", style="rounded"];
	1[label = "figures\ndataset: cub", color = "0.10 0.6 0.85", style="rounded"];
	2[label = "figures\ndataset: nabirds", color = "0.10 0.6 0.85", style="rounded"];
	3[label = "splits", color = "0.27 0.6 0.85", style="rounded,dashed"];
	1 -> 0
	2 -> 0
	3 -> 1
}"""
DOT += " " * 12 + "\n"


def test_dag_jobs_reads_every_job_and_whether_it_runs():
    assert dag_jobs(DOT) == [
        ("all", True),
        ("figures", True),
        ("figures", True),
        ("splits", False),
    ]


@pytest.mark.parametrize(
    "broken",
    [
        DOT.replace("\t3 -> 1\n", "\t3 -> 1\nBuilding DAG of jobs...\n"),
        DOT.replace('style="rounded,dashed"', 'style="dashed"'),
        DOT.replace("\t2[", "\t1["),
        DOT.replace("edge[", "edges["),
        DOT.rsplit("}", 1)[0],
        "",
    ],
)
def test_dag_jobs_rejects_anything_it_does_not_know(broken: str):
    with pytest.raises(ValueError):
        dag_jobs(broken)
