"""Demo renderer: exact layouts, byte-identical reruns, subset choice, visible hierarchy."""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import cub_taxonomy_table, nabirds_taxonomy_table
from PIL import Image

from hierbench.data.layouts import read_classes, read_cub, read_nabirds
from hierbench.demo import (
    class_look,
    nabirds_image_id,
    select_demo_classes,
    write_cub_demo,
    write_nabirds_demo,
)

logger = logging.getLogger(__name__)

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
CUB_CLASSES = RESOURCES / "cub_classes.txt"
NABIRDS_CLASSES = RESOURCES / "nabirds_classes.txt"
NABIRDS_HIERARCHY = RESOURCES / "nabirds_hierarchy.txt"
TAXONOMY_COLUMNS = ["class_id", "class_name", "leaf", "middle", "high"]


def _nabirds(root: Path, taxonomy: pd.DataFrame | None = None, **kwargs) -> Path:
    """A small NABirds demo (6 selected leaves x 2 images of 32 px unless overridden)."""
    options = {"images_per_class": 2, "image_size": 32, "classes": 6, "workers": 1, **kwargs}
    return write_nabirds_demo(
        root,
        nabirds_taxonomy_table() if taxonomy is None else taxonomy,
        classes_file=NABIRDS_CLASSES,
        hierarchy_file=NABIRDS_HIERARCHY,
        **options,
    )


def _hashes(root: Path) -> dict[str, str]:
    """SHA256 of every file under ``root``, by relative POSIX path."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_same_seed_gives_byte_identical_folders_and_another_seed_differs(tmp_path: Path):
    serial = _hashes(_nabirds(tmp_path / "a" / "nabirds", workers=1))
    parallel = _hashes(_nabirds(tmp_path / "b" / "nabirds", workers=2))
    other = _hashes(_nabirds(tmp_path / "c" / "nabirds", seed=1))
    assert serial == parallel
    assert len(serial) == 6 * 2 + 6
    assert serial["classes.txt"] == other["classes.txt"]
    images = {k for k in serial if k.startswith("images/")}
    assert images.isdisjoint(other)  # ids (hence paths) depend on the seed
    cub = [
        _hashes(
            write_cub_demo(
                tmp_path / s / "CUB_200_2011",
                cub_taxonomy_table().iloc[:5],
                images_per_class=2,
                image_size=32,
                seed=seed,
                classes_file=CUB_CLASSES,
                workers=2,
            )
        )
        for s, seed in (("d", 0), ("e", 0), ("f", 1))
    ]
    assert cub[0] == cub[1]
    assert cub[0]["images.txt"] == cub[2]["images.txt"]
    differing = [k for k in cub[0] if k.endswith(".jpg") and cub[0][k] != cub[2].get(k)]
    assert len(differing) == 10


def test_cub_demo_has_the_exact_cub_layout(tmp_path: Path):
    root = write_cub_demo(
        tmp_path / "CUB_200_2011",
        cub_taxonomy_table(),
        images_per_class=4,
        image_size=48,
        classes=6,
        classes_file=CUB_CLASSES,
        workers=1,
    )
    assert (root / "classes.txt").read_bytes() == CUB_CLASSES.read_bytes()
    assert not (root / "hierarchy.txt").exists()
    images = (root / "images.txt").read_text().splitlines()
    assert [line.split()[0] for line in images] == [str(i) for i in range(1, 25)]
    pattern = re.compile(r"^\d+ (\d{3})\.([A-Za-z_]+)/\2_\d{4}\.jpg$")
    assert all(pattern.match(line) for line in images)
    boxes = (root / "bounding_boxes.txt").read_text().splitlines()
    assert all(re.fullmatch(r"\d+( \d+\.\d){4}", line) for line in boxes)
    frame = read_cub(root)
    assert frame["class_id"].nunique() == 6
    assert (
        frame.groupby("class_id")["is_train"].agg(["sum", "size"]).values.tolist() == [[2, 4]] * 6
    )
    for row in frame.itertuples():
        image = Image.open(root / "images" / row.path)
        assert image.format == "JPEG" and image.size == (48, 48)
        assert "exif" not in image.info and not image.getexif()
        assert row.bbox_w >= 8 and row.bbox_h >= 8
        assert row.bbox_x + row.bbox_w <= 48 and row.bbox_y + row.bbox_h <= 48


def test_nabirds_demo_ships_the_real_tree_with_555_leaves_404_parents_22_supergroups(
    tmp_path: Path,
):
    root = _nabirds(tmp_path / "nabirds")
    assert (root / "classes.txt").read_bytes() == NABIRDS_CLASSES.read_bytes()
    assert (root / "hierarchy.txt").read_bytes() == NABIRDS_HIERARCHY.read_bytes()
    assert len(read_classes(root / "classes.txt")) == 1011
    taxonomy = nabirds_taxonomy_table(root / "classes.txt", root / "hierarchy.txt")
    assert len(taxonomy) == 555
    assert taxonomy["middle_id"].nunique() == 404
    assert taxonomy["high"].nunique() == 22
    frame = read_nabirds(root)
    assert len(frame) == 12 and set(frame["class_id"]) <= set(taxonomy["class_id"])
    ids = [nabirds_image_id(0, c, k) for c in sorted(set(frame["class_id"])) for k in (0, 1)]
    assert sorted(ids) == frame["image_id"].tolist()
    boxes = (root / "bounding_boxes.txt").read_text().splitlines()
    assert all(re.fullmatch(r"[0-9a-f-]{36}( \d+){4}", line) for line in boxes)


def test_selection_is_hierarchy_rich_deterministic_and_sorted():
    taxonomy = nabirds_taxonomy_table()
    chosen = select_demo_classes(taxonomy, 16, seed=0)
    assert chosen == sorted(chosen) and len(chosen) == 16
    assert chosen == select_demo_classes(taxonomy.sample(frac=1.0, random_state=3), 16, seed=0)
    picked = taxonomy[taxonomy["class_id"].isin(chosen)]
    middles_per_high = picked.groupby("high")["middle"].nunique()
    leaves_per_middle = picked.groupby("middle")["leaf"].nunique()
    assert len(middles_per_high) >= 2
    assert (middles_per_high >= 2).all() and (leaves_per_middle >= 2).all()
    assert select_demo_classes(taxonomy, 16, seed=1) != chosen
    assert len(select_demo_classes(taxonomy, 555, seed=0)) == 555
    with pytest.raises(ValueError, match="cannot select 556 demo classes from a taxonomy of 555"):
        select_demo_classes(taxonomy, 556, seed=0)


def test_a_class_looks_the_same_in_every_subset(tmp_path: Path):
    taxonomy = nabirds_taxonomy_table()
    a = _hashes(_nabirds(tmp_path / "a" / "n", taxonomy.iloc[:3], classes=None))
    b = _hashes(_nabirds(tmp_path / "b" / "n", taxonomy.iloc[:7], classes=None))
    shared = [k for k in a if k.startswith("images/")]
    assert len(shared) == 6 and all(a[k] == b[k] for k in shared)
    look = class_look(0, "Leaf A", "Middle A", "High A")
    assert look == class_look(0, "Leaf A", "Middle A", "High A")
    assert look != class_look(1, "Leaf A", "Middle A", "High A")


def test_bad_arguments_are_refused_with_a_reason(tmp_path: Path):
    taxonomy = nabirds_taxonomy_table()
    with pytest.raises(ValueError, match=r"taxonomy lacks column\(s\) \['middle'\]"):
        _write_with(tmp_path / "a", taxonomy.drop(columns="middle"))
    unknown = pd.concat([taxonomy, taxonomy.iloc[[0]].assign(class_id=4321, leaf="New")])
    with pytest.raises(ValueError, match=r"taxonomy class id\(s\) \[4321\] are not in the classes"):
        _write_with(tmp_path / "b", unknown)
    split = taxonomy.copy()
    split.loc[split.index[0], "high"] = "Elsewhere"
    with pytest.raises(ValueError, match=r"taxonomy middle .* lies in 2 highs"):
        _write_with(tmp_path / "c", split)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="already exists and is not empty; remove it first"):
        _write_with(tmp_path / "d", taxonomy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no half-written folders


def _write_with(root: Path, taxonomy: pd.DataFrame) -> Path:
    return _nabirds(root, taxonomy, images_per_class=1, classes=2)


def _descriptor(image: Image.Image, box: tuple[float, float, float, float]) -> np.ndarray:
    """The bird's box at 8x8 colour, plus its mirror image (pose flips cancel out)."""
    x, y, w, h = box
    crop = image.convert("RGB").crop((x, y, x + w, y + h)).resize((8, 8), Image.Resampling.BOX)
    pixels = np.asarray(crop, dtype=np.float64)
    return (pixels + pixels[:, ::-1]).ravel()


def test_appearance_follows_the_hierarchy(tmp_path: Path):
    """Mean descriptor distance: same leaf < same middle < same high < different high."""
    taxonomy = nabirds_taxonomy_table()
    root = _nabirds(tmp_path / "nabirds", classes=32, images_per_class=8, image_size=64, workers=2)
    frame = read_nabirds(root).merge(taxonomy, on="class_id")
    features = np.stack(
        [
            _descriptor(
                Image.open(root / "images" / row.path),
                (row.bbox_x, row.bbox_y, row.bbox_w, row.bbox_h),
            )
            for row in frame.itertuples()
        ]
    )
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    distances = np.linalg.norm(features[:, None] - features[None], axis=-1)
    same = {
        level: np.equal.outer(frame[level].to_numpy(object), frame[level].to_numpy(object))
        for level in ("leaf", "middle", "high")
    }
    relations = {
        "same leaf": same["leaf"] & ~np.eye(len(frame), dtype=bool),
        "same middle, other leaf": same["middle"] & ~same["leaf"],
        "same high, other middle": same["high"] & ~same["middle"],
        "other high": ~same["high"],
    }
    means = {name: float(distances[mask].mean()) for name, mask in relations.items()}
    logger.info("mean descriptor distances: %s", means)
    print("mean descriptor distances:", {k: round(v, 4) for k, v in means.items()})
    values = list(means.values())
    assert values == sorted(values) and len(set(values)) == 4


def test_some_middles_converge_and_some_leaves_stand_apart_within_their_middle():
    """Leaf look alone must not give the hierarchy away: look-alikes across groups exist."""
    taxonomy = nabirds_taxonomy_table()
    backs = {
        row.class_id: class_look(0, row.leaf, row.middle, row.high).colours["back"]
        for row in taxonomy.itertuples()
    }
    taxonomy["back"] = taxonomy["class_id"].map(backs)
    middles_per_back = taxonomy.groupby("back")["middle"].nunique()
    highs_per_back = taxonomy.groupby("back")["high"].nunique()
    backs_per_middle = taxonomy.groupby("middle")["back"].nunique()
    assert (middles_per_back > 1).sum() >= 3  # convergent palettes across middles
    assert (highs_per_back > 1).sum() >= 3  # ... and across highs
    assert (backs_per_middle > 1).sum() >= 20  # strongly recoloured leaves within a middle


def test_table_demo_is_a_valid_table_dataset_and_byte_identical_on_rerun(tmp_path: Path):
    from hierbench.data.table_reader import read_table_dataset, read_taxonomy_csv
    from hierbench.demo import write_table_demo

    taxonomy = read_taxonomy_csv(RESOURCES / "example_collection_taxonomy.csv")
    options = {"images_per_class": 3, "image_size": 32, "seed": 0, "workers": 1}
    first = write_table_demo(tmp_path / "a", taxonomy, **options)
    assert _hashes(first) == _hashes(write_table_demo(tmp_path / "b", taxonomy, **options))
    dataset = read_table_dataset(first)
    assert dataset.has_split and dataset.has_boxes
    assert len(dataset.images) == 36 * 3 and dataset.images["is_train"].sum() == 36 * 2
    pd.testing.assert_frame_equal(dataset.taxonomy, taxonomy)
    assert dataset.images["path"].str.match(r"^photos/[A-Z][a-z]+/[A-Za-z_]+_\d{3}\.jpg$").all()
    with Image.open(first / dataset.images["path"].iloc[0]) as image:
        assert image.size == (32, 32)
    boxes = dataset.images[["bbox_x", "bbox_y", "bbox_w", "bbox_h"]]
    assert (boxes["bbox_w"] > 0).all() and (boxes["bbox_x"] + boxes["bbox_w"] <= 32).all()
