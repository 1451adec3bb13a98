"""Does `hierbench compare --published` say "differs" only as often as it should when two labs
score other test images? Simulated pairs of independent 3-seed studies of one truth, each put
through the command's own comparison (``compare_to_published`` with the run's recorded test
images, as ``compare`` reads them from a run folder), at test-image variances from a third of
the seeds' part to thirty times it.

A simulated study (all of them in one call, study i as dataset ``s<i>``): the four factorial
arms × three seeds; an arm's seed value is its true mean, plus N(0, σ²) for the seed, plus one
N(0, v) offset per arm that all the study's seeds share (its test images). An effect's
test-image variance V = k·v (k the arms in its formula) and its seeds' part k·σ²/3, so the
ratio V / (seeds' part) is 3v/σ² for every effect. The run side knows its V as the effect
tables estimate it (V · χ²₁₅₀/150: about 150 query images); the published side is a table from
outside a run, so the command takes its V equal to the run's.

Figures per ratio, over the five planned endpoints of every pair:
- false "differs": the share of endpoints called "differs" or "differs by less than the margin"
  at a true zero. Goal ≤ 0.06. Beside it in the note: Welch's interval on the seeds alone.
- power at a 0.03 shift: H_R moved by 0.03 in the run; the share of pairs whose geom_R reads a
  difference.
- equivalence at the margin: a true difference of exactly the margin (0.02) on geom_R; the share
  called "equivalent within the margin". Goal ≤ 0.05 plus two Monte-Carlo SEs (the TOST level).

Run: ``.venv/bin/python benchmarks/reproduction.py [--studies 400]``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from benchrows import Row, row, studies_main

from hierbench.effects.reproduction import (
    DEFAULT_MARGIN,
    DIFFERS,
    DIFFERS_WITHIN,
    ENDPOINTS,
    EQUIVALENT,
    compare_to_published,
)
from hierbench.effects.study_images import NOTHING_KNOWN, StudyImages

RATIOS = (0.3, 1.0, 3.0, 10.0, 30.0)  # V / (σ²/n): the test images' variance to the seeds' part
SEEDS = (42, 2024, 3407)
SEED_SD = 0.003  # an arm's SD over seeds (the demo's are 0.001 to 0.005)
ARMS = {"E_R": ("E", "R"), "H_R": ("H", "R"), "E_S": ("E", "S"), "H_S": ("H", "S")}
ARMS_IN = {"geom_R": 2, "geom_S": 2, "loss_E": 2, "loss_H": 2, "int": 4}  # k per effect
SHIFT = 0.03
QUERY_IMAGES = 150  # the run's V is estimated from about this many images
NULL_GOAL = "<= 0.06"
DIFFERING = (DIFFERS, DIFFERS_WITHIN)


def studies_table(
    studies: int, arm_offsets: dict[str, float], image_sd: float, rng: np.random.Generator
) -> pd.DataFrame:
    """``studies`` 3-seed studies as one per-seed table, study i as dataset ``s<i>`` (middle and
    high equal, so mean hierarchy is the value): each arm's mean 0.5 plus its offset, its test
    images' shared draw and each seed's."""
    arms = list(ARMS)
    shared = rng.normal(0.0, image_sd, (studies, len(arms), 1))
    seeds = rng.normal(0.0, SEED_SD, (studies, len(arms), len(SEEDS)))
    offsets = np.array([arm_offsets.get(arm, 0.0) for arm in arms])[None, :, None]
    values = 0.5 + offsets + shared + seeds
    study, arm, seed = np.meshgrid(
        np.arange(studies), np.arange(len(arms)), np.arange(len(SEEDS)), indexing="ij"
    )
    frame = pd.DataFrame(
        {
            "dataset": [f"s{i:04d}" for i in study.ravel()],
            "geometry": [ARMS[arms[a]][0] for a in arm.ravel()],
            "loss": [ARMS[arms[a]][1] for a in arm.ravel()],
            "seed": np.array(SEEDS)[seed.ravel()],
            "metric": "map",
            "value": values.ravel(),
        }
    )
    return pd.concat([frame.assign(level="middle"), frame.assign(level="high")], ignore_index=True)


def estimated_images(studies: int, image_variance: float, rng: np.random.Generator) -> StudyImages:
    """The runs' test images as their effect tables would record them: each endpoint's V with
    the estimation error of about QUERY_IMAGES images."""
    noise = rng.chisquare(QUERY_IMAGES, studies) / QUERY_IMAGES
    variances = {
        (f"s{i:04d}", effect): k * image_variance * float(noise[i])
        for i in range(studies)
        for effect, k in ARMS_IN.items()
    }
    return StudyImages({}, variances)


def verdicts(
    ratio: float, run_offsets: dict[str, float], studies: int, seed: int, carry: bool = True
) -> pd.DataFrame:
    """The endpoint rows of ``studies`` simulated pairs (run, published) at ``ratio``; without
    ``carry`` the run's test images are not passed (the seeds-only interval)."""
    rng = np.random.default_rng(seed)
    image_variance = ratio * SEED_SD**2 / len(SEEDS)
    image_sd = float(np.sqrt(image_variance))
    run = studies_table(studies, run_offsets, image_sd, rng)
    published = studies_table(studies, {}, image_sd, rng)
    images = estimated_images(studies, image_variance, rng) if carry else NOTHING_KNOWN
    result = compare_to_published(run, published, images=(images, NOTHING_KNOWN))
    return result.table(ENDPOINTS)


def _share(hits: pd.Series) -> tuple[float, float]:
    """A share and its Monte-Carlo SE."""
    share = float(hits.mean())
    return share, float(np.sqrt(max(share * (1 - share), 1 / len(hits)) / len(hits)))


def ratio_rows(ratio: float, studies: int, seed: int) -> list[Row]:
    """The three figures at one ratio of test-image variance to the seeds' part."""
    where = f"test-image variance {ratio:g} × the seeds' part"
    null = verdicts(ratio, {}, studies, seed)
    welch = verdicts(ratio, {}, studies, seed, carry=False)
    false_rate, false_se = _share(null["verdict"].isin(DIFFERING))
    welch_rate, _ = _share(welch["verdict"].isin(DIFFERING))
    shifted = verdicts(ratio, {"H_R": SHIFT}, studies, seed + 1)
    geom = shifted[shifted["name"] == "geom_R"]
    power, power_se = _share(geom["verdict"].isin(DIFFERING))
    at_margin = verdicts(ratio, {"H_R": DEFAULT_MARGIN}, studies, seed + 2)
    margin_geom = at_margin[at_margin["name"] == "geom_R"]
    equivalent, equivalent_se = _share(margin_geom["verdict"] == EQUIVALENT)
    equivalence_goal = 0.05 + 2 * np.sqrt(0.05 * 0.95 / studies)
    return [
        row(
            "reproduction",
            f"false 'differs' at a true zero: {where}",
            false_rate,
            None,
            "share",
            NULL_GOAL,
            ratio=false_rate,
            note=(
                f"{studies} pairs of 3-seed studies × {len(ARMS_IN)} endpoints (Monte-Carlo SE "
                f"{false_se:.3f}); the seeds-only Welch interval said differs "
                f"{welch_rate:.1%}; the ratio is the share"
            ),
        ),
        row(
            "reproduction",
            f"power at a {SHIFT:g} shift (geom_R): {where}",
            power,
            None,
            "share",
            None,
            ratio=power,
            note=f"{studies} pairs (Monte-Carlo SE {power_se:.3f}); H_R moved by {SHIFT:g} mAP",
        ),
        row(
            "reproduction",
            f"'equivalent' at a true difference of the margin: {where}",
            equivalent,
            None,
            "share",
            f"<= {equivalence_goal:.3f}",
            ratio=equivalent,
            note=(
                f"{studies} pairs (Monte-Carlo SE {equivalent_se:.3f}); geom_R moved by the "
                f"margin {DEFAULT_MARGIN:g}; the TOST's level is 0.05"
            ),
        ),
    ]


def rows(studies: int = 400, seed: int = 0) -> list[Row]:
    """Every ratio: false differs, power at a 0.03 shift, equivalence at the margin."""
    out: list[Row] = []
    for index, ratio in enumerate(RATIOS):
        out.extend(ratio_rows(ratio, studies, seed + 10 * index))
    return out


def main() -> int:
    """Measure and print."""
    return studies_main(__doc__.splitlines()[0], rows, 400)


if __name__ == "__main__":
    raise SystemExit(main())
