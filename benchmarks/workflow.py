"""Speed check of Snakemake's planning: building the tiny config's DAG within 5x an empty one's.

``snakemake -n --configfile configs/tiny.yaml`` in a fresh copy of the repository (nothing
built yet, so it plans every job: parsing the rules, validating the config, resolving every
input function) is timed against ``snakemake -n`` on a Snakefile with one rule ``all`` and no
input, in a temporary folder: the reference is Snakemake's own start-up, measured in the same
run. Each is timed ``--repeats`` times, each time in a fresh copy, and the best time counts.
``--demo`` also times the whole demo (``snakemake --cores 2`` on config.yaml in a fresh copy;
about 20 minutes on 2 cores), recorded without a reference or a goal, and then a no-op
``snakemake -n`` on the finished demo against the empty Snakefile (goal: within 2.5x, about 5 s
at this machine's 2 s start-up). The demo's CPU seconds are split by stage and by kind of cost
(``breakdown.py``: start-up, loading, compute, publishing and hashing, Snakemake's own), each
stage's and each kind's a row with the whole run's CPU as its reference.

Run: ``.venv/bin/python benchmarks/workflow.py [--repeats 3] [--demo]``; exits 1 when the DAG
build takes more than 5x the empty run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from benchrows import Row, row
from breakdown import KIND_COLUMNS, cost_breakdown, render

from hierbench.runtools.rundiff import copy_repository

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
MAX_DAG_RATIO = 5.0
MAX_NOOP_RATIO = 2.5
EMPTY_SNAKEFILE = "rule all:\n    input: []\n"
DEMO_CORES = 2


# Snakemake's own console entry point, run so that it records its own process's CPU seconds
# (threads included, its jobs' processes not) into the file named first, as it exits.
OWN_CPU_LAUNCHER = """
import atexit, json, resource, sys
record = sys.argv.pop(1)
def own_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(record, "w") as handle:
        json.dump(usage.ru_utime + usage.ru_stime, handle)
atexit.register(own_cpu)
from snakemake.cli import main
sys.argv[0] = "snakemake"
sys.exit(main())
"""


class Cost(NamedTuple):
    """What one Snakemake command took: wall seconds, the CPU seconds of it and every process
    it started, and those of Snakemake's own process alone."""

    seconds: float
    cpu: float
    snakemake_cpu: float


def snakemake_cost(folder: Path, *args: str) -> Cost:
    """The cost of one Snakemake command in ``folder`` (its own src/ first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(folder / "src"), "HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "own_cpu.json"
        argv = [sys.executable, "-c", OWN_CPU_LAUNCHER, str(record), *args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-20:]
            raise RuntimeError(
                f"snakemake {' '.join(args)} failed in {folder}:\n" + "\n".join(tail)
            )
        own = float(json.loads(record.read_text()))
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Cost(seconds, cpu, own)


def snakemake_seconds(folder: Path, *args: str) -> float:
    """Wall seconds of one Snakemake command in ``folder``."""
    return snakemake_cost(folder, *args).seconds


def dag_seconds() -> float:
    """Seconds of a dry run on the tiny config in a fresh copy of the repository."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = copy_repository(REPO, Path(tmp) / "repo")
        return snakemake_seconds(copy, "-n", "--cores", "2", "--configfile", "configs/tiny.yaml")


def empty_seconds() -> float:
    """Seconds of a dry run on a Snakefile with one rule and no input: Snakemake's start-up."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "Snakefile").write_text(EMPTY_SNAKEFILE)
        return snakemake_seconds(folder, "-n", "--cores", "2")


def dag_rows(repeats: int = 3) -> list[Row]:
    """The tiny config's DAG build against an empty workflow's (best of ``repeats``, paired)."""
    dag, empty = [], []
    for _ in range(repeats):
        empty.append(empty_seconds())
        dag.append(dag_seconds())
    return [
        row(
            "workflow",
            "snakemake -n on configs/tiny.yaml vs an empty Snakefile",
            min(dag),
            min(empty),
            "s",
            f"<= {MAX_DAG_RATIO:g}",
            note=f"a fresh repository copy each time (every job planned), best of {repeats}",
        )
    ]


def demo_rows(cores: int = DEMO_CORES, repeats: int = 3) -> list[Row]:
    """Wall time of the whole demo from nothing (no natural reference, so no ratio or goal),
    then a no-op dry run on the finished demo against the empty workflow's (best of
    ``repeats``, paired)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = copy_repository(REPO, Path(tmp) / "repo")
        seconds, cpu, own = snakemake_cost(copy, "--cores", str(cores))
        breakdown = cost_breakdown(copy, "results", cpu, snakemake_cpu_s=own)
        print(render(breakdown, cpu))
        noop, empty = [], []
        for _ in range(repeats):
            empty.append(empty_seconds())
            noop.append(snakemake_seconds(copy, "-n", "--cores", str(cores)))
    return [
        row(
            "workflow",
            f"demo end to end (snakemake --cores {cores} on config.yaml)",
            seconds,
            None,
            "s",
            None,
            note="a fresh repository copy; recorded without a reference or a goal",
        ),
        *(
            row(
                "workflow",
                f"demo CPU: {stage.stage}",
                stage.cpu_s,
                cpu,
                "CPU s",
                None,
                note=f"its share of the demo's {cpu:,.0f} CPU s (benchmarks/breakdown.py)",
            )
            for stage in breakdown.itertuples(index=False)
        ),
        *(
            row(
                "workflow",
                f"demo CPU: {kind}, all stages' jobs",
                float(breakdown[column].sum()),
                cpu,
                "CPU s",
                None,
                note=f"its share of the demo's {cpu:,.0f} CPU s (the jobs' own splits)",
            )
            for kind, column in KIND_COLUMNS.items()
        ),
        row(
            "workflow",
            "no-op snakemake -n on the finished demo vs an empty Snakefile",
            min(noop),
            min(empty),
            "s",
            f"<= {MAX_NOOP_RATIO:g}",
            note=f"nothing to run (DAG, metadata and code hashes checked); best of {repeats}",
        ),
    ]


def main() -> int:
    """Time the dry runs (and the demo when asked) and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--demo", action="store_true", help="also run the whole demo (~20 min)")
    args = parser.parse_args()
    rows = dag_rows(args.repeats) + (demo_rows(repeats=args.repeats) if args.demo else [])
    for r in rows:
        ratio = "" if r["ratio"] is None else f", ratio {r['ratio']:.2f} (goal {r['goal']})"
        reference = "" if r["reference"] is None else f" vs {r['reference']:.2f} s"
        print(f"{r['figure']}: {r['value']:.2f} s{reference}{ratio}")
    return 1 if any(r["met"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
