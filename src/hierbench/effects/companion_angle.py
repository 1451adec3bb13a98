"""The companion cells' ranking sensitivity (the ``companion_angle`` table): mAP of E_A and L_A
with the gallery ranked by their head's distance (their evaluation) and by the exterior angle at
the query (``stages.angle_evaluation``), and the paired difference angle − distance.

Training seeds are the units: each seed's query/gallery draws are averaged first, under the
dataset's registered aggregation (``controls.common.per_seed_by_variant``, the ranking as the
variant); a row per arm and ranking then gives mAP per level and mean hierarchy mAP as mean ± SD
over seeds, and a row per arm the per-seed difference angle − distance of mean hierarchy mAP
(mean ± SD) with the seeds on which it is positive.
"""

from __future__ import annotations

import pandas as pd

from hierbench.effects import PER_SEED_COLUMNS, mean_sd
from hierbench.effects.intervals import DEFAULT_INTERVALS, P_SEEDS, IntervalSettings
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.effects.render import interval_text, p_text
from hierbench.effects.variants import paired_contrast, per_seed_by_variant, seeds_mean_sd
from hierbench.protocol import (
    ANGLE_RANKING,
    COMPANION_ARMS,
    DISTANCE_RANKING,
    LEVELS,
    MEAN_HIERARCHY,
    RANKINGS,
)

LEVELS_SHOWN: tuple[str, ...] = (*LEVELS, MEAN_HIERARCHY)
DIFFERENCE = f"{ANGLE_RANKING} − {DISTANCE_RANKING}"
POSITIVE_SEEDS = "positive seeds"
INTERVAL = "interval"  # the difference row's; the level is in the metadata
TABLE_COLUMNS: tuple[str, ...] = (
    "arm",
    "ranking",
    *LEVELS_SHOWN,
    POSITIVE_SEEDS,
    "seeds",
    INTERVAL,
    P_SEEDS,
)


class CompanionAngleError(ValueError):
    """The companion cells' evaluations cannot form the ranking table; the message names the
    arm and ranking."""


def ranking_per_seed(summaries: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """Per-seed mAP rows of every companion arm under each ranking (a ``ranking`` column beside
    the per-seed keys), from evaluation summaries labelled by their ``ranking``."""
    if "ranking" not in summaries.columns:
        raise CompanionAngleError("the companion evaluation summaries lack the 'ranking' column")
    _check_arms_and_rankings(summaries)
    per_seed = per_seed_by_variant(summaries.rename(columns={"ranking": "variant"}), aggregation)
    chosen = per_seed[per_seed["metric"] == "map"].rename(columns={"variant": "ranking"})
    return chosen[["ranking", *PER_SEED_COLUMNS]].reset_index(drop=True)


def _check_arms_and_rankings(summaries: pd.DataFrame) -> None:
    """Every arm is a companion arm, ranked both ways, on the same training seeds."""
    arms = summaries["arm"].astype(str)
    unknown = sorted(set(arms) - set(COMPANION_ARMS))
    if unknown:
        raise CompanionAngleError(
            f"the ranking table is for the companion arms {list(COMPANION_ARMS)}, got {unknown}"
        )
    for arm, part in summaries.groupby(arms, sort=True):
        seeds = {
            ranking: sorted(set(part.loc[part["ranking"] == ranking, "seed"].tolist()))
            for ranking in RANKINGS
        }
        missing = [ranking for ranking, found in seeds.items() if not found]
        if missing:
            raise CompanionAngleError(f"arm {arm}: no evaluation ranked by {missing}")
        if seeds[DISTANCE_RANKING] != seeds[ANGLE_RANKING]:
            raise CompanionAngleError(
                f"arm {arm}: the rankings cover different training seeds: {seeds}; the "
                "difference angle − distance pairs them by seed"
            )
    extra = sorted(set(summaries["ranking"].astype(str)) - set(RANKINGS))
    if extra:
        raise CompanionAngleError(f"unknown rankings {extra}; the rankings are {list(RANKINGS)}")


def ranking_table(
    per_seed: pd.DataFrame,
    intervals: IntervalSettings = DEFAULT_INTERVALS,
    queries: dict[str, QueryContrasts] | None = None,
) -> pd.DataFrame:
    """Per companion arm: a row per ranking (mAP per level and mean hierarchy mAP, mean ± SD
    over seeds), then the paired difference angle − distance of mean hierarchy mAP with its
    t interval (with the test images' shared variance from the arm's per-query rows in
    ``queries`` when given, else over seeds) and the sign-flip test."""
    arms = per_seed["geometry"].astype(str) + "_" + per_seed["loss"].astype(str)
    rows: list[dict[str, str | int]] = []
    for arm in (name for name in COMPANION_ARMS if name in set(arms)):
        part = per_seed[arms == arm]
        for ranking in RANKINGS:
            chosen = part[part["ranking"] == ranking]
            entry: dict[str, str | int] = {"arm": arm, "ranking": ranking}
            for level in LEVELS_SHOWN:
                entry[level] = seeds_mean_sd(chosen[chosen["level"] == level]["value"])
            blank = {POSITIVE_SEEDS: "", INTERVAL: "", P_SEEDS: ""}
            rows.append(entry | blank | {"seeds": int(chosen["seed"].nunique())})
        rows.append(_difference_row(arm, part, intervals, (queries or {}).get(arm)))
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def _difference_row(
    arm: str, part: pd.DataFrame, intervals: IntervalSettings, query: QueryContrasts | None
) -> dict[str, str | int]:
    """The per-seed difference angle − distance of one arm's mean hierarchy mAP, summarised
    (``query``: the arm's per-query rows, labelled by ranking)."""
    chosen = part[part["level"] == MEAN_HIERARCHY]
    wide = chosen.pivot(index="seed", columns="ranking", values="value").sort_index()
    differences = wide[ANGLE_RANKING] - wide[DISTANCE_RANKING]
    noise = (
        query.checked(ANGLE_RANKING, DISTANCE_RANKING, MEAN_HIERARCHY, differences)
        if query
        else None
    )
    summary = paired_contrast(differences, intervals, noise)
    entry: dict[str, str | int] = {"arm": arm, "ranking": DIFFERENCE}
    entry |= {level: "" for level in LEVELS}
    entry[MEAN_HIERARCHY] = mean_sd(summary["mean"], summary["sd"], 4, signed=True)
    entry[POSITIVE_SEEDS] = f"{summary['positive_seeds']}/{summary['seeds']}"
    entry[INTERVAL] = interval_text(summary["ci_low"], summary["ci_high"], 4)
    entry[P_SEEDS] = p_text(summary["p_seeds"], summary["p_min"])
    return entry | {"seeds": int(summary["seeds"])}
