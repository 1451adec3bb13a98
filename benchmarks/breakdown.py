"""Where a finished run's CPU went: by stage, and within each stage what its jobs' start-up cost.

A run's CPU seconds (every process Snakemake started, Snakemake included: the caller measures
them with ``getrusage(RUSAGE_CHILDREN)``) split into:

- each stage's jobs (``rules/<stage>.smk``), from the jobs' own ``benchmark:`` files, and within
  them the **start-up**: the jobs' count times the CPU seconds a bare interpreter takes to run
  that rule's workflow script's imports and Snakemake's script preamble (measured here, best of
  ``repeats``); the rest is each job's **work** (reading inputs, computing, publishing and
  hashing, which these files cannot tell apart);
- what the benchmark files do not hold, the total less their CPU seconds: **Snakemake's own
  process** (planning, scheduling, bookkeeping; when the caller measured it, as
  ``workflow.py`` does), and the rest: jobs without a benchmark file, and job processes that
  ended between the samples Snakemake's benchmark takes (data-loader workers, short jobs).

Run on a finished run: ``.venv/bin/python benchmarks/breakdown.py REPO --cpu SECONDS
[--run results]``, where REPO is the repository copy that ran it; ``workflow.py --demo`` calls
it on the demo it times.
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import subprocess
import sys
from pathlib import Path

import pandas as pd

from hierbench.runtools.jobstats import job_costs, rule_stages
from hierbench.runtools.rebuild import code_declarations

SNAKEMAKE_OVERHEAD = "Snakemake and unmeasured jobs"
SNAKEMAKE_OWN = "Snakemake's own process"
UNMEASURED = "jobs' CPU their benchmark files miss"
COLUMNS = ("stage", "jobs", "cpu_s", "start_up_s", "work_s", "share")


def import_lines(script: Path) -> str:
    """The import statements of a workflow script, as source (what a job runs before work)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return "\n".join(["import snakemake.script", *(ast.unparse(node) for node in imports)])


def start_up_cpu(script: Path, repeats: int = 3) -> float:
    """CPU seconds of a fresh interpreter running ``script``'s imports (best of ``repeats``)."""
    env = {**os.environ, "PYTHONPATH": str(script.parents[1] / "src")}
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", import_lines(script)], env=env, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def rule_start_up(repo: Path, rules: set[str], repeats: int = 3) -> dict[str, float]:
    """Each rule's start-up CPU seconds per job, measured once per workflow script."""
    scripts = {rule: script for rule, (_, script) in code_declarations(repo / "rules").items()}
    measured: dict[str, float] = {}
    for script in sorted({scripts[rule] for rule in rules if scripts.get(rule)}):
        measured[script] = start_up_cpu(repo / "workflow_scripts" / f"{script}.py", repeats)
    return {rule: measured.get(scripts.get(rule) or "", 0.0) for rule in rules}


def cost_breakdown(
    repo: Path,
    run: str,
    total_cpu_s: float,
    repeats: int = 3,
    *,
    snakemake_cpu_s: float | None = None,
) -> pd.DataFrame:
    """One row per stage (jobs, CPU seconds, their start-up and work, share of the total),
    largest first, then what the jobs' benchmark files do not hold: Snakemake's own process
    (when ``snakemake_cpu_s`` was measured) and the rest (jobs without a benchmark file, and
    job processes Snakemake's sampling missed)."""
    jobs = job_costs(repo / run, repo / run / "logs", rule_stages(repo / "rules"))
    start_up = rule_start_up(repo, set(jobs["rule"]), repeats)
    jobs = jobs.assign(start_up_s=jobs["rule"].map(start_up))
    stages = jobs.groupby("stage").agg(
        jobs=("rule", "size"), cpu_s=("cpu_s", "sum"), start_up_s=("start_up_s", "sum")
    )
    stages = stages.reset_index().sort_values("cpu_s", ascending=False, ignore_index=True)
    unmeasured = total_cpu_s - float(jobs["cpu_s"].sum())
    if snakemake_cpu_s is None:
        rest = [(SNAKEMAKE_OVERHEAD, unmeasured)]
    else:
        rest = [(SNAKEMAKE_OWN, snakemake_cpu_s), (UNMEASURED, unmeasured - snakemake_cpu_s)]
    rows = [
        {"stage": name, "jobs": 0, "cpu_s": cpu, "start_up_s": float("nan")} for name, cpu in rest
    ]
    table = pd.concat([stages, pd.DataFrame(rows)], ignore_index=True)
    table["work_s"] = table["cpu_s"] - table["start_up_s"]
    table["share"] = table["cpu_s"] / total_cpu_s
    return table[list(COLUMNS)]


def render(table: pd.DataFrame, total_cpu_s: float) -> str:
    """The breakdown as a Markdown table, its total last."""
    lines = [
        "| stage | jobs | CPU s | of which start-up | work | share |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in table.itertuples(index=False):
        start = "" if pd.isna(row.start_up_s) else f"{row.start_up_s:,.0f}"
        work = "" if pd.isna(row.work_s) else f"{row.work_s:,.0f}"
        lines.append(
            f"| {row.stage} | {row.jobs or ''} | {row.cpu_s:,.0f} | {start} | {work} "
            f"| {row.share:.0%} |"
        )
    lines.append(f"| total | {int(table['jobs'].sum())} | {total_cpu_s:,.0f} | | | 100% |")
    return "\n".join(lines)


def main() -> int:
    """Print the breakdown of a finished run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="the repository copy that ran it")
    parser.add_argument("--cpu", type=float, required=True, help="the run's CPU seconds")
    parser.add_argument("--snakemake-cpu", type=float, help="Snakemake's own process's")
    parser.add_argument("--run", default="results", help="its run folder (default: results)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    table = cost_breakdown(
        args.repo.resolve(), args.run, args.cpu, args.repeats, snakemake_cpu_s=args.snakemake_cpu
    )
    print(render(table, args.cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
