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

The budget is chosen by ``chosen_budget``: the fewest triplets measured, then the fewest
reported epochs whose seed-mean score on the criterion is within a tolerance of the best
reported. For the HIER-style cells the criterion is validation leaf mAP (``--criterion leaf``,
HIER's own target, leaf retrieval), not the study's mean hierarchy mAP, on which the HIER-style
point is compared with the other arms: a budget chosen on that endpoint would favour or
penalise the comparison (issue #60). ``--epochs`` trains every measured cell that long (default:
the config's own epochs), so that the curve can go past the config's current choice.

Run, after the run's development features exist (for the demo:
``snakemake results/cub/features/dev.parquet results/cub/features/dev_crops.parquet``):
``.venv/bin/python benchmarks/budgets.py [--config config.yaml] [--dataset cub] [--seeds 42]
[--report-epochs 10 25 50 75 100] [--epochs 100] [--triplets 10 25 50] [--pairs config method]
[--criterion leaf] [--tolerance 0.005] [--markdown FILE]``. The findings are in docs/results.md.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from companion_demo import SOURCES, development_collection, frozen_scores
from companion_sanity import Collection, arm_spec, held_out_scores, show

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
    collection: Collection,
    config: dict[str, Any],
    dataset: str,
    seed: int,
    triplets: int,
    epochs: int | None = None,
) -> tuple[Any, Any]:
    """The HIER-style cell's spec and objective at ``triplets`` per anchor (and ``epochs``, when
    given), as the stage builds them (its leaf classes from the training rows)."""
    settings = copy.deepcopy(config)
    block = settings["datasets"][dataset]["controls"]["baselines"]["hier"]
    block["triplets_per_anchor"] = triplets
    if epochs is not None:
        block["epochs"] = epochs
    spec, loss = hier_cell_spec(dataset, seed, settings)
    return spec, hier_objective(spec, loss, collection.train_labels, seed)


def _triplets(setting: str) -> float:
    """The triplet count a setting names (``triplets 10``), or infinity for another setting."""
    word, _, count = setting.partition(" ")
    return float(count) if word == "triplets" and count.isdigit() else math.inf


def chosen_budget(
    frame: pd.DataFrame, arm: str, criterion: str = "leaf", tolerance: float = 0.005
) -> tuple[str, int]:
    """The budget the rule picks for ``arm`` from :func:`budget_curves`' rows: among its
    settings, the one of the fewest triplets (whatever order the command line gave them in; a
    setting without a triplet count ranks by its first row), and of that setting's reported
    epochs the fewest whose mean over the seeds of ``criterion`` is within ``tolerance`` of the
    best reported one; returns (setting, epoch)."""
    rows = frame[frame["arm"] == arm]
    if rows.empty:
        raise ValueError(f"no rows of arm {arm!r} to choose a budget from")
    if criterion not in rows.columns:
        raise ValueError(f"no score {criterion!r}; the scores are {SCORES}")
    settings = list(dict.fromkeys(str(name) for name in rows["setting"]))
    setting = min(settings, key=lambda name: (_triplets(name), settings.index(name)))
    means = rows[rows["setting"] == setting].groupby("epoch")[criterion].mean()
    within = means[means >= means.max() - tolerance]
    return setting, int(within.index.min())


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
            (
                name,
                lambda t=triplets: hier_cell(
                    collection, config, args.dataset, seed, t, getattr(args, "epochs", None)
                ),
            )
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
    frozen = frozen_scores(collection, aggregation)
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
    parser.add_argument("--epochs", type=int, help="train the HIER-style cells this long")
    parser.add_argument("--criterion", default="leaf", choices=SCORES, help="the rule's score")
    parser.add_argument("--tolerance", type=float, default=0.005, help="the rule's tolerance")
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
    rule = ""
    if args.triplets:
        setting, epoch = chosen_budget(frame, HIER, args.criterion, args.tolerance)
        rule = (
            f"\nThe rule ({args.criterion}, within {args.tolerance:g} of the best): "
            f"{HIER} {setting}, {epoch} epochs.\n"
        )
    show(markdown(frame, heading) + rule, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
