"""The HIER-style and companion cells' budgets on a run's features: validation score against CPU.

Issue #53, item 5. The paper gives no training budget for the HIER-style context model (S16 in
docs/fidelity.md), and the companion cells take the factorial's epochs, so on the demo both are
our choice. This trains the cells of a built run's development side (``tuning/train``, never the
sealed test) through the pipeline's own code (``hier_cell_spec`` and ``HierObjective``;
``companion_spec`` and ``companion_objective``; ``train_cell``) with the run config's recipe, and
scores the validation images (``tuning/query`` against ``tuning/gallery``) after each reported
epoch under the dataset's registered aggregation, beside the frozen features. Each row carries
the CPU seconds its training had taken by then (this process's, every thread; the scoring left
out): one training per setting gives the whole curve of score against cost.

HIER-style cells run at each ``--triplets`` (triplets drawn per anchor, the schema's
``hier.triplets_per_anchor``); companion cells (E_A, L_A) with the config's pairs and, with
``--pairs method``, with the method's own two sources alone (no taxonomy pairs, ours).

Run, after the run's development features exist (for the demo:
``snakemake results/cub/features/dev.parquet results/cub/features/dev_crops.parquet``):
``.venv/bin/python benchmarks/budgets.py [--config config.yaml] [--dataset cub] [--seeds 42]
[--report-epochs 10 25 50 75 100] [--triplets 10 25 50] [--pairs config method]
[--markdown FILE]``. The findings are in docs/results.md.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from companion_demo import SOURCES, development_collection
from companion_sanity import Collection, arm_spec, held_out_scores, retrieval, show

from hierbench.config import load_config
from hierbench.protocol import HIER, REGISTERED_AGGREGATION
from hierbench.relations import LEVELS
from hierbench.runs import run_folder
from hierbench.stages.hier import hier_cell_spec, hier_objective
from hierbench.training.trainer import train_cell

COMPANION_ARMS = ("E_A", "L_A")
PAIR_SETTINGS = ("config", "method")  # the config's pairs; the method's own two alone
SCORES = [*LEVELS, "mean_hierarchy"]


def scored_training(
    collection: Collection,
    spec: Any,
    objective: Any,
    epochs: tuple[int, ...],
    aggregation: str,
) -> list[dict[str, Any]]:
    """Train one cell and score the validation images after each of ``epochs``: a row per
    reported epoch with its scores and the CPU seconds training had taken by then."""
    rows: list[dict[str, Any]] = []
    clock = {"training": 0.0, "since": time.process_time()}

    def score(epoch: int, model: torch.nn.Module) -> dict[str, float]:
        clock["training"] += time.process_time() - clock["since"]
        if epoch in epochs:
            scores = held_out_scores(collection, model, spec, aggregation)
            rows.append({"epoch": epoch, "cpu_s": clock["training"], **scores})
        clock["since"] = time.process_time()
        return {}

    train_cell(collection.train, collection.train_labels, spec, objective=objective, on_epoch=score)
    return rows


def hier_cell(
    collection: Collection, config: dict[str, Any], dataset: str, seed: int, triplets: int
) -> tuple[Any, Any]:
    """The HIER-style cell's spec and objective at ``triplets`` per anchor, as the stage builds
    them (its leaf classes from the training rows)."""
    settings = copy.deepcopy(config)
    block = settings["datasets"][dataset]["controls"]["baselines"]["hier"]
    block["triplets_per_anchor"] = triplets
    spec, loss = hier_cell_spec(dataset, seed, settings)
    return spec, hier_objective(spec, loss, collection.train_labels, seed)


def companion_cell(
    collection: Collection, config: dict[str, Any], dataset: str, seed: int, arm: str, pairs: str
) -> tuple[Any, Any]:
    """A companion cell's spec and objective with the config's pairs or the method's own."""
    settings = copy.deepcopy(config)
    if pairs == "method":
        settings["companion"]["pairs"] = dict(SOURCES["method"])
    return arm_spec(arm, collection, seed, settings, dataset)


Builder = Callable[[], tuple[Any, Any]]


def settings_to_run(
    collection: Collection, config: dict[str, Any], args: argparse.Namespace, seed: int
) -> list[tuple[dict[str, Any], Builder]]:
    """Every cell to train for one seed, with the columns that name its setting."""
    cells: list[tuple[dict[str, Any], Builder]] = []
    for triplets in args.triplets:
        name = {"arm": HIER, "setting": f"triplets {triplets}"}
        cells.append(
            (name, lambda t=triplets: hier_cell(collection, config, args.dataset, seed, t))
        )
    for pairs in args.pairs:
        for arm in COMPANION_ARMS:
            name = {"arm": arm, "setting": f"pairs {pairs}"}
            cells.append(
                (
                    name,
                    lambda a=arm, p=pairs: companion_cell(
                        collection, config, args.dataset, seed, a, p
                    ),
                )
            )
    return cells


def budget_curves(
    collection: Collection, config: dict[str, Any], args: argparse.Namespace
) -> pd.DataFrame:
    """Validation scores and training CPU per seed, cell setting and reported epoch, beside
    the frozen features."""
    aggregation = REGISTERED_AGGREGATION.get(args.dataset, "query_micro")
    epochs = tuple(args.report_epochs)
    frozen = retrieval(collection, collection.query, collection.gallery, aggregation=aggregation)
    rows = [{"seed": "-", "arm": "frozen", "setting": "-", "epoch": 0, "cpu_s": 0.0, **frozen}]
    for seed in args.seeds:
        for name, build in settings_to_run(collection, config, args, seed):
            spec, objective = build()
            if max(epochs) > spec.epochs:
                raise SystemExit(f"--report-epochs go past the {spec.epochs} epochs trained")
            for row in scored_training(collection, spec, objective, epochs, aggregation):
                rows.append({"seed": seed, **name, **row})
                print(
                    f"seed {seed} {name['arm']:<5} {name['setting']:<12} epoch {row['epoch']:>4}:"
                    f" {row['mean_hierarchy']:.4f} after {row['cpu_s']:.1f} CPU s",
                    flush=True,
                )
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame, heading: str) -> str:
    """A Markdown table of the mean over the seeds per arm, setting and epoch."""
    lines = [heading, "", f"| arm | setting | epoch | CPU s | {' | '.join(SCORES)} |"]
    lines.append("|---" * (len(SCORES) + 4) + "|")
    grouped = frame.groupby(["arm", "setting", "epoch"], sort=False)
    for (arm, setting, epoch), rows in grouped:
        scores = " | ".join(f"{rows[column].mean():.4f}" for column in SCORES)
        lines.append(f"| {arm} | {setting} | {epoch} | {rows['cpu_s'].mean():.1f} | {scores} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Train the cells per setting on a run's development features and print the curves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("config.yaml"))
    parser.add_argument("--dataset", default="cub")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    parser.add_argument("--report-epochs", type=int, nargs="+", default=[10, 25, 50, 75, 100])
    parser.add_argument("--triplets", type=int, nargs="*", default=[10, 25, 50])
    parser.add_argument("--pairs", nargs="*", choices=PAIR_SETTINGS, default=list(PAIR_SETTINGS))
    parser.add_argument("--markdown", type=Path, help="write the table to this Markdown file")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = load_config(args.config)
    run = run_folder(config)
    collection = development_collection(Path(run), args.dataset)
    frame = budget_curves(collection, config, args)
    aggregation = REGISTERED_AGGREGATION.get(args.dataset, "query_micro")
    heading = (
        f"Validation mAP ({aggregation}) of {args.dataset} in {run} ({args.config}) against the "
        f"training CPU seconds ({args.threads} torch thread(s)): {len(collection.train)} "
        f"tuning/train images, {len(collection.query)} tuning queries, "
        f"{len(collection.gallery)} gallery images; seeds {args.seeds}."
    )
    show(markdown(frame, heading), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
