"""The Snakemake skeleton: a real run with provenance, and code-hash invalidation."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import scheduled_rules, snakemake

from hierbench.hashing import sha256_file


def test_run_stages_inputs_with_provenance_and_logs(repo_copy: Path):
    snakemake(repo_copy)
    staged = repo_copy / "results/nabirds/inputs/hierarchy.txt"
    record = json.loads(staged.with_name("hierarchy.txt.prov.json").read_text())
    assert record["sha256"] == sha256_file(staged)
    assert record["rule"] == "stage_input"
    assert record["wildcards"] == {"dataset": "nabirds", "name": "hierarchy"}
    assert record["inputs"] == {
        "resources/nabirds_hierarchy.txt": sha256_file(
            repo_copy / "resources/nabirds_hierarchy.txt"
        )
    }
    assert (repo_copy / "logs/nabirds/inputs/hierarchy.txt.log").is_file()
    assert scheduled_rules(repo_copy) == {}


def test_editing_a_library_module_reruns_exactly_the_rules_that_declare_it(repo_copy: Path):
    snakemake(repo_copy)
    module = repo_copy / "src/hierbench/inputs.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert scheduled_rules(repo_copy) == {"stage_input": 3, "all": 1}


def test_editing_a_transitively_imported_module_reruns_its_users(repo_copy: Path):
    snakemake(repo_copy)
    module = repo_copy / "src/hierbench/hashing.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert scheduled_rules(repo_copy) == {"stage_input": 3, "all": 1}


def test_editing_a_module_no_rule_declares_reruns_nothing(repo_copy: Path):
    snakemake(repo_copy)
    module = repo_copy / "src/hierbench/codehash.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert scheduled_rules(repo_copy) == {}


def test_broken_shipped_file_fails_naming_file_and_line(repo_copy: Path):
    classes = repo_copy / "resources/cub_classes.txt"
    lines = classes.read_text().splitlines()
    lines[4] = "five 005.Crested_Auklet"
    classes.write_text("\n".join(lines) + "\n")
    result = snakemake(repo_copy, check=False)
    assert result.returncode != 0
    assert "resources/cub_classes.txt:5: expected '<integer id> <text>'" in result.stdout
    assert not (repo_copy / "results/cub/inputs/classes.txt").exists()
