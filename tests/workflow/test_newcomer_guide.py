"""The getting-started walk of a newcomer's own collection runs as the page shows it, from an
installed wheel with no checkout, under a path with a space, every command typed in another
folder: each block exits 0, the report lands where it was asked for and its path is printed,
and nothing the newcomer is given points into a checkout they do not have."""

from __future__ import annotations

import subprocess

import pytest
from conftest import GUIDE_CONFIG, REPO

DATASET = "beetles"
REQUIRES = "import importlib.metadata as m; print('\\n'.join(m.requires('hierbench')))"


@pytest.mark.slow
def test_every_block_of_the_walk_runs(newcomer_guide):
    assert len(newcomer_guide) >= 3
    for block, result in newcomer_guide:
        assert result.returncode == 0, f"{block} exited {result.returncode}:\n{result.stderr}"


@pytest.mark.slow
def test_the_report_is_written_where_asked_and_its_path_printed(newcomer, newcomer_guide):
    report = newcomer.home.parent / "beetles-report.html"
    [made] = [result for _, result in newcomer_guide if "hierbench report" in result.args[-1]]
    assert f"report: {report}\n" in made.stdout
    assert report.stat().st_size > 0
    assert "summary" in report.read_text(encoding="utf-8", errors="replace")
    assert not (newcomer.elsewhere / "report.html").exists()


@pytest.mark.slow
def test_the_wheel_ships_the_lock_and_names_no_checkout_file(newcomer, newcomer_run):
    shipped = newcomer.hierbench("shipped", "requirements.lock")
    assert shipped.returncode == 0, shipped.stderr
    lock = shipped.stdout.strip()
    assert "site-packages/hierbench/workflow/" in lock
    with open(lock, encoding="utf-8") as packaged:
        assert packaged.read() == (REPO / "requirements.lock").read_text(encoding="utf-8")
    requires = subprocess.run(
        [str(newcomer.venv / "bin/python"), "-c", REQUIRES],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert "snakemake[reports]==9.27.1" in requires  # pygments, for the report
    config, _ = newcomer_run
    assert config == newcomer.home.joinpath(*GUIDE_CONFIG)
    assert "schemas/" not in config.read_text(encoding="utf-8")
    summary = config.parent / "runs" / DATASET / DATASET / "tables" / "summary.md"
    assert "docs/" not in summary.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_commands_init_dataset_prints_work_pasted_as_printed(newcomer, newcomer_guide):
    """Each command init-dataset printed (quoted, the path holding a space) runs when pasted
    in the other folder; the walk's run is complete, so its run is a no-op, and the run
    compares identical with itself from there."""
    [init] = [result for _, result in newcomer_guide if "init-dataset" in result.args[-1]]
    printed = [line.strip() for line in init.stdout.splitlines() if line.startswith("  hierbench ")]
    assert [command.split()[1] for command in printed] == ["check-dataset", "run"]
    for command in printed:
        pasted = newcomer.bash(command)
        assert pasted.returncode == 0, (command, pasted.stderr[-3000:])
    run = newcomer.home.joinpath(*GUIDE_CONFIG).parent / "runs" / DATASET
    compared = newcomer.hierbench("compare", str(run), str(run))
    assert compared.returncode == 0 and compared.stdout.startswith("identical"), compared.stderr
