"""The shipped workflow and its default inputs: one copy in the repository, the same layout
inside a built wheel (hierbench/workflow/), which runs in any folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from hierbench import shipped
from hierbench.runs import RunFolderError, check_working_folder
from hierbench.shipped import SHIPPED_FILES, ShippedFileError, shipped_file


@pytest.mark.parametrize("name", sorted(SHIPPED_FILES))
def test_each_shipped_file_is_found_in_the_checkout(name: str, monkeypatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)  # not the repository: nothing may depend on the working folder
    assert shipped_file(name) == REPO / SHIPPED_FILES[name] / name


def _packaged(tmp_path: Path, monkeypatch) -> Path:
    """A fake installed package whose workflow copy holds a Snakefile and one alias file."""
    workflow = tmp_path / "package" / shipped.WORKFLOW_FOLDER
    (workflow / "resources").mkdir(parents=True)
    (workflow / "Snakefile").write_text("# packaged\n")
    (workflow / "resources" / "cub_aliases.json").write_text("{}")
    monkeypatch.setattr(shipped.importlib.resources, "files", lambda package: workflow.parent)
    return workflow


def test_an_installed_packages_workflow_comes_first(monkeypatch, tmp_path: Path):
    workflow = _packaged(tmp_path, monkeypatch)
    assert shipped.workflow_root() == workflow
    assert shipped.is_packaged(workflow) and not shipped.is_packaged(REPO)
    assert shipped_file("cub_aliases.json") == workflow / "resources" / "cub_aliases.json"
    with pytest.raises(ShippedFileError, match=r"cub_classes\.txt is missing from .*resources"):
        shipped_file("cub_classes.txt")  # the package's copy is incomplete: say where


def test_without_a_workflow_the_error_names_both_places(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(shipped.importlib.resources, "files", lambda package: tmp_path)
    monkeypatch.setattr(shipped, "CHECKOUT", tmp_path / "checkout")
    with pytest.raises(ShippedFileError, match=r"neither .*workflow nor .*checkout holds"):
        shipped_file("cub_classes.txt")
    with pytest.raises(KeyError, match="shipped files"):
        shipped_file("nope.txt")


def test_an_installed_package_runs_in_any_folder_a_checkout_in_itself(monkeypatch, tmp_path):
    workflow = _packaged(tmp_path, monkeypatch)
    project = tmp_path / "project"
    check_working_folder(workflow, project)  # nothing to say
    with pytest.raises(RunFolderError, match="run it there"):
        check_working_folder(REPO, project)
    assert shipped.snakefile_arguments(project) == ["--snakefile", str(workflow / "Snakefile")]
    assert shipped.snakefile_arguments(REPO) == []
    assert shipped.rules_folder(project) == workflow / "rules"
    assert shipped.rules_folder(REPO) == REPO / "rules"


def test_shipped_defaults_come_from_the_package_only_outside_a_checkout(tmp_path: Path):
    config = {
        "datasets": {"cub": {"classes": "resources/cub_classes.txt", "root": "birds"}},
        "list": ["resources/cub_aliases.json", "resources/other.txt"],
    }
    assert shipped.shipped_paths(config, REPO, REPO) is config  # a checkout: as recorded
    workflow, project = tmp_path / "workflow", tmp_path / "project"
    assert shipped.shipped_paths(config, workflow, project) == {
        "datasets": {
            "cub": {"classes": str(workflow / "resources/cub_classes.txt"), "root": "birds"}
        },
        "list": [str(workflow / "resources/cub_aliases.json"), "resources/other.txt"],
    }
    assert shipped.workflow_path("schemas/aliases.schema.json", REPO, REPO / "rules/..") == (
        "schemas/aliases.schema.json"
    )
    assert shipped.workflow_path("schemas/aliases.schema.json", workflow, project) == str(
        workflow / "schemas/aliases.schema.json"
    )


def test_the_build_step_copies_the_whole_workflow_into_the_package(tmp_path: Path):
    source = tmp_path / "source"
    source.mkdir()
    for part in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / part, source / part)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    expected = sorted(
        path.relative_to(REPO)
        for pattern in shipped.WORKFLOW_FILES
        for path in REPO.glob(pattern)
        if path.is_file()
    )
    for relative in expected:
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, source / relative)
    build = tmp_path / "build"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)],
        cwd=source,
        check=True,
        capture_output=True,
    )
    workflow = build / "hierbench" / shipped.WORKFLOW_FOLDER
    packaged = sorted(path.relative_to(workflow) for path in workflow.rglob("*") if path.is_file())
    assert packaged == expected
    for relative in expected:
        assert (workflow / relative).read_bytes() == (REPO / relative).read_bytes(), relative
    for name, folder in SHIPPED_FILES.items():
        assert (workflow / folder / name).is_file(), name
    assert {"Snakefile", "rules", "workflow_scripts", "profiles"} <= {p.parts[0] for p in expected}
    assert (build / "hierbench" / "shipped.py").is_file()


def test_the_sdist_manifest_names_every_workflow_file():
    """A wheel built from the sdist (pip's route from an archive) carries the workflow too."""
    manifest = (REPO / "MANIFEST.in").read_text()
    named = {
        word
        for line in manifest.splitlines()
        if line.startswith("include")
        for word in line.split()[1:]
    }
    assert set(shipped.WORKFLOW_FILES) <= named
