"""Seeds whose training failed, named by a rule fixed in the config before the sealed test and
blind to the effects, and the planned endpoints over the seeds that trained beside the ones over
every seed.

A rare failing seed drags a mean far from the effect among seeds that train, and no interval
over every seed can repair it (the studies whose seeds hold no failure are the ones that miss).
So the summary states two estimands: the effect over every seed (the paper's), and the effect
among the seeds that trained, with the failures set aside by the rule and counted, their rate
given a Clopper–Pearson interval. The rule (``effects.failed_seeds``) looks at one cell at a
time, never at a contrast:

- ``flat_loss``: the cell's training loss did not move over its epochs (the training curves'
  "flat", :func:`hierbench.effects.curves.loss_problem`); a non-finite loss stops the job.
- ``outlier_alpha``: the generalized ESD test (:mod:`hierbench.effects.outlying_seeds`) on one
  arm's per-seed mean hierarchy mAP names a seed far from the arm's other seeds; null: off.
  It needs three seeds or more.

A seed set aside in an arm leaves out that seed's value of every effect whose formula holds the
arm; every other effect keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from hierbench.effects.curves import loss_problem
from hierbench.effects.formulas import effect_definition
from hierbench.effects.intervals import IntervalSettings, shared_variance, t_interval
from hierbench.effects.outlying_seeds import esd_outliers
from hierbench.effects.render import interval_text, render_markdown
from hierbench.effects.schema import arm_labels
from hierbench.effects.verdicts import planned_endpoints
from hierbench.protocol import FACTORIAL_ARMS, MEAN_HIERARCHY

FAILED_SEEDS_KEY = "effects.failed_seeds"
FAILED_COLUMNS = ("arm", "seed", "reason")
ARM_NAME = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z][A-Za-z0-9]*\b")


@dataclass(frozen=True)
class FailureRule:
    """The config's ``effects.failed_seeds``: a flat training loss, and the outlier test's level
    on an arm's seeds (None: off)."""

    flat_loss: bool = True
    outlier_alpha: float | None = 0.01

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | None) -> FailureRule:
        """The rule of a validated config block (defaults where it is silent)."""
        block = dict(block or {})
        unknown = set(block) - {"flat_loss", "outlier_alpha"}
        if unknown:
            raise ValueError(f"unknown key(s) under {FAILED_SEEDS_KEY}: {sorted(unknown)}")
        return cls(**block)

    def describe(self) -> str:
        """The rule in words, for the summary."""
        parts = []
        if self.flat_loss:
            parts.append("its training loss stayed flat over its epochs")
        if self.outlier_alpha is not None:
            parts.append(
                "the generalized ESD test at level "
                f"{self.outlier_alpha:g} sets it apart from its arm's other seeds on mean "
                "hierarchy mAP (three seeds or more)"
            )
        return " or ".join(parts) if parts else "none (both tests off)"


def failed_cells(
    logs: Mapping[tuple[str, int], pd.DataFrame], per_seed: pd.DataFrame, rule: FailureRule
) -> pd.DataFrame:
    """The failed (arm, seed) cells of one dataset with the reason (``FAILED_COLUMNS``, sorted):
    ``logs`` the factorial cells' train logs by (arm code such as ``ER``, seed), ``per_seed``
    the per-seed table (mAP at mean hierarchy is read)."""
    found: dict[tuple[str, int], list[str]] = {}
    if rule.flat_loss:
        for (code, seed), log in logs.items():
            problem = loss_problem(log)
            if problem is not None:
                found.setdefault((arm_of_code(code), seed), []).append(f"training loss {problem}")
    if rule.outlier_alpha is not None:
        for (arm, seed), why in _outlying(per_seed, rule.outlier_alpha).items():
            found.setdefault((arm, seed), []).append(why)
    rows = [(arm, seed, "; ".join(reasons)) for (arm, seed), reasons in sorted(found.items())]
    return pd.DataFrame(rows, columns=list(FAILED_COLUMNS))


def arm_of_code(code: str) -> str:
    """A factorial cell folder's arm (``ER`` → ``E_R``); other kinds are returned as they are."""
    return f"{code[0]}_{code[1:]}" if len(code) == 2 else code


def _outlying(per_seed: pd.DataFrame, alpha: float) -> dict[tuple[str, int], str]:
    """Each factorial arm's seeds that the generalized ESD test sets apart on mean hierarchy
    mAP, with the statistic and critical value."""
    rows = per_seed[(per_seed["metric"] == "map") & (per_seed["level"] == MEAN_HIERARCHY)]
    rows = rows.assign(arm=arm_labels(rows))
    found = {}
    for arm, part in rows[rows["arm"].isin(FACTORIAL_ARMS)].groupby("arm", sort=True):
        part = part.dropna(subset=["value"]).sort_values("seed")
        outliers = esd_outliers(part["value"].to_numpy(float), alpha)
        for position in outliers.positions:
            seed = int(part["seed"].iloc[position])
            found[(str(arm), seed)] = (
                f"its mean hierarchy mAP lies {outliers.statistic:.2f} SDs from its arm's other "
                f"seeds (ESD critical value {outliers.critical:.2f} at {alpha:g})"
            )
    return found


def arms_of_effect(effect: str) -> set[str]:
    """The arms an effect's formula reads (``int`` → E_R, H_R, E_S, H_S)."""
    return set(ARM_NAME.findall(effect_definition(effect)))


def trained_seed_values(by_seed: pd.DataFrame, failed: pd.DataFrame) -> pd.DataFrame:
    """The effects by seed without the seeds set aside: a seed's value of an effect is dropped
    when a failed cell of that seed is one of the effect's arms."""
    if failed.empty:
        return by_seed
    dropped = pd.Series(False, index=by_seed.index)
    for effect in by_seed["effect"].unique():
        arms = arms_of_effect(str(effect))
        seeds = set(failed.loc[failed["arm"].isin(arms), "seed"])
        dropped |= (by_seed["effect"] == effect) & by_seed["seed"].isin(seeds)
    return by_seed[~dropped]


def _estimate_text(values: np.ndarray, low: float, high: float) -> str:
    """A mean with its interval, or why it has none."""
    if not len(values):
        return "none trained"
    shown = interval_text(low, high, 4) or f"(no interval from {len(values)} seed)"
    return f"{np.mean(values):+.4f} {shown}"


def failure_rate_text(failures: int, cells: int, level: float) -> str:
    """The failure count over the cells judged, with its exact (Clopper–Pearson) interval."""
    interval = stats.binomtest(failures, cells).proportion_ci(level, method="exact")
    return (
        f"{failures} of {cells} factorial cells failed ({failures / cells:.1%}; {level:.0%} "
        f"Clopper–Pearson interval {interval.low:.1%} to {interval.high:.1%})"
    )


def both_estimands(
    summary: pd.DataFrame, by_seed: pd.DataFrame, failed: pd.DataFrame, settings: IntervalSettings
) -> pd.DataFrame:
    """For each planned endpoint a failed seed touches: the estimate and interval over every
    seed (the summary's) and over the seeds that trained (its shared test-image variance taken
    from the all-seeds row)."""
    planned = planned_endpoints(summary)
    kept = trained_seed_values(by_seed, failed)
    rows = []
    for row in planned.itertuples():
        arms = arms_of_effect(str(row.effect))
        if not failed["arm"].isin(arms).any():
            continue
        chosen = (
            (kept["dataset"] == row.dataset)
            & (kept["effect"] == row.effect)
            & (kept["metric"] == row.metric)
            & (kept["level"] == row.level)
        )
        values = kept.loc[chosen, "value"].to_numpy(float)
        shared = shared_variance(row.se, row.sd, row.n)
        interval = t_interval(values, shared, settings.level)
        rows.append(
            {
                "effect": str(row.effect),
                "every seed": f"{row.mean:+.4f} {interval_text(row.ci_low, row.ci_high, 4)}",
                "seeds": int(row.n),
                "seeds that trained": _estimate_text(values, interval.low, interval.high),
                "trained": len(values),
            }
        )
    return pd.DataFrame(
        rows, columns=["effect", "every seed", "seeds", "seeds that trained", "trained"]
    )


def failed_seed_lines(
    failed: pd.DataFrame, estimands: pd.DataFrame, rule: FailureRule, cells: int, level: float
) -> list[str]:
    """The summary's section: the rule, each failed seed with its reason, the failure count
    with its interval, and both estimands of each planned endpoint a failure touches."""
    lines = ["## Failed seeds", "", f"A seed of an arm counts as failed when {rule.describe()} "
             f"({FAILED_SEEDS_KEY}, fixed before the sealed test; it looks at one cell, never at "
             "an effect)."]  # fmt: skip
    if cells:
        lines[-1] += f" {failure_rate_text(len(failed), cells, level)}."
    if failed.empty:
        return [*lines, ""]
    lines += ["", *(f"- {row.arm} seed {row.seed}: {row.reason}" for row in failed.itertuples())]
    lines += [
        "",
        "Each planned endpoint a failed seed enters, over every seed (the paper's estimand: the "
        "effect of training, failures included) and over the seeds that trained (the effect "
        f"among seeds that train, failures set aside by the rule); {level:.0%} intervals:",
        "",
        render_markdown(estimands),
        "",
    ]
    return lines
