"""The pictures stage (hierbench.stages.pictures): its inputs by name in the study's arm order,
and images shown only as the run hashed them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from hierbench.provenance.hashing import sha256_file
from hierbench.stages.pictures import PictureError, PictureInputs, checked_thumbnails


def test_the_inputs_name_each_cell_and_put_the_arms_in_the_study_order():
    named = {
        "lock": "l",
        "sealed_features": "f",
        "sealed_splits": "s",
        "images": "i",
        "image_files": "h",
        "taxonomy": "t",
        "record_hier": "rh",
        "model_hier": "mh",
        "record_L_A": "rl",
        "model_L_A": "ml",
        "record_E_R": "re",
        "model_E_R": "me",
    }
    inputs = PictureInputs.of(named)
    assert list(inputs.cells) == ["E_R", "L_A", "hier"]
    assert inputs.cells["L_A"] == ("rl", "ml") and inputs.lock == "l"


def _folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A dataset folder of two images, its image table and its files' hashes."""
    root = tmp_path / "data"
    (root / "images/a").mkdir(parents=True)
    for name, colour in (("one", (255, 0, 0)), ("two", (0, 0, 255))):
        Image.new("RGB", (30, 20), colour).save(root / f"images/a/{name}.png")
    table = pd.DataFrame({"image_id": ["1", "2"], "path": ["a/one.png", "a/two.png"]})
    table.to_parquet(tmp_path / "images.parquet")
    files = [f"images/{path}" for path in table["path"]]
    hashes = pd.DataFrame({"path": files, "sha256": [sha256_file(root / f) for f in files]})
    hashes.to_parquet(tmp_path / "image_files.parquet")
    return root, tmp_path / "images.parquet", tmp_path / "image_files.parquet"


def test_thumbnails_are_read_once_each_from_the_files_the_run_hashed(tmp_path: Path):
    root, images, files = _folder(tmp_path)
    found = checked_thumbnails(["2", "1", "2"], images, files, root, "images")
    assert sorted(found) == ["1", "2"]
    assert tuple(found["1"][32, 32]) == (255, 0, 0) and tuple(found["2"][32, 32]) == (0, 0, 255)


def test_an_image_changed_since_the_run_hashed_it_is_refused_by_name(tmp_path: Path):
    root, images, files = _folder(tmp_path)
    Image.new("RGB", (30, 20), (0, 255, 0)).save(root / "images/a/two.png")
    with pytest.raises(PictureError, match=r"image 2 .*two.png.*image_fingerprint"):
        checked_thumbnails(["1", "2"], images, files, root, "images")
