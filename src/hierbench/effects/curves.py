"""Training curves (issue #63): each cell's loss per epoch, one panel per kind of cell with its
seeds overlaid, and the rule that names a cell whose loss went non-finite or flat; the
validation score of the searches that train (τ against τ; the semantic and outer duration
searches epoch by epoch).

A cell is keyed by ``(kind, seed)``: its kind is its name without the seed (``RE``, ``SH``), so
the seeds of one kind share a panel. Its train log holds ``epoch`` and ``loss`` and, where the
loss has levels, the per-level ``loss_c``, ``loss_m``, ``loss_h`` (NaN otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator

# The train log's per-level columns (hierbench.training.trainer.LOG_COLUMNS), in level order.
LEVEL_COLUMNS = ("loss_c", "loss_m", "loss_h")
LEVEL_STYLES = {"loss": "-", "loss_c": "--", "loss_m": "-.", "loss_h": ":"}
# A loss whose range over the epochs is below this share of its size has not moved.
FLAT_TOLERANCE = 1e-6
PANEL_WIDTH = 3.2
PANEL_HEIGHT = 2.6
MAX_COLUMNS = 4
MAX_EPOCH_TICKS = 10

Cell = tuple[str, int]


def _check_log(cell: Cell, log: pd.DataFrame) -> None:
    """Raise when a train log lacks the columns the curves are drawn from."""
    missing = {"epoch", "loss"} - set(log.columns)
    if missing:
        raise ValueError(
            f"train log of {cell[0]} seed {cell[1]} lacks columns {sorted(missing)}; "
            "is it a train_log.parquet written by hierbench's trainer?"
        )


def loss_problem(log: pd.DataFrame, tolerance: float = FLAT_TOLERANCE) -> str | None:
    """What is wrong with one cell's loss, in words ("non-finite from epoch 3", "flat over 5
    epochs"), or None: the first non-finite epoch wins; a single epoch cannot be flat."""
    rows = log.sort_values("epoch")
    loss = rows["loss"].to_numpy(float)
    bad = ~np.isfinite(loss)
    if bad.any():
        return f"non-finite from epoch {int(rows['epoch'].to_numpy()[bad.argmax()])}"
    if len(loss) < 2:
        return None
    spread = float(loss.max() - loss.min())
    if spread <= tolerance * max(1.0, float(np.abs(loss).mean())):
        return f"flat over {len(loss)} epochs"
    return None


def loss_problems(logs: Mapping[Cell, pd.DataFrame]) -> dict[Cell, str]:
    """Each cell whose loss went non-finite or flat, with what went wrong, sorted by cell."""
    found = {}
    for cell in sorted(logs):
        _check_log(cell, logs[cell])
        problem = loss_problem(logs[cell])
        if problem is not None:
            found[cell] = problem
    return found


def problems_sentence(problems: Mapping[Cell, str]) -> str:
    """The caption's sentence naming each flat or non-finite cell (or saying there is none)."""
    if not problems:
        return "No cell's loss went non-finite or flat."
    named = "; ".join(f"{kind} seed {seed}: {what}" for (kind, seed), what in problems.items())
    return f"Cells whose loss went non-finite or flat: {named}."


def _draw_cell(axis: Axes, log: pd.DataFrame, index: int, seed: int, problem: str | None) -> None:
    """One seed's total loss and its per-level losses (where it has them) on a panel; a
    non-finite epoch is drawn as a red cross at the panel's bottom edge."""
    colour = f"C{index}"
    rows = log.sort_values("epoch")
    epochs = rows["epoch"].to_numpy(float)
    for column in ("loss", *LEVEL_COLUMNS):
        if column not in rows or rows[column].isna().all():
            continue
        values = rows[column].to_numpy(float)
        label = f"seed {seed}" if column == "loss" else None
        axis.plot(
            epochs,
            np.where(np.isfinite(values), values, np.nan),
            LEVEL_STYLES[column],
            color=colour,
            marker="o" if column == "loss" else None,
            markersize=3,
            linewidth=1.2,
            label=label,
        )
    bad = ~np.isfinite(rows["loss"].to_numpy(float))
    if bad.any():
        axis.scatter(
            epochs[bad],
            np.zeros(bad.sum()),
            marker="x",
            color="red",
            zorder=5,
            transform=axis.get_xaxis_transform(),
            clip_on=False,
        )
    if problem is not None:
        axis.text(
            0.02,
            0.02 + 0.08 * index,
            f"seed {seed}: {problem}",
            transform=axis.transAxes,
            fontsize=6,
            color="red",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
        )


def _epoch_ticks(axis: Axes, logs: list[pd.DataFrame]) -> None:
    """Whole epochs on the x axis: each epoch when there are few (one epoch gets one tick)."""
    epochs = sorted({int(epoch) for log in logs for epoch in log["epoch"]})
    if len(epochs) <= MAX_EPOCH_TICKS:
        axis.set_xticks(epochs)
    else:
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))


def curves_figure(logs: Mapping[Cell, pd.DataFrame], title: str) -> Figure:
    """Loss per epoch, one panel per kind of cell (sorted), its seeds overlaid in colours, the
    total loss solid and the per-level losses (where the loss has levels) dashed by level; a
    cell whose loss went non-finite or flat is marked in red on its panel."""
    if not logs:
        raise ValueError("no train logs to draw: the bundle has no trained cells")
    problems = loss_problems(logs)
    kinds = sorted({kind for kind, _ in logs})
    columns = min(len(kinds), MAX_COLUMNS)
    rows = -(-len(kinds) // columns)
    figure = Figure(figsize=(PANEL_WIDTH * columns, PANEL_HEIGHT * rows + 0.6))
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False).ravel())
    for axis, kind in zip(axes, kinds, strict=False):
        seeds = sorted(seed for k, seed in logs if k == kind)
        for index, seed in enumerate(seeds):
            _draw_cell(axis, logs[(kind, seed)], index, seed, problems.get((kind, seed)))
        axis.set_title(
            kind, fontsize=9, color="red" if any(k == kind for k, _ in problems) else "k"
        )
        _epoch_ticks(axis, [logs[(kind, seed)] for seed in seeds])
        axis.set_xlabel("epoch", fontsize=8)
        axis.set_ylabel("training loss", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.legend(fontsize=6, loc="upper right")
    for axis in axes[len(kinds) :]:
        axis.set_visible(False)
    legend = "solid: loss; dashed, dash-dot, dotted: levels c, m, h"
    figure.suptitle(
        f"{title} ({legend})\n{problems_sentence(problems)}",
        fontsize=8,
        color="red" if problems else "k",
    )
    figure.tight_layout()
    return figure


def tau_figure(scores: pd.DataFrame, title: str) -> Figure:
    """The τ search's validation score against τ (log axis), one line per geometry, the
    chosen-by score (``score``: the hierarchy mean of validation mAP) of each run a point.

    ``scores`` holds one row per tuning run: ``geometry``, ``tau``, ``score`` (NaN where a run
    had no valid validation query, drawn as a gap)."""
    missing = {"geometry", "tau", "score"} - set(scores.columns)
    if missing:
        raise ValueError(f"tuning scores lack columns {sorted(missing)}; read them from score.json")
    figure = Figure(figsize=(4.5, 3.2))
    axis = figure.subplots()
    for index, geometry in enumerate(sorted(set(scores["geometry"]))):
        rows = scores[scores["geometry"] == geometry].sort_values("tau")
        axis.plot(rows["tau"], rows["score"], marker="o", color=f"C{index}", label=geometry)
    axis.set_xscale("log")
    taus = sorted(set(scores["tau"].astype(float)))
    axis.set_xticks(taus, [f"{tau:g}" for tau in taus])  # the τ values searched, as written
    axis.xaxis.set_minor_locator(NullLocator())
    axis.set_xlabel("temperature τ")
    axis.set_ylabel("validation score (mean hierarchy mAP)")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def problems_caption(problems: Mapping[Cell, str]) -> str:
    """The caption's paragraph (reStructuredText) naming each flat or non-finite cell: the
    report's caption includes it, so the cells are named in words, not only on the picture."""
    sentence = problems_sentence(problems)
    return f"**{sentence}**\n" if problems else f"{sentence}\n"


# One duration search: a panel title (``semantic``, ``outer-1``), and per arm the validation
# score after each epoch (None where no validation query was valid) and the epoch chosen.
DurationSearch = Mapping[str, tuple[list[float | None], int]]


def duration_figure(searches: Mapping[str, DurationSearch], title: str) -> Figure:
    """The duration searches' validation score after every epoch, one panel per search (the
    semantic control; each outer split), one line per arm, the epoch each arm was given (the
    best, ties to the earlier) starred."""
    if not searches:
        raise ValueError(
            "no duration search to draw: the dataset runs no semantic or outer control"
        )
    names = sorted(searches)
    columns = min(len(names), MAX_COLUMNS)
    rows = -(-len(names) // columns)
    figure = Figure(figsize=(PANEL_WIDTH * columns, PANEL_HEIGHT * rows + 0.5))
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False).ravel())
    for axis, name in zip(axes, names, strict=False):
        for index, arm in enumerate(sorted(searches[name])):
            scores, chosen = searches[name][arm]
            values = np.array([np.nan if v is None else v for v in scores], dtype=float)
            epochs = np.arange(1, len(values) + 1)
            axis.plot(epochs, values, color=f"C{index}", linewidth=1.2, label=arm)
            if 1 <= chosen <= len(values):
                axis.plot(chosen, values[chosen - 1], "*", color=f"C{index}", markersize=8)
        axis.set_title(name, fontsize=9)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_xlabel("epoch", fontsize=8)
        axis.set_ylabel("validation score", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.legend(fontsize=6, loc="lower right")
    for axis in axes[len(names) :]:
        axis.set_visible(False)
    figure.suptitle(f"{title} (star: the epochs chosen)", fontsize=8)
    figure.tight_layout()
    return figure
