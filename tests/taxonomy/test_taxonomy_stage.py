"""The taxonomy stage end to end: artifacts, provenance of the checklist, the CLI, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, TINY_RUN, snakemake

from hierbench.cli import main
from hierbench.provenance.artifacts import read_parquet_metadata, read_provenance
from hierbench.taxonomy import load_default_checklist


def test_cub_taxonomy_artifact_and_report(built_repo: Path):
    path = built_repo / f"{TINY_RUN}/cub/taxonomy/taxonomy.parquet"
    table = pd.read_parquet(path)
    assert len(table) == 200 and table["class_id"].is_monotonic_increasing
    assert table["method"].isin(["exact", "fuzzy", "alias", "manual"]).all()
    assert table.loc[table["class_name"] == "017.Cardinal", "scientific_name"].item() == (
        "Cardinalis cardinalis"
    )
    metadata = read_parquet_metadata(path)
    assert metadata["levels"] == {"leaf": "class", "middle": "genus", "high": "family"}
    record = read_provenance(path)
    checklist = load_default_checklist()
    assert record["facts"]["checklist"] == {
        "source": checklist.source,
        "version": checklist.version,
        "sha256": checklist.sha256,
    }
    assert record["params"]["checklist_sha256"] == checklist.sha256
    assert record["facts"]["levels"]["leaf"] == 200
    report = (built_repo / f"{TINY_RUN}/cub/taxonomy/match_report.md").read_text()
    assert "| alias |" in report and "017.Cardinal" in report


def test_nabirds_taxonomy_and_shuffled_control(built_repo: Path):
    table = pd.read_parquet(built_repo / f"{TINY_RUN}/nabirds/taxonomy/taxonomy.parquet")
    assert (table["leaf"].nunique(), table["middle"].nunique(), table["high"].nunique()) == (
        555,
        404,
        22,
    )
    shuffled = pd.read_parquet(built_repo / f"{TINY_RUN}/nabirds/taxonomy/shuffled_paper.parquet")
    merged = table.merge(shuffled, on="class_id", suffixes=("", "_shuffled"))
    assert (merged["leaf"] == merged["leaf_shuffled"]).all()
    assert not (merged["middle"] == merged["middle_shuffled"]).any()
    report = json.loads(
        (built_repo / f"{TINY_RUN}/nabirds/taxonomy/shuffle_report_paper.json").read_text()
    )
    assert report["seed"] == 20260818 and report["leaf_fixed_points"] == 0
    assert report["middle_high_fixed_points"] == 15  # the paper's setting, NABirds' default


def test_unresolvable_class_fails_the_rule_naming_it_and_the_alias_file(repo_copy: Path):
    aliases = repo_copy / "resources/cub_aliases.json"
    data = json.loads(aliases.read_text())
    data["aliases"] = [e for e in data["aliases"] if e["class"] != "091.Mockingbird"]
    aliases.write_text(json.dumps(data, indent=2))
    result = snakemake(repo_copy, "results/cub/taxonomy/taxonomy.parquet", check=False)
    assert result.returncode != 0
    assert "091.Mockingbird: candidates" in result.stdout
    assert "resources/cub_aliases.json" in result.stdout
    assert not (repo_copy / "results/cub/taxonomy/taxonomy.parquet").exists()


def test_cli_matches_what_the_rule_writes(built_repo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "cub.parquet"
    assert (
        main(["taxonomy", "cub", "--classes", "resources/cub_classes.txt", "--out", str(out)]) == 0
    )
    by_rule = pd.read_parquet(built_repo / f"{TINY_RUN}/cub/taxonomy/taxonomy.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(out), by_rule)
    assert (tmp_path / "cub_match_report.md").is_file()
    assert read_provenance(out)["rule"] == "cli:taxonomy cub"


def test_cli_nabirds(tmp_path: Path, capsys):
    out = tmp_path / "nabirds.parquet"
    code = main(
        [
            "taxonomy",
            "nabirds",
            "--classes",
            str(REPO / "resources/nabirds_classes.txt"),
            "--hierarchy",
            str(REPO / "resources/nabirds_hierarchy.txt"),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert "555 leaves, 404 parents, 22 supergroups" in capsys.readouterr().out


def test_cli_reports_a_bad_alias_file_and_exits_2(tmp_path: Path, capsys):
    bad = tmp_path / "aliases.json"
    bad.write_text(json.dumps({"version": "1", "checklist": "birdnames:ebird_2024", "aliases": []}))
    code = main(
        [
            "taxonomy",
            "cub",
            "--classes",
            str(REPO / "resources/cub_classes.txt"),
            "--aliases",
            str(bad),
            "--out",
            str(tmp_path / "t.parquet"),
        ]
    )
    assert code == 2
    assert str(bad) in capsys.readouterr().err
    assert not (tmp_path / "t.parquet").exists()


@pytest.mark.parametrize("column", ["FAMILY"])
def test_user_checklist_csv_with_configured_columns(tmp_path: Path, column: str):
    from hierbench.taxonomy import load_checklist

    csv = tmp_path / "clements.csv"
    csv.write_text(
        "SCI_NAME,PRIMARY_COM_NAME,FAMILY,ORDER1,CATEGORY\n"
        "Setophaga petechia,Yellow Warbler,Parulidae (New World Warblers),Passeriformes,species\n"
        "Setophaga petechia aestiva,Yellow Warbler (Northern),"
        "Parulidae (New World Warblers),Passeriformes,issf\n"
    )
    columns = {
        "common_name": "PRIMARY_COM_NAME",
        "scientific_name": "SCI_NAME",
        "family": column,
        "order": "ORDER1",
        "category": "CATEGORY",
        "species_value": "species",
    }
    checklist = load_checklist(str(csv), columns)
    assert checklist.table["family"].tolist() == ["Parulidae"]
    assert checklist.source == "csv:clements.csv"
