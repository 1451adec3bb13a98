"""A dataset kind of one's own (docs/extend.md): the example lineage kind (examples/lineage.py)
named in examples/lineage.yaml and laid over the built tiny run with a collection in its layout.
The collection goes through the whole study beside the birds, audited, locked and reported, and
editing the plugin reruns that collection's jobs alone, nothing of the birds'."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import TINY, TINY_RUN, assert_plugin_row, scheduled_rules, snakemake
from table_collections import example_lineage_folder

from hierbench.config import load_yaml

EXAMPLE = "examples/lineage.yaml"
NAME = "owls"
# The built tiny run stays the run folder: only the collection's jobs run.
OVERLAY = {"run": TINY_RUN}


def _args() -> tuple[str, ...]:
    return (*TINY, EXAMPLE, "lineage-overlay.yaml")


@pytest.fixture(scope="module")
def lineage_run(
    _built_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Counter[str]]:
    """The built tiny run with the example collection (labels.csv layout) added and run, and
    the jobs that adding it scheduled."""
    target = tmp_path_factory.mktemp("lineage") / "repo"
    shutil.copytree(_built_repo, target, symlinks=True)
    root = load_yaml(target / EXAMPLE)["datasets"][NAME]["root"]
    example_lineage_folder(target / root)
    (target / "lineage-overlay.yaml").write_text(yaml.safe_dump(OVERLAY))
    scheduled = scheduled_rules(target, *_args())
    snakemake(target, *_args())
    return target, scheduled


@pytest.fixture(scope="module")
def lineage_repo(lineage_run: tuple[Path, Counter[str]]) -> Path:
    return lineage_run[0]


@pytest.mark.slow
def test_adding_the_collection_schedules_its_jobs_alone(lineage_run: tuple[Path, Counter[str]]):
    scheduled = lineage_run[1]
    # one of each per-dataset job: the collection's; none of the birds' (a plugin kind in the
    # config changes no bird job's params)
    assert scheduled["image_table"] == 1 and scheduled["splits"] == 1
    assert scheduled["train_factorial"] == 1 and scheduled["final_lock"] == 1
    assert scheduled["effect_tables"] == 1 and scheduled["figures"] == 1
    assert "demo_cub" not in scheduled and "taxonomy_nabirds" not in scheduled


@pytest.mark.slow
def test_the_collection_goes_through_the_whole_study_audited_and_locked(lineage_repo: Path):
    base = lineage_repo / f"{TINY_RUN}/{NAME}"
    taxonomy = pd.read_parquet(base / "taxonomy/taxonomy.parquet")
    assert taxonomy["middle"].nunique() >= 2 and taxonomy["high"].nunique() >= 2
    arms = pd.read_parquet(base / "tables/arms_summary.parquet")
    assert {"E_R", "H_R", "E_S", "H_S"} <= set(arms["geometry"] + "_" + arms["loss"])
    effects = pd.read_parquet(base / "tables/effects_summary.parquet")
    paper = effects[(effects["metric"] == "map") & effects["effect"].isin(["geom_R", "int"])]
    assert len(paper) and paper[["ci_low", "ci_high"]].notna().all().all()
    assert "species" in (base / "tables/summary.md").read_text()  # its own level names
    assert (base / "figures/effects.png").is_file()
    audit = pd.read_parquet(base / "audit/fairness.parquet")
    assert audit["passed"].all()
    lock = json.loads((base / "lock/final_lock.json").read_text())
    assert lock["config"]["plugins"]["datasets"] == {"lineage": "examples/lineage.py:KIND"}
    birds = json.loads((lineage_repo / f"{TINY_RUN}/cub/lock/final_lock.json").read_text())
    assert "datasets" not in birds["config"]["plugins"]  # another dataset's kind is not its own
    snakemake(lineage_repo, "--report", "report.html", *_args())
    assert NAME in (lineage_repo / "report.html").read_text(encoding="utf-8", errors="replace")


@pytest.mark.slow
def test_editing_the_kind_reruns_the_collections_jobs_alone(lineage_repo: Path, tmp_path: Path):
    repo = tmp_path / "repo"
    shutil.copytree(lineage_repo, repo, symlinks=True)
    plugin = repo / "examples/lineage.py"
    source = plugin.read_text()
    plugin.write_text(source.replace('"""', '""" (reworded)', 1))
    assert scheduled_rules(repo, *_args()) == {}  # a docstring is not behaviour
    plugin.write_text(source.replace("LABELS = ", "EXTRA = 1\nLABELS = "))
    rules = scheduled_rules(repo, *_args())
    # its folder's identities, image table and taxonomy, then what follows them: one dataset's
    assert rules["image_table"] == 1 and rules["taxonomy_table"] == 1
    assert rules["splits"] == 1 and rules["final_lock"] == 1 and rules["effect_tables"] == 1
    assert "demo_cub" not in rules and "taxonomy_cub" not in rules
    assert_plugin_row("examples/lineage.py", rules)
