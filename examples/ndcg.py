"""NDCG@10 as a retrieval metric of the study, beside mAP and Recall@K.

At each level (leaf, middle, high) a gallery image is relevant to a query when it is a strict
positive there, as for AP. The engine hands the metric every query's strict positives and
their 0-based ranks; the discounted gain of those in the top 10 is divided by the best gain
the query's positives could reach. It is scored in every sealed evaluation and enters the
arm and effect tables, with the same intervals as mAP.

Name it in a config (examples/ndcg.yaml):

    plugins: {metrics: {ndcg@10: examples/ndcg.py:METRIC}}
"""

import numpy as np

from hierbench.metrics.rank_metric import RankedPositives, RankMetric

CUTOFF = 10


def ndcg(positives: RankedPositives) -> np.ndarray:
    """Binary-relevance NDCG@CUTOFF of each query (the engine sets a query without a strict
    positive to NaN)."""
    top = positives.ranks < CUTOFF
    gains = np.bincount(
        positives.rows[top],
        weights=1.0 / np.log2(positives.ranks[top] + 2.0),
        minlength=positives.n_rows,
    )
    ideal_hits = np.minimum(positives.counts(), CUTOFF)
    ideal = np.cumsum(1.0 / np.log2(np.arange(CUTOFF) + 2.0))
    best = np.where(ideal_hits > 0, ideal[np.maximum(ideal_hits - 1, 0)], 1.0)
    return gains / best


METRIC = RankMetric(f"ndcg@{CUTOFF}", ndcg)
