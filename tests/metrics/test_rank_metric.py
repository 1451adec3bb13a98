"""A researcher's retrieval metric (hierbench.metrics.rank_metric, hierbench.metricnames): the
engine scores it at each level from the ranks of the strict positives, checked against a plain
loop; it is named '<name>@<cutoff>', loaded from the config and refused with the key named."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from hierbench.config import evaluation_config, load_config
from hierbench.effects.statistics import _metric_columns as summary_metrics
from hierbench.metricnames import MetricPluginError, is_metric_column, metric_references
from hierbench.metrics import evaluate, summarise
from hierbench.metrics.rank_metric import RankedPositives, RankMetric, rank_metrics
from hierbench.metrics.scoring import ranking_settings
from hierbench.plugins import load_plugin

NDCG = load_plugin(f"{REPO / 'examples/ndcg.py'}:METRIC", "test", "hierbench.metrics")


def _reciprocal_rank(positives: RankedPositives) -> np.ndarray:
    first = np.full(positives.n_rows, np.inf)
    np.minimum.at(first, positives.rows, positives.ranks)
    return 1.0 / (first + 1.0)


RR = RankMetric("rr@all", _reciprocal_rank)


def _tree(leaves: np.ndarray) -> np.ndarray:
    leaves = np.asarray(leaves)
    return np.stack([leaves, leaves // 3, leaves // 6], axis=1)


def _strict_level(a: np.ndarray, b: np.ndarray) -> int:
    """0 same leaf, 1 same middle, 2 same high, 3 other."""
    return next((level for level in range(3) if a[level] == b[level]), 3)


def _loop(queries, gallery, query_labels, gallery_labels) -> dict[tuple[int, str], tuple]:
    """(reciprocal rank, NDCG@10) of every query and level from plain loops."""
    found = {}
    for q in range(len(queries)):
        dist = [math.dist(queries[q], gallery[g]) for g in range(len(gallery))]
        ranking = sorted(range(len(gallery)), key=lambda g: (dist[g], g))
        for level, name in enumerate(("leaf", "middle", "high")):
            relevant = [_strict_level(query_labels[q], gallery_labels[g]) == level for g in ranking]
            if not any(relevant):
                found[q, name] = (math.nan, math.nan)
                continue
            rr = 1.0 / (relevant.index(True) + 1)
            gain = sum(1 / math.log2(i + 2) for i, hit in enumerate(relevant[:10]) if hit)
            best = sum(1 / math.log2(i + 2) for i in range(min(sum(relevant), 10)))
            found[q, name] = (rr, gain / best)
    return found


def _case(seed: int = 0):
    rng = np.random.default_rng(seed)
    gallery_leaves = np.concatenate([rng.choice([0, 1, 2, 3, 4, 6, 7, 8, 9], 70), [5, 12]])
    query_leaves = np.concatenate([rng.integers(0, 16, 25), [5, 9, 10, 12, 13, 15]])
    queries = rng.normal(size=(len(query_leaves), 6))
    gallery = rng.normal(size=(len(gallery_leaves), 6))
    gallery[10] = gallery[11]  # a tie, broken by gallery index
    return queries, gallery, _tree(query_leaves), _tree(gallery_leaves)


def test_the_engine_scores_a_rank_metric_as_a_plain_loop_does():
    queries, gallery, query_labels, gallery_labels = _case()
    frame = evaluate(
        queries, gallery, query_labels, gallery_labels, ks=(1, 5), rank_metrics=(RR, NDCG)
    )
    expected = _loop(queries, gallery, query_labels, gallery_labels)
    for row in frame.to_dict("records"):
        rr, ndcg = expected[row["query"], row["level"]]
        assert row["rr@all"] == pytest.approx(rr, nan_ok=True, rel=1e-12)
        assert row["ndcg@10"] == pytest.approx(ndcg, nan_ok=True, rel=1e-12)
    assert list(frame.columns[4:8]) == ["r@1", "r@5", "rr@all", "ndcg@10"]
    assert frame["rr@all"].isna().equals(frame["ap"].isna())  # NaN exactly where AP is


def test_a_rank_metric_leaves_the_other_columns_and_level_all_as_they_were():
    queries, gallery, query_labels, gallery_labels = _case(1)
    plain = evaluate(queries, gallery, query_labels, gallery_labels, ot_ks=(5,))
    with_own = evaluate(
        queries, gallery, query_labels, gallery_labels, ot_ks=(5,), rank_metrics=(RR,)
    )
    pd.testing.assert_frame_equal(with_own.drop(columns="rr@all"), plain)
    assert with_own.loc[with_own["level"] == "all", "rr@all"].isna().all()


def test_summaries_and_effects_pick_the_metric_up_by_its_name():
    queries, gallery, query_labels, gallery_labels = _case(2)
    frame = evaluate(queries, gallery, query_labels, gallery_labels, rank_metrics=(NDCG,))
    summary = summarise(frame, query_labels, "query_micro")
    leaf = frame[(frame["level"] == "leaf") & frame["valid"]]
    assert summary.set_index("level").loc["leaf", "ndcg@10"] == pytest.approx(
        leaf["ndcg@10"].mean()
    )
    assert summary_metrics(summary.assign(dataset="x")) == [
        "map",
        "r@1",
        "r@5",
        "r@10",
        "r@20",
        "ndcg@10",
    ]
    assert is_metric_column("ndcg@10") and not is_metric_column("n_valid")


def test_a_metric_of_the_wrong_shape_is_an_error_naming_it():
    queries, gallery, query_labels, gallery_labels = _case()
    broken = RankMetric("bad@1", lambda positives: np.zeros(3))
    with pytest.raises(MetricPluginError, match=r"metric 'bad@1' returned shape \(3,\)"):
        evaluate(queries, gallery, query_labels, gallery_labels, rank_metrics=(broken,))


@pytest.mark.parametrize("name", ["ndcg", "NDCG@10", "map", "r@3", "ot@5", "ot_tree@tree"])
def test_a_metric_is_named_name_at_cutoff_and_not_a_built_ins(name):
    with pytest.raises(MetricPluginError, match=rf"^plugins.metrics.{name}: a metric's name"):
        metric_references({"plugins": {"metrics": {name: "examples/ndcg.py:METRIC"}}})


def test_the_config_names_the_metric_and_evaluation_reads_it(monkeypatch):
    monkeypatch.chdir(REPO)
    config = load_config(REPO / "configs/tiny.yaml")
    assert "plugins" not in evaluation_config(config, "cub")  # the default study's params
    config["plugins"]["metrics"] = {"ndcg@10": "examples/ndcg.py:METRIC"}
    sliced = evaluation_config(config, "cub")
    assert sliced["plugins"] == {"metrics": {"ndcg@10": "examples/ndcg.py:METRIC"}}
    assert [m.name for m in ranking_settings(sliced)["rank_metrics"]] == ["ndcg@10"]
    assert (
        ranking_settings(evaluation_config(load_config(REPO / "configs/tiny.yaml"), "cub"))[
            "rank_metrics"
        ]
        == ()
    )


def test_a_plugin_that_is_not_its_metric_is_refused(tmp_path: Path):
    plugin = tmp_path / "other.py"
    plugin.write_text(
        "from hierbench.metrics.rank_metric import RankMetric\n"
        "METRIC = RankMetric('rr@all', lambda p: p.counts())\nNUMBER = 3\n"
    )
    with pytest.raises(MetricPluginError, match=r"is the metric 'rr@all'"):
        rank_metrics({"plugins": {"metrics": {"ndcg@10": f"{plugin}:METRIC"}}})
    with pytest.raises(MetricPluginError, match=r"is a int, not a .*RankMetric"):
        rank_metrics({"plugins": {"metrics": {"ndcg@10": f"{plugin}:NUMBER"}}})
