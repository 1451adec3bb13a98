"""Measure the rebuild map (edit this module or config key -> these rules rerun) and publish it.

    python tools/rebuild_map.py            # measure, compare with the committed table
    python tools/rebuild_map.py --write    # measure, write tests/fixtures/rebuild_map.json and
                                             # the table in docs/rebuilds.md
    python tools/rebuild_map.py --built DIR   # measure on a complete tiny run in DIR (a copy
                                                # of this repository), restoring every edit
    python tools/rebuild_map.py --workers 1   # one dry run at a time (default 2, each in its
                                                # own copy of the complete run)

It copies the repository (sources only), runs the tiny config to completion there, then makes
each edit of :mod:`hierbench.runtools.rebuild_map` in that copy and records what
``snakemake --dag`` would run. tests/runtools/test_rebuild_map.py makes the same measurement
on the test suite's tiny run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from hierbench.runtools.dag import dag_jobs, job_counts
from hierbench.runtools.rebuild_map import (
    PLUGIN_ROWS,
    Workspace,
    measure,
    page_section,
    render_markdown,
    with_page_section,
)
from hierbench.runtools.rundiff import COPY_IGNORED

REPO = Path(__file__).resolve().parents[1]
EXPECTED = REPO / "tests/fixtures/rebuild_map.json"
PAGE = REPO / "docs/rebuilds.md"  # the user guide's page that shows the map
TINY = ("--configfile", "configs/tiny.yaml")
OVERLAY = "configs/rebuild-probe.yaml"
# What a workspace copy of a complete run leaves out: no dry run reads history or environments.
UNUSED = shutil.ignore_patterns(".git", ".venv")


def _snakemake(repo: Path, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Snakemake in ``repo`` with that copy's library first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    command = [str(Path(sys.executable).with_name("snakemake")), "--cores", "2", *args]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, check=False)


def scheduler(repo: Path):
    """A dry run's job counts per rule in ``repo`` for extra Snakemake arguments."""

    def scheduled(extra: Sequence[str]) -> dict[str, int]:
        result = _snakemake(repo, ["--dag", "dot", *(extra or TINY)])
        if result.returncode != 0:
            raise SystemExit(f"snakemake --dag {' '.join(extra)} failed:\n{result.stderr}")
        return dict(job_counts(dag_jobs(result.stdout)))

    return scheduled


def overlay_writer(repo: Path):
    """Store a config overlay in ``repo`` and return the arguments that add it to tiny's."""

    def write(tree: dict[str, Any]) -> list[str]:
        (repo / OVERLAY).write_text(yaml.safe_dump(tree, sort_keys=True), encoding="utf-8")
        return ["--configfile", "configs/tiny.yaml", OVERLAY]

    return write


def _measure(repo: Path, workers: int) -> dict[str, Any]:
    """The rebuild map of a complete tiny run in ``repo``, its dry runs spread over ``repo``
    and ``workers - 1`` temporary copies of it."""
    with tempfile.TemporaryDirectory(prefix="rebuild-map-copies-") as folder:
        repos = [repo] + [
            Path(shutil.copytree(repo, Path(folder) / f"copy-{n}", symlinks=True, ignore=UNUSED))
            for n in range(1, workers)
        ]
        workspaces = [
            Workspace(copy / "src/hierbench", scheduler(copy), overlay_writer(copy))
            for copy in repos
        ]
        try:
            return measure(repo / "rules", workspaces)
        finally:
            (repo / OVERLAY).unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the table and its page")
    parser.add_argument("--built", type=Path, help="a complete tiny run to measure on")
    parser.add_argument(
        "--workers", type=int, default=2, help="dry runs at once, each in its own copy (default 2)"
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.built:
        rebuild = _measure(args.built.resolve(), args.workers)
    else:
        with tempfile.TemporaryDirectory(prefix="rebuild-map-") as folder:
            repo = Path(folder) / "repo"
            shutil.copytree(REPO, repo, ignore=shutil.ignore_patterns(*COPY_IGNORED))
            built = _snakemake(repo, list(TINY))
            if built.returncode != 0:
                raise SystemExit(f"the tiny run failed:\n{built.stderr[-4000:]}")
            rebuild = _measure(repo, args.workers)
    committed = json.loads(EXPECTED.read_text(encoding="utf-8"))
    rebuild[PLUGIN_ROWS] = committed.get(PLUGIN_ROWS, {})  # the workflow tests measure them
    table = render_markdown(rebuild)
    if args.write:
        EXPECTED.write_text(json.dumps(rebuild, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        PAGE.write_text(with_page_section(PAGE.read_text(encoding="utf-8"), table))
        print(f"wrote {EXPECTED.relative_to(REPO)} and the table in {PAGE.relative_to(REPO)}")
        return 0
    same = committed == rebuild and page_section(PAGE.read_text(encoding="utf-8")) == table
    print(table)
    print("matches the committed table" if same else "DIFFERS from the committed table")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
