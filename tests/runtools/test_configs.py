"""The configs a repository's runs come from (hierbench.runtools.configs): the shipped ones and
any other config file a Snakemake run was started on, and a run folder named as they name it."""

from __future__ import annotations

from pathlib import Path

from hierbench.runtools import launch
from hierbench.runtools.configs import (
    RESOLVED_CONFIG,
    config_files,
    config_name,
    config_run,
    config_runs,
    is_run_copy,
    log_config,
    run_key,
    run_logs,
    shown_path,
)


def _log(repo: Path, name: str, configs: list[str]) -> None:
    """A Snakemake log naming its config files, as Snakemake writes the line."""
    folder = repo / ".snakemake/log"
    folder.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(f"'{config}'" for config in configs)
    (folder / f"{name}.snakemake.log").write_text(f"Config file(s): [{listed}]\nBuilding DAG\n")


def test_a_config_snakemake_ran_is_listed_after_the_shipped_ones(tmp_path: Path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "config.yaml").write_text("datasets: {}\n")
    (tmp_path / "configs/tiny.yaml").write_text("run: runs/tiny\n")
    (tmp_path / "my-tiny-lr.yaml").write_text("run: runs/tiny-lr6\n")
    (tmp_path / "gone.yaml").write_text("run: runs/gone\n")
    _log(tmp_path, "2026-12-01T100000.000000", ["my-tiny-lr.yaml", "overlay.yaml"])
    _log(tmp_path, "2026-12-01T110000.000000", [str(tmp_path / "configs/tiny.yaml")])
    _log(tmp_path, "2026-12-01T120000.000000", ["/elsewhere/outside.yaml"])
    _log(tmp_path, "2026-12-01T130000.000000", ["gone.yaml"])
    (tmp_path / "gone.yaml").unlink()  # a config deleted since: not listed
    assert config_files(tmp_path) == [
        Path("config.yaml"),
        Path("configs/tiny.yaml"),
        Path("my-tiny-lr.yaml"),
    ]
    assert config_runs(tmp_path) == [
        (Path("config.yaml"), "results"),
        (Path("configs/tiny.yaml"), "runs/tiny"),
        (Path("my-tiny-lr.yaml"), "runs/tiny-lr6"),
    ]
    assert log_config("Config file(s): ['/elsewhere/outside.yaml']", tmp_path) == (
        "/elsewhere/outside.yaml"  # outside the repository: named absolutely, listed if it exists
    )
    assert log_config("Building DAG of jobs", tmp_path) is None


def test_a_config_outside_the_repository_that_a_run_used_is_listed_while_it_exists(tmp_path):
    """hierbench run keeps the config of a project folder beside its run's logs; Snakemake's log
    names it, so runs and status find that run."""
    repo, project = tmp_path / "repo", tmp_path / "project"
    (repo / "configs").mkdir(parents=True)
    kept = project / "out/logs/config.yaml"
    kept.parent.mkdir(parents=True)
    kept.write_text(f"run: {project / 'out'}\n")
    _log(repo, "2026-12-01T100000.000000", [str(kept)])
    assert config_files(repo) == [kept]
    assert config_runs(repo) == [(kept, str(project / "out"))]
    kept.unlink()
    assert config_files(repo) == []


def test_a_run_folder_is_named_as_its_config_names_it(tmp_path: Path):
    scratch = tmp_path / "scratch/tiny"
    (tmp_path / "repo/configs").mkdir(parents=True)
    (tmp_path / "repo/configs/scratch.yaml").write_text(f"run: {scratch}\n")
    (tmp_path / "repo/configs/tiny.yaml").write_text("run: runs/tiny\n")
    repo = tmp_path / "repo"
    assert run_key(repo, repo / "runs/../runs/tiny") == "runs/tiny"
    assert run_key(repo, scratch) == str(scratch)
    assert run_key(repo, repo / "runs/other") == "runs/other"  # no config names it
    assert run_key(repo, tmp_path / "x") == str(tmp_path / "x")


def test_a_copy_of_a_repository_keys_its_runs_to_its_own_configs(tmp_path: Path):
    """A copied repository inherits Snakemake's logs, which name the original's config by its
    absolute path; that config's relative run folder is the original's, so the copy's
    ``runs/tiny`` has one config, its own (what ``hierbench resume runs/tiny`` needs)."""
    original, copy = tmp_path / "original", tmp_path / "copy"
    for repo in (original, copy):
        (repo / "configs").mkdir(parents=True)
        (repo / "configs/tiny.yaml").write_text("run: runs/tiny\n")
    _log(copy, "2026-12-01T100000.000000", [str(original / "configs/tiny.yaml")])
    assert config_runs(copy) == [
        (Path("configs/tiny.yaml"), "runs/tiny"),
        (original / "configs/tiny.yaml", (original / "configs/runs/tiny").as_posix()),
    ]
    assert [path for path, run in config_runs(copy) if run == "runs/tiny"] == [
        Path("configs/tiny.yaml")
    ]


def test_a_runs_logs_are_its_own_whichever_of_its_configs_they_name(tmp_path: Path):
    """An installed package's project: the user's config.yaml and the copy `hierbench run`
    ran (in the run's logs) name the same run folder, so the copy's log is that run's."""
    (tmp_path / "config.yaml").write_text("run: runs/beetles\n")
    copy = tmp_path / "runs/beetles/logs/config.yaml"
    copy.parent.mkdir(parents=True)
    copy.write_text("run: runs/beetles\n")
    _log(tmp_path, "2026-12-01T100000.000000", [str(copy)])
    _log(tmp_path, "2026-12-01T110000.000000", ["elsewhere.yaml"])  # no such file: no run
    assert [run for run, _ in run_logs(tmp_path)] == ["runs/beetles"]
    assert config_run(tmp_path, Path("runs/beetles/logs/config.yaml")) == "runs/beetles"
    assert is_run_copy("runs/beetles/logs/config.yaml", "runs/beetles")
    assert not is_run_copy("config.yaml", "runs/beetles")
    assert is_run_copy(f"{tmp_path}/out/logs/config.yaml", f"{tmp_path}/out")
    assert config_name(tmp_path, str(copy)) == "runs/beetles/logs/config.yaml"
    assert config_name(tmp_path, "/elsewhere/x.yaml") == "/elsewhere/x.yaml"


def test_the_copy_hierbench_run_keeps_is_named_as_the_launcher_names_it():
    assert RESOLVED_CONFIG == launch.RESOLVED_CONFIG


def test_a_path_is_shown_as_it_opens_from_here(tmp_path: Path):
    """Relative inside the folder the command was typed in, absolute elsewhere: two projects'
    runs/beetles never read alike."""
    here = tmp_path / "my beetles"
    assert shown_path(here / "runs/beetles", here) == "runs/beetles"
    assert shown_path(tmp_path / "other/runs/beetles", here) == str(tmp_path / "other/runs/beetles")
    assert shown_path(here / "a/../runs", here) == "runs"
