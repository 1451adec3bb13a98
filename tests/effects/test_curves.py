"""Training curves: a flat and a non-finite loss are named, and equal logs give equal bytes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench.effects.curves import (
    curves_figure,
    duration_figure,
    loss_problem,
    loss_problems,
    problems_caption,
    problems_sentence,
    tau_figure,
)
from hierbench.effects.figures import figure_writer
from hierbench.provenance.hashing import sha256_file


def _log(loss: list[float], levels: bool = True) -> pd.DataFrame:
    """A train log of ``loss`` per epoch, per-level losses a share of it (or NaN)."""
    values = np.asarray(loss, float)
    epochs = np.arange(1, len(values) + 1)
    share = (lambda f: values * f) if levels else (lambda f: np.full(len(values), np.nan))
    return pd.DataFrame(
        {
            "epoch": epochs,
            "updates": epochs * 10,
            "loss": values,
            "loss_c": share(0.5),
            "loss_m": share(0.3),
            "loss_h": share(0.2),
            "grad_norm": np.ones(len(values)),
            "seconds": np.ones(len(values)),
        }
    )


def _logs() -> dict[tuple[str, int], pd.DataFrame]:
    """A bundle of two kinds, three seeds each: one flat cell, one that went NaN."""
    falling = [2.0, 1.5, 1.2, 1.1]
    return {
        ("RE", 42): _log(falling, levels=False),
        ("RE", 2024): _log([2.1, 1.6, 1.3, 1.0], levels=False),
        ("RE", 3407): _log([0.7, 0.7, 0.7, 0.7], levels=False),
        ("RH", 42): _log(falling),
        ("RH", 2024): _log([2.2, 1.4, float("nan"), float("nan")]),
        ("RH", 3407): _log([2.0, 1.7, 1.3, 1.2]),
    }


def test_a_flat_and_a_non_finite_loss_are_named_and_no_other():
    problems = loss_problems(_logs())
    assert problems == {("RE", 3407): "flat over 4 epochs", ("RH", 2024): "non-finite from epoch 3"}
    sentence = problems_sentence(problems)
    assert "RE seed 3407: flat over 4 epochs" in sentence
    assert "RH seed 2024: non-finite from epoch 3" in sentence


def test_an_infinite_loss_is_non_finite_and_a_single_epoch_is_not_flat():
    assert loss_problem(_log([1.0, float("inf")])) == "non-finite from epoch 2"
    assert loss_problem(_log([1.0])) is None
    assert loss_problem(_log([1.0, 0.999])) is None
    assert problems_sentence({}) == "No cell's loss went non-finite or flat."


def test_a_log_without_its_loss_column_is_refused_with_the_cell_named():
    with pytest.raises(ValueError, match="RE seed 42 lacks columns \\['loss'\\]"):
        loss_problems({("RE", 42): _log([1.0, 0.5]).drop(columns="loss")})
    with pytest.raises(ValueError, match="no trained cells"):
        curves_figure({}, "empty")


def test_one_panel_per_kind_seeds_overlaid_and_levels_drawn_where_the_loss_has_them():
    figure = curves_figure(_logs(), "CUB: factorial")
    axes = [axis for axis in figure.axes if axis.get_visible()]
    assert [axis.get_title() for axis in axes] == ["RE", "RH"]
    assert len(axes[0].get_lines()) == 3  # three seeds, total loss only
    assert len(axes[1].get_lines()) == 12  # three seeds, total and three levels
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == [
        "seed 42",
        "seed 2024",
        "seed 3407",
    ]
    assert list(axes[0].get_xticks()) == [1, 2, 3, 4]  # whole epochs
    assert axes[1].title.get_color() == "red"  # a panel holding a named cell
    assert "RH seed 2024: non-finite from epoch 3" in figure.get_suptitle()


@pytest.mark.parametrize("kind", ["png", "pdf"])
def test_the_same_logs_give_the_same_bytes(tmp_path, kind):
    hashes = []
    for run in range(2):
        path = tmp_path / f"curves-{run}.{kind}"
        figure_writer(curves_figure(_logs(), "CUB: factorial"), kind)(path)
        hashes.append(sha256_file(path))
    assert hashes[0] == hashes[1]


def _tau_scores() -> pd.DataFrame:
    """Three τ per geometry, given out of order; one H run without a score."""
    rows = [("E", 1.0, 0.2), ("E", 0.07, 0.3), ("E", 0.3, 0.25)]
    rows += [("H", 0.3, float("nan")), ("H", 0.07, 0.28), ("H", 1.0, 0.1)]
    return pd.DataFrame(rows, columns=["geometry", "tau", "score"])


def test_the_tau_search_is_one_line_per_geometry_in_tau_order():
    axis = tau_figure(_tau_scores(), "CUB: τ search").axes[0]
    lines = {line.get_label(): line for line in axis.get_lines()}
    assert sorted(lines) == ["E", "H"]
    assert list(lines["E"].get_xdata()) == [0.07, 0.3, 1.0]
    assert list(lines["E"].get_ydata()) == [0.3, 0.25, 0.2]
    assert axis.get_xscale() == "log"
    assert [label.get_text() for label in axis.get_xticklabels()] == ["0.07", "0.3", "1"]
    with pytest.raises(ValueError, match="lack columns \\['score'\\]"):
        tau_figure(_tau_scores().drop(columns="score"), "x")


def test_the_same_tau_scores_give_the_same_bytes(tmp_path):
    paths = [tmp_path / f"tau-{run}.png" for run in range(2)]
    for path in paths:
        figure_writer(tau_figure(_tau_scores(), "CUB: τ search"), "png")(path)
    assert sha256_file(paths[0]) == sha256_file(paths[1])


def test_the_caption_paragraph_names_each_problem_cell_in_bold():
    problems = loss_problems(_logs())
    paragraph = problems_caption(problems)
    assert paragraph.startswith("**Cells whose loss went non-finite or flat: ")
    assert all(f"{kind} seed {seed}" in paragraph for kind, seed in problems)
    assert problems_caption({}) == "No cell's loss went non-finite or flat.\n"


def test_the_duration_figure_stars_each_chosen_epoch():
    searches = {"semantic": {"full": ([0.1, 0.3, 0.2], 2), "leaf": ([0.2, None, 0.1], 1)}}
    figure = duration_figure(searches, "cub")
    axis = figure.axes[0]
    stars = [line for line in axis.lines if line.get_marker() == "*"]
    assert sorted((float(s.get_xdata()[0]), float(s.get_ydata()[0])) for s in stars) == [
        (1.0, 0.2),
        (2.0, 0.3),
    ]
    assert axis.get_title() == "semantic"
