"""Coverage of the effects' intervals in simulated studies that try to break them (issue #61),
each study going the pipeline's own way from per-query rows to the planned endpoint's interval.

**A study.** One dataset of the four paired arms E_R, E_S, H_R, H_S, trained with ``n`` seeds
(3, 5 or 10), each seed's embeddings scored on three query/gallery draws of one test set: 24
leaves under 8 middle groups (two of a single leaf, whose queries are not valid at the middle
level) under 3 high groups. Every leaf has 8 query images, of which each draw takes 3 (fixed
draws, so they overlap as the real ones do), and 6 gallery images, of which each draw takes 4:
72 queries against 96 gallery items per draw. An image's embedding under an arm and seed is

    quality(arm, seed) · centre(arm, leaf) + its latent view under the arm + noise(arm, seed, image)

with the H arms' middle and high centres 1 + GAIN times the E arms' (the modest effect), the
latent shared by every seed (the test images' shared noise) and partly by the arms, and the
noise what each seed makes of each image. The per-query AP comes from ranking the gallery by
Euclidean distance (exact AP under the engine's rule, checked against
``hierbench.metrics.evaluate`` on every run), so it is bounded and skewed as real AP is.

**The pipeline's path.** The per-query rows (the eval layout: image_id, query, level, group,
valid, ap, qg_seed, dataset, arm, geometry, loss, seed; many studies per frame as separate
datasets) and their query-micro summaries go through what the tables stage calls:
``per_seed_from_evaluations``, ``query_noise_table``, ``effects_by_seed`` and
``effects_summary`` (given the endpoint's rows only; its rows are the same as in the whole
table). The figure is ``geom_R`` (H_R − E_R) on mAP at mean hierarchy; ``int`` beside it in the
note.

**The truth** is what the interval is about (docs/protocol.md): the effect for new query
images of the same leaves and new training seeds, the draws, their galleries and the classes
held fixed, weighed as the draws weigh them (each leaf by its valid queries in each draw). It
is the mean of the same generator over ``truth_samples`` fresh seeds, each scoring all 192
query images of a fresh test set on every draw (an image of a leaf stands for any of that
leaf's slots); its Monte-Carlo SE is in each row's note.

**Regimes.** normal (seeds' quality normal, arms independent); heavy-tailed seeds (t, 3 df, the
same SD); rare failing seeds (each hyperbolic arm's seed collapses with probability
FAILURE_RATE, its class structure shrunk to COLLAPSE); skewed per-query effects (1 % or 3 % of
test images carry the whole effect: the E arms place them in a wrong high group, the H arms
tightly at their leaf, a per-query effect of about 0.2 on mean hierarchy AP, some eight SDs of
the other images' contrasts, which carry none; and 1 % that dominate the test images' variance,
every arm seeing the other images nearly alike); unequal and correlated arms (the seeds' quality
correlated 0.8 across the arms of a seed, the H arms' spread three times the E arms'); seed ×
leaf interaction (each arm and seed moves each leaf's centre). Each coverage row: the coverage
of the 95 % interval (goal: within 0.93–0.97, as |coverage − 0.95| ≤ 0.02), and in its note the
Monte-Carlo SE, the power (share of studies whose interval excludes zero) with its SE, ``int``'s
coverage and the median ratio V/(s²/n). In the failing regime a second coverage row holds the
interval over the seeds that trained (summary.md's second estimand: the config's failed-seed
rule, here its outlier test alone, sets cells aside) against its own truth, the effect among
seeds that train (the normal regime's, which is the failing one without failures), with how
often the rule set a cell aside in studies with and without a collapsed seed. Each detector row:
how often ``hierbench.effects.noise_regimes`` names a regime for the endpoint (goal ≤ 0.1 under
normal), and in its note each regime's rate, the rate in the studies that hold the regime's
event (a special image among the queries, a collapsed H_R seed) and the coverage where nothing
is named.

Run: ``.venv/bin/python benchmarks/coverage.py [--studies 600]`` (the full size: about 16
minutes on 2 cores; ``--studies 16``, the quick one, about 35 s). Studies run in one process
per core, each chunk of CHUNK studies with its own seed, so the numbers do not depend on the
number of processes.
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller exports another count: the studies run in one process per
# core, and idle OpenBLAS threads spin on the cores the others need (set before NumPy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import functools
import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from benchrows import Row, row

from hierbench.effects.failed_seeds import FailureRule, failed_cells, trained_seed_values
from hierbench.effects.formulas import effect_formulas
from hierbench.effects.intervals import IntervalSettings, shared_variance, t_interval
from hierbench.effects.noise_regimes import FEW_IMAGES, OUTLYING_SEED, noise_regimes
from hierbench.effects.query_intervals import query_noise_table
from hierbench.effects.statistics import (
    effects_by_seed,
    effects_summary,
    per_seed_from_evaluations,
)
from hierbench.metrics import evaluate
from hierbench.protocol import MEAN_HIERARCHY
from hierbench.relations import LEVELS

LEVEL = 0.95
GOAL = "<= 0.02"  # |coverage − 0.95|
SEED_COUNTS = (3, 5, 10)
ENDPOINT, BESIDE = "geom_R", "int"
METRIC = "map"
AGGREGATION = "query_micro"

ARMS = ("E_R", "E_S", "H_R", "H_S")
HYPERBOLIC = np.array([arm.startswith("H") for arm in ARMS])
DIM = 8
MIDDLE_LEAVES = (6, 1, 5, 2, 1, 4, 3, 2)  # leaves under each middle group
MIDDLE_HIGH = (0, 0, 1, 1, 1, 2, 2, 2)  # each middle group's high group
LEAVES = sum(MIDDLE_LEAVES)
QUERY_SLOTS, GALLERY_POOL = 8, 6  # per leaf: query images (new per study), gallery (fixed)
QUERIES_PER_LEAF, GALLERY_PER_LEAF = 3, 4  # per leaf and draw
DRAW_SEEDS = (42, 2024, 3407)
CENTRE_SD = (0.5, 0.7, 1.0)  # the leaf, middle and high centres' spread
GAIN = 0.04  # the H arms' middle and high centres are 1 + GAIN times the E arms'
SEED_SD = 0.02  # the spread of a seed's quality
IMAGE_SD, ARM_SHARE = 1.0, 0.95  # an image's latent, and the part every arm sees alike
NOISE_SD = 0.2  # what each seed makes of each image
SPECIAL_SPREAD = 0.1  # a special image's latent and noise under the H arms (the E arms move it)
COLLAPSE = 0.6  # a failed seed's class structure
DOMINANT_SHARE = 0.999  # the other images' latent seen alike by every arm: their contrasts shrink
FAILURE_RATE = 0.05
REPLICATES = 1000  # query resamples per study
CHUNK = 24  # studies per frame handed to the pipeline
FAILURE_RULE = FailureRule(flat_loss=False)  # the config's default outlier level, no curves
TRAINED_TRUTH = "seeds that train"  # the truths' key of the failing regime's second estimand


@dataclass(frozen=True)
class Regime:
    """How the simulated studies break the interval's model."""

    name: str
    heavy_tails: bool = False  # the seeds' quality t(3) instead of normal
    failure_rate: float = 0.0  # chance that a hyperbolic arm's seed collapses
    special_share: float = 0.0  # share of test images with a large per-query effect
    arm_correlation: float = 0.0  # of the seeds' quality across a seed's arms
    arm_scales: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)  # the arms' quality spread
    leaf_interaction: float = 0.0  # SD of a seed's move of each leaf's centre
    gain: float = GAIN  # the H arms' gain on the middle and high centres, for every image
    arm_share: float = ARM_SHARE  # of an image's latent that every arm sees alike


REGIMES: dict[str, Regime] = {
    regime.name: regime
    for regime in (
        Regime("normal"),
        Regime("heavy-tailed seeds (t, 3 df)", heavy_tails=True),
        Regime("rare failing seeds", failure_rate=FAILURE_RATE),
        Regime("1 % of images carry the effect", special_share=0.01, gain=0.0),
        Regime("3 % of images carry the effect", special_share=0.03, gain=0.0),
        Regime(
            "1 % of images dominate the test images' variance",
            special_share=0.01,
            gain=0.0,
            arm_share=DOMINANT_SHARE,
        ),
        Regime("unequal, correlated arms", arm_correlation=0.8, arm_scales=(1.0, 1.0, 3.0, 3.0)),
        Regime("seed × leaf interaction", leaf_interaction=0.15),
    )
}


@dataclass(frozen=True)
class TestSet:
    """What every study shares: the classes, the galleries and the three draws."""

    labels: np.ndarray  # (LEAVES, 3) leaf, middle, high of each leaf
    hierarchy: np.ndarray  # (LEAVES, DIM) each leaf's middle + high centre
    leaf_centres: np.ndarray  # (LEAVES, DIM)
    wrong: np.ndarray  # (LEAVES, DIM) where a special image is moved: to another high group
    gallery_latent: np.ndarray  # (LEAVES·GALLERY_POOL, DIM) the gallery images' latents
    queries: np.ndarray  # (draws, Q) each draw's query slots
    gallery: np.ndarray  # (draws, G) each draw's gallery images
    positives: np.ndarray  # (draws, levels, slots, G) strict positives of every query slot
    query_leaf: np.ndarray = field(repr=False)  # (slots,) each query slot's leaf
    gallery_leaf: np.ndarray = field(repr=False)  # (pool,) each gallery image's leaf

    @classmethod
    def make(cls, seed: int = 99) -> TestSet:
        """The fixed classes, galleries and draws (the same in every study and the truth)."""
        rng = np.random.default_rng(seed)
        middle = np.repeat(np.arange(len(MIDDLE_LEAVES)), MIDDLE_LEAVES)
        high = np.asarray(MIDDLE_HIGH)[middle]
        labels = np.stack([np.arange(LEAVES), middle, high], axis=1)
        leaf_sd, middle_sd, high_sd = CENTRE_SD
        highs = rng.normal(0, high_sd, (max(MIDDLE_HIGH) + 1, DIM))
        middles = rng.normal(0, middle_sd, (len(MIDDLE_LEAVES), DIM))
        leaf_centres = rng.normal(0, leaf_sd, (LEAVES, DIM))
        hierarchy = highs[high] + middles[middle]
        centres = hierarchy + leaf_centres
        other = np.array([rng.choice(np.flatnonzero(high != high[leaf])) for leaf in range(LEAVES)])
        pool = LEAVES * GALLERY_POOL
        query_leaf = np.repeat(np.arange(LEAVES), QUERY_SLOTS)
        gallery_leaf = np.repeat(np.arange(LEAVES), GALLERY_POOL)
        queries, gallery = [], []
        for _ in DRAW_SEEDS:
            queries.append(_per_leaf(rng, QUERY_SLOTS, QUERIES_PER_LEAF))
            gallery.append(_per_leaf(rng, GALLERY_POOL, GALLERY_PER_LEAF))
        positives = np.stack(
            [_strict_positives(labels[query_leaf], labels[gallery_leaf[g]]) for g in gallery]
        )
        return cls(
            labels,
            hierarchy,
            leaf_centres,
            centres[other] - centres,
            rng.normal(0, IMAGE_SD, (pool, DIM)),
            np.stack(queries),
            np.stack(gallery),
            positives,
            query_leaf,
            gallery_leaf,
        )


def _per_leaf(rng: np.random.Generator, pool: int, taken: int) -> np.ndarray:
    """``taken`` of each leaf's ``pool`` images, as indices into all leaves' images."""
    return np.concatenate(
        [np.sort(rng.choice(pool, taken, replace=False)) + pool * leaf for leaf in range(LEAVES)]
    )


def _strict_positives(query_labels: np.ndarray, gallery_labels: np.ndarray) -> np.ndarray:
    """(levels, Q, G) the strict positives (same leaf; same middle, other leaf; same high,
    other middle) of each query among the gallery items."""
    same = [query_labels[:, k, None] == gallery_labels[None, :, k] for k in range(len(LEVELS))]
    return np.stack([same[0], same[1] & ~same[0], same[2] & ~same[1]])


def average_precision(
    queries: np.ndarray, gallery: np.ndarray, positives: np.ndarray
) -> np.ndarray:
    """(B, levels, Q) exact AP of queries (B, Q, D) against galleries (B, G, D) whose strict
    positives at each level are ``positives`` (levels, Q, G): the gallery ranked by Euclidean
    distance, ties by gallery index (the engine's rule); NaN where a query has no positive."""
    squared = (
        np.einsum("bqd,bqd->bq", queries, queries)[:, :, None]
        + np.einsum("bgd,bgd->bg", gallery, gallery)[:, None, :]
        - 2 * queries @ gallery.transpose(0, 2, 1)
    )
    order = np.argsort(squared, axis=-1, kind="stable")
    relation = np.full(positives.shape[1:], len(positives), dtype=np.int8)  # "other"
    for level, chosen in enumerate(positives):
        relation[chosen] = level
    ranked = np.take_along_axis(np.broadcast_to(relation, squared.shape), order, axis=-1)
    ranks = np.arange(1, squared.shape[-1] + 1, dtype=np.float64)
    found = []
    for level in range(len(positives)):
        relevant = ranked == level
        precision = np.cumsum(relevant, axis=-1, dtype=np.int32) / ranks
        with np.errstate(invalid="ignore", divide="ignore"):
            found.append(np.where(relevant, precision, 0.0).sum(axis=-1) / relevant.sum(axis=-1))
    return np.stack(found, axis=1)


@dataclass(frozen=True)
class Studies:
    """Simulated studies' per-query AP and what the generator knows about them."""

    ap: np.ndarray  # (N, arms, seeds, draws, levels, Q)
    special: np.ndarray  # (N, slots) which query images carry the large effect
    collapsed: np.ndarray  # (N, arms, seeds) which seeds of which arms failed


def _seed_noise(rng: np.random.Generator, regime: Regime, shape: tuple[int, ...]) -> np.ndarray:
    """Standardised draws of the seeds' quality: normal, or t(3) scaled to SD 1."""
    if regime.heavy_tails:
        return rng.standard_t(3, shape) / np.sqrt(3.0)
    return rng.standard_normal(shape)


def _qualities(
    rng: np.random.Generator, regime: Regime, studies: int, seeds: int
) -> tuple[np.ndarray, np.ndarray]:
    """(N, arms, seeds) each seed's quality factor per arm, and which ones collapsed."""
    common = _seed_noise(rng, regime, (studies, 1, seeds))
    own = _seed_noise(rng, regime, (studies, len(ARMS), seeds))
    rho = regime.arm_correlation
    spread = np.asarray(regime.arm_scales)[None, :, None]
    quality = 1 + SEED_SD * spread * (np.sqrt(rho) * common + np.sqrt(1 - rho) * own)
    failed = rng.random((studies, len(ARMS), seeds)) < regime.failure_rate
    collapsed = failed & HYPERBOLIC[None, :, None]
    return np.where(collapsed, COLLAPSE * quality, quality), collapsed


def simulate(
    test: TestSet,
    regime: Regime,
    studies: int,
    seeds: int,
    rng: np.random.Generator,
    every_slot: bool = False,
) -> Studies:
    """Per-query AP of ``studies`` fresh studies (new query images and seeds): each draw's
    queries, or with ``every_slot`` every query slot against every draw's gallery (the
    truth's samples)."""
    quality, collapsed = _qualities(rng, regime, studies, seeds)
    slots = len(test.query_leaf)
    shared = rng.standard_normal((studies, 1, slots, DIM))
    views = rng.standard_normal((studies, len(ARMS), slots, DIM))
    share = regime.arm_share
    latent = IMAGE_SD * (np.sqrt(share) * shared + np.sqrt(1 - share) * views)
    special = rng.random((studies, slots)) < regime.special_share
    flagged, hyperbolic = special[:, None, :], HYPERBOLIC[None, :, None]  # (N, A, slots)
    spread = np.where(flagged & hyperbolic, SPECIAL_SPREAD, 1.0)[:, :, None, :, None]
    moved = np.where(flagged & ~hyperbolic, 1.0, 0.0)[:, :, None, :, None]
    gain = 1 + regime.gain * HYPERBOLIC
    centres = gain[:, None, None] * test.hierarchy[None] + test.leaf_centres[None]  # (A, L, D)
    centres = np.broadcast_to(centres[None, :, None], (studies, len(ARMS), seeds, LEAVES, DIM))
    if regime.leaf_interaction:
        moves = rng.normal(0, regime.leaf_interaction, centres.shape)
        centres = centres + moves
    centres = quality[..., None, None] * centres
    query_noise = rng.normal(0, NOISE_SD, (studies, len(ARMS), seeds, slots, DIM))
    gallery_noise = rng.normal(0, NOISE_SD, (studies, len(ARMS), seeds, *test.gallery_latent.shape))
    query_embeddings = (
        centres[:, :, :, test.query_leaf]
        + spread * (latent[:, :, None] + query_noise)
        + moved * test.wrong[test.query_leaf]
    )
    gallery_embeddings = centres[:, :, :, test.gallery_leaf] + test.gallery_latent + gallery_noise
    chosen = [np.arange(slots)] * len(DRAW_SEEDS) if every_slot else list(test.queries)
    ap = np.empty((studies, len(ARMS), seeds, len(DRAW_SEEDS), len(LEVELS), len(chosen[0])))
    for draw, (queries, gallery) in enumerate(zip(chosen, test.gallery, strict=True)):
        positives = test.positives[draw][:, queries]
        for arm in range(len(ARMS)):
            q = query_embeddings[:, arm][:, :, queries].reshape(-1, len(queries), DIM)
            g = gallery_embeddings[:, arm][:, :, gallery].reshape(-1, len(gallery), DIM)
            found = average_precision(q, g, positives)
            ap[:, arm, :, draw] = found.reshape(studies, seeds, len(LEVELS), -1)
    return Studies(ap, special, collapsed)


def check_against_engine(test: TestSet, rng: np.random.Generator) -> None:
    """Raise unless :func:`average_precision` equals ``hierbench.metrics.evaluate``'s AP on
    one simulated arm, seed and draw (the benchmark's AP must be the project's)."""
    queries, gallery = test.queries[0], test.gallery[0]
    q = rng.normal(0, 1, (len(queries), DIM)) + test.leaf_centres[test.query_leaf[queries]]
    g = rng.normal(0, 1, (len(gallery), DIM)) + test.leaf_centres[test.gallery_leaf[gallery]]
    ours = average_precision(q[None], g[None], test.positives[0][:, queries])[0]
    frame = evaluate(
        q, g, test.labels[test.query_leaf[queries]], test.labels[test.gallery_leaf[gallery]]
    )
    engine = frame.pivot(index="query", columns="level", values="ap")[list(LEVELS)].to_numpy().T
    if not np.allclose(ours, engine, rtol=0, atol=1e-12, equal_nan=True):
        raise RuntimeError(
            "the benchmark's AP differs from hierbench.metrics.evaluate's by "
            f"{np.nanmax(np.abs(ours - engine)):.3g}; fix average_precision before trusting "
            "the coverage"
        )


# ---------------------------------------------------------------------------- the truth


def truth_of(
    test: TestSet, regime: Regime, samples: int, seed: int, batch: int = 200
) -> dict[str, tuple[float, float]]:
    """Each effect's truth at mean hierarchy on mAP and its Monte-Carlo SE: the mean over
    ``samples`` fresh seeds (each with fresh query images in every slot) of the draws' mean of
    the valid leaves' mean contrast, each leaf weighed by its queries in the draw."""
    rng = np.random.default_rng(seed)
    weights = _leaf_weights(test)  # (draws, levels, leaves)
    values: dict[str, list[np.ndarray]] = {}
    for start in range(0, samples, batch):
        found = simulate(test, regime, min(batch, samples - start), 1, rng, every_slot=True)
        arms = {arm: found.ap[:, index, 0] for index, arm in enumerate(ARMS)}  # (N, D, L, slots)
        for effect, formula in effect_formulas(ARMS).items():
            contrast = formula(arms)
            by_leaf = contrast.reshape(*contrast.shape[:3], LEAVES, QUERY_SLOTS).mean(axis=-1)
            per_level = (np.nan_to_num(by_leaf) * weights).sum(axis=-1).mean(axis=1)  # (N, L)
            hierarchy = per_level[:, LEVELS.index("middle") :].mean(axis=1)
            values.setdefault(effect, []).append(hierarchy)
    return {
        effect: (
            float(np.mean(v := np.concatenate(parts))),
            float(np.std(v, ddof=1) / np.sqrt(len(v))),
        )
        for effect, parts in values.items()
    }


def _leaf_weights(test: TestSet) -> np.ndarray:
    """(draws, levels, leaves) each leaf's share of a draw's valid queries at each level."""
    valid = test.positives.any(axis=-1)  # (draws, levels, slots)
    leaf_of = test.query_leaf
    counts = np.zeros((*valid.shape[:2], LEAVES))
    for draw, queries in enumerate(test.queries):
        np.add.at(counts[draw], (slice(None), leaf_of[queries]), valid[draw][:, queries])
    return counts / counts.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------ the pipeline's path


def per_query_rows(test: TestSet, found: Studies, names: list[str]) -> pd.DataFrame:
    """The studies' per-query rows in the eval layout (a run's eval/*.parquet), one dataset
    per study."""
    studies, arms, seeds, draws, levels, queries = found.ap.shape
    shape = (studies, arms, seeds, draws, queries, levels)
    ap = found.ap.transpose(0, 1, 2, 3, 5, 4)

    def spread(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """``values`` laid along ``axes`` of the rows' shape, one per row."""
        expanded = np.expand_dims(values, [a for a in range(len(shape)) if a not in axes])
        return np.broadcast_to(expanded, shape).ravel()

    slots = test.queries  # (draws, Q)
    image_names = np.array([f"img{slot:03d}" for slot in range(len(test.query_leaf))], dtype=object)
    groups = test.labels[test.query_leaf[slots]]  # (draws, Q, levels)
    frame = pd.DataFrame(
        {
            "image_id": pd.array(spread(image_names[slots], (3, 4)), dtype="str"),
            "query": spread(np.arange(queries), (4,)),
            "level": pd.array(spread(np.array(LEVELS, dtype=object), (5,)), dtype="str"),
            "group": spread(groups, (3, 4, 5)).astype(np.int64),
            "valid": np.isfinite(ap).ravel(),
            "ap": ap.ravel(),
            "qg_seed": spread(np.asarray(DRAW_SEEDS), (3,)),
            "dataset": pd.array(spread(np.array(names, dtype=object), (0,)), dtype="str"),
            "arm": pd.array(spread(np.array(ARMS, dtype=object), (1,)), dtype="str"),
            "seed": spread(np.arange(seeds), (2,)),
        }
    )
    frame.insert(8, "geometry", frame["arm"].str[0])
    frame.insert(9, "loss", frame["arm"].str[2])
    return frame


def evaluation_summaries(per_query: pd.DataFrame) -> pd.DataFrame:
    """The evaluation summaries the tables stage reads: query-micro mAP (mean AP of the valid
    queries) per dataset, arm, seed, draw and level."""
    keys = ["dataset", "arm", "geometry", "loss", "seed", "qg_seed", "level"]
    valid = per_query[per_query["valid"]]
    means = valid.groupby(keys, sort=True)["ap"].mean().rename("map").reset_index()
    return means.assign(aggregation=AGGREGATION)


def endpoint_intervals(
    per_query: pd.DataFrame, settings: IntervalSettings
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The endpoints' rows of the effects summary (ENDPOINT and BESIDE on mAP at mean
    hierarchy, with ci_low and ci_high) made by the tables stage's functions, the endpoints'
    effects by seed, and the per-seed table."""
    per_seed = per_seed_from_evaluations(evaluation_summaries(per_query), AGGREGATION)
    noise = query_noise_table(per_query, AGGREGATION, settings)
    by_seed = effects_by_seed(per_seed)
    chosen = (
        (by_seed["level"] == MEAN_HIERARCHY)
        & (by_seed["metric"] == METRIC)
        & by_seed["effect"].isin([ENDPOINT, BESIDE])
    )
    endpoints = by_seed[chosen].reset_index(drop=True)
    return effects_summary(endpoints, settings, noise), endpoints, per_seed


def trained_intervals(
    summary: pd.DataFrame, endpoints: pd.DataFrame, per_seed: pd.DataFrame
) -> pd.DataFrame:
    """Per study and endpoint the interval over the seeds that trained, as summary.md makes it
    (``hierbench.effects.failed_seeds``: the outlier rule at its default level; a simulated
    study has no training curve), and how many of its cells the rule set aside."""
    rows = []
    for dataset, part in summary.groupby("dataset", sort=True):
        seeds = per_seed[per_seed["dataset"] == dataset]
        failed = failed_cells({}, seeds, FAILURE_RULE)
        kept = trained_seed_values(endpoints[endpoints["dataset"] == dataset], failed)
        for item in part.itertuples():
            values = kept.loc[kept["effect"] == item.effect, "value"].to_numpy(float)
            shared = shared_variance(item.se, item.sd, item.n)
            interval = t_interval(values, shared, LEVEL)
            rows.append((dataset, item.effect, interval.low, interval.high, len(failed)))
    return pd.DataFrame(
        rows, columns=["dataset", "effect", "trained_low", "trained_high", "set_aside"]
    )


def study_chunk(
    test: TestSet,
    regime: Regime,
    seeds: int,
    studies: int,
    entropy: np.random.SeedSequence,
    first: int,
) -> pd.DataFrame:
    """One frame of simulated studies through the pipeline: per study and endpoint its mean,
    interval, the ratio V/(s²/n), whether the detector named a regime, and the generator's
    events."""
    rng = np.random.default_rng(entropy)
    found = simulate(test, regime, studies, seeds, rng)
    names = [f"study-{first + index:05d}" for index in range(studies)]
    per_query = per_query_rows(test, found, names)
    settings = IntervalSettings(LEVEL, REPLICATES, int(rng.integers(2**31)))
    summary, endpoints, per_seed = endpoint_intervals(per_query, settings)
    named = noise_regimes(
        per_query,
        endpoints,
        effects=(ENDPOINT, BESIDE),
        levels=(MEAN_HIERARCHY,),
        metrics=(METRIC,),
    )
    used = np.unique(test.queries)
    events = pd.DataFrame(
        {
            "dataset": names,
            "special": found.special[:, used].any(axis=1),
            "collapsed": found.collapsed[:, ARMS.index("H_R")].any(axis=1),
            "any_collapsed": found.collapsed.any(axis=(1, 2)),
        }
    )
    out = summary[["dataset", "effect", "mean", "sd", "n", "se", "ci_low", "ci_high"]].copy()
    out = out.merge(trained_intervals(summary, endpoints, per_seed), on=["dataset", "effect"])
    seeds_part = out["sd"] ** 2 / out["n"]
    out["ratio"] = (out["se"] ** 2 - seeds_part) / seeds_part
    for regime_name, column in ((FEW_IMAGES, "few_images"), (OUTLYING_SEED, "outlying_seed")):
        flagged = named[named["regime"] == regime_name][["dataset", "effect"]].assign(
            **{column: True}
        )
        out = out.merge(flagged, on=["dataset", "effect"], how="left")
        out[column] = out[column].fillna(False).astype(bool)
    return out.merge(events, on="dataset", how="left")


# ------------------------------------------------------------------------------- the grid


@functools.lru_cache(maxsize=1)
def test_set() -> TestSet:
    """The one fixed test set (built once per process)."""
    return TestSet.make()


def _chunk_task(regime: str, seeds: int, size: int, entropy: list[int], first: int) -> pd.DataFrame:
    """A worker's share: one chunk of studies of one cell through the pipeline."""
    frame = study_chunk(
        test_set(), REGIMES[regime], seeds, size, np.random.SeedSequence(entropy), first
    )
    return frame.assign(regime=regime, seeds=seeds)


def _truth_task(regime: str, samples: int, entropy: list[int]) -> dict[str, tuple[float, float]]:
    """A worker's share: one regime's truth."""
    seed = int(np.random.SeedSequence(entropy).generate_state(1)[0])
    return truth_of(test_set(), REGIMES[regime], samples, seed)


def _chunks(studies: int) -> Iterator[tuple[int, int]]:
    """(first study, size) of the chunks that make ``studies`` studies."""
    for first in range(0, studies, CHUNK):
        yield first, min(CHUNK, studies - first)


def run_grid(
    studies: int, truth_samples: int, seed: int, workers: int
) -> tuple[pd.DataFrame, dict[str, dict[str, tuple[float, float]]]]:
    """Every regime × seed count's studies and every regime's truth, over ``workers``
    processes (the same numbers whatever their count: each chunk has its own seed)."""
    check_against_engine(test_set(), np.random.default_rng(seed))
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        truths = {
            name: pool.submit(_truth_task, name, truth_samples, [seed, index, 0])
            for index, name in enumerate(REGIMES)
        }
        truths[TRAINED_TRUTH] = truths["normal"]  # the failing regime without its failures
        chunks = [
            pool.submit(_chunk_task, name, seeds, size, [seed, index, seeds, first + 1], first)
            for index, name in enumerate(REGIMES)
            for seeds in SEED_COUNTS
            for first, size in _chunks(studies)
        ]
        found = pd.concat([chunk.result() for chunk in chunks], ignore_index=True)
        return found, {name: future.result() for name, future in truths.items()}


# ------------------------------------------------------------------------------- the rows


def _share(hits: pd.Series) -> tuple[float, float]:
    """A share and its binomial Monte-Carlo SE."""
    share = float(hits.mean())
    return share, float(np.sqrt(share * (1 - share) / max(len(hits), 1)))


def _inside(part: pd.DataFrame, truth: float) -> pd.Series:
    """Whether each study's interval holds ``truth``."""
    return (part["ci_low"] <= truth) & (truth <= part["ci_high"])


def _detector_note(part: pd.DataFrame, regime: Regime) -> str:
    """How often the detector named a regime for the endpoint, and where it matters most."""
    named = part["few_images"] | part["outlying_seed"]
    pieces = [
        f"'{FEW_IMAGES}' {part['few_images'].mean():.3f}",
        f"'{OUTLYING_SEED}' {part['outlying_seed'].mean():.3f}",
    ]
    if regime.special_share:
        held = part["special"]
        pieces.append(
            f"'{FEW_IMAGES}' in the {held.mean():.0%} of studies whose queries hold a special "
            f"image {part.loc[held, 'few_images'].mean():.3f}"
        )
    if regime.failure_rate:
        held = part["collapsed"]
        pieces.append(
            f"'{OUTLYING_SEED}' in the {held.mean():.0%} of studies with a collapsed H_R seed "
            f"{part.loc[held, 'outlying_seed'].mean():.3f}"
        )
    silent = part.loc[~named, "covered"]
    if len(silent):
        pieces.append(
            f"coverage where nothing is named {silent.mean():.3f} ({len(silent)} studies)"
        )
    return "; ".join(pieces)


def cell_rows(part: pd.DataFrame, regime: Regime, seeds: int, truths: dict) -> list[Row]:
    """The coverage row and the detector's row of one regime and seed count."""
    truth, truth_se = truths[ENDPOINT]
    endpoint = part[part["effect"] == ENDPOINT].assign(covered=lambda f: _inside(f, truth))
    beside = part[part["effect"] == BESIDE]
    covered, covered_se = _share(endpoint["covered"])
    power, power_se = _share((endpoint["ci_low"] > 0) | (endpoint["ci_high"] < 0))
    beside_covered, beside_se = _share(_inside(beside, truths[BESIDE][0]))
    named, named_se = _share(endpoint["few_images"] | endpoint["outlying_seed"])
    where = f"{regime.name}, {seeds} seeds ({ENDPOINT} on mAP at mean hierarchy)"
    note = (
        f"{len(endpoint)} studies; Monte-Carlo SE ±{covered_se:.3f}; truth {truth:.4f} "
        f"(Monte-Carlo SE {truth_se:.4f}); power (interval excludes zero) {power:.3f} "
        f"± {power_se:.3f}; {BESIDE} (truth {truths[BESIDE][0]:.4f}) covered {beside_covered:.3f} "
        f"± {beside_se:.3f}; median ratio V/(s²/n) {endpoint['ratio'].median():.2g}; "
        f"{REPLICATES} query resamples per study; ratio: |coverage − 0.95|"
    )
    trained_rows = _trained_rows(endpoint, regime, where, truths) if regime.failure_rate else []
    return [
        *trained_rows,
        row(
            "coverage",
            f"coverage of the 95% interval: {where}",
            covered,
            LEVEL,
            "share",
            GOAL,
            ratio=abs(covered - LEVEL),
            note=note,
        ),
        row(
            "coverage",
            f"noise_regimes names a regime: {where}",
            named,
            None,
            "share",
            "<= 0.1" if regime.name == "normal" else None,
            ratio=named,
            note=(
                f"share of studies in which noise_regimes names a regime for {ENDPOINT} "
                f"(± {named_se:.3f}): " + _detector_note(endpoint, regime)
            ),
        ),
    ]


def _trained_rows(endpoint: pd.DataFrame, regime: Regime, where: str, truths: dict) -> list[Row]:
    """The failing-seed regime's second estimand: the interval over the seeds that trained
    against the effect among seeds that train (the same generator without failures), and how
    often the rule sets a cell aside in studies with and without a collapsed H_R seed."""
    truth, truth_se = truths[TRAINED_TRUTH][ENDPOINT]
    inside = (endpoint["trained_low"] <= truth) & (truth <= endpoint["trained_high"])
    covered, covered_se = _share(inside)
    collapsed = endpoint["any_collapsed"]
    caught, _ = _share(endpoint.loc[collapsed, "set_aside"] > 0)
    touched, _ = _share(endpoint.loc[~collapsed, "set_aside"] > 0)
    return [
        row(
            "coverage",
            f"coverage of the interval over the seeds that trained: {where}",
            covered,
            LEVEL,
            "share",
            GOAL,
            ratio=abs(covered - LEVEL),
            note=(
                f"{len(endpoint)} studies; Monte-Carlo SE ±{covered_se:.3f}; its estimand, the "
                f"effect among seeds that train: {truth:.4f} (the regime without failures; "
                f"Monte-Carlo SE {truth_se:.4f}); the rule (ESD at "
                f"{FAILURE_RULE.outlier_alpha:g} on each arm's seeds) set a cell aside in "
                f"{caught:.1%} of the {collapsed.mean():.0%} of studies with a collapsed seed "
                f"and in {touched:.1%} of the others; ratio: |coverage − 0.95|"
            ),
        )
    ]


def rows(
    studies: int = 600, seed: int = 0, truth_samples: int | None = None, workers: int | None = None
) -> list[Row]:
    """The grid: every regime at 3, 5 and 10 seeds, ``studies`` studies each; the truth from
    ``truth_samples`` seeds per regime (default: four times the studies, at least 200)."""
    samples = truth_samples or max(200, 4 * studies)
    found, truths = run_grid(studies, samples, seed, workers or os.cpu_count() or 1)
    out: list[Row] = []
    for name, regime in REGIMES.items():
        for seeds in SEED_COUNTS:
            part = found[(found["regime"] == name) & (found["seeds"] == seeds)]
            out.extend(
                cell_rows(
                    part, regime, seeds, {**truths[name], TRAINED_TRUTH: truths[TRAINED_TRUTH]}
                )
            )
    return out


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--studies", type=int, default=600, help="studies per regime and seed count"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all CPUs)")
    args = parser.parse_args()
    start = time.perf_counter()
    for item in rows(args.studies, args.seed, workers=args.workers):
        print(f"{item['value']:.3f}  {item['figure']} ({item['note']})")
    print(f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
