"""Retrieval metrics: AP and Recall@K per query at the leaf, middle and high levels, and the
optimal-transport hierarchy scores OT@K and ot_tree per query.

Definitions (the protocol's "Evaluation", strict positives from :mod:`hierbench.relations`):

- The strict positives of a query at a level are the gallery items in that level's relation:
  leaf → same leaf; middle → same middle, different leaf; high → same high, different middle.
  Every other gallery item is non-relevant at that level and stays in the ranking (for example
  same-leaf items count as non-relevant at the middle level; nothing is removed).
- A query is valid at a level only if the gallery holds at least one strict positive for it.
- Ranking: the whole gallery in ascending distance; ties (equal computed float64 distances)
  are broken by ascending gallery index, i.e. a stable sort by (distance, gallery index).
  Bitwise identical gallery embeddings always get equal distances, so they always tie. A
  caller may rank by another score instead (``evaluate(..., pair_scores=...)``, lower first,
  the same ties; the companion cells' exterior angles, :mod:`hierbench.metrics.angles`).
- Recall@K = 1 if a strict positive is among the first K, else 0.
- AP(q) = (1/N⁺) Σ_k precision@k · rel_k over the whole ranking, N⁺ the number of positives.
- OT@K (:mod:`hierbench.metrics.ot`; lower is better): each gallery item's relation to the query
  on the ordinal support leaf = 0, middle = 1, high = 2, other = 3; the 1-D Wasserstein-1
  distance between the relation histogram of the top K of the ranking and that of the ideal
  top K (the gallery sorted by relation), both divided by K. One value per query, every query
  scored; K may not exceed the gallery size. This is our ideal-referenced adaptation, to the
  query's relation levels, of the companion method's score (which compares the label
  distribution of the query's own hierarchy tree with that of what was retrieved).
- ot_tree@K (lower is better), our second adaptation, taxonomy-tree-referenced and also over
  relation levels (not the method's part tree): the same W1, with the reference the query's
  taxonomy tree (the gallery items sharing at least its high group, i.e.
  its strict positives) as a histogram over leaf, middle and high divided by the tree's size,
  against the top K's histogram over the four relations divided by K; the same K as OT@K.
  ot_tree@tree takes K = the tree's size T (it then equals OT@T). A query whose tree holds no
  gallery item has no tree scores (NaN).
- Distances: Euclidean, or the geodesic distance of ``geoopt.PoincareBall(c=curvature)``,
  (2/√c)·artanh(√c·‖(−x)⊕_c y‖), both in float64 from ‖x − y‖² = ‖x‖² + ‖y‖² − 2⟨x, y⟩ (one
  BLAS product; absolute error about 1e-16·(‖x‖² + ‖y‖²)). Non-finite distances (NaN
  embeddings, points on or outside the ball) become ``distance_clip``; all distances are clipped
  to [0, distance_clip]. Unlike geoopt, artanh is not clamped below 1 and small c is not
  approximated by a Taylor series.

Formats:

- Per-query frame (:func:`evaluate`): one row per (query, level), rows sorted by query index,
  then leaf, middle, high; columns ``query`` (index into the query arrays), ``level``, ``valid``,
  ``ap`` and one ``r@K`` column per K (float 0/1); metrics are NaN where ``valid`` is False.
  With ``ot_ks``, each query has a fourth row of level ``all`` (:data:`protocol.ALL_LEVELS`),
  always valid, and the frame one ``ot@K`` column per K, then one ``ot_tree@K`` per K and
  ``ot_tree@tree``: the query's scores on its ``all`` row, NaN on its level rows (and ``ap``,
  ``r@K`` are NaN on the ``all`` row; the ``ot_tree`` columns are NaN for a query without a
  tree).
- Summary frame (:func:`query_micro`, :func:`group_macro`): one row per level in the order
  leaf, middle, high (then all, with OT@K); columns ``level``, ``n_valid`` (valid queries),
  ``n_groups`` (groups with a valid query; group-macro only), ``n_tree`` (queries scored by
  ``ot_tree``, those with a tree; 0 at the three levels; only with OT columns), ``map`` (mean
  AP), the ``r@K`` means and the OT means. Levels without any valid query have NaN metrics.
  OT@K is the mean over all queries in both summaries (at level all each query is its own
  group); ``ot_tree`` the mean over the ``n_tree`` queries that have a tree.

The engine avoids a full comparison sort: per chunk of queries it ranks the gallery by 16-bit
monotone quantised distances (NumPy's stable radix sort), then makes the ranks of the strict
positives exact by re-ordering them inside their runs of equal keys by (distance, index) (rows
with very long runs are sorted exactly instead). The ranks equal those of a stable sort by
(distance, gallery index). OT@K and ot_tree reuse those exact ranks: the top-K histogram
counts the positives ranked before K per relation, and the items that are no positive are
"other"; the tree histogram counts the positives.
"""

from hierbench.metrics.aggregate import group_macro, mean_hierarchy, query_micro, summarise
from hierbench.metrics.engine import evaluate, recall_columns, worker_count
from hierbench.metrics.ot import (
    OT_PREFIX,
    OT_TREE_PREFIX,
    TREE_CUTOFF,
    check_ot_ks,
    ideal_counts,
    is_ot_column,
    ordinal_wasserstein,
    ot_columns,
    ot_tree_columns,
    top_k_counts,
    top_tree_counts,
    tree_wasserstein,
)
from hierbench.metrics.rank_distances import GEOMETRIES, pairwise_distances

__all__ = [
    "GEOMETRIES",
    "OT_PREFIX",
    "OT_TREE_PREFIX",
    "TREE_CUTOFF",
    "check_ot_ks",
    "evaluate",
    "group_macro",
    "ideal_counts",
    "is_ot_column",
    "mean_hierarchy",
    "ordinal_wasserstein",
    "ot_columns",
    "ot_tree_columns",
    "pairwise_distances",
    "query_micro",
    "recall_columns",
    "summarise",
    "top_k_counts",
    "top_tree_counts",
    "tree_wasserstein",
    "worker_count",
]
