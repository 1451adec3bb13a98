"""SHA256s of the bird datasets' data-level artifacts of a tiny run (taxonomy, inputs, the
rendered demo folder, image table, splits): what making datasets configurable must not change.

``tests/fixtures/tiny_bird_artifacts.json`` holds them as the tiny run made them before datasets
became config entries; ``test_pipeline_stages`` compares a fresh tiny run against it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from conftest import TINY_RUN

DATA_FOLDERS = ("inputs", "taxonomy", "data", "splits")
LAYOUTS = {"cub": "CUB_200_2011", "nabirds": "nabirds"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _folder_digest(folder: Path) -> str:
    """One SHA256 over every file of a folder: its relative paths and their SHA256s, sorted."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    lines = [f"{p.relative_to(folder).as_posix()} {_sha256(p)}" for p in files]
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


def bird_artifact_hashes(repo: Path) -> dict[str, str]:
    """Path in the run folder -> SHA256 of each bird dataset's data-level artifact (records
    excluded); keyed inside the run so that moving the run folder changes no key."""
    hashes = {}
    run = repo / TINY_RUN
    for dataset, layout in LAYOUTS.items():
        base = run / dataset
        for folder in DATA_FOLDERS:
            for path in sorted((base / folder).rglob("*")):
                if path.is_file() and not path.name.endswith(".prov.json") and path.name[0] != ".":
                    hashes[path.relative_to(run).as_posix()] = _sha256(path)
        demo = base / "demo" / layout
        hashes[demo.relative_to(run).as_posix() + "/"] = _folder_digest(demo)
    return hashes
