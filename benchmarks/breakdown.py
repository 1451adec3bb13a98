"""Where a finished run's CPU went: by stage, and within each stage by kind of cost.

A run's CPU seconds (every process Snakemake started, Snakemake included: the caller measures
them with ``getrusage(RUSAGE_CHILDREN)``) split into:

- each stage's jobs (``rules/<stage>.smk``), from the split each job wrote as its log's last line
  (``hierbench.jobcost``, measured by the job's own process and its data-loader workers):
  **start-up** (the interpreter, Snakemake's script preamble, the script's imports),
  **loading** (features, splits, checkpoints; image decoding in the workers), **compute**, and
  **publishing and hashing** (artifacts with their records, inputs verified against theirs);
  beside them what the jobs' ``benchmark:`` files hold, which sample the job's processes and so
  miss what ends between samples;
- what no job's split holds, the total less their CPU seconds: **Snakemake's own process**
  (planning, scheduling, bookkeeping; when the caller measured it, as ``workflow.py`` does),
  and the rest (the shells that start each job, jobs that run no workflow script).

Run on a finished run: ``.venv/bin/python benchmarks/breakdown.py REPO --cpu SECONDS
[--run results] [--rules RULE ...]``, where REPO is the repository copy that ran it (``--rules``
adds those rules' share of the jobs' CPU); ``workflow.py --demo`` calls it on the demo it times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from hierbench import jobcost
from hierbench.runtools.jobstats import job_cost_splits, job_costs, rule_stages

SNAKEMAKE_OVERHEAD = "Snakemake and jobs without a split"
SNAKEMAKE_OWN = "Snakemake's own process"
UNSPLIT = "job shells and jobs without a split"
KIND_COLUMNS = {
    jobcost.START_UP: "start_up_s",
    jobcost.LOADING: "loading_s",
    jobcost.COMPUTE: "compute_s",
    jobcost.PUBLISHING: "publishing_s",
}
COLUMNS = ("stage", "jobs", "cpu_s", *KIND_COLUMNS.values(), "benchmark_cpu_s", "share")


def stage_costs(repo: Path, run: str) -> pd.DataFrame:
    """Per stage: its jobs, their CPU seconds by kind and in all, and what their benchmark
    files hold; largest first."""
    stages = rule_stages(repo / "rules")
    logs = repo / run / "logs"
    splits = job_cost_splits(logs, stages).rename(columns=KIND_COLUMNS)
    splits["cpu_s"] = splits[list(KIND_COLUMNS.values())].sum(axis=1)
    sums = {name: (name, "sum") for name in ("cpu_s", *KIND_COLUMNS.values())}
    table = splits.groupby("stage").agg(jobs=("rule", "size"), **sums)
    sampled = job_costs(repo / run, logs, stages).groupby("stage")["cpu_s"].sum()
    table["benchmark_cpu_s"] = sampled.reindex(table.index)
    return table.reset_index().sort_values("cpu_s", ascending=False, ignore_index=True)


def cost_breakdown(
    repo: Path, run: str, total_cpu_s: float, *, snakemake_cpu_s: float | None = None
) -> pd.DataFrame:
    """One row per stage (jobs, CPU seconds by kind of cost, share of the total), largest
    first, then what no job's split holds: Snakemake's own process (when ``snakemake_cpu_s``
    was measured) and the rest."""
    stages = stage_costs(repo, run)
    outside = total_cpu_s - float(stages["cpu_s"].sum())
    if snakemake_cpu_s is None:
        rest = [(SNAKEMAKE_OVERHEAD, outside)]
    else:
        rest = [(SNAKEMAKE_OWN, snakemake_cpu_s), (UNSPLIT, outside - snakemake_cpu_s)]
    rows = pd.DataFrame([{"stage": name, "jobs": 0, "cpu_s": cpu} for name, cpu in rest])
    table = pd.concat([stages, rows], ignore_index=True)
    table["share"] = table["cpu_s"] / total_cpu_s
    return table[list(COLUMNS)]


def rules_share(repo: Path, run: str, rules: list[str]) -> pd.DataFrame:
    """Per named rule: its jobs, their CPU seconds (every kind of cost) and their share of all
    the jobs' CPU; a last row ``together`` for the rules named. A rule that ran no job is an
    error (a misspelt name would otherwise read as free)."""
    splits = job_cost_splits(repo / run / "logs")
    splits["cpu_s"] = splits[list(jobcost.KINDS)].sum(axis=1)
    missing = sorted(set(rules) - set(splits["rule"]))
    if missing:
        raise SystemExit(f"no job of rule(s) {', '.join(missing)} in {repo / run / 'logs'}")
    named = splits[splits["rule"].isin(rules)]
    table = named.groupby("rule").agg(jobs=("rule", "size"), cpu_s=("cpu_s", "sum"))
    table.loc["together"] = [len(named), named["cpu_s"].sum()]
    table["share"] = table["cpu_s"] / splits["cpu_s"].sum()
    return table.reset_index()


def render_rules(table: pd.DataFrame) -> str:
    """The rules' shares as a Markdown table."""
    lines = ["| rule | jobs | CPU s | share of the jobs' CPU |", "|---|---:|---:|---:|"]
    lines += [
        f"| {row.rule} | {int(row.jobs)} | {row.cpu_s:,.2f} | {row.share:.2%} |"
        for row in table.itertuples(index=False)
    ]
    return "\n".join(lines)


def _seconds(value: float) -> str:
    return "" if pd.isna(value) else f"{value:,.0f}"


def render(table: pd.DataFrame, total_cpu_s: float) -> str:
    """The breakdown as a Markdown table, its total last."""
    lines = [
        "| stage | jobs | CPU s | start-up | loading | compute | publishing and hashing "
        "| benchmark files | share |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in table.itertuples(index=False):
        kinds = " | ".join(_seconds(getattr(row, name)) for name in KIND_COLUMNS.values())
        lines.append(
            f"| {row.stage} | {row.jobs or ''} | {row.cpu_s:,.0f} | {kinds} "
            f"| {_seconds(row.benchmark_cpu_s)} | {row.share:.0%} |"
        )
    totals = " | ".join(f"{table[name].sum():,.0f}" for name in KIND_COLUMNS.values())
    sampled = f"{table['benchmark_cpu_s'].sum():,.0f}"
    lines.append(
        f"| total | {int(table['jobs'].sum())} | {total_cpu_s:,.0f} | {totals} | {sampled} | 100% |"
    )
    return "\n".join(lines)


def main() -> int:
    """Print the breakdown of a finished run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="the repository copy that ran it")
    parser.add_argument("--cpu", type=float, required=True, help="the run's CPU seconds")
    parser.add_argument("--snakemake-cpu", type=float, help="Snakemake's own process's")
    parser.add_argument("--run", default="results", help="its run folder (default: results)")
    parser.add_argument(
        "--rules", nargs="+", metavar="RULE", help="also print these rules' share of the jobs' CPU"
    )
    args = parser.parse_args()
    table = cost_breakdown(
        args.repo.resolve(), args.run, args.cpu, snakemake_cpu_s=args.snakemake_cpu
    )
    print(render(table, args.cpu))
    if args.rules:
        print("\n" + render_rules(rules_share(args.repo.resolve(), args.run, args.rules)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
