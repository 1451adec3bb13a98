"""The Snakemake skeleton: a real run with provenance, and code-hash invalidation."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import scheduled_rules, snakemake

from hierbench.hashing import sha256_file

TAXONOMY_RULES = {"taxonomy_cub": 1, "taxonomy_nabirds": 1, "taxonomy_shuffled": 1}


def _edit(path: Path) -> None:
    """Change a source file without changing what it does."""
    path.write_text(path.read_text() + "\n# an edit\n")


def test_run_stages_inputs_with_provenance_and_logs(built_repo: Path):
    staged = built_repo / "results/nabirds/inputs/hierarchy.txt"
    record = json.loads(staged.with_name("hierarchy.txt.prov.json").read_text())
    assert record["sha256"] == sha256_file(staged)
    assert record["rule"] == "stage_input"
    assert record["wildcards"] == {"dataset": "nabirds", "name": "hierarchy"}
    assert record["inputs"] == {
        "resources/nabirds_hierarchy.txt": sha256_file(
            built_repo / "resources/nabirds_hierarchy.txt"
        )
    }
    assert (built_repo / "logs/nabirds/inputs/hierarchy.txt.log").is_file()


def test_a_complete_run_leaves_nothing_to_do(built_repo: Path):
    assert scheduled_rules(built_repo) == {}


def test_every_artifact_has_a_matching_provenance_record(built_repo: Path):
    artifacts = [
        p
        for p in (built_repo / "results").rglob("*")
        if p.is_file() and not p.name.endswith(".prov.json")
    ]
    assert len(artifacts) >= 8
    for artifact in artifacts:
        record = json.loads(artifact.with_name(artifact.name + ".prov.json").read_text())
        assert record["sha256"] == sha256_file(artifact), artifact


def test_editing_a_library_module_reruns_exactly_the_rules_that_declare_it(built_repo: Path):
    _edit(built_repo / "src/hierbench/taxonomy.py")
    assert scheduled_rules(built_repo) == {**TAXONOMY_RULES, "all": 1}


def test_editing_an_upstream_module_reruns_its_rules_and_what_follows(built_repo: Path):
    _edit(built_repo / "src/hierbench/inputs.py")
    assert scheduled_rules(built_repo) == {"stage_input": 3, **TAXONOMY_RULES, "all": 1}


def test_editing_a_transitively_imported_module_reruns_its_users(built_repo: Path):
    _edit(built_repo / "src/hierbench/hashing.py")
    assert scheduled_rules(built_repo) == {"stage_input": 3, **TAXONOMY_RULES, "all": 1}


def test_editing_a_module_no_rule_declares_reruns_nothing(built_repo: Path):
    _edit(built_repo / "src/hierbench/codehash.py")
    assert scheduled_rules(built_repo) == {}


def test_alias_file_change_reruns_cub_taxonomy_only(built_repo: Path):
    aliases = built_repo / "resources/cub_aliases.json"
    data = json.loads(aliases.read_text())
    data["version"] = "2"
    aliases.write_text(json.dumps(data, indent=2))
    assert scheduled_rules(built_repo) == {"taxonomy_cub": 1, "all": 1}


def test_broken_shipped_file_fails_naming_file_and_line(repo_copy: Path):
    classes = repo_copy / "resources/cub_classes.txt"
    lines = classes.read_text().splitlines()
    lines[4] = "five 005.Crested_Auklet"
    classes.write_text("\n".join(lines) + "\n")
    result = snakemake(repo_copy, check=False)
    assert result.returncode != 0
    assert "resources/cub_classes.txt:5: expected '<integer id> <text>'" in result.stdout
    assert not (repo_copy / "results/cub/inputs/classes.txt").exists()
