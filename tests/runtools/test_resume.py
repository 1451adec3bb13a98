"""Resuming a killed run (hierbench.runtools.resume): the run's config found by its run folder,
a stale lock told from a live Snakemake by the processes working in the folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import REPO

from hierbench.cli import main
from hierbench.runtools import resume


def _process(proc: Path, pid: int, command: list[str], cwd: Path) -> None:
    """A stand-in /proc entry: its command line and working folder."""
    entry = proc / str(pid)
    entry.mkdir(parents=True)
    (entry / "cmdline").write_bytes(b"\0".join(part.encode() for part in command) + b"\0")
    os.symlink(cwd, entry / "cwd")


def test_the_config_of_a_run_is_the_one_whose_run_key_names_it():
    assert resume.config_for_run(REPO, "runs/tiny") == Path("configs/tiny.yaml")
    assert resume.config_for_run(REPO, "results") == Path("config.yaml")
    with pytest.raises(resume.ResumeError, match="run 'runs/none' needs exactly one config"):
        resume.config_for_run(REPO, "runs/none")


def test_only_a_snakemake_working_in_the_folder_is_live(tmp_path: Path):
    repo, other, proc = tmp_path / "repo", tmp_path / "other", tmp_path / "proc"
    repo.mkdir(), other.mkdir()
    _process(proc, 11, ["/v/bin/python", "/v/bin/snakemake", "--cores", "2"], repo)
    _process(proc, 12, ["/v/bin/python", "/v/bin/snakemake"], other)
    _process(proc, 13, ["/usr/bin/vim", "snakemake"], repo)  # a file named snakemake, edited
    (proc / "self").mkdir()
    assert resume.live_snakemake(repo, proc) == [11]


def test_a_live_run_is_never_unlocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(resume, "live_snakemake", lambda repo: [4242])
    with pytest.raises(resume.ResumeError, match=r"live in .* \(process 4242\); its lock is not"):
        resume.resume_plan(REPO, "runs/tiny")


def test_a_stale_lock_is_released_and_an_unlocked_folder_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/mine.yaml").write_text("run: runs/mine\n")
    monkeypatch.setattr(resume, "live_snakemake", lambda repo: [])
    assert resume.resume_plan(tmp_path, "runs/mine") == (Path("configs/mine.yaml"), False)
    (tmp_path / resume.LOCKS).mkdir(parents=True)
    (tmp_path / resume.LOCKS / "0.input.lock").write_text("x")
    assert resume.resume_plan(tmp_path, "runs/mine") == (Path("configs/mine.yaml"), True)


def test_resume_refuses_a_live_run_with_one_line(monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(resume, "live_snakemake", lambda repo: [7])
    assert main(["resume", "runs/tiny"]) == 2
    assert capsys.readouterr().err.startswith("hierbench: error: a Snakemake run is live in")


def test_the_users_config_is_resumed_rather_than_the_copy_hierbench_run_kept(tmp_path: Path):
    """Both name the run folder: the user's file, the one `hierbench run` resolves again; the
    copy alone when the user's config lies elsewhere."""
    copy = tmp_path / "runs/beetles/logs/config.yaml"
    copy.parent.mkdir(parents=True)
    copy.write_text("run: runs/beetles\n")
    log = tmp_path / ".snakemake/log/2026-12-01T100000.000000.snakemake.log"
    log.parent.mkdir(parents=True)
    log.write_text(f"Config file(s): ['{copy}']\n")
    assert resume.config_for_run(tmp_path, "runs/beetles") == Path("runs/beetles/logs/config.yaml")
    (tmp_path / "config.yaml").write_text("run: runs/beetles\n")
    assert resume.config_for_run(tmp_path, "runs/beetles") == Path("config.yaml")


def test_a_live_run_is_named_by_the_config_its_snakemake_was_started_on(tmp_path: Path):
    repo, proc = tmp_path / "project", tmp_path / "proc"
    (repo / "runs/a/logs").mkdir(parents=True)
    (repo / "runs/a/logs/config.yaml").write_text("run: runs/a\n")
    (repo / "config.yaml").write_text("run: runs/default\n")
    copy = str(repo / "runs/a/logs/config.yaml")  # hierbench run passes its copy, absolutely
    _process(proc, 21, ["/v/bin/python", "/v/bin/snakemake", "--configfile", copy], repo)
    _process(proc, 22, ["/v/bin/snakemake", "--cores", "1"], repo)  # config.yaml, unnamed
    assert resume.live_runs(repo, proc) == {"runs/a", "runs/default"}
    assert resume.live_runs(repo, tmp_path / "no proc") is None
