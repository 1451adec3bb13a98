"""The data stage in the pipeline: the demo in the real layouts, read by the real readers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from conftest import TINY, TINY_RUN, snakemake

from hierbench.data.layouts import CUB_FILES, NABIRDS_FILES
from hierbench.provenance.artifacts import read_provenance
from hierbench.provenance.hashing import sha256_file, sha256_tree


def test_demo_folders_have_the_real_layouts_and_records(built_repo: Path):
    for dataset, folder, files in (
        ("cub", "CUB_200_2011", CUB_FILES),
        ("nabirds", "nabirds", NABIRDS_FILES),
    ):
        root = built_repo / f"{TINY_RUN}/{dataset}/demo/{folder}"
        assert all((root / name).is_file() for name in files)
        assert (root / "images").is_dir()
        record = read_provenance(root)
        assert record["sha256"] == sha256_tree(root)
        assert record["rule"] == f"demo_{dataset}"
    cub_classes = built_repo / f"{TINY_RUN}/cub/demo/CUB_200_2011/classes.txt"
    assert cub_classes.read_bytes() == (built_repo / "resources/cub_classes.txt").read_bytes()


def test_image_tables_cover_the_rendered_images(built_repo: Path):
    cub = pd.read_parquet(built_repo / f"{TINY_RUN}/cub/data/images.parquet")
    assert len(cub) == 24 * 6 and cub["class_id"].nunique() == 24
    assert cub["is_train"].sum() == 24 * 3
    nabirds = pd.read_parquet(built_repo / f"{TINY_RUN}/nabirds/data/images.parquet")
    assert len(nabirds) == 48 * 6
    record = read_provenance(built_repo / f"{TINY_RUN}/nabirds/data/images.parquet")
    assert record["facts"]["images"] == 48 * 6
    # The image table reads the folder through its content: the layout's tables, hashed.
    layout = f"{TINY_RUN}/nabirds/data/layout_files.parquet"
    assert record["inputs"] == {layout: sha256_file(built_repo / layout)}
    demo = f"{TINY_RUN}/nabirds/demo/nabirds"  # a rendered demo is its fingerprints' input
    assert read_provenance(built_repo / layout)["inputs"] == {demo: sha256_tree(built_repo / demo)}


def _folder_config(repo: Path, root: Path) -> Path:
    """A copy of the tiny config that reads CUB from a real folder and skips NABirds."""
    text = (repo / "configs/tiny.yaml").read_text()
    text = text.replace(
        "  cub:\n    source: demo\n", f"  cub:\n    source: folder\n    root: {root}\n"
    )
    text = text.replace(
        "  nabirds:\n    source: demo\n", "  nabirds:\n    enabled: false\n    source: demo\n"
    )
    path = repo / "configs/folder.yaml"
    path.write_text(text)
    return path


def test_a_real_dataset_folder_runs_through_the_same_rules(built_repo: Path, tmp_path: Path):
    real = tmp_path / "data/CUB_200_2011"
    shutil.copytree(built_repo / f"{TINY_RUN}/cub/demo/CUB_200_2011", real)
    (real / ".snakemake_timestamp").unlink(missing_ok=True)
    config = _folder_config(built_repo, real)
    shutil.rmtree(built_repo / f"{TINY_RUN}/cub/data")
    snakemake(built_repo, f"{TINY_RUN}/cub/data/images.parquet", "--configfile", str(config))
    table = pd.read_parquet(built_repo / f"{TINY_RUN}/cub/data/images.parquet")
    assert len(table) == 24 * 6
    layout = f"{TINY_RUN}/cub/data/layout_files.parquet"
    assert read_provenance(built_repo / f"{TINY_RUN}/cub/data/images.parquet")["inputs"] == {
        layout: sha256_file(built_repo / layout)
    }
    assert read_provenance(built_repo / layout)["inputs"] == {}  # a real folder is no input
    hashed = pd.read_parquet(built_repo / layout).set_index("path")["sha256"]
    assert hashed["images.txt"] == sha256_file(real / "images.txt")


def test_a_broken_dataset_folder_fails_naming_file_and_line(built_repo: Path, tmp_path: Path):
    real = tmp_path / "data/CUB_200_2011"
    shutil.copytree(built_repo / f"{TINY_RUN}/cub/demo/CUB_200_2011", real)
    labels = real / "image_class_labels.txt"
    lines = labels.read_text().splitlines()
    lines[2] = lines[2].split()[0] + " 999"
    labels.write_text("\n".join(lines) + "\n")
    config = _folder_config(built_repo, real)
    target = f"{TINY_RUN}/cub/data/images.parquet"
    result = snakemake(built_repo, target, "-f", "--configfile", str(config), check=False)
    assert result.returncode != 0
    assert "image_class_labels.txt:3: class id 999" in result.stdout
    assert not (built_repo / f"{TINY_RUN}/cub/data/images.parquet").exists()


def test_tiny_config_is_what_the_session_fixture_built(built_repo: Path):
    assert TINY == ("--configfile", "configs/tiny.yaml")
    assert (built_repo / f"{TINY_RUN}/cub/splits/manifest.parquet").is_file()
