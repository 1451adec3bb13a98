"""A newcomer's mistakes, on their own path (issue #62): the installed wheel, a project under a
folder whose name holds a space, every command typed in another folder. What hierbench can
check before Snakemake starts ends in one line naming the config's key or file (exit 2,
nothing written); a job that fails shows its own error on the terminal; a plugin file is
found from the config's folder, and a missing one is named in that folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from installed import Newcomer

pytestmark = pytest.mark.slow

# The image the corrupt collection breaks (one of the features job's images).
BROKEN_IMAGE = "family_1/genus_10/species_101/3.jpg"


def edit_config(config: Path, **keys: Any) -> dict[str, Any]:
    """Set top-level ``keys`` of a project's config (its comments are dropped); the config."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data.update(keys)
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return data


def dataset_of(config: Path) -> str:
    """The name of the one collection ``init-dataset`` wrote into the config."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    (name,) = [name for name, block in data["datasets"].items() if block.get("kind") == "table"]
    return name


def tree(folder: Path) -> set[str]:
    """Every path under ``folder``, links not followed (a project's images/ links its photos)."""
    found = set()
    for top, folders, files in os.walk(folder):
        found |= {os.path.relpath(os.path.join(top, name), folder) for name in folders + files}
    return found


def one_error_line(stderr: str) -> str:
    """The single ``hierbench: error:`` line a user error ends in (an assertion otherwise)."""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hierbench: error: "), stderr
    assert "Traceback" not in stderr and "Snakefile" not in stderr, stderr
    return lines[0]


def test_a_missing_dataset_folder_stops_the_run_before_snakemake_in_one_line(
    newcomer: Newcomer,
):
    config = newcomer.project("missing folder", "--smoke")
    name = dataset_of(config)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["datasets"][name]["root"] = "photos not here"
    edit_config(config, datasets=data["datasets"])
    before, before_elsewhere = tree(config.parent), tree(newcomer.elsewhere)

    ran = newcomer.hierbench("run", str(config), "--cores", "2")

    assert ran.returncode == 2, ran.stderr + ran.stdout
    line = one_error_line(ran.stderr)
    assert f"{config}: " in line and f"datasets.{name}.root: folder " in line
    assert f"'{config.parent / 'photos not here'}' does not exist" in line
    assert tree(config.parent) == before and not (config.parent / "runs").exists()
    assert tree(newcomer.elsewhere) == before_elsewhere


def test_a_corrupt_image_is_named_on_the_terminal_when_its_job_fails(newcomer: Newcomer):
    photos = newcomer.home / "photos with a corrupt one"
    shutil.copytree(newcomer.photos, photos)
    (photos / BROKEN_IMAGE).write_bytes(b"not a JPEG at all")
    out = newcomer.home / "corrupt image"
    made = newcomer.hierbench("init-dataset", str(photos), "--out", str(out), "--smoke")
    assert made.returncode == 0, made.stderr + made.stdout
    name = dataset_of(out / "config.yaml")
    features = f"runs/{name}/{name}/features/backbone/images.parquet"  # the first image reader

    ran = newcomer.hierbench("run", str(out / "config.yaml"), "--cores", "2", "--", features)

    assert ran.returncode == 1, ran.stderr + ran.stdout
    assert "message: None" not in ran.stderr
    assert "Error in rule backbone_features:" in ran.stderr
    assert f"cannot read image 'images/{BROKEN_IMAGE}'" in ran.stderr, ran.stderr
    assert "UnidentifiedImageError" in ran.stderr
    log = out / f"runs/{name}/logs/{name}/features/backbone/images.parquet.log"
    assert f"  log: '{log}'" in ran.stderr.splitlines()
    assert ran.stderr.splitlines()[-1].startswith("failed: the full log is ")


def test_a_plugin_file_is_found_from_the_configs_folder_and_named_there(newcomer: Newcomer):
    config = newcomer.project("own loss", "--smoke")
    plugin = "my losses/triplet.py"
    edit_config(
        config,
        factorial={"losses": ["R", "S", "T"]},
        plugins={"objectives": {"T": f"{plugin}:OBJECTIVE"}},
    )

    missing = newcomer.hierbench("run", str(config), "--cores", "2")

    assert missing.returncode == 2, missing.stderr + missing.stdout
    line = one_error_line(missing.stderr)
    assert f"plugins.objectives.T: no file triplet.py in {config.parent / 'my losses'}" in line
    assert str(newcomer.elsewhere) not in line
    assert not (config.parent / "runs").exists()

    (config.parent / plugin).parent.mkdir()
    (config.parent / plugin).write_text("OBJECTIVE = None  # planned, never run here\n")
    planned = newcomer.hierbench("run", str(config), "--cores", "2", "--", "--dry-run")

    assert planned.returncode == 0, planned.stderr + planned.stdout
    resolved = yaml.safe_load(
        (config.parent / f"runs/{dataset_of(config)}/logs/config.yaml").read_text("utf-8")
    )
    assert resolved["plugins"]["objectives"]["T"] == f"{config.parent / plugin}:OBJECTIVE"
