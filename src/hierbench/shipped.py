"""The default inputs that ship with hierbench, found the same way from any working folder.

The CUB and NABirds class lists, the NABirds tree, the example collection's taxonomy, the CUB
alias file, and the schemas of the
alias file and the config live once, in the repository (``resources/`` and ``schemas/``), where
the pipeline's config points at them by relative path; those paths are recorded in artifacts
(the match report names the alias file) and in the config the Final lock hashes, so they stay.
A built wheel carries the same files as package data under ``hierbench/data/`` (setup.py copies
them at build time). :func:`shipped_file` finds a file in the package data first and in the
checkout beside ``src/`` second, so the `hierbench` command's defaults work from any folder.

Standard library only: setup.py reads :data:`SHIPPED_FILES` from this file at build time.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

# Each shipped file by name, with its folder in the repository.
SHIPPED_FILES: dict[str, str] = {
    "cub_classes.txt": "resources",
    "cub_aliases.json": "resources",
    "nabirds_classes.txt": "resources",
    "nabirds_hierarchy.txt": "resources",
    "example_collection_taxonomy.csv": "resources",
    "aliases.schema.json": "schemas",
    "config.schema.yaml": "schemas",
}
DATA_FOLDER = "data"  # the package-data folder inside an installed hierbench
CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root, for a src-layout checkout


class ShippedFileError(FileNotFoundError):
    """A shipped default file is neither in the installed package nor in the checkout."""


def shipped_file(name: str) -> Path:
    """Path of the shipped file ``name`` (a key of :data:`SHIPPED_FILES`), from any folder."""
    if name not in SHIPPED_FILES:
        raise KeyError(f"no shipped file {name!r}; shipped files: {sorted(SHIPPED_FILES)}")
    packaged = importlib.resources.files("hierbench").joinpath(DATA_FOLDER, name)
    if isinstance(packaged, Path) and packaged.is_file():
        return packaged
    checkout = CHECKOUT / SHIPPED_FILES[name] / name
    if checkout.is_file():
        return checkout
    raise ShippedFileError(
        f"shipped file {name} is missing: neither package data {packaged} nor {checkout} "
        "exists; reinstall hierbench or restore the file"
    )
