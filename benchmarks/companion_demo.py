"""What the companion cells learn on a run's own features, per pair source and per level.

Issue #33, item 9, its demo half: the A cells (E_A, L_A) of a built run are trained again on the
development side only (``tuning/train``, with the crops' features of the same rows), once per
pair source, and their embeddings of the validation images (``tuning/query`` against
``tuning/gallery``, never the sealed test) are scored beside the frozen features, at each level
under the dataset's registered aggregation. The cells train on ``tuning/train``, not on the
pipeline's ``final/train``: ``final/train`` holds the validation images too, and a cell scored on
images it trained on looks far better than it is (issue #50: on the CUB demo E_A's leaf mAP was
0.91 on its own training images against 0.22 held out). The cells train through the pipeline's
own code (``companion_spec``, ``companion_objective``, ``train_cell``) with the run config's
recipe; only
``companion.pairs`` changes between the sources. Each A cell also reports its pair geometry after
the last epoch (``companion_sanity.pair_geometry``): how often a crop lies farther out than its
image, for entailed pairs and for the others, and their mean exterior angle.

The frozen features are scored as the sealed evaluation scores them: L2-normalised, Euclidean
(``frozen_scores``). Two controlled variants of the method's own pairs (issue #60) train beside
the pair sources: ``no_scale``, L_A with the Lorentz head's tangent scale (meru's α) held at 1;
and ``middle_partners``, each image's K cross-image partners drawn among the other images of
its middle group that are of another leaf (its strict middle positives) instead of its leaf's,
to test whether the method's pairs lift only the leaf because they carry only leaf identity.

Run, after the run's development features exist (for the demo:
``snakemake results/cub/features/dev.parquet results/cub/features/dev_crops.parquet``):
``.venv/bin/python benchmarks/companion_demo.py [--config config.yaml] [--dataset cub]
[--seeds 42] [--sources method no_scale middle_partners boxes cross_image taxonomy all]
[--markdown FILE]``.
The findings are in docs/companion_sanity.md.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from companion_sanity import Collection, arm_scores, geometry_table, retrieval, show

from hierbench.config import load_config
from hierbench.features.store import role_arrays
from hierbench.geometry.lorentz import LorentzHead
from hierbench.losses import entailment_objective
from hierbench.losses.entailment_pairs import NO_PARTNER
from hierbench.metrics.scoring import l2_normalised
from hierbench.protocol import REGISTERED_AGGREGATION
from hierbench.relations import LEVELS
from hierbench.runs import run_folder

TRAIN_ROLE, QUERY_ROLE, GALLERY_ROLE = (
    ("tuning", "train"),
    ("tuning", "query"),
    ("tuning", "gallery"),
)
# The pair sources compared: the method's own two together, each source alone, and all three
# (the pipeline's default).
SOURCES: dict[str, dict[str, Any]] = {
    "method": {"boxes": True, "cross_image": 2, "taxonomy": False},
    "boxes": {"boxes": True, "cross_image": 0, "taxonomy": False},
    "cross_image": {"boxes": False, "cross_image": 2, "taxonomy": False},
    "taxonomy": {"boxes": False, "cross_image": 0, "taxonomy": True},
    "all": {"boxes": True, "cross_image": 2, "taxonomy": True},
}
# Controlled variants of the method's own pairs (``variant`` says what each changes) and the
# arms each applies to: the tangent scale exists on the L head only.
VARIANTS: dict[str, tuple[str, ...]] = {"no_scale": ("L_A",), "middle_partners": ("E_A", "L_A")}
A_ARMS = ("E_A", "L_A")


def frozen_scores(collection: Collection, aggregation: str) -> dict[str, float]:
    """The frozen features' validation scores as the sealed evaluation scores them: rows
    L2-normalised, Euclidean distance (``stages.evaluation``'s frozen baseline)."""
    return retrieval(
        collection,
        l2_normalised(collection.query),
        l2_normalised(collection.gallery),
        aggregation=aggregation,
    )


def strict_middle_partners(labels: np.ndarray, k: int, generator: torch.Generator) -> torch.Tensor:
    """(N, k) partner rows like ``cross_image_partners``, drawn among the other rows of the
    row's middle group that are of another leaf (``labels`` (N, 3) leaf, middle, high codes),
    without replacement; ``NO_PARTNER`` where there are fewer than k such rows."""
    partners = torch.full((len(labels), k), NO_PARTNER, dtype=torch.long)
    for row in range(len(labels)):
        leaf, middle = labels[row, 0], labels[row, 1]
        pool = np.flatnonzero((labels[:, 1] == middle) & (labels[:, 0] != leaf))
        order = torch.randperm(len(pool), generator=generator)[:k]
        partners[row, : len(order)] = torch.as_tensor(pool[order.numpy()])
    return partners


@contextlib.contextmanager
def variant(name: str, labels: np.ndarray) -> Iterator[None]:
    """Within the block, the cells train and embed as the variant ``name`` asks (nothing
    changes for a pair source)."""
    if name == "no_scale":
        unit = property(lambda head: torch.ones((), dtype=head.log_tangent_scale.dtype))
        with mock.patch.object(LorentzHead, "tangent_scale", unit):
            yield
    elif name == "middle_partners":

        def draw(_leaves: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
            return strict_middle_partners(labels, k, generator)

        with mock.patch.object(entailment_objective, "cross_image_partners", draw):
            yield
    else:
        yield


def development_collection(
    run: Path, dataset: str, train_role: tuple[str, str] = TRAIN_ROLE
) -> Collection:
    """The development side's training images and crops (``train_role``: the tuning split's
    train side, which holds no validation image), and the validation query and gallery images,
    from a run's feature and split artifacts (``signal``: the identity, no oracle)."""
    folder = run / dataset
    splits = folder / "splits" / "dev.parquet"
    roles = [train_role, QUERY_ROLE, GALLERY_ROLE]
    (train, labels), (query, query_labels), (gallery, gallery_labels) = role_arrays(
        folder / "features" / "dev.parquet", splits, roles
    )
    (crops, crop_labels), *_ = role_arrays(folder / "features" / "dev_crops.parquet", splits, roles)
    if not np.array_equal(crop_labels, labels):
        raise ValueError(f"{folder / 'features'}: crops and images disagree on the train labels")
    return Collection(
        train, crops, labels, query, query_labels, gallery, gallery_labels, np.eye(train.shape[1])
    )


def run_sources(
    collection: Collection,
    config: dict[str, Any],
    dataset: str,
    seeds: list[int],
    sources: list[str],
) -> pd.DataFrame:
    """Validation mAP per seed, pair source (or variant of the method's pairs) and arm (frozen
    once per seed, as the sealed evaluation scores it), in that order."""
    aggregation = REGISTERED_AGGREGATION.get(dataset, "query_micro")
    rows = []
    for seed in seeds:
        frozen = frozen_scores(collection, aggregation)
        rows.append({"seed": seed, "source": "-", "arm": "frozen", **frozen})
        for source in sources:
            settings = copy.deepcopy(config)
            settings["companion"]["pairs"] = dict(SOURCES.get(source, SOURCES["method"]))
            arms = VARIANTS.get(source, A_ARMS)
            for arm in arms:
                with variant(source, collection.train_labels):
                    scores = arm_scores(
                        arm, collection, seed, settings, dataset=dataset, aggregation=aggregation
                    )
                rows.append({"seed": seed, "source": source, "arm": arm, **scores.popitem()[1]})
                print(f"seed {seed} {source:<11} {arm}: {rows[-1]['mean_hierarchy']:.4f}")
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame, heading: str) -> str:
    """A Markdown table of mean mAP ± sample SD over the seeds per source and arm, then the A
    cells' pair geometry."""
    columns = [*LEVELS, "mean_hierarchy"]
    lines = [heading, "", f"| source | arm | {' | '.join(columns)} |"]
    lines.append("|---" * (len(columns) + 2) + "|")
    for (source, arm), rows in frame.groupby(["source", "arm"], sort=False):
        means, spread = rows[columns].mean(), rows[columns].std(ddof=1)
        cells = [
            f"{means[c]:.4f}" + ("" if len(rows) < 2 else f" ± {spread[c]:.4f}") for c in columns
        ]
        lines.append(f"| {source} | {arm} | {' | '.join(cells)} |")
    labelled = frame.assign(arm=frame["source"] + " " + frame["arm"])
    return "\n".join(lines + geometry_table(labelled)) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Train the A cells per source on a run's development features and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("config.yaml"))
    parser.add_argument("--dataset", default="cub")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    choices = [*SOURCES, *VARIANTS]
    parser.add_argument("--sources", nargs="+", choices=choices, default=choices)
    parser.add_argument("--markdown", type=Path, help="write the table to this Markdown file")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = load_config(args.config)
    run = run_folder(config)
    collection = development_collection(Path(run), args.dataset)
    frame = run_sources(collection, config, args.dataset, args.seeds, args.sources)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    aggregation = REGISTERED_AGGREGATION.get(args.dataset, "query_micro")
    training = config["training"]
    heading = (
        f"Validation mAP ({aggregation}) of {args.dataset} in {run} ({args.config}): "
        f"{len(collection.train)} tuning/train images, {len(collection.query)} tuning queries, "
        f"{len(collection.gallery)} gallery images; seeds {args.seeds}; the config's recipe "
        f"({training['epochs']} epochs, batch {training['batch_size']}, lr {training['lr']:g})."
    )
    show(markdown(frame, heading), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
