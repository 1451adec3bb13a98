"""Runs side by side (#24): each config writes into its own folder, and `hierbench compare`
tells what differs between two runs and why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import TINY, TINY_RUN, TINY_SEEDS, scheduled_rules, snakemake

HIERBENCH = str(Path(sys.executable).with_name("hierbench"))
OTHER_RUN = "runs/tiny-other"


def _config_with(repo: Path, name: str, **changes: object) -> list[str]:
    """A copy of the tiny config with top-level or ``training.*`` keys changed."""
    config = yaml.safe_load((repo / "configs/tiny.yaml").read_text())
    for key, value in changes.items():
        if key.startswith("training_"):
            config["training"][key.removeprefix("training_")] = value
        else:
            config[key] = value
    (repo / f"configs/{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return ["--configfile", f"configs/{name}.yaml"]


def _hierbench(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HIERBENCH, *args], cwd=repo, capture_output=True, text=True, check=False)


def test_a_second_config_plans_its_run_in_its_own_folder(built_repo: Path):
    """Another config's run goes to its own folder and leaves the tiny run untouched."""
    other = _config_with(built_repo, "other", run=OTHER_RUN)
    planned = snakemake(built_repo, "-n", *other).stdout
    outputs = [line.split(":", 1)[1].strip() for line in planned.splitlines() if "output:" in line]
    assert outputs and all(path.startswith(f"{OTHER_RUN}/") for path in outputs)
    logs = [line.split(":", 1)[1].strip() for line in planned.splitlines() if " log:" in line]
    assert logs and all(path.startswith(f"{OTHER_RUN}/logs/") for path in logs)
    assert scheduled_rules(built_repo, *TINY) == {}  # the tiny run is still complete


def test_compare_names_the_changed_training_key_as_the_first_difference(
    built_repo: Path, tmp_path: Path
):
    """Run B: a copy of the tiny run in which the E_R cells (and so their factorial bundles,
    and the tuning runs their S cells read) were retrained at another lr."""
    second = tmp_path / "second"
    shutil.copytree(built_repo, second, symlinks=True)
    changed = _config_with(second, "tiny", training_lr=6.0e-5)
    cells = [
        f"{TINY_RUN}/{dataset}/cells/ER-{seed}/model.safetensors"
        for dataset in ("cub", "nabirds")
        for seed in TINY_SEEDS
    ]
    snakemake(second, *cells, *changed)
    result = _hierbench(built_repo, "compare", TINY_RUN, str(second / TINY_RUN), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert not report["identical"]
    (cause,) = [group for group in report["causes"] if group["rule"] == "train_factorial"]
    assert [(c["key"], c["old"], c["new"]) for c in cause["changes"]] == [
        ("config.training.lr", "5e-05", "6e-05")
    ]
    # the E_R cells train in their dataset's factorial bundle: the whole bundle retrained
    retrained = {
        f"{dataset}/cells/{folder}"
        for dataset in ("cub", "nabirds")
        for folder in ["bundles", *(f"{g}{x}-{s}" for g in "EH" for x in "RS" for s in TINY_SEEDS)]
    }
    assert {str(Path(artifact).parent) for artifact in cause["artifacts"]} == retrained
    # a factorial bundle holds S cells: it reads the tuning selection, whose runs train at lr
    assert {group["rule"] for group in report["causes"]} == {"train_factorial", "tune"}
    identical = {stage["stage"] for stage in report["stages"] if stage["identical"]}
    for dataset in ("cub", "nabirds"):
        assert {f"{dataset}/taxonomy", f"{dataset}/splits", f"{dataset}/features"} <= identical
    markdown = _hierbench(built_repo, "compare", TINY_RUN, str(second / TINY_RUN)).stdout
    assert "config.training.lr" in markdown and "5e-05 → 6e-05" in markdown


def test_a_run_on_a_scratch_disk_is_audited_and_followed_from_any_folder(
    repo_copy: Path, tmp_path: Path
):
    """``run:`` may be an absolute folder outside the repository: its logs are inside it, and
    they name the repository, so `audit` and `status` work on it from anywhere."""
    scratch = (tmp_path / "scratch/tiny").resolve()
    config = _config_with(repo_copy, "scratch", run=str(scratch))
    staged = f"{scratch}/nabirds/inputs/hierarchy.txt"
    snakemake(repo_copy, staged, *config)  # the target first: --configfile takes several
    assert (scratch / "logs/nabirds/inputs/hierarchy.txt.log").is_file()
    assert (scratch / "logs/repository.txt").read_text().strip() == str(repo_copy.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    audit = _hierbench(elsewhere, "audit", str(scratch))
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.splitlines()[-1] == "1 artifacts verified, 0 failed"
    status = _hierbench(elsewhere, "status", str(scratch))
    assert status.returncode == 0, status.stderr
    named = repo_copy.resolve() / "configs/scratch.yaml"  # as it opens from elsewhere
    assert status.stdout.startswith(f"{scratch} ({named}): 1 jobs done, ")
