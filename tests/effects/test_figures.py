"""Figures: drawn from small tables, written as PNG and PDF, identical bytes on a rerun."""

from __future__ import annotations

from pathlib import Path

import geoopt
import numpy as np
import pandas as pd
import torch

from hierbench.effects.figures import (
    effects_figure,
    figure_writer,
    map_by_level_figure,
    norms_figure,
    ot_by_k_figure,
    prototype_norms,
)
from hierbench.provenance.artifacts import publish
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.records import JobContext

JOB = JobContext(rule="unit")


def _effects() -> pd.DataFrame:
    rows = [
        {"effect": e, "seed": s, "value": v}
        for e, base in zip(
            ("geom_R", "geom_S", "loss_E", "loss_H", "int"),
            (0.01, 0.003, 0.05, 0.04, -0.007),
            strict=True,
        )
        for s, v in zip((42, 2024, 3407), (base - 0.002, base, base + 0.003), strict=True)
    ]
    return pd.DataFrame(rows)


def _intervals(effects: pd.DataFrame) -> pd.DataFrame:
    """Each effect's mean and an interval around it (the first two clear of zero)."""
    means = effects.groupby("effect", sort=False)["value"].mean()
    return pd.DataFrame(
        {
            "effect": means.index,
            "mean": means.to_numpy(),
            "ci_low": means.to_numpy() - 0.004,
            "ci_high": means.to_numpy() + 0.004,
        }
    )


def _arms() -> pd.DataFrame:
    rows = []
    for arm, shift in (("frozen", 0.0), ("E_R", 0.02), ("H_R", 0.03), ("E_S", 0.05), ("H_S", 0.06)):
        for level, base in (("leaf", 0.6), ("middle", 0.4), ("high", 0.3)):
            rows.append({"arm": arm, "level": level, "mean": base + shift, "sd": 0.01})
    return pd.DataFrame(rows)


def test_figures_are_written_in_both_formats_and_are_reproducible(tmp_path: Path):
    hashes = []
    for run in ("a", "b"):
        paths = []
        for name, figure in (
            ("effects", effects_figure(_effects(), _intervals(_effects()), "effects")),
            ("levels", map_by_level_figure(_arms(), "levels")),
        ):
            for suffix in ("png", "pdf"):
                target = tmp_path / run / f"{name}.{suffix}"
                paths.append(publish(target, figure_writer(figure, suffix), JOB))
        hashes.append([sha256_file(p) for p in paths])
        assert all(p.stat().st_size > 1000 for p in paths)
    assert hashes[0] == hashes[1]
    assert (tmp_path / "a/effects.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "a/effects.pdf").read_bytes()[:5] == b"%PDF-"


def test_prototype_norms_shrink_towards_the_origin_for_broader_groups():
    rng = np.random.default_rng(0)
    ball = geoopt.PoincareBall(c=1.0)
    leaf = np.repeat(np.arange(8), 20)
    labels = np.stack([leaf, leaf // 2, leaf // 4], axis=1)
    directions = rng.normal(size=(8, 4))
    tangent = directions[leaf] * 1.5 + 0.1 * rng.normal(size=(160, 4))
    points = ball.expmap0(torch.as_tensor(tangent)).numpy()
    norms = prototype_norms(points, labels, 1.0).groupby("level")["norm"].mean()
    assert norms["leaf"] > norms["middle"] > norms["high"]
    figure = norms_figure(prototype_norms(points, labels, 1.0).assign(cell="HS-42"), "norms")
    assert figure.axes


def test_ot_by_k_draws_one_line_per_arm_in_k_order(tmp_path: Path):
    rows = [
        {"arm": arm, "metric": f"ot@{k}", "mean": shift + k / 100, "sd": 0.01}
        for arm, shift in (("H_S", 0.5), ("frozen", 1.0), ("E_R", 0.8))
        for k in (50, 10, 100)
    ]
    figure = ot_by_k_figure(pd.DataFrame(rows), "ot")
    axis = figure.axes[0]
    assert axis.get_xticks().tolist() == [10, 50, 100]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["frozen", "E_R", "H_S"]
    lines = [container.lines[0] for container in axis.containers]
    assert [line.get_xdata().tolist() for line in lines] == [[10, 50, 100]] * 3
    assert lines[2].get_ydata().tolist() == [0.6, 1.0, 1.5]  # H_S: 0.5 + K/100, by K
    paths = [publish(tmp_path / f"ot.{s}", figure_writer(figure, s), JOB) for s in ("png", "pdf")]
    assert all(path.stat().st_size > 1000 for path in paths)


def test_ot_by_k_draws_the_tree_scores_in_panels_of_their_own(tmp_path: Path):
    rows = [
        {"arm": arm, "metric": f"{name}@{k}", "mean": shift + k / scale, "sd": 0.01}
        for arm, shift in (("H_S", 0.5), ("frozen", 1.0))
        for name, scale in (("ot", 100), ("ot_tree", 10))
        for k in (50, 10, 100)
    ]
    rows += [
        {"arm": arm, "metric": "ot_tree@tree", "mean": mean, "sd": float("nan")}
        for arm, mean in (("H_S", 0.7), ("frozen", 0.9))
    ]
    ideal, by_k, at_tree = ot_by_k_figure(pd.DataFrame(rows), "ot").axes
    for axis, scale in ((ideal, 100), (by_k, 10)):
        assert axis.get_xticks().tolist() == [10, 50, 100]
        lines = [container.lines[0] for container in axis.containers]
        assert lines[1].get_ydata().tolist() == [0.5 + k / scale for k in (10, 50, 100)]  # H_S
    # ot_tree@… rows are not read as ot@K, nor ot_tree@tree as a K
    assert ideal.get_ylabel().startswith("OT@K") and by_k.get_ylabel().startswith("ot_tree@K")
    assert [tick.get_text() for tick in at_tree.get_xticklabels()] == ["frozen", "H_S"]
    points = [container.lines[0].get_ydata().tolist() for container in at_tree.containers]
    assert points == [[0.9], [0.7]]
    labels = [text.get_text() for text in by_k.get_legend().get_texts()]
    assert labels == ["frozen", "H_S"] and ideal.get_legend() is None
    figure = ot_by_k_figure(pd.DataFrame(rows), "ot")
    paths = [publish(tmp_path / f"ot.{s}", figure_writer(figure, s), JOB) for s in ("png", "pdf")]
    assert all(path.stat().st_size > 1000 for path in paths)


def test_effects_figure_draws_the_companion_contrasts_only_when_present():
    factorial = effects_figure(_effects(), _intervals(_effects()), "factorial").axes[0]
    labels = [tick.get_text() for tick in factorial.get_yticklabels()]
    assert labels == ["geom_R", "geom_S", "loss_E", "loss_H", "int"]
    # no verdict in the drawing: every interval is drawn alike, the planned endpoints in blue
    styles = {line.get_linestyle() for line in factorial.get_lines()[:5]}
    assert styles == {"-"} and {line.get_color() for line in factorial.get_lines()[:5]} == {"C0"}
    companion = pd.DataFrame(
        {"effect": e, "seed": s, "value": 0.01 * s / 1000}
        for e in ("loss_AS_E", "loss_AS_hyp", "geom_A")
        for s in (42, 2024, 3407)
    )
    everything = pd.concat([_effects(), companion])
    both = effects_figure(everything, _intervals(everything), "with A").axes[0]
    labels = [tick.get_text() for tick in both.get_yticklabels()]
    assert labels[5:] == ["loss_AS_E", "loss_AS_hyp", "geom_A"]
    assert len(both.collections) == 2 * 8  # per effect: the seeds and the mean
    assert len(both.get_lines()) == 8 + 1  # per effect an interval, and the zero line
    assert {line.get_color() for line in both.get_lines()[5:8]} == {"0.45"}  # exploratory
