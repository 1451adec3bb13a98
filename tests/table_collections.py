"""A small table dataset folder (the ``kind: table`` layout) that tests write and read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from hierbench.data.table_reader import IMAGES_FILE, TAXONOMY_FILE, read_taxonomy_csv
from hierbench.demo import write_table_demo
from hierbench.shipped import shipped_file

TAXONOMY = """class,middle,high
wren,wrens,songbirds
robin,thrushes,songbirds
blackbird,thrushes,songbirds
gull,gulls,seabirds
tern,terns,seabirds
"""
# Lengths differ so that image_sort_key (shortlex) differs from the file's order.
IMAGES = """path,class,split,x,y,w,h
gull/1.jpg,gull,test,1,2,3,4
a/10.jpg,robin,train,0,0,5.5,6
z.jpg,wren,train,2.5,0,1,1
a/9.jpg,blackbird,test,0,3,2,2
tern.jpg,tern,train,1,1,2,2
"""
PLAIN_IMAGES = "path,class\ngull/1.jpg,gull\na/10.jpg,robin\n"
FILES = ("gull/1.jpg", "a/10.jpg", "z.jpg", "a/9.jpg", "tern.jpg")


def table_dataset_folder(
    root: Path,
    images: str = IMAGES,
    taxonomy: str = TAXONOMY,
    files: tuple[str, ...] = FILES,
) -> Path:
    """Write a table dataset folder: the two CSV files and tiny stand-in image files."""
    root.mkdir(parents=True, exist_ok=True)
    (root / IMAGES_FILE).write_text(images, encoding="utf-8")
    (root / TAXONOMY_FILE).write_text(taxonomy, encoding="utf-8")
    for relpath in files:
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_bytes(b"x")
    return root


def tiny_cub_folder(root: Path) -> Path:
    """The smallest CUB_200_2011 folder read_cub accepts: two classes, one image each."""
    root.mkdir(parents=True)
    texts = {
        "classes.txt": "1 001.A\n2 002.B\n",
        "images.txt": "1 001.A/a.jpg\n2 002.B/b.jpg\n",
        "image_class_labels.txt": "1 1\n2 2\n",
        "train_test_split.txt": "1 1\n2 0\n",
        "bounding_boxes.txt": "1 0 0 1 1\n2 0 0 1 1\n",
    }
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
    for relpath in ("001.A/a.jpg", "002.B/b.jpg"):
        (root / "images" / relpath).parent.mkdir(parents=True)
        (root / "images" / relpath).write_bytes(b"x")
    return root


def example_collection_tree(root: Path, classes: int = 12, images_per_class: int = 6) -> Path:
    """The embedded example collection laid out as a tree ``root/<high>/<middle>/<class>/``
    (what ``hierbench init-dataset`` reads), rendered by the demo's own code."""
    rendered = root.with_name(f".{root.name}-rendered")
    taxonomy = read_taxonomy_csv(shipped_file("example_collection_taxonomy.csv"))
    write_table_demo(
        rendered, taxonomy, images_per_class=images_per_class, image_size=64, classes=classes
    )
    groups = pd.read_csv(rendered / TAXONOMY_FILE).set_index("class")
    for path, name in pd.read_csv(rendered / IMAGES_FILE)[["path", "class"]].itertuples(
        index=False
    ):
        target = root / groups.loc[name, "high"] / groups.loc[name, "middle"] / name
        target.mkdir(parents=True, exist_ok=True)
        (rendered / path).rename(target / Path(path).name)
    shutil.rmtree(rendered)
    return root


def example_lineage_folder(root: Path, classes: int = 12, images_per_class: int = 6) -> Path:
    """The embedded example collection in the layout of the example dataset kind
    (examples/lineage.py): one ``labels.csv`` (file, species, genus, family, split) beside the
    images (with the split and the boxes), rendered by the demo's own code."""
    taxonomy = read_taxonomy_csv(shipped_file("example_collection_taxonomy.csv"))
    write_table_demo(
        root, taxonomy, images_per_class=images_per_class, image_size=64, classes=classes
    )
    groups = pd.read_csv(root / TAXONOMY_FILE)
    images = pd.read_csv(root / IMAGES_FILE)
    labels = images.merge(groups, on="class").rename(
        columns={"path": "file", "class": "species", "middle": "genus", "high": "family"}
    )
    columns = ["file", "species", "genus", "family", "split", "x", "y", "w", "h"]
    labels[columns].sort_values("file").to_csv(root / "labels.csv", index=False)
    (root / IMAGES_FILE).unlink()
    (root / TAXONOMY_FILE).unlink()
    return root
