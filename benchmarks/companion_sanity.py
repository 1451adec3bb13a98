"""A case the companion method must solve: class information that only its entailment pairs reveal.

A synthetic collection (issue #33, item 9) of 24 leaf classes under 8 middle and 4 high groups,
20 images per leaf (12 to train on, 2 held-out queries, 6 held-out gallery images). Every class
has a centre in a random 8-D subspace of the 64-D feature space, built down the taxonomy (a high,
a middle and a leaf offset), so that the subspace holds the middle and high structure too. An
instance is its class centre plus a little noise there. Its crop's feature is that point with a
faint background in the 56 other dimensions; its whole image's feature is the same point under a
strong background there. Euclidean retrieval on the frozen image features is poor (the background
dominates every distance); a head that learns from the image -> crop pairs (image -> its own crop,
image -> the crops of K other training images of its leaf) which directions to keep retrieves
well: the pairs alone say which images belong together. Taxonomy pairs are off, so only the
method's own pairs teach it.

The A cells train through the pipeline's own code (``companion_spec``, ``companion_objective``,
``train_cell``). Arms: ``frozen`` (the image features); ``oracle`` (the image features projected
onto the signal subspace, what a head that found exactly it would see); E_A; L_A; and E_S
(Taxonomy-SupCon on the factorial's unit-sphere E head, from the labels) as a reference. The
held-out images are embedded and scored with ``metrics.evaluate`` and ``query_micro`` (mAP;
middle and high count strict positives only): Euclidean distance for frozen, oracle, E_A and
E_S, the hyperboloid's at the learned curvature for L_A. ``--scramble`` is the negative
control: the A cells train on crops permuted across the training rows, so that every pair joins
an image to crops of random classes and nothing can be learned from the pairs (frozen, oracle
and E_S do not read crops and stay as they are).

Diagnostics. ``--crop-share`` and ``--crop-clutter`` make the crops look like images (part of
their own image's background, or a background of their own as strong as an image's); the
images stay the same. The arms E_Acos and L_Acos train the A cells with the angle between the
embeddings in place of the exterior angles (same pairs, NCE, heads and budget): a symmetric
contrastive objective on the same pairs, to tell whether the pairs or the cones fail. Each A
cell also reports its pair geometry after the last epoch (``pair_geometry``). The findings are
in docs/companion_sanity.md.

Run: ``.venv/bin/python benchmarks/companion_sanity.py [--seeds 42 2024 3407] [--epochs 40]
[--report-epochs 10 20] [--lr 1e-3] [--scramble] [--crop-clutter 1] [--markdown FILE]``; prints
mAP per seed, arm and reported epoch, and a table per reported epoch of the means ± sample SD
over the seeds (each seed draws its own collection and trains the cells with it). The defaults
(lr 1e-3, 40 epochs of 9 updates, a 64/16 head) give the cells room to learn; ``--lr 5e-5
--epochs 450 --batch-size 128 --hidden-dim 256 --embedding-dim 32`` is the demo's recipe and
number of updates (900).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from hierbench.cells.checkpoints import embed, learned_curvature
from hierbench.cells.companion import companion_spec
from hierbench.cells.spec import cell_spec
from hierbench.geometry.cones import ACOS_EPS
from hierbench.losses import entailment_fused
from hierbench.losses.entailment_fused import paired_exterior_angles
from hierbench.losses.entailment_objective import companion_objective, running_statistics_kept
from hierbench.losses.entailment_pairs import batch_pairs
from hierbench.metrics import evaluate, mean_hierarchy, summarise
from hierbench.protocol import EUCLIDEAN, HEAD_NAMES, LORENTZ, SUPCON
from hierbench.relations import LEVELS
from hierbench.training.trainer import train_cell

DATASET = "sanity"
LEAVES, LEAVES_PER_MIDDLE, MIDDLES_PER_HIGH = 24, 3, 2  # 24 leaves, 8 middles, 4 highs
TRAIN_PER_LEAF, QUERY_PER_LEAF, GALLERY_PER_LEAF = 12, 2, 6
FEATURE_DIM, SIGNAL_DIM = 64, 8
CENTRE_SCALES = (1.0, 0.7, 0.5)  # spread of the high, middle and leaf offsets per signal dim
INSTANCE_NOISE = 0.25  # an instance's spread around its class centre, per signal dimension
IMAGE_BACKGROUND = 2.0  # a whole image's background, per dimension outside the signal subspace
CROP_BACKGROUND = 0.05  # a crop's faint background there
SUPCON_TAU = 0.2
ARMS = ("frozen", "oracle", "E_A", "L_A", "E_S")
# Diagnostic arms: the A cells with the exterior angles replaced by the angle between the
# embeddings (the same pairs, NCE, heads and budget; a symmetric contrastive objective).
EMBEDDING_ANGLE_ARMS = ("E_Acos", "L_Acos")
GEOMETRY_COLUMNS = ("beyond_entailed", "beyond_other", "ext_entailed", "ext_other")
METHOD_PAIRS = {"boxes": True, "cross_image": 2, "taxonomy": False}


@dataclass(frozen=True)
class Collection:
    """Training images, their crops and (N, 3) leaf/middle/high codes; held-out query and
    gallery images; the orthonormal (FEATURE_DIM, SIGNAL_DIM) basis of the signal subspace."""

    train: np.ndarray
    crops: np.ndarray
    train_labels: np.ndarray
    query: np.ndarray
    query_labels: np.ndarray
    gallery: np.ndarray
    gallery_labels: np.ndarray
    signal: np.ndarray


def taxonomy_labels(per_leaf: int) -> np.ndarray:
    """(LEAVES * per_leaf, 3) leaf, middle and high codes, ``per_leaf`` rows per leaf in order."""
    leaves = np.repeat(np.arange(LEAVES), per_leaf)
    middles = leaves // LEAVES_PER_MIDDLE
    return np.column_stack([leaves, middles, middles // MIDDLES_PER_HIGH]).astype(np.int64)


def class_centres(rng: np.random.Generator) -> np.ndarray:
    """(LEAVES, SIGNAL_DIM) centres: a high offset, plus a middle one, plus a leaf one."""
    codes = taxonomy_labels(1)
    centres = np.zeros((LEAVES, SIGNAL_DIM))
    for level, scale in zip((2, 1, 0), CENTRE_SCALES, strict=True):
        offsets = rng.normal(0.0, scale, (int(codes[:, level].max()) + 1, SIGNAL_DIM))
        centres += offsets[codes[:, level]]
    return centres


def make_collection(seed: int, crop_share: float = 0.0, crop_clutter: float = 0.0) -> Collection:
    """The synthetic collection of one seed (its subspace, centres and every draw).

    A crop is its instance's point, a faint background, ``crop_share`` times its whole image's
    background and ``crop_clutter`` times a background of its own as strong as an image's
    (drawn from a generator of its own, so that the images never depend on either). At 0 and 0
    (the case) the crops show the classes clearly; raising either makes crops look like images:
    at share 1 a crop is a copy of its image, at clutter 1 it looks like another image of the
    same instance.
    """
    for name, value in (("crop_share", crop_share), ("crop_clutter", crop_clutter)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    rng, crop_rng = np.random.default_rng(seed), np.random.default_rng([seed, 1])
    basis, _ = np.linalg.qr(rng.normal(size=(FEATURE_DIM, FEATURE_DIM)))
    signal, background = basis[:, :SIGNAL_DIM], basis[:, SIGNAL_DIM:]
    centres = class_centres(rng)

    def draw(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whole-image and crop features of one instance per label row."""
        points = centres[labels[:, 0]] + rng.normal(0.0, INSTANCE_NOISE, (len(labels), SIGNAL_DIM))
        shape = (len(labels), FEATURE_DIM - SIGNAL_DIM)
        clutter = rng.normal(0.0, IMAGE_BACKGROUND, shape) @ background.T
        faint = rng.normal(0.0, CROP_BACKGROUND, shape) @ background.T
        image = points @ signal.T + clutter
        own = crop_rng.normal(0.0, IMAGE_BACKGROUND, shape) @ background.T
        crop = points @ signal.T + faint + crop_share * clutter + crop_clutter * own
        return image.astype(np.float32), crop.astype(np.float32)

    labels = [taxonomy_labels(n) for n in (TRAIN_PER_LEAF, QUERY_PER_LEAF, GALLERY_PER_LEAF)]
    (train, crops), (query, _), (gallery, _) = (draw(rows) for rows in labels)
    return Collection(train, crops, labels[0], query, labels[1], gallery, labels[2], signal)


def scrambled(collection: Collection, seed: int) -> Collection:
    """The negative control: crops permuted across the training rows, so that an image's own
    crop and its partners' crops belong to random classes."""
    order = np.random.default_rng(seed).permutation(len(collection.crops))
    return replace(collection, crops=collection.crops[order])


def sanity_config(
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    hidden_dim: int = 64,
    embedding_dim: int = 16,
    pairs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The resolved-config blocks the cells' specs and the objective read: the factorial's
    optimiser settings at the given budget, a small head, the method's own pairs by default."""
    return {
        "companion": {
            "enabled": True,
            "temperature": 0.07,
            "init_seed": 20251019,
            "pairs": dict(METHOD_PAIRS if pairs is None else pairs),
        },
        "training": {
            "seeds": [],
            "epochs": epochs,
            "batch_size": batch_size,
            "lr": lr,
            "weight_decay": 1e-4,
            "grad_clip": 1.0,
            "regression_targets": {"c": 0.2, "m": 0.5, "h": 0.8, "o": 1.0},
            "supcon_weights": {"c": 1.0, "m": 1.0, "h": 1.0},
            "distance_clip_train": 20.0,
        },
        "head": {"hidden_dim": hidden_dim, "embedding_dim": embedding_dim, "dropout": 0.1},
        "datasets": {DATASET: {"hyperbolic": {"curvature": 1.0, "radius": 0.4}}},
    }


def retrieval(
    collection: Collection,
    query: np.ndarray,
    gallery: np.ndarray,
    geometry: str = HEAD_NAMES[EUCLIDEAN],
    curvature: float | None = None,
    aggregation: str = "query_micro",
) -> dict[str, float]:
    """mAP at each level and the mean hierarchy mAP of held-out embeddings, under the named
    aggregation (query-micro by default)."""
    frame = evaluate(
        query,
        gallery,
        collection.query_labels,
        collection.gallery_labels,
        geometry=geometry,
        curvature=curvature,
    )
    summary = summarise(frame, collection.query_labels, aggregation).set_index("level")["map"]
    return {level: float(summary[level]) for level in LEVELS} | {
        "mean_hierarchy": mean_hierarchy(summary.reset_index())
    }


def held_out_scores(
    collection: Collection, model: torch.nn.Module, spec: Any, aggregation: str
) -> dict[str, float]:
    """The retrieval scores of a trained cell's embeddings of the held-out images, by its
    head's distance (at its learned curvature)."""
    return retrieval(
        collection,
        embed(model, collection.query),
        embed(model, collection.gallery),
        HEAD_NAMES[spec.geometry],
        learned_curvature(model, spec),
        aggregation,
    )


def arm_scores(
    arm: str,
    collection: Collection,
    seed: int,
    config: dict[str, Any],
    report_epochs: tuple[int, ...] = (),
    *,
    dataset: str = DATASET,
    aggregation: str = "query_micro",
) -> dict[int, dict[str, float]]:
    """Train one arm on the collection (nothing to train for frozen and oracle) and score its
    retrieval of the held-out images after each of ``report_epochs`` (default: the last).
    ``dataset`` names the config's dataset block the cells' specs read."""
    epochs = report_epochs or (int(config["training"]["epochs"]),)
    if arm in ("frozen", "oracle"):
        basis = collection.signal if arm == "oracle" else np.eye(collection.train.shape[1])
        scores = retrieval(
            collection,
            collection.query @ basis,
            collection.gallery @ basis,
            aggregation=aggregation,
        )
        return dict.fromkeys(epochs, scores)
    if arm not in (*ARMS, *EMBEDDING_ANGLE_ARMS):
        raise ValueError(f"unknown arm {arm!r}; the arms are {(*ARMS, *EMBEDDING_ANGLE_ARMS)}")
    spec, objective = arm_spec(arm, collection, seed, config, dataset)
    if max(epochs) > spec.epochs:
        raise ValueError(f"report epochs {epochs} go past the {spec.epochs} epochs trained")
    scores: dict[int, dict[str, float]] = {}

    def score(epoch: int, model: Any) -> dict[str, float]:
        """Held-out scores after a reported epoch (eval mode; training sets train mode again
        before the next epoch, and neither embedding nor scoring draws random numbers)."""
        if epoch in epochs:
            scores[epoch] = held_out_scores(collection, model, spec, aggregation)
        if epoch == spec.epochs and objective is not None:  # nothing trains after it
            scores[epoch] |= pair_geometry(model, objective, collection.train)
        return {}

    train_arm(arm, collection, spec, objective, on_epoch=score)
    return scores


def arm_spec(
    arm: str, collection: Collection, seed: int, config: dict[str, Any], dataset: str
) -> tuple[Any, Any]:
    """An arm's cell spec and objective, as the pipeline builds them (``companion_spec``,
    ``companion_objective``; E_S: ``cell_spec`` at the sanity τ, no objective of its own)."""
    geometry, loss = arm.split("_")
    if loss == SUPCON:
        return cell_spec(dataset, geometry, loss, seed, config, tau=SUPCON_TAU), None
    spec = companion_spec(dataset, geometry, seed, config)
    return spec, companion_objective(spec, config, collection.train_labels, collection.crops)


def train_arm(
    arm: str, collection: Collection, spec: Any, objective: Any, on_epoch: Any = None
) -> Any:
    """Train one arm's cell on the collection's training rows with the pipeline's
    ``train_cell`` (the embedding-angle arms with their angle swapped in); the result."""
    with (
        mock.patch.object(entailment_fused, "paired_exterior_angles", embedding_angles)
        if arm in EMBEDDING_ANGLE_ARMS
        else contextlib.nullcontext()
    ):
        return train_cell(
            collection.train, collection.train_labels, spec, objective=objective, on_epoch=on_epoch
        )


GEOMETRY_BATCHES, GEOMETRY_BATCH_SIZE = 8, 32


@torch.no_grad()
def pair_geometry(model: torch.nn.Module, objective: Any, train: np.ndarray) -> dict[str, float]:
    """How loss A's pairs lie under the trained head, as training sees them (train mode, batch
    statistics; the running ones are kept), over ``GEOMETRY_BATCHES`` training batches of 32
    rows of a fixed draw: the share of entailed and of other (image, crop) pairs whose crop lies
    farther from the origin than the image (what the cones need), and their mean exterior angle
    ext(image, crop) (small: the crop is in the image's cone)."""
    model.train()
    draw = torch.randperm(len(train), generator=torch.Generator().manual_seed(0))
    features, sums = torch.as_tensor(train), np.zeros(4)
    rows = draw[: GEOMETRY_BATCHES * GEOMETRY_BATCH_SIZE].view(GEOMETRY_BATCHES, -1)
    for batch in rows:
        pairs = batch_pairs(
            batch, objective.groups[batch], objective.sources, objective.partners, None
        )
        with running_statistics_kept(model):
            images = model(features[batch])
            crops = model(objective.crops.index_select(0, pairs.crop_rows))
        curvature = model.curvature if objective.geometry == LORENTZ else None
        angles, _ = paired_exterior_angles(images, crops, curvature)
        beyond = crops.norm(dim=1)[None, :] > images.norm(dim=1)[:, None]
        entails = pairs.entails
        sums += [
            beyond[entails].double().mean(),
            beyond[~entails].double().mean(),
            angles[entails].mean(),
            angles[~entails].mean(),
        ]
    return dict(zip(GEOMETRY_COLUMNS, sums / GEOMETRY_BATCHES, strict=True))


def embedding_angles(
    parents: torch.Tensor, children: torch.Tensor, curvature: Any = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The diagnostic stand-in for the exterior angles: θ, the angle between parent and child
    embeddings, as ext(p, q), and π − θ as ext(q, p), so that loss A's two terms both reward an
    aligned pair and neither asks a parent to lie nearer the origin than its children."""
    cosine = F.normalize(parents, dim=1) @ F.normalize(children, dim=1).T
    angle = torch.acos(cosine.clamp(-1.0 + ACOS_EPS, 1.0 - ACOS_EPS))
    return angle, math.pi - angle


def run(
    seeds: list[int],
    config: dict[str, Any],
    arms: tuple[str, ...] = ARMS,
    *,
    scramble: bool = False,
    crop_share: float = 0.0,
    crop_clutter: float = 0.0,
    report_epochs: tuple[int, ...] = (),
) -> pd.DataFrame:
    """mAP per seed, arm and reported epoch, rows in that order (a seed draws both the
    collection and the cells' initialisation and batches)."""
    rows = []
    for seed in seeds:
        collection = make_collection(seed, crop_share, crop_clutter)
        if scramble:
            collection = scrambled(collection, seed)
        for arm in arms:
            for epoch, scores in arm_scores(arm, collection, seed, config, report_epochs).items():
                rows.append({"seed": seed, "arm": arm, "epoch": epoch, **scores})
    return pd.DataFrame(rows)


def updates_per_epoch(batch_size: int) -> int:
    """Optimiser updates per epoch on the training rows (full batches only, as trained)."""
    return len(taxonomy_labels(TRAIN_PER_LEAF)) // batch_size


def markdown(frame: pd.DataFrame, heading: str, batch_size: int) -> str:
    """Markdown tables of each arm's mean mAP ± sample SD over the seeds, per level: one per
    reported epoch, the last first."""
    columns = [*LEVELS, "mean_hierarchy"]
    lines = [heading]
    for epoch in sorted(frame["epoch"].unique(), reverse=True):
        updates = int(epoch) * updates_per_epoch(batch_size)
        lines += ["", f"After epoch {epoch} ({updates} updates):", ""]
        lines += [f"| arm | {' | '.join(columns)} |", "|---" * (len(columns) + 1) + "|"]
        for arm, rows in frame[frame["epoch"] == epoch].groupby("arm", sort=False):
            means, spread = rows[columns].mean(), rows[columns].std(ddof=1)
            cells = [f"{means[c]:.4f} ± {spread[c]:.4f}" for c in columns]
            lines.append(f"| {arm} | {' | '.join(cells)} |")
    return "\n".join(lines + geometry_table(frame)) + "\n"


def geometry_table(frame: pd.DataFrame) -> list[str]:
    """Lines of a Markdown table of the A cells' pair geometry after the last epoch (means over
    the seeds), none when the frame has no A cell."""
    if not set(GEOMETRY_COLUMNS) <= set(frame.columns):
        return []
    rows = frame.dropna(subset=list(GEOMETRY_COLUMNS))
    lines = [
        "",
        f"Pair geometry after the last epoch (train mode, {GEOMETRY_BATCHES} training batches "
        f"of {GEOMETRY_BATCH_SIZE}; means over the seeds):",
        "",
        "| arm | crop beyond image: entailed | other | ext(image, crop): entailed | other |",
        "|---|---|---|---|---|",
    ]
    for arm, group in rows.groupby("arm", sort=False):
        means = group[list(GEOMETRY_COLUMNS)].mean()
        lines.append(f"| {arm} | " + " | ".join(f"{means[c]:.2f}" for c in GEOMETRY_COLUMNS) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Train and score the arms; print the per-seed rows and the tables (``--markdown`` also
    writes the tables to a file)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 2024, 3407])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--report-epochs", type=int, nargs="+", default=[])
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden-dim", type=int, default=64)
    parser.add_argument("--embedding-dim", type=int, default=16)
    parser.add_argument("--no-boxes", action="store_true", help="without image -> own crop pairs")
    parser.add_argument("--cross-image", type=int, default=METHOD_PAIRS["cross_image"])
    parser.add_argument("--taxonomy", action="store_true", help="add our taxonomy pairs")
    parser.add_argument(
        "--arms", nargs="+", choices=(*ARMS, *EMBEDDING_ANGLE_ARMS), default=list(ARMS)
    )
    parser.add_argument("--scramble", action="store_true", help="crops permuted across rows")
    parser.add_argument("--crop-share", type=float, default=0.0, help="image background in crops")
    parser.add_argument("--crop-clutter", type=float, default=0.0, help="own background of crops")
    parser.add_argument("--markdown", type=Path, help="write the tables to this Markdown file")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (tiny matrices)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = {"boxes": not args.no_boxes, "cross_image": args.cross_image, "taxonomy": args.taxonomy}
    config = sanity_config(
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        hidden_dim=args.hidden_dim,
        embedding_dim=args.embedding_dim,
        pairs=pairs,
    )
    report_epochs = tuple(sorted({*args.report_epochs, args.epochs}))
    frame = run(
        args.seeds,
        config,
        tuple(args.arms),
        scramble=args.scramble,
        crop_share=args.crop_share,
        crop_clutter=args.crop_clutter,
        report_epochs=report_epochs,
    )
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    heading = (
        f"Held-out mAP (query-micro) on the synthetic collection; seeds {args.seeds}; "
        f"{args.epochs} epochs of {updates_per_epoch(args.batch_size)} updates, lr {args.lr:g}, "
        f"batch {args.batch_size}, head {args.hidden_dim}/{args.embedding_dim}; pairs {pairs}"
        f"; crop share {args.crop_share:g}, crop clutter {args.crop_clutter:g}"
        f"{'; crops scrambled across rows' if args.scramble else ''}."
    )
    show(markdown(frame, heading, args.batch_size), args.markdown)
    return 0


def show(tables: str, path: Path | None) -> None:
    """Print the Markdown tables, and write them to ``path`` when one is given."""
    print(tables)
    if path is not None:
        path.write_text(tables, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
