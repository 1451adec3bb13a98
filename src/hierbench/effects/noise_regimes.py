"""Where an effect's data leave the interval's model: a few test images, or one training seed.

The interval (:mod:`hierbench.effects.intervals`) counts the seed mean as roughly normal: many
test images each carrying a little of the effect, and seeds that spread normally. Two regimes
break that, and benchmarks/coverage.py measures how far (its rows in docs/benchmarks.md): in
its regimes where 1 % or 3 % of the images carry the whole effect the interval still covers
near its level, and with rare failing seeds it covers less, the more so with more seeds. The
interval cannot see either from its own numbers; this module looks at what the tables stage
holds (the per-query rows and the effects by seed) and names the regime where the data show it:

- ``FEW_IMAGES``, "a few test images carry this effect": each query image's contrast (the
  effect's formula on its per-query scores, averaged over the seeds and the draws that hold
  it; at mean hierarchy the mean of its middle and high contrasts) is centred within the
  strata the interval resamples in (its leaf, pooled as :func:`collapsed_strata` pools them);
  named when the top 1 % of the images (at least one) carry at least 30 % of the sum of
  squared deviations. Normal contrasts give their top 1 % about 9 % of it; in the coverage
  benchmark's normal studies (about 130 images) it is named in under a tenth of them.
- ``OUTLYING_SEED``, "one seed lies far from the others": the generalized ESD test (Grubbs'
  test repeated, so that a second failed seed cannot mask the first) on the per-seed effects at
  α = 0.05, setting aside at most a third of the seeds: about 5 % of studies with normal seeds
  are named, whatever their number; with three seeds it can only fire when the other two
  nearly agree.

Neither says the interval is wrong, and silence is no clean bill: a study whose test images
happen to hold none of the rare large effects, or whose seeds hold no failure, shows nothing,
though its interval misses the truth more often than the level says (the benchmark's notes
give the rates). The result is plain data, one row per (dataset, effect, level, metric,
regime) named, with a sentence to print beside the interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from hierbench.effects.formulas import effect_arms, effect_formulas
from hierbench.effects.outlying_seeds import SeedOutliers, esd_outliers
from hierbench.effects.resampling import collapsed_strata
from hierbench.effects.schema import ANY_OT_METRIC, EffectsError
from hierbench.metricnames import is_plugin_metric
from hierbench.protocol import ALL_LEVELS, MEAN_HIERARCHY
from hierbench.relations import LEVELS

FEW_IMAGES = "few images"
OUTLYING_SEED = "outlying seed"
REGIME_COLUMNS = (
    "dataset",
    "effect",
    "level",
    "metric",
    "regime",
    "statistic",
    "threshold",
    "detail",
)
CONTRAST_COLUMNS = ("dataset", "level", "metric", "effect", "image_id", "stratum", "contrast")
PER_QUERY_NEEDED = ("dataset", "arm", "seed", "qg_seed", "query", "level", "valid", "group")
BY_SEED_NEEDED = ("dataset", "level", "metric", "effect", "seed", "value")


@dataclass(frozen=True)
class RegimeThresholds:
    """When a regime is named: the share of images counted as the top ones, the share of the
    images' spread they must carry, the fewest images that make the share mean anything, and
    the level of the outlying-seed test."""

    top_images: float = 0.01
    image_share: float = 0.30
    fewest_images: int = 20
    seed_alpha: float = 0.05

    def __post_init__(self) -> None:
        """Refuse settings that name nothing or everything."""
        if not 0 < self.top_images < 1 or not 0 < self.image_share <= 1:
            raise EffectsError(
                f"regime thresholds: top_images {self.top_images} and image_share "
                f"{self.image_share} must lie in (0, 1)"
            )
        if not 0 < self.seed_alpha < 1 or self.fewest_images < 2:
            raise EffectsError(
                f"regime thresholds: seed_alpha {self.seed_alpha} must lie in (0, 1) and "
                f"fewest_images {self.fewest_images} be at least 2"
            )


DEFAULT_THRESHOLDS = RegimeThresholds()


@dataclass(frozen=True)
class NoiseRegime:
    """One regime named for one effect: the statistic that named it, its threshold and a
    sentence for a reader."""

    dataset: str
    effect: str
    level: str
    metric: str
    regime: str
    statistic: float
    threshold: float
    detail: str


def noise_regimes(
    per_query: pd.DataFrame,
    by_seed: pd.DataFrame,
    *,
    effects: Iterable[str] | None = None,
    levels: Iterable[str] | None = None,
    metrics: Iterable[str] | None = None,
    thresholds: RegimeThresholds = DEFAULT_THRESHOLDS,
) -> pd.DataFrame:
    """The regimes the data show, one row per (dataset, effect, level, metric, regime) named
    (``REGIME_COLUMNS``; empty when none): ``FEW_IMAGES`` from the cells' per-query rows (a
    run's eval/*.parquet, as ``read_per_query`` gives them), ``OUTLYING_SEED`` from the
    effects by seed (``effects_by_seed``). ``effects``, ``levels`` (mean_hierarchy included)
    and ``metrics`` (the tables' names: ``map``, ``r@1``, …) narrow what is examined; None
    examines everything present."""
    wanted = _Selection.of(effects, levels, metrics)
    contrasts = image_contrasts(per_query, wanted.effects, wanted.levels, wanted.metrics)
    found = [
        *few_image_regimes(contrasts, thresholds),
        *outlying_seed_regimes(wanted.narrow(by_seed), thresholds),
    ]
    frame = pd.DataFrame([asdict(item) for item in found], columns=list(REGIME_COLUMNS))
    return frame.sort_values(list(REGIME_COLUMNS[:5]), kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class _Selection:
    """The effects, levels and metrics to examine (None: all)."""

    effects: tuple[str, ...] | None
    levels: tuple[str, ...] | None
    metrics: tuple[str, ...] | None

    @classmethod
    def of(
        cls,
        effects: Iterable[str] | None,
        levels: Iterable[str] | None,
        metrics: Iterable[str] | None,
    ) -> _Selection:
        """The selection as tuples (None stays None)."""
        return cls(*(None if part is None else tuple(part) for part in (effects, levels, metrics)))

    def narrow(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of a frame with effect, level and metric columns that are selected."""
        keep = pd.Series(True, index=frame.index)
        for column, chosen in (
            ("effect", self.effects),
            ("level", self.levels),
            ("metric", self.metrics),
        ):
            if chosen is not None and column in frame.columns:
                keep &= frame[column].isin(chosen)
        return frame[keep]


# ------------------------------------------------------------------------ the test images


def _metric_columns(per_query: pd.DataFrame, metrics: tuple[str, ...] | None) -> list[str]:
    """The per-query metric columns to examine (AP as ``ap``, Recall@K, plugins', OT)."""
    found = [
        str(c)
        for c in per_query.columns
        if c == "ap"
        or str(c).startswith("r@")
        or is_plugin_metric(c)
        or ANY_OT_METRIC.fullmatch(str(c))
    ]
    return [c for c in found if metrics is None or _table_name(c) in metrics]


def _table_name(column: str) -> str:
    """The tables' name of a per-query metric column (``ap`` is ``map``)."""
    return "map" if column == "ap" else column


def _row_levels(levels: tuple[str, ...] | None) -> list[str]:
    """The per-query rows' levels that the requested levels need (mean hierarchy: middle and
    high)."""
    if levels is None:
        return [*LEVELS, ALL_LEVELS]
    needed = set(levels) | ({"middle", "high"} if MEAN_HIERARCHY in levels else set())
    return [level for level in (*LEVELS, ALL_LEVELS) if level in needed]


def image_contrasts(
    per_query: pd.DataFrame,
    effects: Iterable[str] | None = None,
    levels: Iterable[str] | None = None,
    metrics: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Each query image's contrast of each effect (``CONTRAST_COLUMNS``): the effect's formula
    on the image's valid per-query scores, averaged over seeds and the draws that hold it, with
    the stratum the interval resamples it in; mean hierarchy the mean of its middle and high
    contrasts (either alone where the other is not valid)."""
    missing = set(PER_QUERY_NEEDED) - set(per_query.columns)
    if missing or "image_id" not in per_query.columns:
        raise EffectsError(
            f"per-query rows lack {sorted(missing | {'image_id'} - set(per_query.columns))}; "
            "pass a run's eval/*.parquet rows (read_per_query) to name the test images' regime"
        )
    wanted = _Selection.of(effects, levels, metrics)
    columns = _metric_columns(per_query, wanted.metrics)
    trained = per_query[per_query["arm"].isin(effect_arms(per_query["arm"].unique()))]
    formulas = effect_formulas(trained["arm"].unique())
    chosen = {e: f for e, f in formulas.items() if wanted.effects is None or e in wanted.effects}
    parts = []
    for level in _row_levels(wanted.levels):
        rows = trained[trained["level"] == level]
        scored = [c for c in columns if (level == ALL_LEVELS) == bool(ANY_OT_METRIC.fullmatch(c))]
        if rows.empty or not scored or not chosen:
            continue
        parts.append(_level_contrasts(rows, level, scored, chosen))
    if not parts:
        return pd.DataFrame(columns=list(CONTRAST_COLUMNS))
    contrasts = pd.concat(parts, ignore_index=True)
    if wanted.levels is None or MEAN_HIERARCHY in wanted.levels:
        contrasts = pd.concat([contrasts, _mean_hierarchy(contrasts)], ignore_index=True)
    if wanted.levels is not None:
        contrasts = contrasts[contrasts["level"].isin(wanted.levels)]
    strata = _strata(trained)
    merged = contrasts.merge(strata, on=["dataset", "image_id"], how="left", validate="many_to_one")
    return merged[list(CONTRAST_COLUMNS)].reset_index(drop=True)


def _level_contrasts(
    rows: pd.DataFrame, level: str, columns: list[str], formulas: dict
) -> pd.DataFrame:
    """The image contrasts of one level's rows: per (dataset, image, metric, effect) the mean
    of the effect's per-query contrasts over seeds and draws (invalid queries left out)."""
    values = rows[columns].where(rows["valid"].astype(bool), axis=0)
    keys = ["dataset", "image_id", "qg_seed", "seed", "query"]
    wide = values.set_index([rows[k].to_numpy() for k in [*keys, "arm"]])
    wide.index.names = [*keys, "arm"]
    wide = wide.unstack("arm")
    parts = []
    for column in columns:
        arms = wide[column]
        for effect, formula in formulas.items():
            contrast = formula(arms).groupby(level=["dataset", "image_id"], sort=True).mean()
            parts.append(
                contrast.rename("contrast")
                .reset_index()
                .assign(level=level, metric=_table_name(column), effect=effect)
            )
    return pd.concat(parts, ignore_index=True)


def _mean_hierarchy(contrasts: pd.DataFrame) -> pd.DataFrame:
    """Each image's mean-hierarchy contrast: the mean of its middle and high ones."""
    parts = contrasts[contrasts["level"].isin(["middle", "high"])]
    keys = ["dataset", "image_id", "metric", "effect"]
    means = parts.groupby(keys, sort=True)["contrast"].mean().reset_index()
    return means.assign(level=MEAN_HIERARCHY)


def _strata(per_query: pd.DataFrame) -> pd.DataFrame:
    """Each query image's resampling stratum (its leaf, or the pool of one-image leaves it
    joins: :func:`hierbench.effects.resampling.collapsed_strata`) per dataset."""
    rows = per_query[per_query["level"].isin(LEVELS)]
    labels = rows.drop_duplicates(["dataset", "image_id", "level"]).pivot(
        index=["dataset", "image_id"], columns="level", values="group"
    )
    parts = []
    for dataset, part in labels.groupby(level="dataset", sort=True):
        strata = collapsed_strata(part[list(LEVELS)].to_numpy())
        images = part.index.get_level_values("image_id")
        parts.append(pd.DataFrame({"dataset": dataset, "image_id": images, "stratum": strata}))
    return pd.concat(parts, ignore_index=True)


def top_image_shares(contrasts: pd.DataFrame, top_images: float) -> pd.DataFrame:
    """Per (dataset, effect, level, metric): the number of images, how many are the top
    ``top_images`` share (at least one), the share of the squared deviations from their
    stratum's mean that those carry, and the mean contrast with and without them."""
    keys = ["dataset", "effect", "level", "metric"]
    frame = contrasts.dropna(subset=["contrast"]).copy()
    centre = frame.groupby([*keys, "stratum"], sort=False)["contrast"].transform("mean")
    frame["squared"] = (frame["contrast"] - centre) ** 2
    grouped = frame.groupby(keys, sort=True)
    frame["images"] = grouped["contrast"].transform("size")
    frame["rank"] = grouped["squared"].rank(method="first", ascending=False)
    frame["top"] = frame["rank"] <= np.ceil(top_images * frame["images"])
    frame["top_squared"] = frame["squared"].where(frame["top"], 0.0)
    frame["rest"] = frame["contrast"].where(~frame["top"])
    sums = frame.groupby(keys, sort=True).agg(
        images=("contrast", "size"),
        top=("top", "sum"),
        squared=("squared", "sum"),
        top_squared=("top_squared", "sum"),
        mean=("contrast", "mean"),
        without=("rest", "mean"),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        sums["share"] = sums["top_squared"] / sums["squared"]
    return sums.reset_index()


def few_image_regimes(
    contrasts: pd.DataFrame, thresholds: RegimeThresholds = DEFAULT_THRESHOLDS
) -> list[NoiseRegime]:
    """``FEW_IMAGES`` for each effect whose top images carry at least
    ``thresholds.image_share`` of the images' spread (:func:`top_image_shares`)."""
    if contrasts.empty:
        return []
    shares = top_image_shares(contrasts, thresholds.top_images)
    named = shares[
        (shares["images"] >= thresholds.fewest_images) & (shares["share"] >= thresholds.image_share)
    ]
    return [
        NoiseRegime(
            str(item["dataset"]),
            str(item["effect"]),
            str(item["level"]),
            str(item["metric"]),
            FEW_IMAGES,
            float(item["share"]),
            thresholds.image_share,
            _few_images_sentence(item, thresholds),
        )
        for item in named.to_dict("records")
    ]


def _few_images_sentence(item: dict[str, Any], thresholds: RegimeThresholds) -> str:
    """What a reader should know when a few images carry an effect."""
    return (
        f"a few test images carry this effect: {int(item['top'])} of {int(item['images'])} "
        f"query images (the top {thresholds.top_images:.0%}) hold {item['share']:.0%} of its "
        f"spread over images (named from {thresholds.image_share:.0%}); the images' mean "
        f"contrast is {item['mean']:.4g}, {item['without']:.4g} without them. The interval "
        "counts on many images each carrying a little and may be too narrow; a new test set "
        "may hold more or fewer such images"
    )


# ------------------------------------------------------------------------------ the seeds


def outlying_seed_regimes(
    by_seed: pd.DataFrame, thresholds: RegimeThresholds = DEFAULT_THRESHOLDS
) -> list[NoiseRegime]:
    """``OUTLYING_SEED`` for each effect whose seeds hold an outlier by the generalized ESD
    test at ``thresholds.seed_alpha`` (:func:`esd_outliers`; finite values only)."""
    missing = set(BY_SEED_NEEDED) - set(by_seed.columns)
    if missing:
        raise EffectsError(
            f"effects by seed lack {sorted(missing)}; pass effects_by_seed's table to name an "
            "outlying seed"
        )
    keys = ["dataset", "effect", "level", "metric"]
    finite = by_seed[np.isfinite(by_seed["value"].to_numpy(dtype=np.float64))]
    named = []
    for key, part in finite.groupby(keys, sort=True):
        values = part["value"].to_numpy(dtype=np.float64)
        found = esd_outliers(values, thresholds.seed_alpha)
        if found.positions:
            seeds = part["seed"].to_numpy()
            detail = _outlying_seed_sentence(values, seeds, found, thresholds)
            named.append(
                NoiseRegime(
                    *(str(k) for k in key),
                    OUTLYING_SEED,
                    found.statistic,
                    found.critical,
                    detail,
                )
            )
    return named


def _outlying_seed_sentence(
    values: np.ndarray, seeds: np.ndarray, found: SeedOutliers, thresholds: RegimeThresholds
) -> str:
    """What a reader should know when one seed (or a few) lies far from the others."""
    chosen = list(found.positions)
    others = np.delete(values, chosen)
    named = ", ".join(f"seed {seeds[p]} gives {values[p]:.4g}" for p in chosen)
    return (
        f"{'one seed lies' if len(chosen) == 1 else f'{len(chosen)} seeds lie'} far from the "
        f"others: {named}, against a mean of {others.mean():.4g} for the other {len(others)} "
        f"(generalized ESD test at {thresholds.seed_alpha:g}: {found.statistic:.2f} SDs, "
        f"beyond {found.critical:.2f}). The interval counts the seeds as normal; a seed that "
        "failed, or seeds that fail now and then, can leave it too narrow or off centre"
    )
