"""Figures of the study (matplotlib's object API, no pyplot state), PNG and PDF, deterministic.

- effects: a forest plot of each simple effect of the factorial (and each contrast of the
  companion method, where its cells ran) on mean hierarchy mAP: one point per seed, the mean
  on its interval (the five planned endpoints in blue, the exploratory contrasts in grey);
- mAP by level: leaf, middle and high mAP for each arm and the frozen baseline (how the
  arms redistribute retrieval quality across levels);
- hyperbolic norms: for the Poincaré cells, the norm of group prototypes at each taxonomy
  level (prototype = the group's mean tangent vector mapped back onto the ball);
- baselines: mAP by level of the context baselines (frozen, PCA, HIER-style) beside the
  factorial's arms;
- OT@K by K: our ideal-referenced optimal-transport hierarchy score against K for each arm and
  the frozen baseline (lower is better: how far the relation mix of the top K is from the ideal
  mix); where our taxonomy-tree-referenced scores are present, beside it ot_tree@K against K and
  ot_tree@tree per arm (how far the top K's mix is from that of the query's taxonomy tree).
  Both are our adaptations of the companion method's score to relation levels, and the labels
  say so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hierbench.effects.schema import OT_METRIC, OT_TREE_METRIC, SORT_KEYS, is_added_arm
from hierbench.protocol import ARM_ORDER, FACTORIAL_EFFECTS
from hierbench.protocol import LEVELS as LEVEL_ORDER

# No creation dates or software strings inside the files: equal figures give equal bytes.
SAVE_METADATA = {
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
}


def _colour(arm: str) -> str:
    """An arm's colour, the same in every figure: its place in the study's arm order (an
    added loss's arms after them, by name)."""
    if arm in ARM_ORDER:
        return f"C{ARM_ORDER.index(arm)}"
    return f"C{(len(ARM_ORDER) + sum(map(ord, arm))) % 10}"


def figure_writer(figure: Figure, kind: str) -> Callable[[Path], None]:
    """A writer of one figure as ``kind`` (png or pdf) without dates, for publishing."""
    if kind not in SAVE_METADATA:
        raise ValueError(f"figure format must be one of {sorted(SAVE_METADATA)}, got {kind!r}")
    return lambda path: figure.savefig(path, format=kind, dpi=150, metadata=SAVE_METADATA[kind])


def effects_figure(effects: pd.DataFrame, summary: pd.DataFrame, title: str) -> Figure:
    """A forest plot of each simple effect (one metric and level): a row per effect, its seeds
    as grey points, its mean as a point on its interval (``summary``: ``effect``, ``mean``,
    ``ci_low``, ``ci_high``), a line at zero; the planned endpoints (the factorial's five) in
    blue, the exploratory contrasts in grey."""
    present = sorted(set(effects["effect"]), key=SORT_KEYS["effect"])
    figure = Figure(figsize=(6.0, 0.45 * len(present) + 1.2))
    axis = figure.subplots()
    rows = summary.set_index("effect")
    for position, effect in enumerate(present):
        row = -position  # the first effect on top
        values = effects.loc[effects["effect"] == effect, "value"].to_numpy(float)
        axis.scatter(values, np.full(len(values), row + 0.15), color="0.5", s=14, zorder=3)
        low, high, mean = (float(rows.loc[effect, key]) for key in ("ci_low", "ci_high", "mean"))
        color = "C0" if effect in FACTORIAL_EFFECTS else "0.45"
        axis.plot([low, high], [row, row], color=color, linewidth=2.0)
        axis.scatter([mean], [row], color=color, s=28, zorder=4)
    axis.axvline(0, color="0.3", linewidth=0.8)
    axis.set_yticks([-p for p in range(len(present))], present)
    if len(present) > len(FACTORIAL_EFFECTS):
        axis.tick_params(axis="y", labelsize=7)
    axis.set_xlabel("difference in mean hierarchy mAP")
    axis.set_title(title)
    figure.tight_layout()
    return figure


def _level_ticks(labels: Mapping[str, str] | None) -> list[str]:
    """The x tick labels of the three levels: the dataset's level names (or the keys)."""
    return [(labels or {}).get(level, level) for level in LEVEL_ORDER]


def map_by_level_figure(
    arms: pd.DataFrame,
    title: str,
    order: tuple[str, ...] | list[str] = ARM_ORDER,
    ylabel: str = "mAP (query-micro)",
    labels: Mapping[str, str] | None = None,
) -> Figure:
    """Grouped bars of mAP per level (named by ``labels``) for each arm (in ``order``), the SD
    over seeds as error bars."""
    figure = Figure(figsize=(6.5, 3.5))
    axis = figure.subplots()
    present = [arm for arm in order if arm in set(arms["arm"])]
    present += sorted(arm for arm in set(arms["arm"]) - set(order) if is_added_arm(arm))
    width = 0.8 / max(len(present), 1)
    for index, arm in enumerate(present):
        rows = arms[arms["arm"] == arm].set_index("level").reindex(list(LEVEL_ORDER))
        positions = np.arange(len(LEVEL_ORDER)) + (index - (len(present) - 1) / 2) * width
        axis.bar(positions, rows["mean"], width, yerr=rows["sd"].fillna(0), label=arm, capsize=2)
    axis.set_xticks(range(len(LEVEL_ORDER)), _level_ticks(labels))
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    axis.legend(ncol=len(present), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    figure.tight_layout()
    return figure


def ot_by_k_figure(arms: pd.DataFrame, title: str) -> Figure:
    """Mean OT@K against K for each arm, the SD over seeds as error bars; with tree-referenced
    rows, ot_tree@K against K and ot_tree@tree per arm in two more panels.

    ``arms`` holds arms-summary rows of the OT metrics (``ot@K``, and ``ot_tree@K`` and
    ``ot_tree@tree`` where present) with an ``arm`` column.
    """
    metrics = arms["metric"].astype(str)
    ideal_k = metrics.str.extract(OT_METRIC, expand=False)  # K of ot@K, else NaN
    tree_k = metrics.str.extract(OT_TREE_METRIC, expand=False).fillna("")  # K, "tree" or ""
    ideal = arms.assign(k=ideal_k)[ideal_k.notna()]
    by_k = arms.assign(k=tree_k)[tree_k.str.isdigit()]
    at_tree = arms[(tree_k != "") & ~tree_k.str.isdigit()]
    tree = not (by_k.empty and at_tree.empty)
    figure = Figure(figsize=(13, 3.5) if tree else (6, 3.5))
    axes = figure.subplots(1, 3, width_ratios=(3, 3, 2)) if tree else [figure.subplots()]
    present = [arm for arm in ARM_ORDER if arm in set(arms["arm"])]
    present += sorted(set(arms["arm"]) - set(ARM_ORDER))  # an added loss's, after the paper's
    _ot_against_k(axes[0], ideal, present, "OT@K (ours; query-micro; lower is better)")
    axes[0].set_title(title)
    if tree:
        _ot_against_k(axes[1], by_k, present, "ot_tree@K (ours; query-micro; lower is better)")
        axes[1].set_title("ot_tree@K: to the query's taxonomy tree")
        _ot_at_tree(axes[2], at_tree, present)
    # Under the middle panel when there are three: centred under the figure.
    legend_axis = axes[1] if tree else axes[0]
    legend_axis.legend(
        *axes[0].get_legend_handles_labels(),
        ncol=len(present),
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
    )
    figure.tight_layout()
    return figure


def _ot_against_k(axis: Axes, arms: pd.DataFrame, present: list[str], label: str) -> None:
    """One line per arm of an OT score's mean against K (column ``k``), SD as error bars."""
    arms = arms.assign(k=arms["k"].astype(int))
    for arm in present:
        rows = arms[arms["arm"] == arm].sort_values("k")
        axis.errorbar(
            rows["k"],
            rows["mean"],
            yerr=rows["sd"].fillna(0),
            marker="o",
            markersize=4,
            capsize=3,
            label=arm,
            color=_colour(arm),
        )
    axis.set_xticks(sorted(set(arms["k"])))
    axis.set_xlabel("K")
    axis.set_ylabel(label)


def _ot_at_tree(axis: Axes, arms: pd.DataFrame, present: list[str]) -> None:
    """ot_tree@tree per arm (K = each query's tree size): a point with the SD over seeds."""
    for position, arm in enumerate(present):
        rows = arms[arms["arm"] == arm]
        axis.errorbar(
            [position] * len(rows),
            rows["mean"],
            yerr=rows["sd"].fillna(0),
            fmt="o",
            markersize=4,
            capsize=3,
            color=_colour(arm),
        )
    axis.set_xticks(range(len(present)), present, fontsize=7)
    axis.set_xlim(-0.5, len(present) - 0.5)
    axis.set_ylabel("ot_tree@tree (ours; query-micro; lower is better)")
    axis.set_title("K = the query's taxonomy-tree size")


def norms_figure(
    norms: pd.DataFrame, title: str, labels: Mapping[str, str] | None = None
) -> Figure:
    """Prototype norms per taxonomy level (named by ``labels``) for each Poincaré cell (strip
    plot with means)."""
    figure = Figure(figsize=(6, 3.5))
    axis = figure.subplots()
    cells = sorted(norms["cell"].unique())
    for index, level in enumerate(LEVEL_ORDER):
        for offset, cell in enumerate(cells):
            values = norms.loc[(norms["level"] == level) & (norms["cell"] == cell), "norm"]
            x = index + (offset - (len(cells) - 1) / 2) * 0.8 / max(len(cells), 1)
            jitter = np.linspace(-0.03, 0.03, len(values)) if len(values) > 1 else np.zeros(1)
            axis.scatter(x + jitter[: len(values)], values, s=6, alpha=0.5, color=f"C{offset}")
            axis.plot([x - 0.05, x + 0.05], [values.mean()] * 2, color="k", linewidth=1.5)
    axis.set_xticks(range(len(LEVEL_ORDER)), _level_ticks(labels))
    axis.set_ylabel("prototype norm in the ball")
    axis.set_title(title)
    handles = [Line2D([], [], marker="o", linestyle="", color=f"C{i}") for i in range(len(cells))]
    axis.legend(handles, cells, fontsize=7, ncol=3)
    figure.tight_layout()
    return figure


def prototype_norms(embeddings: np.ndarray, labels: np.ndarray, curvature: float) -> pd.DataFrame:
    """Norm of each group's prototype at each level: expmap0 of the mean log-map0 vector.

    The maps are geoopt's, on ``PoincareBall(c)`` with the curvature held in float64.
    """
    import geoopt
    import torch

    ball = geoopt.PoincareBall(c=torch.tensor(float(curvature), dtype=torch.float64))
    tangent = ball.logmap0(torch.as_tensor(embeddings, dtype=torch.float64)).numpy()
    rows = []
    for index, level in enumerate(LEVEL_ORDER):
        for group in np.unique(labels[:, index]):
            mean = tangent[labels[:, index] == group].mean(axis=0)
            point = ball.expmap0(torch.as_tensor(mean[None, :], dtype=torch.float64))
            rows.append({"level": level, "group": int(group), "norm": float(point.norm())})
    return pd.DataFrame(rows)


def control_figure(per_seed: pd.DataFrame, order: list[str], title: str) -> Figure:
    """Mean hierarchy mAP of each variant of a control (a curvature point, a semantic arm):
    seed points and mean ± SD."""
    figure = Figure(figsize=(7.0, 3.6))
    axis = figure.subplots()
    rows = per_seed[(per_seed["metric"] == "map") & (per_seed["level"] == "mean_hierarchy")]
    for position, variant in enumerate(order):
        values = rows[rows["variant"] == variant].sort_values("seed")["value"].to_numpy()
        axis.scatter(np.full(len(values), position), values, color="0.6", s=14, zorder=2)
        sd = values.std(ddof=1) if len(values) > 1 else 0.0
        axis.errorbar(position, values.mean(), yerr=sd, fmt="o", color="C0", capsize=4, zorder=3)
    axis.set_xticks(range(len(order)), order, rotation=30, ha="right")
    axis.set_ylabel("mean hierarchy mAP")
    axis.set_title(title)
    figure.tight_layout()
    return figure


def baselines_figure(
    per_seed: pd.DataFrame,
    order: list[str],
    aggregation: str,
    title: str,
    labels: Mapping[str, str] | None = None,
) -> Figure:
    """mAP by level of the context baselines and the factorial's arms (per-seed rows with a
    ``variant`` naming the arm), mean ± SD over seeds."""
    grouped = per_seed.groupby(["variant", "level"], sort=True)["value"]
    arms = grouped.agg(mean="mean", sd=lambda v: v.std(ddof=1)).reset_index()
    arms = arms.rename(columns={"variant": "arm"})
    ylabel = f"mAP ({aggregation.replace('_', '-')})"
    return map_by_level_figure(arms, title, order, ylabel, labels)
