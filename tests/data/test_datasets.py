"""CUB and NABirds readers: the checked table, and one specific error per kind of breakage."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import cub_taxonomy_table, nabirds_taxonomy_table

from hierbench.data.layouts import (
    COLUMNS,
    DatasetFormatError,
    image_sort_key,
    read_classes,
    read_cub,
    read_nabirds,
)
from hierbench.demo import write_cub_demo, write_nabirds_demo

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
COLUMNS_OF_TAXONOMY = ["class_id", "class_name", "leaf", "middle", "high"]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def cub_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small CUB demo: 4 classes x 3 images (12 ids, so numeric and string order differ)."""
    root = tmp_path_factory.mktemp("cub") / "CUB_200_2011"
    return write_cub_demo(
        root,
        cub_taxonomy_table(),
        images_per_class=3,
        image_size=32,
        classes=4,
        classes_file=RESOURCES / "cub_classes.txt",
        workers=1,
    )


@pytest.fixture(scope="module")
def nabirds_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small NABirds demo: 4 leaves x 2 images, with the full shipped tree."""
    root = tmp_path_factory.mktemp("nabirds") / "nabirds"
    return write_nabirds_demo(
        root,
        nabirds_taxonomy_table(),
        images_per_class=2,
        image_size=32,
        classes=4,
        classes_file=RESOURCES / "nabirds_classes.txt",
        hierarchy_file=RESOURCES / "nabirds_hierarchy.txt",
        workers=1,
    )


def test_image_sort_key_is_numeric_for_decimal_ids_and_lexicographic_for_uuids():
    assert sorted(["10", "2", "1", "100"], key=image_sort_key) == ["1", "2", "10", "100"]
    assert sorted(["b-2", "a-9", "a-1"], key=image_sort_key) == ["a-1", "a-9", "b-2"]


def test_read_cub_gives_the_documented_table(cub_root: Path):
    frame = read_cub(cub_root)
    assert list(frame.columns) == COLUMNS
    assert frame["image_id"].tolist() == [str(i) for i in range(1, 13)]  # numeric order
    assert str(frame["image_id"].dtype) in ("str", "string", "object")
    assert frame["class_id"].dtype == "int64" and frame["is_train"].dtype == bool
    assert all(frame[c].dtype == "float64" for c in ("bbox_x", "bbox_y", "bbox_w", "bbox_h"))
    names = read_classes(cub_root / "classes.txt")
    assert (frame["class_name"] == frame["class_id"].map(names)).all()
    assert all((cub_root / "images" / p).is_file() for p in frame["path"])
    assert frame.groupby("class_id")["is_train"].sum().tolist() == [2, 2, 2, 2]
    assert ((frame.bbox_x + frame.bbox_w <= 32) & (frame.bbox_y + frame.bbox_h <= 32)).all()


def test_read_nabirds_gives_string_ids_in_lexicographic_order(nabirds_root: Path):
    frame = read_nabirds(nabirds_root)
    assert list(frame.columns) == COLUMNS and len(frame) == 8
    assert all(UUID.match(i) for i in frame["image_id"])
    assert frame["image_id"].tolist() == sorted(frame["image_id"])
    assert frame["is_train"].sum() == 4
    expected = [
        f"{c:04d}/{i.replace('-', '')}.jpg"
        for c, i in zip(frame.class_id, frame.image_id, strict=True)
    ]
    assert frame["path"].tolist() == expected


def _replace_line(name: str, number: int, text: str | None) -> Callable[[Path], None]:
    """A breakage: set (or, with None, drop) the 1-based line ``number`` of file ``name``."""

    def mutate(root: Path) -> None:
        lines = _lines(root / name)
        if text is None:
            del lines[number - 1]
        else:
            lines[number - 1] = text.format(*lines[number - 1].split())
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return mutate


def _append_line(name: str, text: str) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        with open(root / name, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")

    return mutate


def _delete(relative: str) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        target = root / relative
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()

    return mutate


def _copy_id_of_line_1(name: str, number: int) -> Callable[[Path], None]:
    """A breakage: line ``number`` of ``name`` takes the image id of line 1."""

    def mutate(root: Path) -> None:
        lines = _lines(root / name)
        lines[number - 1] = " ".join([lines[0].split()[0], *lines[number - 1].split()[1:]])
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return mutate


def _copy_path_of_line_1(name: str, number: int) -> Callable[[Path], None]:
    """A breakage: line ``number`` of ``name`` takes the image path of line 1."""

    def mutate(root: Path) -> None:
        lines = _lines(root / name)
        lines[number - 1] = " ".join([lines[number - 1].split()[0], lines[0].split()[1]])
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return mutate


def _delete_first_image(root: Path) -> None:
    first = _lines(root / "images.txt")[0].split()[1]
    (root / "images" / first).unlink()


CUB_BREAKAGES = {
    "missing file": (
        _delete("bounding_boxes.txt"),
        r"^missing file bounding_boxes\.txt in dataset folder .*CUB_200_2011$",
    ),
    "missing images folder": (_delete("images"), r"^missing folder images/ in dataset folder "),
    "image absent on disk": (
        _delete_first_image,
        r"images\.txt:1: image '\d{3}\.\w+/\w+_0001\.jpg' \(id '1'\) is listed but absent from "
        r".*images \(1 listed image\(s\) absent\)",
    ),
    "extra id in a per-image file": (
        _append_line("train_test_split.txt", "99 1"),
        r"train_test_split\.txt:13: image id '99' is not in images\.txt \(1 such id\(s\)",
    ),
    "id missing from a per-image file": (
        _replace_line("image_class_labels.txt", 5, None),
        r"image_class_labels\.txt lacks 1 image id\(s\) listed in images\.txt, first '5' "
        r"\(images\.txt line 5\)",
    ),
    "duplicate image id": (
        _replace_line("images.txt", 4, "3 {1}"),
        r"images\.txt:4: duplicate image id '3' \(first on line 3\)",
    ),
    "duplicate image path": (
        _copy_path_of_line_1("images.txt", 2),
        r"images\.txt:2: duplicate image path '.*' \(first on line 1\)",
    ),
    "duplicate class id": (
        _replace_line("classes.txt", 7, "6 {1}"),
        r"classes\.txt:7: duplicate class id 6 \(first on line 6\)",
    ),
    "class id not in classes.txt": (
        _replace_line("image_class_labels.txt", 2, "{0} 201"),
        r"image_class_labels\.txt:2: class id 201 of image '2' is not in classes\.txt",
    ),
    "malformed bbox": (
        _replace_line("bounding_boxes.txt", 3, "{0} 1.0 oops 3.0 4.0"),
        r"bounding_boxes\.txt:3: malformed line, expected '<image_id> <x> <y> <w> <h>' "
        r"\(not a number\): '3 1\.0 oops 3\.0 4\.0'",
    ),
    "bbox with too few fields": (
        _replace_line("bounding_boxes.txt", 6, "{0} 1.0 2.0"),
        r"bounding_boxes\.txt:6: malformed line, expected '<image_id> <x> <y> <w> <h>' "
        r"\(3 fields\)",
    ),
    "non-integer CUB image id": (
        _replace_line("images.txt", 2, "x2 {1}"),
        r"images\.txt:2: malformed line, expected '<image_id> <relative path>' \(image id is not",
    ),
    "split flag not 0 or 1": (
        _replace_line("train_test_split.txt", 8, "{0} 2"),
        r"train_test_split\.txt:8: malformed line, expected '<image_id> <0\|1>' \(flag\)",
    ),
}

NABIRDS_BREAKAGES = {
    "missing hierarchy": (
        _delete("hierarchy.txt"),
        r"^missing file hierarchy\.txt in dataset folder .*nabirds$",
    ),
    "node without a path to the root": (
        _replace_line("hierarchy.txt", 1, None),  # "1 0": Ducks, Geese, and Swans lose the root
        r"hierarchy\.txt: class 1 \('Ducks, Geese, and Swans'\) has no path to the root 0 "
        r"\('Birds'\): its ancestor 1 has no parent line",
    ),
    "cycle in the hierarchy": (
        _replace_line("hierarchy.txt", 1, "1 24"),  # the shipped line 24 is "24 1"
        r"hierarchy\.txt: cycle in the hierarchy: 1 -> 24 -> 1$",
    ),
    "hierarchy node not in classes.txt": (
        _replace_line("hierarchy.txt", 2, "2 5000"),
        r"hierarchy\.txt:2: node id 5000 is not in classes\.txt",
    ),
    "duplicate child in the hierarchy": (
        _replace_line("hierarchy.txt", 3, "2 0"),
        r"hierarchy\.txt:3: duplicate child id 2 \(first on line 2\)",
    ),
    "root with a parent": (
        _append_line("hierarchy.txt", "0 1"),
        r"hierarchy\.txt:1011: the root 0 must not have a parent",
    ),
    "malformed hierarchy line": (
        _replace_line("hierarchy.txt", 4, "{0}"),
        r"hierarchy\.txt:4: malformed line, expected '<child_id> <parent_id>': '4'",
    ),
    "duplicate NABirds image id": (
        _copy_id_of_line_1("bounding_boxes.txt", 2),
        r"bounding_boxes\.txt:2: duplicate image id '[0-9a-f-]{36}' \(first on line 1\)",
    ),
}


def _break(source: Path, tmp_path: Path, mutate: Callable[[Path], None]) -> Path:
    broken = tmp_path / source.name
    shutil.copytree(source, broken)
    mutate(broken)
    return broken


@pytest.mark.parametrize("case", sorted(CUB_BREAKAGES))
def test_each_broken_cub_copy_raises_its_own_message(case: str, cub_root: Path, tmp_path: Path):
    mutate, pattern = CUB_BREAKAGES[case]
    broken = _break(cub_root, tmp_path, mutate)
    with pytest.raises(DatasetFormatError, match=pattern):
        read_cub(broken)


@pytest.mark.parametrize("case", sorted(NABIRDS_BREAKAGES))
def test_each_broken_nabirds_copy_raises_its_own_message(
    case: str, nabirds_root: Path, tmp_path: Path
):
    mutate, pattern = NABIRDS_BREAKAGES[case]
    broken = _break(nabirds_root, tmp_path, mutate)
    with pytest.raises(DatasetFormatError, match=pattern):
        read_nabirds(broken)


def test_breakage_messages_are_pairwise_distinguishable():
    patterns = [p for _, p in [*CUB_BREAKAGES.values(), *NABIRDS_BREAKAGES.values()]]
    assert len(set(patterns)) == len(patterns)


def test_a_missing_dataset_folder_is_named(tmp_path: Path):
    with pytest.raises(DatasetFormatError, match=r"dataset folder .*nowhere does not exist"):
        read_cub(tmp_path / "nowhere")
