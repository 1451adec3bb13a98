"""Paired contrasts outside the factorial (hierbench.effects.query_contrasts): the test images'
variances of first − second agree with a plain loop over leaf-stratified query resamples, a
seedless variant pairs with every seed, mean hierarchy comes from the mean of middle and high
replicates, and a contrast whose per-query rows disagree with the per-seed table is refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench.effects import EffectsError
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.effects.resampling import collapsed_strata, draw_image_weights, query_noise
from hierbench.effects.variants import per_seed_by_variant
from hierbench.metrics.scoring import metric_settings, score_draws

SEEDS, DRAWS = (1, 2, 3), (7, 8)
LEVELS = ("leaf", "middle", "high")
SETTINGS = IntervalSettings(level=0.9, replicates=300, seed=5)
VARIANTS = {"full": 1.5, "shuffle": 0.5, "frozen": 0.0}  # how near each embeds to its labels


def _scores() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-query rows and summaries of three variants on two draws of 48 items; ``frozen`` is
    seedless (seed -1), the others train on three seeds."""
    rng = np.random.default_rng(1)
    leaf = rng.integers(0, 8, size=48)
    labels = np.stack([leaf, leaf // 2, leaf // 4], axis=1)
    ids = pd.Series([f"img{i:02d}" for i in range(48)])
    sealed = pd.concat(
        pd.DataFrame(
            {"split": f"qg-{d}", "role": np.where(order < 16, "query", "gallery"), "image_id": ids}
        )
        for d, order in ((d, rng.permutation(48)) for d in DRAWS)
    )
    config = {
        "evaluation": {"recall_ks": [1], "ot_ks": [5], "query_chunk": 16},
        "training": {"distance_clip_test": 1e6},
    }
    metric = metric_settings(config, "euclidean", None)
    per_query, summaries = [], []
    for variant, pull in VARIANTS.items():
        for seed in (-1,) if variant == "frozen" else SEEDS:
            points = rng.normal(size=(48, 4)) + pull * np.eye(4)[leaf % 4]
            rows, summary = score_draws(points, labels, ids, sealed, list(DRAWS), metric)
            identity = {
                "dataset": "toy",
                "arm": "E_S",
                "geometry": "E",
                "loss": "S",
                "seed": seed,
                "variant": variant,
            }
            per_query.append(rows.assign(**identity))
            summaries.append(summary.assign(**identity))
    return pd.concat(per_query, ignore_index=True), pd.concat(summaries, ignore_index=True)


PER_QUERY, SUMMARIES = _scores()


def _aggregate(values: np.ndarray, groups: np.ndarray, weights: np.ndarray, macro: bool) -> float:
    """One resample's aggregation of one seed's per-query values, query by query."""
    if not macro:
        total = weight = 0.0
        for value, w in zip(values, weights, strict=True):
            if np.isfinite(value):
                total, weight = total + w * value, weight + w
        return total / weight
    by_group: dict[int, list[tuple[float, float]]] = {}
    for value, group, w in zip(values, groups, weights, strict=True):
        if np.isfinite(value) and w > 0:
            by_group.setdefault(int(group), []).append((value, w))
    means = [sum(v * w for v, w in found) / sum(w for _, w in found) for found in by_group.values()]
    return float(np.mean(means))


def _image_weights() -> tuple[list[str], np.ndarray]:
    """The query images (sorted) and their (R, U) weights, resampled within their strata."""
    rows = PER_QUERY[PER_QUERY["variant"] == "frozen"]
    images = sorted(set(rows["image_id"]))
    labels = np.array(
        [
            [
                rows[(rows["image_id"] == i) & (rows["level"] == lv)]["group"].iloc[0]
                for lv in LEVELS
            ]
            for i in images
        ]
    )
    return images, draw_image_weights(collapsed_strata(labels), SETTINGS.replicates, 5)


def _plain_loop(first: str, second: str, level: str, macro: bool) -> np.ndarray:
    """(R, S) replicates of each seed's first − second, one replicate, seed and query at a
    time, the queries resampled within their strata."""
    rows = PER_QUERY[PER_QUERY["level"] == level]
    draws = []
    for qg in DRAWS:
        at = rows[rows["qg_seed"] == qg]

        def values(variant: str, seed: int, at: pd.DataFrame = at) -> np.ndarray:
            own = at[(at["variant"] == variant) & (at["seed"].isin([seed, -1]))]
            own = own.sort_values("query")
            return np.where(own["valid"], own["ap"], np.nan)

        groups = at[at["variant"] == first].sort_values(["seed", "query"])["group"].to_numpy()
        queries = at[at["variant"] == "frozen"].sort_values("query")["image_id"].tolist()
        draws.append((values, groups[: at["query"].nunique()], queries))
    images, image_weights = _image_weights()
    out = np.empty((SETTINGS.replicates, len(SEEDS)))
    for r in range(SETTINGS.replicates):
        for s, seed in enumerate(SEEDS):
            by_draw = [
                _aggregate(
                    values(first, seed) - values(second, seed),
                    groups,
                    image_weights[r, [images.index(i) for i in queries]],
                    macro,
                )
                for values, groups, queries in draws
            ]
            out[r, s] = np.mean(by_draw)
    return out


@pytest.mark.parametrize("aggregation", ["query_micro", "group_macro"])
@pytest.mark.parametrize(("first", "second"), [("full", "shuffle"), ("full", "frozen")])
def test_variances_agree_with_a_plain_loop(aggregation: str, first: str, second: str) -> None:
    contrasts = QueryContrasts(PER_QUERY, aggregation, SETTINGS)
    found = contrasts.contrast(first, second, "middle")
    expected = query_noise(
        _plain_loop(first, second, "middle", aggregation == "group_macro")[..., None]
    )
    assert found.shared == pytest.approx(float(expected.shared[0]), rel=1e-9, abs=1e-15)
    assert found.total == pytest.approx(float(expected.total[0]), rel=1e-9, abs=1e-15)
    assert found.total > 0


@pytest.mark.parametrize("aggregation", ["query_micro", "group_macro"])
def test_observed_values_equal_the_per_seed_tables(aggregation: str) -> None:
    per_seed = per_seed_by_variant(SUMMARIES, aggregation)
    per_seed = per_seed[per_seed["metric"] == "map"]
    contrasts = QueryContrasts(PER_QUERY, aggregation, SETTINGS)
    for level in ("leaf", "middle", "high", "mean_hierarchy"):
        wide = per_seed[per_seed["level"] == level].pivot(
            index="seed", columns="variant", values="value"
        )
        trained = wide.drop(index=-1)
        shuffle = trained["full"] - trained["shuffle"]
        frozen = trained["full"] - float(wide.loc[-1, "frozen"])
        for other, differences in (("shuffle", shuffle), ("frozen", frozen)):
            found = contrasts.contrast("full", other, level)
            assert found.observed == pytest.approx(differences.mean(), abs=1e-12)
            contrasts.checked("full", other, level, differences)  # does not raise


def test_mean_hierarchy_comes_from_the_mean_of_middle_and_high_replicates() -> None:
    contrasts = QueryContrasts(PER_QUERY, "group_macro", SETTINGS)
    both = contrasts.contrast("full", "shuffle", "mean_hierarchy")
    middle, high = (_plain_loop("full", "shuffle", lv, True) for lv in ("middle", "high"))
    expected = query_noise(((middle + high) / 2)[..., None])
    assert both.shared == pytest.approx(float(expected.shared[0]), rel=1e-9)


def test_rows_that_disagree_with_the_summaries_are_refused() -> None:
    contrasts = QueryContrasts(PER_QUERY, "query_micro", SETTINGS)
    wrong = pd.Series([0.5, 0.5, 0.5], index=list(SEEDS))
    with pytest.raises(EffectsError, match=r"full − shuffle at level middle.*evaluate again"):
        contrasts.checked("full", "shuffle", "middle", wrong)


def test_a_variant_missing_a_seeds_queries_is_named() -> None:
    rows = PER_QUERY.drop(PER_QUERY.index[(PER_QUERY["variant"] == "shuffle")][:1])
    with pytest.raises(EffectsError, match="variant 'shuffle' does not hold the same queries"):
        QueryContrasts(rows, "query_micro", SETTINGS)
