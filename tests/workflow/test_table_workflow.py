"""A collection of your own (kind: table) through the whole study: configs/table-example.yaml
renders an example collection in the table layout and runs every stage on it; a flawed
images.csv stops the run at the reader, naming file and line, with nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import COPY_IGNORE, REPO, scheduled_rules, snakemake
from table_collections import table_dataset_folder

from hierbench.cli import main
from hierbench.config import load_yaml
from hierbench.provenance.artifacts import read_parquet_metadata
from hierbench.runs import logs_folder, run_folder

pytestmark = pytest.mark.slow

EXAMPLE = ("--configfile", "configs/table-example.yaml")
NAME = "birds_of_prey_and_co"
TABLE_RUN = run_folder(load_yaml(REPO / "configs/table-example.yaml"))
TABLE_LOGS = logs_folder(TABLE_RUN)


@pytest.fixture(scope="module")
def table_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository copy after a complete run of configs/table-example.yaml."""
    target = tmp_path_factory.mktemp("table") / "repo"
    shutil.copytree(REPO, target, ignore=COPY_IGNORE)
    snakemake(target, *EXAMPLE)
    return target


def test_the_example_collection_runs_the_whole_study(table_run: Path):
    base = table_run / TABLE_RUN / NAME
    taxonomy = pd.read_parquet(base / "taxonomy/taxonomy.parquet")
    assert taxonomy[["leaf", "middle", "high"]].nunique().tolist() == [36, 12, 6]
    levels = read_parquet_metadata(base / "taxonomy/taxonomy.parquet")["levels"]
    assert levels == {"leaf": "species", "middle": "genus", "high": "family"}
    arms = pd.read_parquet(base / "tables/arms_summary.parquet")
    trained = set(arms["geometry"] + "_" + arms["loss"])
    assert trained >= {"E_R", "H_R", "E_S", "H_S", "E_A", "L_A"}
    effects = pd.read_parquet(base / "tables/effects_summary.parquet")
    assert {"geom_R", "loss_E", "int", "geom_A"} <= set(effects["effect"])
    main_effects = effects[(effects["level"] == "mean_hierarchy") & (effects["metric"] == "map")]
    assert main_effects["mean"].notna().all()  # every level has valid queries
    assert (base / "tables/baselines.md").is_file() and (base / "outer/outer.md").is_file()
    assert (base / "figures/effects.png").stat().st_size > 1000


def test_the_official_protocol_follows_the_split_column_and_outer_splits_hold_out_genera(
    table_run: Path,
):
    base = table_run / TABLE_RUN / NAME
    images = pd.read_parquet(base / "data/images.parquet").set_index("image_id")
    sealed = pd.read_parquet(base / "splits/sealed/test.parquet")
    test = set(sealed.loc[sealed["split"] == "final", "image_id"])
    assert test == set(images.index[~images["is_train"]])
    taxonomy = pd.read_parquet(base / "taxonomy/taxonomy.parquet").set_index("class_id")
    genus = images["class_id"].map(taxonomy["middle"])
    dev = pd.read_parquet(base / "splits/dev.parquet")
    for split, rows in dev[dev["split"].str.fullmatch(r"outer-\d+")].groupby("split"):
        train = set(genus[rows.loc[rows["role"] == "train", "image_id"]])
        held_out = set(genus[rows.loc[rows["role"] != "train", "image_id"]])
        assert held_out and not train & held_out, split


def test_the_audit_passes_and_check_dataset_reads_the_rendered_collection(
    table_run: Path, capsys, monkeypatch
):
    monkeypatch.chdir(table_run)
    assert main(["audit", TABLE_RUN]) == 0
    assert main(["check-dataset", "configs/table-example.yaml", NAME]) == 0
    assert "genus (middle)                 12" in capsys.readouterr().out


def _as_own_folder(repo: Path, folder: Path) -> tuple[str, str]:
    """The rendered collection copied to ``folder`` as a collection of one's own, named mine;
    the config arguments that read it."""
    shutil.copytree(repo / TABLE_RUN / NAME / "demo/collection", folder)
    config = (repo / "configs/table-example.yaml").read_text()
    config = config.replace("source: demo ", f"source: folder\n    root: {folder}\n    # ")
    (repo / "configs/mine.yaml").write_text(config.replace(NAME, "mine"))
    return ("--configfile", "configs/mine.yaml")


def test_a_flawed_images_csv_stops_the_run_naming_file_and_line(table_run: Path, tmp_path):
    folder = tmp_path / "mine"
    config = _as_own_folder(table_run, folder)
    lines = (folder / "images.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",train,", ",training,").replace(",test,", ",training,")
    (folder / "images.csv").write_text("\n".join(lines) + "\n")
    result = snakemake(table_run, *config, check=False)
    assert result.returncode != 0
    logs = table_run / f"{TABLE_LOGS}/mine"
    log = (logs / "data/images.parquet.log").read_text()  # the first job that reads it
    assert f"error: {folder / 'images.csv'}:4: split 'training'" in log
    assert "Traceback" not in log and not (logs / "taxonomy/taxonomy.parquet.log").exists()
    written = {p.name for p in (table_run / f"{TABLE_RUN}/mine").rglob("*.parquet")}
    assert written == {
        "layout_files.parquet",
        "taxonomy_files.parquet",
        "image_files.parquet",
    }  # the folder's content


def test_a_taxonomy_edit_never_reruns_the_image_table_or_the_backbone(table_run: Path, tmp_path):
    """Moving a class to another middle group in taxonomy.csv reruns the taxonomy, the splits
    and the feature slices, never the image table or the backbone pass over the images."""
    folder = tmp_path / "mine"
    config = _as_own_folder(table_run, folder)
    base = f"{TABLE_RUN}/mine"
    snakemake(table_run, f"{base}/features/backbone/images.parquet", *config)
    target = f"{base}/features/dev.parquet"
    before = scheduled_rules(table_run, target, *config)
    assert "backbone_features" not in before and "image_table" not in before
    header, first, *rest = (folder / "taxonomy.csv").read_text().splitlines()
    elsewhere = next(row for row in rest if row.split(",")[1] != first.split(",")[1])
    moved = ",".join([first.split(",")[0], *elsewhere.split(",")[1:]])
    (folder / "taxonomy.csv").write_text("\n".join([header, moved, *rest]) + "\n")
    after = scheduled_rules(table_run, target, *config)
    assert after["taxonomy_fingerprint"] == 1 and after["taxonomy_table"] == 1
    assert after["features_dev"] == 1 and after["splits"] == 1
    assert "backbone_features" not in after and "image_table" not in after
    (folder / "taxonomy.csv").write_text("\n".join(["class,middle,high", "x,y"]) + "\n")
    broken = snakemake(table_run, target, *config, check=False)
    assert broken.returncode != 0 and "taxonomy.csv" in broken.stdout


def test_the_dry_run_of_a_collection_of_your_own_prints_its_warnings(tmp_path: Path):
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo, ignore=COPY_IGNORE)
    table_dataset_folder(repo / "beetles")
    config = load_yaml(REPO / "configs/table-example.yaml")
    block = config["datasets"].pop(NAME)
    block.pop("demo")
    config["datasets"]["beetles"] = block | {"source": "folder", "root": "beetles"}
    (repo / "configs/beetles.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(repo, "--dry-run", "--configfile", "configs/beetles.yaml")
    assert "warning: beetles: 3 genus group(s) hold a single species" in result.stdout
    assert "warning: beetles: 3 leaves (species) have no test image" in result.stdout
