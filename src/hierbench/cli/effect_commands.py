"""The effects commands of `hierbench`: `effects` (re-aggregate a per-seed table into the effect
tables, with intervals) and `seeds` (how many training seeds an effect needs)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from hierbench.effects import plan_effects, read_per_seed
from hierbench.effects import render_markdown as markdown_table
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.query_intervals import query_noise_table
from hierbench.effects.seeds_needed import (
    SEED_COUNTS,
    choose_row,
    describe,
    measured_noise,
    seeds_table,
)
from hierbench.provenance.codehash import code_hash
from hierbench.provenance.records import JobContext
from hierbench.stages.tables import read_per_query, write_plan


def _effects(args: argparse.Namespace) -> int:
    """Re-aggregate a per-seed table (ours or published numbers) into the effect tables.

    Prints what it derived (mean_hierarchy from middle and high) and which paper tables its
    metrics do not support, then how many files it wrote.
    """
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out: {args.out} is a file; name a folder for the tables")
    settings = IntervalSettings(args.confidence, args.replicates, args.seed)
    noise = None
    if args.per_query:
        scores = read_per_query(args.per_query)
        noise = query_noise_table(scores, args.aggregation, settings)
    plan = plan_effects(read_per_seed(args.per_seed), settings, noise)
    inputs = tuple(str(path) for path in (args.per_seed, *args.per_query))
    params = {"aggregation": args.aggregation, "intervals": settings.metadata()}
    job = JobContext(rule="cli:effects", params=params, inputs=inputs, code=code_hash(["effects"]))
    written = write_plan(plan, args.out, job)
    for note in plan.notes():
        print(note)
    print(f"{len(written)} files -> {args.out}")
    return 0


def _seeds(args: argparse.Namespace) -> int:
    """How often the reported interval and test settle an effect with more training seeds."""
    summary = pd.read_parquet(args.effects_table)
    missing = {"ci_low", "ci_high", "se", "sd", "n", "mean"} - set(summary.columns)
    if missing:
        raise ValueError(
            f"{args.effects_table} is not an effects summary with intervals (lacks "
            f"{sorted(missing)}); pass tables/effects_summary.parquet of a run made by this "
            "version"
        )
    row = choose_row(summary, args.dataset, args.effect, args.metric, args.level)
    settings = IntervalSettings(level=args.confidence)
    for line in describe(row, measured_noise(row), args.confidence):
        print(line)
    print(markdown_table(readable_seeds_table(seeds_table(row, settings, args.seeds))))
    return 0


def readable_seeds_table(table: pd.DataFrame) -> pd.DataFrame:
    """The seeds table as the terminal shows it: ranges as "low–high", rates in percent."""
    percent = "{:.1%}".format
    return pd.DataFrame(
        {
            "seeds": table["seeds"],
            "detectable with 80% power (range)": [
                f"{low:.4f}–{high:.4f}"
                for low, high in zip(table["detectable low"], table["detectable high"], strict=True)
            ],
            "power (range the data allow)": [
                f"{percent(low)}–{percent(high)}"
                for low, high in zip(table["power low"], table["power high"], strict=True)
            ],
            "interval excludes a true 0": table["at a true zero"].map(percent),
            "median width": [
                f"{low:.4f}–{high:.4f}"
                for low, high in zip(table["width low"], table["width high"], strict=True)
            ],
            "sign-flip floor": table["sign-flip floor"].map("{:.3g}".format),
            "sign-flip p ≤ α at a true 0 for new images": table["sign-flip at a true zero"].map(
                percent
            ),
        }
    )


def add_effect_commands(commands: argparse._SubParsersAction) -> None:
    """The `effects` subcommand."""
    effects = commands.add_parser(
        "effects",
        help="mean ± SD per arm and simple effects",
        epilog="example: hierbench effects runs/tiny/cub/tables/per_seed.parquet --out my_tables",
    )
    effects.add_argument(
        "per_seed",
        type=Path,
        metavar="PER_SEED",
        help="parquet or CSV: dataset, geometry (E|H), loss (R|S), seed, level, metric, value",
    )
    effects.add_argument("--out", type=Path, required=True, help="folder for the tables")
    effects.add_argument(
        "--per-query",
        type=Path,
        nargs="+",
        default=[],
        help="the cells' per-query scores (a run's eval/*.parquet): two-stage intervals "
        "instead of intervals over seeds alone",
    )
    effects.add_argument(
        "--aggregation",
        choices=["query_micro", "group_macro"],
        default="query_micro",
        help="the per-seed table's aggregation, recomputed on the per-query rows "
        "(default: %(default)s)",
    )
    effects.add_argument(
        "--confidence", type=float, default=0.95, help="the intervals' confidence level"
    )
    effects.add_argument(
        "--replicates", type=int, default=10_000, help="bootstrap replicates per interval"
    )
    effects.add_argument("--seed", type=int, default=0, help="the resampling seed")
    effects.set_defaults(handler=_effects)
    seeds = commands.add_parser(
        "seeds",
        help="how many training seeds an effect needs: the interval's power as the range a "
        "run's seeds allow, and its rate at a true zero",
        description="Simulate studies of 3, 5, 10 and 20 seeds (--seeds) from what a run's "
        "effect allows: its power, how often the interval the tables print would exclude zero, "
        "as the range over every true effect and seed SD the run's seeds allow jointly at the "
        "level (not at the measured values, which are not known to be the truth), its rate at "
        "a true zero, and the sign-flip test's floor and its rate at a true zero for new test "
        "images (that test is about these test images only).",
        epilog="example: hierbench seeds results/nabirds/tables/effects_summary.parquet "
        "--effect geom_R --dataset nabirds",
    )
    seeds.add_argument(
        "effects_table",
        type=Path,
        metavar="EFFECTS_TABLE",
        help="a run's tables/effects_summary.parquet",
    )
    seeds.add_argument("--effect", required=True, help="e.g. geom_R, loss_E, int")
    seeds.add_argument("--dataset", required=True, help="e.g. cub, nabirds")
    seeds.add_argument("--metric", default="map", help="the effect's metric")
    seeds.add_argument("--level", default="mean_hierarchy", help="the effect's level")
    seeds.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="the level the table's intervals were made at, effects.intervals.level "
        "(default: %(default)s)",
    )
    seeds.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=list(SEED_COUNTS),
        help="the seed counts to simulate (default: %(default)s)",
    )
    seeds.set_defaults(handler=_seeds)
