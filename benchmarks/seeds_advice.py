"""Does `hierbench seeds` promise only what three seeds can tell? Simulated 3-seed studies with a
known true effect, each put through the command's own table (``power_table``, what `hierbench
seeds` prints), at a true zero and at real effects, in two noise regimes.

A simulated study: three per-seed effects N(μ, σ²) plus one test-set offset N(0, V) shared by
its seeds; its summary row (mean, SD, n, se² = SD²/3 + V) is what the tables would give. The
command's range for 20 seeds is read from it. Two figures per cell:

- told ≥ 50 %: the share of studies whose range's low end at 20 seeds is at least 50 % (what
  the command promises). Goal at a true zero: at most 10 %. Beside it, the share that the
  former advice (power at the measured mean and SD, "observed power") promised 50 %.
- holds the truth: the share of studies whose 20-seed range holds the true power (simulated at
  the true μ and σ with the same function). Goal: the stated rate 0.95 within two Monte-Carlo
  SEs of the study count (≥ 0.93 at 400 studies).

Regimes: seed-dominated (V a tenth of σ²/3) and balanced (V = σ²/3); true effects 0, 1, 2 and
4 times the 3-seed standard error. Beside them, the smallest effect detected with 80 % power at
10 seeds, which the command leads with: how often its range (over the seed SDs the data allow)
holds the true one (goal: the χ² interval's rate 0.975, less two Monte-Carlo SEs), and the power
of 500-seed studies at the command's floor (goal: at most 80 %, within Monte-Carlo error: no
number of seeds beats the floor). Run: ``.venv/bin/python benchmarks/seeds_advice.py
[--studies 400]``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from benchrows import Row, row, studies_main

from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.seeds_needed import (
    DETECT_POWER,
    PROMISE,
    Noise,
    detectable_floor,
    detectable_table,
    exclusion_rates,
    power_table,
    smallest_detectable,
)

SETTINGS = IntervalSettings(level=0.95, seed=0)
SEED_SD = 0.01
FUTURE = 20  # the seed count whose promise is checked
REGIMES = {"seed-dominated": 0.1, "balanced": 1.0}  # V / (σ²/3)
EFFECTS_IN_SE = (0.0, 1.0, 2.0, 4.0)  # true effects in units of the 3-seed standard error
NULL_GOAL = "<= 0.10"
DETECTABLE_SEEDS = 10  # the seed count whose smallest detectable effect is checked
MANY_SEEDS = 500  # "any number of seeds" for the floor's check


def studies_of(
    truth: float, shared_sd: float, studies: int, rng: np.random.Generator
) -> list[Noise]:
    """``studies`` simulated 3-seed studies as the summary rows give them (mean, SD, shared SD)."""
    values = rng.normal(truth, SEED_SD, (studies, 3)) + rng.normal(0, shared_sd, (studies, 1))
    return [Noise(float(v.mean()), float(v.std(ddof=1)), shared_sd, 3) for v in values]


def cell(
    truth: float, shared_sd: float, studies: int, rng: np.random.Generator
) -> dict[str, float]:
    """The command's 20-seed ranges over simulated studies: how often it promises ≥ 50 %, how
    often the former plug-in advice did, and how often the range holds the true power."""
    true_power = float(exclusion_rates([truth], [SEED_SD], shared_sd, FUTURE, SETTINGS)[0][0])
    noises = studies_of(truth, shared_sd, studies, rng)
    table = pd.DataFrame([power_table(noise, SETTINGS, (FUTURE,)).iloc[0] for noise in noises])
    plug_in = np.concatenate(
        [
            exclusion_rates(
                [n.mean for n in part], [n.seed_sd for n in part], shared_sd, FUTURE, SETTINGS
            )[0]
            for part in (noises[start : start + 25] for start in range(0, len(noises), 25))
        ]
    )
    holds = (table["power low"] <= true_power) & (true_power <= table["power high"])
    return {
        "true power": true_power,
        "told": float((table["power low"] >= PROMISE).mean()),
        "plug-in told": float((plug_in >= PROMISE).mean()),
        "holds": float(holds.mean()),
        "median range": float((table["power high"] - table["power low"]).median()),
    }


def detectable_rows(
    regime: str, shared_sd: float, studies: int, rng: np.random.Generator
) -> list[Row]:
    """The command's smallest detectable effect at DETECTABLE_SEEDS seeds: how often its range
    holds the true one (at the true σ), and the power of very many seeds at its floor."""
    truth = smallest_detectable(SEED_SD, shared_sd, DETECTABLE_SEEDS, SETTINGS)
    noises = studies_of(0.0, shared_sd, studies, rng)
    ranges = pd.concat([detectable_table(n, SETTINGS, (DETECTABLE_SEEDS,)) for n in noises])
    holds = float(
        ((ranges["detectable low"] <= truth) & (truth <= ranges["detectable high"])).mean()
    )
    stated = 1 - (1 - SETTINGS.level) / 2  # the seed SD's χ² interval
    mc = 2 * np.sqrt(stated * (1 - stated) / studies)
    floor = detectable_floor(shared_sd, SETTINGS.level)
    at_floor = float(exclusion_rates([floor], [SEED_SD], shared_sd, MANY_SEEDS, SETTINGS)[0][0])
    floor_mc = 2 * np.sqrt(DETECT_POWER * (1 - DETECT_POWER) / 4000)
    width = float((ranges["detectable high"] - ranges["detectable low"]).median())
    return [
        row(
            "seeds",
            f"the {DETECTABLE_SEEDS}-seed detectable-effect range holds the true one: {regime}",
            holds,
            stated,
            "share",
            f">= {stated - mc:.3f}",
            ratio=holds,
            note=(
                f"{studies} 3-seed studies; the true smallest effect detected with "
                f"{DETECT_POWER:.0%} power at {DETECTABLE_SEEDS} seeds {truth:.4f} (at the true "
                f"seed SD); stated rate {stated:.3f} (the seed SD's χ² interval); median width of "
                f"the range {width:.4f}; the ratio is the share"
            ),
        ),
        row(
            "seeds",
            f"power of {MANY_SEEDS}-seed studies at the command's floor: {regime}",
            at_floor,
            DETECT_POWER,
            "share",
            f"<= {DETECT_POWER + floor_mc:.3f}",
            ratio=at_floor,
            note=(
                f"the floor {floor:.4f} = (z(1 − α/2) + z({DETECT_POWER:g})) × the test images' "
                f"shared SD; no number of seeds reaches {DETECT_POWER:.0%} power below it; the "
                "ratio is the share"
            ),
        ),
    ]


def rows(studies: int = 400, seed: int = 0) -> list[Row]:
    """Every regime × true effect: the promise at 20 seeds and whether the range holds; the
    smallest detectable effect's range and floor."""
    rng = np.random.default_rng(seed)
    mc_cover = 2 * np.sqrt(SETTINGS.level * (1 - SETTINGS.level) / studies)
    out: list[Row] = []
    for regime, ratio in REGIMES.items():
        shared_sd = SEED_SD * np.sqrt(ratio / 3)
        out.extend(detectable_rows(regime, shared_sd, studies, rng))
        se3 = np.sqrt(SEED_SD**2 / 3 + shared_sd**2)
        for multiple in EFFECTS_IN_SE:
            found = cell(multiple * se3, shared_sd, studies, rng)
            power = found["true power"]
            where = f"{regime}, true effect {multiple:g} × the 3-seed se (power {power:.2f})"
            mc = np.sqrt(max(found["told"] * (1 - found["told"]), 1 / studies) / studies)
            if multiple == 0:
                out.append(
                    row(
                        "seeds",
                        f"null 3-seed studies told ≥ 50% power with 20 seeds: {regime}",
                        found["told"],
                        None,
                        "share",
                        NULL_GOAL,
                        ratio=found["told"],
                        note=(
                            f"{studies} studies (Monte-Carlo SE {mc:.3f}); the former plug-in "
                            f"advice told {found['plug-in told']:.1%}; the ratio is the share"
                        ),
                    )
                )
            out.append(
                row(
                    "seeds",
                    f"the 20-seed power range holds the true power: {where}",
                    found["holds"],
                    SETTINGS.level,
                    "share",
                    f">= {SETTINGS.level - mc_cover:.2f}",
                    ratio=found["holds"],
                    note=(
                        f"{studies} studies; stated rate {SETTINGS.level:.0%}, goal two "
                        f"Monte-Carlo SEs below it; median width of the range "
                        f"{found['median range']:.2f}; told ≥ 50%: {found['told']:.1%} "
                        f"(plug-in advice {found['plug-in told']:.1%}); the ratio is the share"
                    ),
                )
            )
    return out


def main() -> int:
    """Measure and print."""
    return studies_main(__doc__.splitlines()[0], rows, 400)


if __name__ == "__main__":
    raise SystemExit(main())
