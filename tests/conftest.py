"""Shared fixtures: the repository root and a disposable copy of it for Snakemake runs.

Every test that starts Snakemake is marked ``slow`` (``pytest -m "not slow"`` is the fast lane):
tests that take a repository copy (:data:`SLOW_FIXTURES`) are marked at collection, and
:func:`snakemake` refuses to run inside a test that is not marked, so a mark cannot be forgotten.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from installed import Newcomer, install_wheel, write_collection
from xdist_groups import group_tests

from hierbench.config import load_yaml
from hierbench.runs import logs_folder, run_folder
from hierbench.runtools.dag import dag_jobs, job_counts
from hierbench.runtools.rebuild_map import PLUGIN_ROWS
from hierbench.runtools.rundiff import COPY_IGNORED
from hierbench.taxonomy import (
    load_alias_file,
    load_default_checklist,
    match_cub_classes,
    nabirds_taxonomy,
    read_cub_classes,
)

REPO = Path(__file__).resolve().parents[1]
# The workflow tests reuse helpers of the unit tests in other folders: those folders go on the
# import path, whichever tests run first (test module names are unique across folders).
sys.path[:0] = [str(REPO / "tests" / name) for name in ("cells", "features", "splits", "training")]
COPY_IGNORE = shutil.ignore_patterns(*COPY_IGNORED)
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))

# Fixtures that copy the repository for Snakemake: a test that takes one is slow.
SLOW_FIXTURES = frozenset(
    {
        "repo_copy",
        "built_repo",
        "_built_repo",
        "newcomer",
        "newcomer_guide",
        "newcomer_run",
        "held_out_genera",
    }
)

_running: list[pytest.Item] = []


# The session fixtures that cost minutes, each built once per pytest process: under
# pytest-xdist every test that takes one runs in the same worker (xdist_groups).
SHARED_BUILDS = {
    "_built_repo": "tiny run",
    "newcomer": "newcomer",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses a repository copy (before ``-m`` deselects); give
    each test its pytest-xdist work unit."""
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    group_tests(config, items, SHARED_BUILDS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Remember the running test, so :func:`snakemake` can check that it is marked slow."""
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


@pytest.fixture(scope="session", autouse=True)
def _own_data_folder(tmp_path_factory: pytest.TempPathFactory):
    """hierbench run records its runs in the user's data folder (runtools.run_index) and the code
    hashes keep parsed files in its cache folder: the tests, and every command they start,
    use folders of their own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data-home")))
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache-home")))
        yield


def _require_slow_mark() -> None:
    if _running and _running[-1].get_closest_marker("slow") is None:
        raise AssertionError(
            f"{_running[-1].nodeid} starts Snakemake but is not marked slow: "
            "add @pytest.mark.slow (or use the repo_copy/built_repo fixtures)"
        )


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A copy of the repository (sources only) whose own src/ is what Snakemake imports."""
    target = tmp_path / "repo"
    shutil.copytree(REPO, target, ignore=COPY_IGNORE)
    return target


TINY = ("--configfile", "configs/tiny.yaml")
# The tiny config's run folder and its logs (configs/tiny.yaml, key run).
TINY_RUN = run_folder(load_yaml(REPO / "configs/tiny.yaml"))
# The tiny config's training seeds (every per-seed cell is trained once per seed).
TINY_SEEDS: tuple[int, ...] = tuple(load_yaml(REPO / "configs/tiny.yaml")["training"]["seeds"])
TINY_LOGS = logs_folder(TINY_RUN)
# Where to keep a copy of the tiny run's results/ (unset: nowhere).
KEEP_TINY_RUN = "HIERBENCH_KEEP_TINY_RUN"


@pytest.fixture(scope="session")
def _built_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the repository after a complete run on the tiny config (built once)."""
    target = tmp_path_factory.mktemp("built") / "repo"
    shutil.copytree(REPO, target, ignore=COPY_IGNORE)
    snakemake(target, *TINY)
    keep = os.environ.get(KEEP_TINY_RUN)
    kept = Path(keep) / TINY_RUN if keep else None
    # .ci/run compares the SLURM check's run with this one (tools/cluster.py); a worker that
    # builds the run again (pytest-xdist replaces a crashed one) leaves the first copy kept
    if kept is not None and not kept.exists():
        partial = kept.with_name(f".{kept.name}.partial")  # whole or absent: .ci/run waits on it
        shutil.copytree(target / TINY_RUN, partial, symlinks=True)
        partial.rename(kept)
    return target


@pytest.fixture
def built_repo(_built_repo: Path, tmp_path: Path) -> Path:
    """A private copy of the repository built on the tiny config, Snakemake's metadata included.

    Pass ``*TINY`` to further Snakemake calls on it.
    """
    target = tmp_path / "built"
    shutil.copytree(_built_repo, target, symlinks=True)
    return target


@pytest.fixture(scope="session")
def tiny_report(_built_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny run's HTML report (``snakemake --report``), written once into a copy of the built
    repository, which is the report's parent folder: the run's files are beside it."""
    target = tmp_path_factory.mktemp("report") / "repo"
    shutil.copytree(_built_repo, target, symlinks=True)
    report = target / "report.html"
    snakemake(target, "--report", str(report), *TINY)
    return report


@pytest.fixture(scope="session")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Newcomer:
    """A user with the wheel installed into a fresh venv (no checkout), a collection of their
    own under ``my beetles/`` and a terminal in another folder (built once)."""
    root = tmp_path_factory.mktemp("newcomer")
    copy = root / "repo"
    shutil.copytree(REPO, copy, ignore=COPY_IGNORE)
    venv = install_wheel(copy, root)
    home = root / "my beetles"
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return Newcomer(venv, home, write_collection(home / "beetles"), elsewhere)


# The getting-started walk of a newcomer's own collection: the blocks whose not-run marker
# names this test module run here, in the newcomer's environment, in page order.
GUIDE_PAGE = REPO / "docs/getting-started.md"
GUIDE_TEST = "test_newcomer_guide.py"
GUIDE_CONFIG = ("project", "config.yaml")  # below ``my beetles/``, as the walk writes it


@pytest.fixture(scope="session")
def newcomer_guide(newcomer: Newcomer) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """Each block of the guide's walk (``page:line``) with what it printed: init-dataset with
    its defaults and ``--smoke``, check-dataset, the run to its end, status, audit, runs and
    the report, every command typed in the other folder (built once)."""
    from test_docs import blocks  # the guide's block reader and its marker convention

    walk = [
        block
        for block in blocks(GUIDE_PAGE)
        if block.is_command and GUIDE_TEST in (block.skip_reason or "")
    ]
    return [(str(block), newcomer.bash(block.script)) for block in walk]


@pytest.fixture(scope="session")
def newcomer_run(
    newcomer: Newcomer, newcomer_guide: list[tuple[str, subprocess.CompletedProcess[str]]]
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The newcomer's first study, as the guide's walk ran it: the config's path and the
    output of the block that ran it (shared by the tests that only read the run)."""
    [ran] = [result for _, result in newcomer_guide if "hierbench run " in result.args[-1]]
    return newcomer.home.joinpath(*GUIDE_CONFIG), ran


@pytest.fixture(scope="session")
def held_out_genera(newcomer: Newcomer) -> Path:
    """A second project of the newcomer's collection whose config asks for whole genera on the
    test side (the middle-disjoint protocol), which this collection cannot score at the family
    level: its config's path, not run yet. The Ctrl-C test stops and resumes its run, and the
    endpoint test reads its end (a run of its own when that test runs alone)."""
    from hierbench.data.init_dataset import MIDDLE_DISJOINT_SPLITS, OFFICIAL_SPLITS

    config = newcomer.project("held-out genera", "--smoke")
    text = config.read_text(encoding="utf-8")
    if OFFICIAL_SPLITS not in text:
        raise AssertionError(f"{config} does not hold init-dataset's per-class split block")
    config.write_text(text.replace(OFFICIAL_SPLITS, MIDDLE_DISJOINT_SPLITS), encoding="utf-8")
    return config


def _run_snakemake(
    repo: Path, args: tuple[str, ...], stderr: int
) -> subprocess.CompletedProcess[str]:
    """Run Snakemake in ``repo`` with that copy's library first on the import path."""
    _require_slow_mark()
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [SNAKEMAKE, "--cores", "2", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def snakemake(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run Snakemake in ``repo`` with that copy's library first on the import path.

    stdout and stderr are merged into ``result.stdout``.
    """
    result = _run_snakemake(repo, args, subprocess.STDOUT)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}")
    return result


def scheduled_rules(repo: Path, *args: str) -> Counter[str]:
    """Rules a run would execute, with their job counts, from the job DAG (``--dag``)."""
    result = _run_snakemake(repo, ("--dag", "dot", *args), subprocess.PIPE)
    if result.returncode != 0:
        raise AssertionError(f"snakemake --dag {' '.join(args)} failed:\n{result.stderr}")
    return job_counts(dag_jobs(result.stdout))


REBUILD_MAP = REPO / "tests/fixtures/rebuild_map.json"


def assert_plugin_row(plugin: str, rules: Counter[str]) -> None:
    """The rules an edit to an example plugin reruns are the rebuild map's row for it
    (docs/rebuilds.md); ``HIERBENCH_RECORD_PLUGIN_ROWS=1`` records the measured row instead,
    after a deliberate change (then ``python tools/rebuild_map.py --write`` renders it)."""
    measured = dict(sorted(rules.items()))
    table = json.loads(REBUILD_MAP.read_text(encoding="utf-8"))
    if os.environ.get("HIERBENCH_RECORD_PLUGIN_ROWS") == "1":
        table.setdefault(PLUGIN_ROWS, {})[plugin] = measured
        REBUILD_MAP.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", "utf-8")
    assert measured == table[PLUGIN_ROWS][plugin], (
        f"an edit to {plugin} reruns {measured}; the rebuild map says "
        f"{table[PLUGIN_ROWS][plugin]} (HIERBENCH_RECORD_PLUGIN_ROWS=1 records it)"
    )


@functools.cache
def cub_taxonomy_table() -> pd.DataFrame:
    """The real CUB taxonomy (default checklist and shipped aliases), computed once."""
    return match_cub_classes(
        read_cub_classes(REPO / "resources/cub_classes.txt"),
        load_default_checklist(),
        load_alias_file(REPO / "resources/cub_aliases.json"),
    )


def nabirds_taxonomy_table(
    classes: Path = REPO / "resources/nabirds_classes.txt",
    hierarchy: Path = REPO / "resources/nabirds_hierarchy.txt",
) -> pd.DataFrame:
    """The NABirds taxonomy read from a tree (the shipped one by default)."""
    return nabirds_taxonomy(classes, hierarchy)
