"""Provenance that cannot lie: a library module edited while a run is in progress is refused by
the jobs that start after the edit and import it, and the next run rebuilds what it
invalidated. On the tiny run's CUB effect tables and figures: the tables job starts, the edit
lands in a module only the figures import, and the figures job, started after it, refuses."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from conftest import SNAKEMAKE, TINY, TINY_LOGS, TINY_RUN, snakemake
from test_determinism import _env

from hierbench.layout import TABLES
from hierbench.protocol import SUMMARY_PAGE
from hierbench.provenance.artifacts import PROVENANCE_SUFFIX
from hierbench.provenance.codehash import PACKAGE_DIR, module_closure, module_path
from hierbench.provenance.hashing import sha256_path
from hierbench.provenance.verify import verify

EDIT = "\n_EDITED_DURING_THE_RUN = True\n"


def _records_of(run: Path, rule: str) -> dict[Path, dict]:
    """The artifacts of ``rule`` under ``run`` with their records."""
    found = {}
    for path in run.rglob(f"*{PROVENANCE_SUFFIX}"):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["rule"] == rule and "/cub/" in record["path"]:
            found[path.with_name(path.name.removesuffix(PROVENANCE_SUFFIX))] = record
    return found


def _only_the_figures_import() -> str:
    """The figures' stage: a library module the effect tables' job does not import, nor any
    job upstream of the figures (so the rerun redraws the figures only)."""
    module = "stages.figures"
    assert module not in module_closure(("stages.tables",))
    return module


def test_a_module_edited_mid_run_is_refused_and_the_rerun_rebuilds_it(built_repo: Path):
    run = built_repo / TINY_RUN
    figures = _records_of(run, "figures")
    tables = _records_of(run, "effect_tables")
    before = {path: sha256_path(path) for path in figures}
    target = sorted(figures)[0].relative_to(built_repo).as_posix()
    summary = TABLES.format(dataset="cub") + f"/{SUMMARY_PAGE}"
    tables_log = built_repo / TINY_LOGS / f"{summary}.log"
    logged = tables_log.stat().st_size if tables_log.exists() else 0
    command = [SNAKEMAKE, target, "--forcerun", "effect_tables", "--cores", "1", *TINY]
    process = subprocess.Popen(
        command,
        cwd=built_repo,
        env=_env(built_repo),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not tables_log.exists() or tables_log.stat().st_size == logged:  # the tables job began
        assert process.poll() is None and time.monotonic() < deadline, process.stdout.read()
        time.sleep(0.05)
    module = _only_the_figures_import()
    edited = built_repo / "src/hierbench" / module_path(module).relative_to(PACKAGE_DIR)
    edited.write_text(edited.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
    output, _ = process.communicate(timeout=300)

    assert process.returncode != 0, output
    logs = (built_repo / TINY_LOGS).rglob("*.log")
    refusals = [p for p in logs if "changed after this run was planned" in p.read_text()]
    assert len(refusals) == 1, output  # the figures' job, and no other
    assert f"hierbench.{module} changed after this run was planned" in refusals[0].read_text()
    # no record names code that did not make its artifact: each figure is gone (Snakemake
    # removes a failed job's outputs) or as it was before the run, with its record
    for path, record in _records_of(run, "figures").items():
        assert not path.exists() or (sha256_path(path) == before[path] and record == figures[path])
    assert not any(path.exists() for path in figures)
    assert {p: r["code"] for p, r in _records_of(run, "effect_tables").items()} == {
        p: r["code"] for p, r in tables.items()
    }

    snakemake(built_repo, target, *TINY)  # the next run rebuilds what the edit invalidated
    rebuilt = _records_of(run, "figures")
    assert rebuilt.keys() == figures.keys()
    assert {r["code"] for r in rebuilt.values()}.isdisjoint({r["code"] for r in figures.values()})
    assert [f.path for f in verify(run, built_repo) if not f.passed] == []
