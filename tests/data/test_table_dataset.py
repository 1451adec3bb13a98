"""The ``kind: table`` reader: the checked tables on a valid folder, one error per kind of flaw."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from table_collections import FILES, IMAGES, PLAIN_IMAGES, TAXONOMY, tiny_cub_folder
from table_collections import table_dataset_folder as _dataset

from hierbench.data.layouts import COLUMNS, DatasetFormatError, read_cub
from hierbench.data.table_reader import (
    IMAGES_FILE,
    TAXONOMY_FILE,
    TableDataset,
    TableDatasetError,
    level_counts,
    read_table_dataset,
    read_table_images,
)


def _fails(root: Path, *fragments: str) -> str:
    """Read the folder, expect a TableDatasetError and that its message holds every fragment."""
    with pytest.raises(TableDatasetError) as caught:
        read_table_dataset(root)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- the valid dataset ---------------------------------------------------------------------


def test_valid_dataset_gives_the_documented_tables(tmp_path: Path):
    dataset = read_table_dataset(_dataset(tmp_path / "birds"))
    images, taxonomy = dataset.images, dataset.taxonomy
    assert dataset.has_split and dataset.has_boxes
    assert list(images.columns) == COLUMNS
    ids = ["z.jpg", "a/9.jpg", "a/10.jpg", "tern.jpg", "gull/1.jpg"]  # shortlex order
    assert images["image_id"].tolist() == ids
    assert images["path"].tolist() == images["image_id"].tolist()
    assert images["class_name"].tolist() == ["wren", "blackbird", "robin", "tern", "gull"]
    # classes sorted by name: blackbird 1, gull 2, robin 3, tern 4, wren 5
    assert images["class_id"].tolist() == [5, 1, 3, 4, 2]
    assert images["is_train"].tolist() == [True, False, True, True, False]
    boxes = images[["bbox_x", "bbox_y", "bbox_w", "bbox_h"]].to_numpy().tolist()
    assert boxes == [[2.5, 0, 1, 1], [0, 3, 2, 2], [0, 0, 5.5, 6], [1, 1, 2, 2], [1, 2, 3, 4]]
    assert list(taxonomy.columns) == [
        "class_id",
        "class_name",
        "leaf",
        "middle",
        "high",
        "leaf_code",
        "middle_code",
        "high_code",
    ]
    assert taxonomy["class_id"].tolist() == [1, 2, 3, 4, 5]
    assert taxonomy["class_name"].tolist() == ["blackbird", "gull", "robin", "tern", "wren"]
    assert taxonomy["leaf"].tolist() == taxonomy["class_name"].tolist()
    assert taxonomy["middle"].tolist() == ["thrushes", "gulls", "thrushes", "terns", "wrens"]
    song, sea = "songbirds", "seabirds"
    assert taxonomy["high"].tolist() == [song, sea, song, sea, song]
    assert taxonomy["leaf_code"].tolist() == [0, 1, 2, 3, 4]
    assert taxonomy["middle_code"].tolist() == [2, 0, 2, 1, 3]
    assert taxonomy["high_code"].tolist() == [1, 0, 1, 0, 1]
    assert all(taxonomy[c].dtype == "int64" for c in ("class_id", "leaf_code", "high_code"))


def test_images_dtypes_equal_read_cubs(tmp_path: Path):
    dataset = read_table_dataset(_dataset(tmp_path / "birds"))
    cub = read_cub(tiny_cub_folder(tmp_path / "CUB_200_2011"))
    pd.testing.assert_series_equal(dataset.images.dtypes, cub.dtypes)
    assert str(dataset.images["image_id"].dtype) in ("str", "string", "object")
    assert dataset.images["class_id"].dtype == "int64"
    assert dataset.images["is_train"].dtype == bool
    assert all(dataset.images[c].dtype == "float64" for c in ("bbox_x", "bbox_y"))


def test_level_counts_with_split(tmp_path: Path):
    dataset = read_table_dataset(_dataset(tmp_path / "birds"))
    assert level_counts(dataset) == {
        "images": 5,
        "classes": 5,
        "middle": 4,
        "high": 2,
        "train_images": 3,
        "test_images": 2,
    }


def test_without_split_and_boxes_all_test_and_nan_boxes(tmp_path: Path):
    two = "class,middle,high\ngull,gulls,seabirds\nrobin,thrushes,songbirds\n"
    root = _dataset(tmp_path / "birds", images=PLAIN_IMAGES, taxonomy=two, files=FILES[:2])
    dataset = read_table_dataset(root)
    assert not dataset.has_split and not dataset.has_boxes
    assert not dataset.images["is_train"].any()
    assert dataset.images[["bbox_x", "bbox_y", "bbox_w", "bbox_h"]].isna().all().all()
    assert level_counts(dataset) == {"images": 2, "classes": 2, "middle": 2, "high": 2}


def test_reading_twice_gives_equal_frames(tmp_path: Path):
    root = _dataset(tmp_path / "birds")
    first, second = read_table_dataset(root), read_table_dataset(root)
    pd.testing.assert_frame_equal(first.images, second.images)
    pd.testing.assert_frame_equal(first.taxonomy, second.taxonomy)


def test_reordered_lines_give_equal_frames(tmp_path: Path):
    header, *rows = IMAGES.splitlines()
    theader, *trows = TAXONOMY.splitlines()
    shuffled = _dataset(
        tmp_path / "shuffled",
        images="\n".join([header, *reversed(rows)]) + "\n",
        taxonomy="\n".join([theader, *reversed(trows)]) + "\n",
    )
    original = read_table_dataset(_dataset(tmp_path / "birds"))
    again = read_table_dataset(shuffled)
    pd.testing.assert_frame_equal(original.images, again.images)
    pd.testing.assert_frame_equal(original.taxonomy, again.taxonomy)


def test_blank_lines_bom_and_crlf_are_tolerated(tmp_path: Path):
    root = _dataset(tmp_path / "birds")
    text = "\ufeff" + IMAGES.replace("\n", "\n\n", 2).replace("\n", "\r\n")
    (root / IMAGES_FILE).write_bytes(text.encode("utf-8"))
    pd.testing.assert_frame_equal(
        read_table_dataset(root).images, read_table_dataset(_dataset(tmp_path / "b")).images
    )


def test_dataset_is_frozen(tmp_path: Path):
    dataset = read_table_dataset(_dataset(tmp_path / "birds"))
    assert isinstance(dataset, TableDataset)
    with pytest.raises(AttributeError):
        dataset.has_split = False  # type: ignore[misc]


# --- line numbers ------------------------------------------------------------------------


def test_line_numbers_count_blank_lines(tmp_path: Path):
    images = "path,class\n\n\ngull/1.jpg,gull\n   \na/10.jpg,robin\n\nz.jpg,pigeon\n"
    root = _dataset(tmp_path / "birds", images=images)
    _fails(root, f"{root / IMAGES_FILE}:8:", "'pigeon'")


def test_line_numbers_count_blank_lines_before_the_header(tmp_path: Path):
    taxonomy = "\n class , middle,high \nwren,wrens,songbirds\n\n,,\nrobin,thrushes\n"
    root = _dataset(tmp_path / "birds", taxonomy=taxonomy)
    _fails(root, f"{root / TAXONOMY_FILE}:6: 2 cell(s) where the header has 3")


def test_error_is_a_dataset_format_error(tmp_path: Path):
    with pytest.raises(DatasetFormatError):
        read_table_dataset(tmp_path / "nowhere")


# --- 1: missing folder or files ----------------------------------------------------------


def test_missing_folder(tmp_path: Path):
    _fails(tmp_path / "nowhere", "dataset folder", str(tmp_path / "nowhere"), "does not exist")


@pytest.mark.parametrize("name", [IMAGES_FILE, TAXONOMY_FILE])
def test_missing_csv_file(tmp_path: Path, name: str):
    root = _dataset(tmp_path / "birds")
    (root / name).unlink()
    _fails(root, f"missing file {root / name}")


def test_empty_file_has_no_header(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images="\n\n")
    _fails(root, f"{root / IMAGES_FILE}: file is empty")


def test_not_utf8(tmp_path: Path):
    root = _dataset(tmp_path / "birds")
    (root / TAXONOMY_FILE).write_bytes(TAXONOMY.encode("utf-8") + b"caf\xe9,x,y\n")
    _fails(root, f"{root / TAXONOMY_FILE}: not UTF-8 text")


# --- 2: columns --------------------------------------------------------------------------


def test_missing_required_column(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images="path,split\nz.jpg,train\n")
    _fails(root, f"{root / IMAGES_FILE}:1: missing column 'class'", "expected columns path, class")


def test_unknown_extra_column(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images="path,class,splt\nz.jpg,wren,train\n")
    _fails(
        root,
        f"{root / IMAGES_FILE}:1: unknown column 'splt'",
        "expected columns path, class and optionally split, x, y, w, h",
    )


def test_unknown_taxonomy_column(tmp_path: Path):
    root = _dataset(tmp_path / "birds", taxonomy=TAXONOMY.replace("high\n", "high,order\n", 1))
    _fails(root, f"{root / TAXONOMY_FILE}:1: unknown column 'order'", "class, middle, high")


def test_column_given_twice(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images="path,class,class\nz.jpg,wren,wren\n")
    _fails(root, f"{root / IMAGES_FILE}:1: column 'class' appears twice")


def test_row_with_wrong_number_of_cells(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images=PLAIN_IMAGES + "z.jpg,wren,train\n")
    _fails(root, f"{root / IMAGES_FILE}:4: 3 cell(s) where the header has 2")


# --- 3: empty cells ----------------------------------------------------------------------


def test_empty_required_cell(tmp_path: Path):
    root = _dataset(tmp_path / "birds", taxonomy=TAXONOMY.replace("gull,gulls", "gull, "))
    _fails(root, f"{root / TAXONOMY_FILE}:5: empty cell in column 'middle'")


def test_empty_split_cell(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images=IMAGES.replace("z.jpg,wren,train", "z.jpg,wren,"))
    _fails(root, f"{root / IMAGES_FILE}:4: empty cell in column 'split'")


# --- 4: duplicate paths ------------------------------------------------------------------


def test_duplicate_path(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images=IMAGES + "z.jpg,robin,test,0,0,1,1\n")
    _fails(root, f"{root / IMAGES_FILE}:7: duplicate path 'z.jpg' (lines 4 and 7)")


# --- 5: unknown class --------------------------------------------------------------------


def test_unknown_class(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images=IMAGES.replace("a/9.jpg,blackbird", "a/9.jpg,owl"))
    _fails(
        root,
        f"{root / IMAGES_FILE}:5: unknown class 'owl'",
        f"not listed in {root / TAXONOMY_FILE}",
    )


# --- 6: a class listed twice -------------------------------------------------------------


def test_class_listed_twice(tmp_path: Path):
    root = _dataset(tmp_path / "birds", taxonomy=TAXONOMY + "wren,wrens,songbirds\n")
    _fails(root, f"{root / TAXONOMY_FILE}:7: class 'wren' is listed twice (lines 2 and 7)")


def test_class_in_two_middles(tmp_path: Path):
    root = _dataset(tmp_path / "birds", taxonomy=TAXONOMY + "robin,wrens,songbirds\n")
    _fails(
        root,
        f"{root / TAXONOMY_FILE}:7: class 'robin' sits in middle 'thrushes' (line 3) "
        "and middle 'wrens' (line 7)",
    )


# --- 7: a middle in two highs ------------------------------------------------------------


def test_middle_in_two_highs(tmp_path: Path):
    root = _dataset(tmp_path / "birds", taxonomy=TAXONOMY + "kittiwake,gulls,songbirds\n")
    _fails(
        root,
        f"{root / TAXONOMY_FILE}:7: middle 'gulls' sits in high 'seabirds' (line 5) "
        "and high 'songbirds' (line 7)",
    )


# --- 8: split and box values -------------------------------------------------------------


@pytest.mark.parametrize("value", ["Train", "val", "1"])
def test_bad_split_value(tmp_path: Path, value: str):
    images = IMAGES.replace("a/10.jpg,robin,train", f"a/10.jpg,robin,{value}")
    root = _dataset(tmp_path / "birds", images=images)
    _fails(root, f"{root / IMAGES_FILE}:3: split {value!r} is neither 'train' nor 'test'")


def test_partial_box_columns(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images="path,class,x,y\nz.jpg,wren,0,0\n")
    _fails(root, f"{root / IMAGES_FILE}:1: box columns come all four or none", "lacks w, h")


@pytest.mark.parametrize(
    ("box", "why"),
    [
        ("0,0,one,1", "box value w='one' is not a number"),
        ("0,0,nan,1", "box value w='nan' is not finite"),
        ("0,0,1,0", "box value h='0' must be > 0"),
        ("0,0,-2,1", "box value w='-2' must be > 0"),
        ("-1,0,1,1", "box value x='-1' must be >= 0"),
    ],
)
def test_bad_box_value(tmp_path: Path, box: str, why: str):
    root = _dataset(tmp_path / "birds", images=IMAGES.replace("2.5,0,1,1", box))
    _fails(root, f"{root / IMAGES_FILE}:4: {why}")


# --- 9: images absent from disk ----------------------------------------------------------


def test_image_absent_from_disk(tmp_path: Path):
    root = _dataset(tmp_path / "birds", files=("gull/1.jpg", "a/9.jpg"))
    _fails(
        root,
        f"{root / IMAGES_FILE}:3: image 'a/10.jpg' is listed but absent",
        "(3 listed image(s) absent)",
    )


def test_symbolic_links_to_folders_and_files_are_followed(tmp_path: Path):
    """Images reached through a linked folder or a linked file are present; a link back to a
    folder above does not loop; a broken link is absent."""
    elsewhere = _dataset(tmp_path / "store")  # the real files live here
    root = _dataset(tmp_path / "birds", files=())
    (root / "a").symlink_to(elsewhere / "a", target_is_directory=True)
    (root / "gull").mkdir()
    (root / "gull/1.jpg").symlink_to(elsewhere / "gull/1.jpg")
    for relpath in FILES:
        if not relpath.startswith(("a/", "gull/")):
            (root / relpath).parent.mkdir(parents=True, exist_ok=True)
            (root / relpath).symlink_to(elsewhere / relpath)
    (elsewhere / "a/loop").symlink_to(elsewhere, target_is_directory=True)  # a cycle
    images = read_table_dataset(root).images
    assert len(images) == len(read_table_dataset(elsewhere).images)
    (root / "gull/1.jpg").unlink()
    (root / "gull/1.jpg").symlink_to(tmp_path / "nowhere.jpg")  # broken
    _fails(root, "image 'gull/1.jpg' is listed but absent", "(1 listed")


def test_the_cub_reader_follows_a_linked_images_folder(tmp_path: Path):
    real = tiny_cub_folder(tmp_path / "real")
    linked = tmp_path / "linked"
    linked.mkdir()
    for entry in real.iterdir():  # the text files linked, images/ a folder of linked classes
        if entry.name != "images":
            (linked / entry.name).symlink_to(entry)
    (linked / "images").mkdir()
    for folder in (real / "images").iterdir():
        (linked / "images" / folder.name).symlink_to(folder, target_is_directory=True)
    assert read_cub(linked).equals(read_cub(real))


def test_directory_is_not_an_image(tmp_path: Path):
    root = _dataset(tmp_path / "birds", files=("gull/1.jpg", "a/9.jpg", "a/10.jpg", "tern.jpg"))
    (root / "z.jpg").mkdir()
    _fails(root, f"{root / IMAGES_FILE}:4: image 'z.jpg' is listed but absent", "(1 listed")


# --- 10: absolute paths and '..' ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/etc/z.jpg", "C:/z.jpg"])
def test_absolute_path(tmp_path: Path, path: str):
    root = _dataset(tmp_path / "birds", images=IMAGES.replace("z.jpg,", f"{path},"))
    _fails(root, f"{root / IMAGES_FILE}:4: image path {path!r} is absolute")


def test_path_with_parent_part(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images=IMAGES.replace("z.jpg,", "a/../../z.jpg,"))
    _fails(root, f"{root / IMAGES_FILE}:4: image path 'a/../../z.jpg' has a '..' part")


@pytest.mark.parametrize("path", ["./z.jpg", "a//9.jpg", "a\\9.jpg"])
def test_path_not_in_plain_posix_form(tmp_path: Path, path: str):
    root = _dataset(tmp_path / "birds", images=IMAGES.replace("z.jpg,", f"{path},"))
    _fails(root, f"{root / IMAGES_FILE}:4: image path {path!r} is not a plain POSIX path")


# --- 11: enough groups; classes without images -------------------------------------------


def test_a_class_without_images_is_an_error_naming_its_line(tmp_path: Path):
    images = "".join(line + "\n" for line in IMAGES.splitlines() if "tern" not in line)
    root = _dataset(tmp_path / "birds", images=images)
    _fails(
        root,
        f"{root / TAXONOMY_FILE}:6: class 'tern' has no image in {root / IMAGES_FILE}; add its "
        "images or remove it from the taxonomy",
    )
    without = "".join(line + "\n" for line in images.splitlines() if "gull" not in line)
    root = _dataset(tmp_path / "again", images=without)
    _fails(root, f"{root / TAXONOMY_FILE}:5: class 'gull'", "(and 1 other class(es) without")


def test_single_middle_group(tmp_path: Path):
    taxonomy = "class,middle,high\nwren,birds,songbirds\ngull,birds,songbirds\n"
    root = _dataset(tmp_path / "birds", images="path,class\nz.jpg,wren\n", taxonomy=taxonomy)
    _fails(
        root,
        f"{root / TAXONOMY_FILE}: 1 middle group(s) ['birds']",
        "a three-level study needs at least 2 middle groups",
    )


def test_single_high_group(tmp_path: Path):
    taxonomy = "class,middle,high\nwren,wrens,songbirds\nrobin,thrushes,songbirds\n"
    root = _dataset(tmp_path / "birds", images="path,class\nz.jpg,wren\n", taxonomy=taxonomy)
    _fails(root, "1 high group(s) ['songbirds']", "at least 2 high groups")


def test_taxonomy_without_classes(tmp_path: Path):
    root = _dataset(tmp_path / "birds", taxonomy="class,middle,high\n")
    _fails(root, f"{root / TAXONOMY_FILE}: file lists no classes")


def test_images_without_rows(tmp_path: Path):
    root = _dataset(tmp_path / "birds", images="path,class\n\n")
    assert re.search(r"images\.csv: file lists no images$", _fails(root))


def test_the_taxonomy_csv_alone_gives_the_datasets_taxonomy(tmp_path: Path):
    from hierbench.data.table_reader import read_taxonomy_csv

    shipped = Path(__file__).parents[2] / "resources/example_collection_taxonomy.csv"
    taxonomy = read_taxonomy_csv(shipped)
    assert len(taxonomy) == 36 and taxonomy["middle"].nunique() == 12
    assert taxonomy["high"].nunique() == 6
    assert taxonomy["class_id"].tolist() == list(range(1, 37))
    assert taxonomy["class_name"].is_monotonic_increasing


def test_the_image_table_reads_images_csv_alone(tmp_path: Path):
    """A taxonomy edit (a class moved to another middle; even a class without images added,
    which the dataset refuses) leaves the image table as it was: the features computed from it
    never rerun for one."""
    root = _dataset(tmp_path / "birds")
    before = read_table_images(root)
    pd.testing.assert_frame_equal(before, read_table_dataset(root).images)
    taxonomy = root / TAXONOMY_FILE
    edited = taxonomy.read_text(encoding="utf-8").replace("robin,thrushes", "robin,wrens")
    assert edited != taxonomy.read_text(encoding="utf-8")
    taxonomy.write_text(edited, encoding="utf-8")
    after = read_table_dataset(root)
    pd.testing.assert_frame_equal(before, after.images)
    assert after.taxonomy.set_index("class_name").at["robin", "middle"] == "wrens"
    taxonomy.write_text(edited + "albatross,albatrosses,seabirds\n", encoding="utf-8")
    pd.testing.assert_frame_equal(before, read_table_images(root))
    with pytest.raises(TableDatasetError, match="class 'albatross' has no image"):
        read_table_dataset(root)
    taxonomy.unlink()
    pd.testing.assert_frame_equal(before, read_table_images(root))
