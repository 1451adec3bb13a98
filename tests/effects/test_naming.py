"""The dataset's own level names in what a person reads; the stable keys in what code reads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from hierbench.effects import per_seed_from_evaluations, plan_effects
from hierbench.effects.figures import map_by_level_figure, norms_figure
from hierbench.effects.table_files import write_table
from hierbench.levelnames import for_readers, legend_line, level_labels
from hierbench.provenance.artifacts import read_parquet_metadata
from hierbench.provenance.records import JobContext
from hierbench.runtools.tablediff import render_table_diff
from hierbench.stages.tables import summary_markdown, write_plan

JOB = JobContext(rule="naming_test")
MINERALS = ("species", "mineral_group", "crystal_system")


def test_level_labels_map_each_key_to_its_name_or_to_itself():
    assert level_labels(MINERALS) == {
        "leaf": "species",
        "middle": "mineral_group",
        "high": "crystal_system",
    }
    assert level_labels(None) == {"leaf": "leaf", "middle": "middle", "high": "high"}
    with pytest.raises(ValueError, match="three distinct names"):
        level_labels(("a", "a", "b"))


def test_for_readers_renames_level_columns_and_level_values_only():
    frame = pd.DataFrame(
        {
            "arm": ["leaf", "E_R"],  # a value outside the level column stays
            "level": ["middle", "mean_hierarchy"],
            "leaf": [0.1, 0.2],
            "high": [0.3, 0.4],
        }
    )
    shown = for_readers(frame, level_labels(MINERALS))
    assert list(shown.columns) == ["arm", "level", "species", "crystal_system"]
    assert shown["level"].tolist() == ["mineral_group", "mean_hierarchy"]
    assert shown["arm"].tolist() == ["leaf", "E_R"]
    assert list(frame.columns) == ["arm", "level", "leaf", "high"]  # the input is untouched
    assert legend_line(level_labels(MINERALS)) == (
        "Levels: species (leaf), mineral_group (middle), crystal_system (high)."
    )


def test_tables_show_the_names_to_people_and_keep_the_keys_for_code(tmp_path: Path):
    table = pd.DataFrame({"arm": ["E_R"], "leaf": [0.5], "middle": [0.25], "high": [0.125]})
    labels = level_labels(MINERALS)
    write_table(table, tmp_path / "t", JOB, labels=labels)
    markdown = (tmp_path / "t.md").read_text()
    assert markdown.startswith("| arm | species | mineral_group | crystal_system |")
    assert "crystal" in (tmp_path / "t.tex").read_text()
    assert (tmp_path / "t.csv").read_text().startswith("arm,leaf,middle,high")
    assert list(pd.read_parquet(tmp_path / "t.parquet").columns) == list(table.columns)
    assert read_parquet_metadata(tmp_path / "t.parquet")["levels"] == labels


def test_summary_md_names_the_levels(tmp_path: Path):
    from test_effects_metrics import evaluation_summaries

    plan = plan_effects(per_seed_from_evaluations(evaluation_summaries()))
    labels = level_labels(MINERALS)
    page = summary_markdown("rocks", plan, "group_macro", labels)
    assert "Levels: species (leaf), mineral_group (middle), crystal_system (high)." in page
    assert "| dataset | arm | species | mineral_group | crystal_system |" in page
    write_plan(plan, tmp_path, JOB, labels=labels)
    assert "| mineral_group |" in (tmp_path / "effects_summary.md").read_text()
    assert ",middle," in (tmp_path / "effects_summary.csv").read_text()


def test_figures_label_their_level_axis_with_the_names():
    arms = pd.DataFrame(
        {"arm": ["E_R"] * 3, "level": ["leaf", "middle", "high"], "mean": 0.5, "sd": 0.1}
    )
    labels = level_labels(MINERALS)
    norms = pd.DataFrame({"cell": "H_R-1", "level": ["leaf", "middle", "high"], "norm": 0.3})
    for figure in (
        map_by_level_figure(arms, "t", labels=labels),
        norms_figure(norms, "t", labels),
    ):
        assert isinstance(figure, Figure)
        ticks = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
        assert ticks == list(MINERALS)


def test_compare_shows_a_tables_level_names():
    diff = {
        "keys": ["arm", "level"],
        "matched_by": "keys",
        "columns": [{"name": "leaf", "numeric": True}],
        "rows": [
            {
                "key": {"arm": "E_R", "level": "high"},
                "in": "both",
                "cells": {"leaf": {"a": 0.1, "b": 0.2, "delta": 0.1}},
            }
        ],
        "columns_only_a": [],
        "columns_only_b": [],
        "levels": level_labels(MINERALS),
    }
    lines = render_table_diff("rocks/tables/t.parquet", diff)
    assert "| arm | level | species A | species B | species Δ |" in lines
    assert any(line.startswith("| E_R | crystal_system | 0.1 | 0.2 |") for line in lines)
