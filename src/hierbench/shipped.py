"""The workflow and the default inputs that ship with hierbench, found the same way from any
working folder.

The workflow (Snakefile, rules, workflow scripts, schemas, report captions, profiles, the demo
config) and its default inputs (the CUB and NABirds class lists, the NABirds tree, the demo and
example taxonomies, the CUB alias file) live once, in the repository, where the configs point
at them by relative path; those paths are recorded in artifacts (the match report names the
alias file) and in the config the Final lock hashes, so they stay. A built wheel carries the
same files, in the same layout, under ``hierbench/workflow/`` (setup.py copies them at build
time), so an installed package runs the study with no clone (:func:`workflow_root`).

Standard library only: setup.py reads :data:`WORKFLOW_FILES` from this file at build time.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

# The workflow's files, as globs relative to the repository root (and to the packaged copy).
WORKFLOW_FILES: tuple[str, ...] = (
    "Snakefile",
    "config.yaml",
    "environment.yml",
    "environment.post-deploy.sh",
    "rules/*.smk",
    "workflow_scripts/*.py",
    "schemas/*",
    "resources/*",
    "report/*.rst",
    "profiles/*/config.yaml",
    "requirements.lock",
)
# Each shipped default input by name, with its folder in the workflow.
SHIPPED_FILES: dict[str, str] = {
    "cub_classes.txt": "resources",
    "cub_aliases.json": "resources",
    "cub_demo_taxonomy.csv": "resources",
    "nabirds_classes.txt": "resources",
    "nabirds_hierarchy.txt": "resources",
    "example_collection_taxonomy.csv": "resources",
    "aliases.schema.json": "schemas",
    "config.schema.yaml": "schemas",
    "requirements.lock": ".",  # the exact environment the tests ran in: pip install -r it
}
WORKFLOW_FOLDER = "workflow"  # the workflow's folder inside an installed hierbench
CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root, for a src-layout checkout
SNAKEFILE = "Snakefile"


class ShippedFileError(FileNotFoundError):
    """The workflow is neither in the installed package nor in the checkout."""


def packaged_workflow() -> Path:
    """Where an installed (non-editable) hierbench keeps its copy of the workflow."""
    return Path(str(importlib.resources.files("hierbench").joinpath(WORKFLOW_FOLDER)))


def workflow_root() -> Path:
    """The folder holding the Snakefile and its files: the package's copy first, the checkout
    beside ``src/`` second."""
    for root in (packaged_workflow(), CHECKOUT):
        if (root / SNAKEFILE).is_file():
            return root
    raise ShippedFileError(
        f"the workflow is missing: neither {packaged_workflow()} nor {CHECKOUT} holds a "
        "Snakefile; reinstall hierbench (pip install hierbench-*.whl, or pip install -e CLONE)"
    )


def is_packaged(workflow: str | Path) -> bool:
    """Whether ``workflow`` (a Snakefile's folder) is an installed package's copy, which runs
    in any working folder, rather than a checkout, which runs in itself."""
    return Path(workflow).resolve() == packaged_workflow().resolve()


def snakefile_arguments(working: Path) -> list[str]:
    """What points Snakemake started in ``working`` at the workflow: nothing in a checkout
    (the folder's own Snakefile), else the installed package's Snakefile."""
    if (working / SNAKEFILE).is_file():
        return []
    return ["--snakefile", str(workflow_root() / SNAKEFILE)]


def rules_folder(working: Path) -> Path:
    """The rules of the workflow that runs in ``working``: a checkout's own, else the
    installed package's."""
    return (working if (working / SNAKEFILE).is_file() else workflow_root()) / "rules"


def shipped_file(name: str) -> Path:
    """Path of the shipped file ``name`` (a key of :data:`SHIPPED_FILES`), from any folder."""
    if name not in SHIPPED_FILES:
        raise KeyError(f"no shipped file {name!r}; shipped files: {sorted(SHIPPED_FILES)}")
    path = workflow_root() / SHIPPED_FILES[name] / name
    if not path.is_file():
        raise ShippedFileError(
            f"shipped file {name} is missing from {path.parent}; reinstall hierbench or "
            "restore the file"
        )
    return path


def shipped_paths(config: dict, workflow: str | Path, working: str | Path) -> dict:
    """``config`` with each value naming a shipped file by its relative path (a default such
    as ``resources/cub_classes.txt``) taken from ``workflow``, when the workflow runs outside
    its own folder (an installed package); unchanged in a checkout, where those paths are
    recorded as they are."""
    if Path(workflow).resolve() == Path(working).resolve():
        return config
    relative = {f"{folder}/{name}" for name, folder in SHIPPED_FILES.items()}

    def rewrite(value: object) -> object:
        if isinstance(value, dict):
            return {key: rewrite(item) for key, item in value.items()}
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        if isinstance(value, str) and value in relative:
            return workflow_path(value, workflow, working)
        return value

    return rewrite(config)


def workflow_path(relative: str, workflow: str | Path, working: str | Path) -> str:
    """A file of the workflow as a rule names it: as written in a checkout (its recorded
    form), from the workflow's folder when it runs elsewhere (an installed package)."""
    if Path(workflow).resolve() == Path(working).resolve():
        return relative
    return str(Path(workflow) / relative)
