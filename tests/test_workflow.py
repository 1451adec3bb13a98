"""The Snakemake workflow: a real run with provenance, and code-hash invalidation."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TINY, scheduled_rules, snakemake

from hierbench.artifacts import PROVENANCE_SUFFIX
from hierbench.hashing import sha256_path

SPLITS = {"splits": 2, "all": 1}
DATA = {"demo_cub": 1, "demo_nabirds": 1, "image_table": 2, **SPLITS}
TAXONOMY = {"taxonomy_cub": 1, "taxonomy_nabirds": 1, "taxonomy_shuffled": 1, **DATA}
EVERYTHING = {"stage_input": 3, **TAXONOMY}


def _edit(path: Path) -> None:
    """Change a source file without changing what it does."""
    path.write_text(path.read_text() + "\n# an edit\n")


def _scheduled(repo: Path) -> dict[str, int]:
    return dict(scheduled_rules(repo, *TINY))


def test_run_stages_inputs_with_provenance_and_logs(built_repo: Path):
    staged = built_repo / "results/nabirds/inputs/hierarchy.txt"
    record = json.loads(staged.with_name("hierarchy.txt.prov.json").read_text())
    assert record["sha256"] == sha256_path(staged)
    assert record["rule"] == "stage_input"
    assert record["wildcards"] == {"dataset": "nabirds", "name": "hierarchy"}
    shipped = built_repo / "resources/nabirds_hierarchy.txt"
    assert record["inputs"] == {"resources/nabirds_hierarchy.txt": sha256_path(shipped)}
    assert (built_repo / "logs/nabirds/inputs/hierarchy.txt.log").is_file()


def test_a_complete_run_leaves_nothing_to_do(built_repo: Path):
    assert _scheduled(built_repo) == {}


def _artifacts(results: Path) -> list[Path]:
    """Files and folders that must carry a record: folders with a record count as one."""
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
    ]
    return files + folders


def test_every_artifact_has_a_matching_provenance_record(built_repo: Path):
    artifacts = _artifacts(built_repo / "results")
    assert len(artifacts) >= 16
    for artifact in artifacts:
        record = json.loads(artifact.with_name(artifact.name + PROVENANCE_SUFFIX).read_text())
        assert record["sha256"] == sha256_path(artifact), artifact


def test_editing_a_library_module_reruns_exactly_the_rules_that_declare_it(built_repo: Path):
    _edit(built_repo / "src/hierbench/splits.py")
    assert _scheduled(built_repo) == SPLITS


def test_editing_the_renderer_reruns_the_demo_and_what_follows(built_repo: Path):
    _edit(built_repo / "src/hierbench/demo.py")
    assert _scheduled(built_repo) == DATA


def test_editing_the_taxonomy_reruns_it_and_what_follows(built_repo: Path):
    _edit(built_repo / "src/hierbench/taxonomy.py")
    assert _scheduled(built_repo) == TAXONOMY


def test_editing_a_transitively_imported_module_reruns_its_users(built_repo: Path):
    _edit(built_repo / "src/hierbench/hashing.py")
    assert _scheduled(built_repo) == EVERYTHING


def test_editing_a_module_no_rule_declares_reruns_nothing(built_repo: Path):
    _edit(built_repo / "src/hierbench/codehash.py")
    assert _scheduled(built_repo) == {}


def test_alias_file_change_reruns_cub_taxonomy_and_what_follows(built_repo: Path):
    aliases = built_repo / "resources/cub_aliases.json"
    data = json.loads(aliases.read_text())
    data["version"] = "2"
    aliases.write_text(json.dumps(data, indent=2))
    cub_only = {"taxonomy_cub": 1, "demo_cub": 1, "image_table": 1, "splits": 1, "all": 1}
    assert _scheduled(built_repo) == cub_only


def test_split_config_change_reruns_only_the_splits(built_repo: Path):
    config = built_repo / "configs/tiny.yaml"
    config.write_text(
        config.read_text().replace("validation_fraction: 0.25", "validation_fraction: 0.3")
    )
    assert _scheduled(built_repo) == {"splits": 1, "all": 1}


def test_broken_shipped_file_fails_naming_file_and_line(repo_copy: Path):
    classes = repo_copy / "resources/cub_classes.txt"
    lines = classes.read_text().splitlines()
    lines[4] = "five 005.Crested_Auklet"
    classes.write_text("\n".join(lines) + "\n")
    result = snakemake(repo_copy, *TINY, check=False)
    assert result.returncode != 0
    assert "resources/cub_classes.txt:5: expected '<integer id> <text>'" in result.stdout
    assert not (repo_copy / "results/cub/inputs/classes.txt").exists()
