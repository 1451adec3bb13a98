"""The test images' share of the intervals of the paired contrasts outside the factorial (the
controls' contrasts, the baselines' differences, the companion ranking difference), from the
per-query rows.

A contrast is two labelled variants of one table (two semantic arms, two curvature points, an
arm and the frozen features, one arm ranked two ways), scored on the same query/gallery draws.
Its per-query values are the first variant's AP minus the second's, per training seed; a
seedless variant (the frozen features, PCA: seed -1) is the same for every seed. The queries
are resampled by test image within their leaf strata, both variants and every seed sharing the
resample (:func:`hierbench.effects.intervals.per_seed_replicates`), which gives the test images'
shared and total variance of the contrast's seed mean
(:func:`hierbench.effects.intervals.query_noise`).
Mean hierarchy is the mean of the middle and high replicates. The observed value (every query
once) is handed back so the caller can check it against the per-seed table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.query_intervals import query_images
from hierbench.effects.resampling import (
    QueryResamples,
    observed_weights,
    per_seed_replicates,
    query_noise,
)
from hierbench.effects.schema import EffectsError
from hierbench.protocol import MEAN_HIERARCHY
from hierbench.relations import LEVELS

SEEDLESS = -1  # the seed of an arm that does not train (frozen features, PCA)
MATCH_TOLERANCE = 1e-9  # observed vs the per-seed table's mean difference (summation order)


@dataclass(frozen=True)
class ContrastNoise:
    """A contrast's observed value (its seed mean, every query once) and the test images'
    ``shared`` and ``total`` variance of it (:class:`hierbench.effects.intervals.QueryNoise`)."""

    observed: float
    shared: float
    total: float


@dataclass(frozen=True)
class _Draw:
    """One query/gallery draw at one level: per variant a (seeds, Q) AP array (NaN where the
    query is not scored) and the queries' groups (None under query-micro)."""

    values: dict[str, np.ndarray]
    seeds: dict[str, tuple[int, ...]]
    groups: np.ndarray | None


def _variant_rows(rows: pd.DataFrame, label: str, where: str) -> _Draw:
    """The AP arrays of every variant in one draw's rows at one level; every variant and seed
    must hold the same queries with the same groups."""
    queries = np.sort(rows["query"].unique())
    values, seeds, groups = {}, {}, None
    for variant, part in rows.groupby(label, sort=True):
        ordered = part.sort_values(["seed", "query"], kind="stable")
        own_seeds = tuple(sorted(int(s) for s in ordered["seed"].unique()))
        expected = pd.MultiIndex.from_product([own_seeds, queries])
        found = pd.MultiIndex.from_frame(ordered[["seed", "query"]])
        if len(ordered) != len(expected) or not found.equals(expected):
            raise EffectsError(
                f"{where}: {label} {variant!r} does not hold the same queries for every seed "
                "as the other variants; its per-query files are incomplete"
            )
        scores = ordered["ap"].to_numpy(dtype=np.float64, copy=True)
        scores[~ordered["valid"].to_numpy(dtype=bool)] = np.nan
        values[str(variant)] = scores.reshape(len(own_seeds), len(queries))
        seeds[str(variant)] = own_seeds
        if "group" in ordered.columns:
            own_groups = ordered["group"].to_numpy().reshape(len(own_seeds), len(queries))
            if groups is None:
                groups = own_groups[0]
            if (own_groups != groups).any():
                raise EffectsError(f"{where}: the variants give one query different groups")
    return _Draw(values=values, seeds=seeds, groups=groups)


class QueryContrasts:
    """Paired contrasts between the variants of one dataset's per-query rows (labelled by the
    ``label`` column), under the dataset's registered aggregation."""

    def __init__(
        self,
        per_query: pd.DataFrame,
        aggregation: str,
        settings: IntervalSettings,
        label: str = "variant",
    ) -> None:
        needed = {label, "dataset", "seed", "qg_seed", "query", "level", "valid", "ap", "group"}
        needed.add("image_id")
        missing = needed - set(per_query.columns)
        if missing:
            raise EffectsError(f"per-query rows lack columns {sorted(missing)}")
        datasets = sorted(per_query["dataset"].astype(str).unique())
        if len(datasets) != 1:
            raise EffectsError(f"one table's contrasts come from one dataset, got {datasets}")
        self.settings = settings
        self._macro = aggregation == "group_macro"
        self._draws: dict[str, list[_Draw]] = {}
        self._images = query_images(per_query, f"dataset {datasets[0]!r}")
        self._drawn: QueryResamples | None = None
        for level in LEVELS:
            rows = per_query[per_query["level"] == level]
            self._draws[level] = [
                _variant_rows(part, label, f"dataset {datasets[0]!r}, level {level!r}, draw {q}")
                for q, part in rows.groupby("qg_seed", sort=True)
            ]

    def _resamples(self) -> QueryResamples:
        """The query resamples (drawn once, shared by every contrast of the table)."""
        if self._drawn is None:
            self._drawn = self._images.resamples(self.settings)
        return self._drawn

    def _at_level(self, first: str, second: str, level: str) -> tuple[np.ndarray, np.ndarray]:
        """The per-seed replicates (R, S) and observed per-seed values (S,) of first − second
        at a level of the evaluation (leaf, middle, high)."""
        draws = self._draws[level]
        if not draws or any(v not in draws[0].values for v in (first, second)):
            raise EffectsError(f"no per-query rows of {first!r} and {second!r} at level {level}")
        seeds = _paired_seeds(draws[0].seeds[first], draws[0].seeds[second], first, second)
        batch = []
        for draw in draws:
            difference = _on_seeds(draw, first, seeds) - _on_seeds(draw, second, seeds)
            batch.append((difference[:, :, None], draw.groups if self._macro else None))
        sizes = [values.shape[1] for values, _ in batch]
        observed = per_seed_replicates(batch, observed_weights(sizes))[0, :, 0]
        return per_seed_replicates(batch, self._resamples())[:, :, 0], observed

    def contrast(self, first: str, second: str, level: str) -> ContrastNoise:
        """The observed seed mean of first − second at ``level`` and its test-image variances
        (mean hierarchy: from the mean of the middle and high replicates, made from the same
        resamples)."""
        if level == MEAN_HIERARCHY:
            parts = [self._at_level(first, second, lv) for lv in ("middle", "high")]
            replicates = (parts[0][0] + parts[1][0]) / 2
            observed = (parts[0][1] + parts[1][1]) / 2
        else:
            replicates, observed = self._at_level(first, second, level)
        noise = query_noise(replicates[:, :, None])
        return ContrastNoise(
            observed=float(observed.mean()),
            shared=float(noise.shared[0]),
            total=float(noise.total[0]),
        )

    def checked(self, first: str, second: str, level: str, differences: pd.Series) -> ContrastNoise:
        """The test-image variances of first − second at ``level``, whose observed value must
        equal the mean of the per-seed ``differences`` the table shows (else the per-query rows
        are not those the summaries came from)."""
        found = self.contrast(first, second, level)
        expected = float(differences.mean())
        if abs(found.observed - expected) > MATCH_TOLERANCE:
            raise EffectsError(
                f"{first} − {second} at level {level}: the per-query rows give "
                f"{found.observed!r}, the summaries {expected!r}; evaluate again"
            )
        return found


def _paired_seeds(
    first_seeds: tuple[int, ...], second_seeds: tuple[int, ...], first: str, second: str
) -> tuple[int, ...]:
    """The training seeds a contrast pairs: those both variants have, a seedless variant
    pairing with every seed of the other."""
    if first_seeds == (SEEDLESS,):
        return second_seeds
    if second_seeds == (SEEDLESS,) or first_seeds == second_seeds:
        return first_seeds
    shared = tuple(sorted(set(first_seeds) & set(second_seeds)))
    if not shared:
        raise EffectsError(f"{first!r} and {second!r} share no training seed to pair")
    return shared


def _on_seeds(draw: _Draw, variant: str, seeds: tuple[int, ...]) -> np.ndarray:
    """A variant's (len(seeds), Q) values on the paired seeds (a seedless one repeated)."""
    values, own = draw.values[variant], draw.seeds[variant]
    if own == (SEEDLESS,):
        return np.repeat(values, len(seeds), axis=0)
    return values[[own.index(seed) for seed in seeds]]
