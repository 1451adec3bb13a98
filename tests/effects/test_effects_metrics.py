"""Tables take the metrics they are given: OT@K at level "all", and a per-seed table published
elsewhere (mAP at leaf, middle and high only) through ``hierbench effects``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.effects import (
    EffectsError,
    arms_summary,
    complete_mean_hierarchy,
    effects_by_seed,
    effects_summary,
    ot_effects_table,
    ot_table,
    per_seed_from_evaluations,
    plan_effects,
    validate_per_seed,
)
from hierbench.protocol import PAPER_TABLES
from hierbench.provenance.records import JobContext
from hierbench.stages.tables import summary_markdown, write_effects, write_plan

JOB = JobContext(rule="effects", code="c0de")
SEEDS = (42, 2024, 3407)
COLUMNS = ["dataset", "geometry", "loss", "seed", "level", "metric", "value"]

# A table in the paper's per-seed layout: mAP at leaf, middle and high per arm and seed. The
# numbers are made up for hand arithmetic (the paper's own per-seed values are tested in
# test_published_effects.py).
# (leaf, middle, high) per seed 42, 2024, 3407.
PUBLISHED = {
    "E_R": ((0.70, 0.50, 0.56), (0.71, 0.52, 0.54), (0.69, 0.48, 0.58)),
    "H_R": ((0.72, 0.51, 0.57), (0.70, 0.53, 0.56), (0.71, 0.50, 0.58)),
    "E_S": ((0.75, 0.55, 0.61), (0.74, 0.56, 0.60), (0.76, 0.54, 0.62)),
    "H_S": ((0.74, 0.56, 0.60), (0.75, 0.57, 0.59), (0.73, 0.55, 0.62)),
}
# Worked out by hand: mean hierarchy per seed is E_R .53 .53 .53, H_R .54 .545 .54, E_S .58 .58
# .58, H_S .58 .58 .585, so per seed geom_R = .01 .015 .01, geom_S = 0 0 .005, loss_E = .05 .05
# .05, loss_H = .04 .035 .045, int = -.01 -.015 -.005; mean and sample SD of each (geom_R:
# deviations -1/600, 1/300, -1/600, so SD = sqrt((1/360000 + 1/90000 + 1/360000) / 2)):
EXPECTED_MEAN_HIERARCHY = {
    "geom_R": (0.035 / 3, math.sqrt(1 / 120000)),
    "geom_S": (0.005 / 3, math.sqrt((2 * (0.005 / 3) ** 2 + (0.01 / 3) ** 2) / 2)),
    "loss_E": (0.05, 0.0),
    "loss_H": (0.04, 0.005),
    "int": (-0.01, 0.005),
}


def published_table(datasets: tuple[str, ...] = ("cub",)) -> pd.DataFrame:
    """The leaf/middle/high mAP table as a per-seed table (no mean_hierarchy, no recall)."""
    rows = []
    for dataset in datasets:
        for arm, per_seed in PUBLISHED.items():
            geometry, loss = arm.split("_")
            for seed, values in zip(SEEDS, per_seed, strict=True):
                for level, value in zip(("leaf", "middle", "high"), values, strict=True):
                    rows.append((dataset, geometry, loss, seed, level, "map", value))
    return pd.DataFrame(rows, columns=COLUMNS)


def _one(frame: pd.DataFrame, **where: object) -> pd.Series:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column] == value).to_numpy()
    assert mask.sum() == 1, f"expected one row for {where}, found {mask.sum()}"
    return frame[mask].iloc[0]


# ------------------------------------------------------------------ published per-seed tables


def test_mean_hierarchy_is_derived_from_middle_and_high_and_said():
    frame, notes = complete_mean_hierarchy(published_table())
    row = _one(frame, geometry="H", loss="R", seed=2024, level="mean_hierarchy", metric="map")
    assert row["value"] == pytest.approx((0.53 + 0.56) / 2, abs=1e-15)
    assert len(frame) == 4 * 3 * 4
    assert notes == [
        "derived level 'mean_hierarchy' = (middle + high) / 2 for dataset 'cub', metric 'map' "
        "(12 arm-seed rows)"
    ]
    # A table that has it keeps it, and nothing is said
    again, notes = complete_mean_hierarchy(frame)
    pd.testing.assert_frame_equal(again, frame)
    assert notes == []


def test_mean_hierarchy_is_not_derived_without_both_levels():
    table = published_table()
    frame, notes = complete_mean_hierarchy(table[table["level"] != "high"])
    assert notes == [] and "mean_hierarchy" not in set(frame["level"])
    plan = plan_effects(table[table["level"] != "high"])
    assert "table_effects_map" in plan.skipped and "table_arms_map" in plan.paper


def test_a_one_seed_table_says_that_sd_needs_two_seeds(tmp_path: Path, capsys):
    table = published_table()
    one_seed = table[table["seed"].isin([table["seed"].min(), -1])]
    path = tmp_path / "one_seed.csv"
    one_seed.to_csv(path, index=False)
    assert main(["effects", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "dataset 'cub' has one training seed: SD needs two seeds, so every SD is NaN" in out
    assert "one training seed" not in "\n".join(plan_effects(table).notes())


def test_published_table_goes_through_hierbench_effects(tmp_path: Path, capsys):
    path = tmp_path / "published.csv"
    published_table(("cub", "nabirds")).to_csv(path, index=False)
    assert main(["effects", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "derived level 'mean_hierarchy' = (middle + high) / 2 for dataset 'cub', metric 'map' "
        "(12 arm-seed rows)",
        "derived level 'mean_hierarchy' = (middle + high) / 2 for dataset 'nabirds', metric "
        "'map' (12 arm-seed rows)",
        "not written: table_recall (no Recall@K metric (r@K rows))",
        "not written: table_ot (no OT metric (ot@K or ot_tree@… rows))",
        "not written: table_effects_ot (no OT metric (ot@K or ot_tree@… rows))",
        "intervals: 95% t intervals over the training seeds alone (n − 1 df; a per-seed table "
        "holds no per-query rows, so they hold their level for these test images, not for new "
        "ones); p (seeds, these test images): the sign-flip test over seeds, whether the seeds' "
        "effect on these test images is zero; the test images' own noise is not in it, so it is "
        "no evidence about new images",
        f"16 files -> {tmp_path / 'out'}",
    ]
    written = sorted(p.name for p in (tmp_path / "out").iterdir() if ".prov" not in p.name)
    assert [name for name in written if name.startswith("table_")] == [
        "table_arms_map.md",
        "table_arms_map.tex",
        "table_effects_map.md",
        "table_effects_map.tex",
    ]
    summary = pd.read_parquet(tmp_path / "out/effects_summary.parquet")
    for dataset in ("cub", "nabirds"):
        for effect, (mean, sd) in EXPECTED_MEAN_HIERARCHY.items():
            row = _one(
                summary, dataset=dataset, level="mean_hierarchy", metric="map", effect=effect
            )
            assert row["mean"] == pytest.approx(mean, abs=1e-12), effect
            assert row["sd"] == pytest.approx(sd, abs=1e-12), effect
            assert row["n"] == 3
    effects = (tmp_path / "out/table_effects_map.md").read_text(encoding="utf-8")
    assert "| cub | geom_R | +0.0117 ± 0.0029 | 3/3 |" in effects
    assert "| cub | int | -0.0100 ± 0.0050 | 0/3 |" in effects
    arms = (tmp_path / "out/table_arms_map.md").read_text(encoding="utf-8")
    assert arms.splitlines()[0] == "| dataset | arm | leaf | middle | high | mean_hierarchy |"
    assert (
        "| cub | H_R | 0.7100 ± 0.0100 | 0.5133 ± 0.0153 | 0.5700 ± 0.0100 | 0.5417 ± 0.0029 |"
        in arms
    )


def test_the_pipeline_insists_on_every_paper_table(tmp_path: Path):
    with pytest.raises(EffectsError, match=r"table_recall.*no Recall@K"):
        write_plan(plan_effects(published_table()), tmp_path, JOB, complete=True)
    assert not any(tmp_path.iterdir())


# -------------------------------------------------------------------------------- OT@K


def evaluation_summaries(tree: bool = False) -> pd.DataFrame:
    """Summaries as the evaluation writes them: level rows with mAP, an "all" row with OT@K
    (and, with ``tree``, the tree-referenced ot_tree@5, ot_tree@50, ot_tree@tree)."""
    rows = []
    arms = [(f"{g}_{o}", g, o, s) for g in "EH" for o in "RS" for s in (1, 2)]
    arms.append(("frozen", "frozen", "frozen", -1))
    for index, (arm, geometry, loss, seed) in enumerate(arms):
        for qg_seed, shift in ((7, 0.0), (8, 0.5)):
            for level in ("leaf", "middle", "high", "all"):
                scored = level == "all"
                value = 0.1 * index + shift + 0.01 * max(seed, 0)
                rows.append(
                    {
                        "dataset": "toy",
                        "arm": arm,
                        "geometry": geometry,
                        "loss": loss,
                        "seed": seed,
                        "qg_seed": qg_seed,
                        "aggregation": "query_micro",
                        "level": level,
                        "n_valid": 10,
                        "map": np.nan if scored else value,
                        "r@1": np.nan if scored else value / 2,
                        "ot@50": 2 * value if scored else np.nan,
                        "ot@5": value if scored else np.nan,
                    }
                )
                if tree:
                    rows[-1] |= {
                        "n_tree": 9 if scored else 0,
                        "ot_tree@tree": 4 * value if scored else np.nan,
                        "ot_tree@50": 3 * value if scored else np.nan,
                        "ot_tree@5": value / 2 if scored else np.nan,
                    }
    return pd.DataFrame(rows)


def test_per_seed_rows_hold_ot_at_level_all_only():
    per_seed = per_seed_from_evaluations(evaluation_summaries())
    ot = per_seed[per_seed["metric"].str.startswith("ot@")]
    assert set(ot["level"]) == {"all"}
    assert set(per_seed.loc[per_seed["level"] == "all", "metric"]) == {"ot@5", "ot@50"}
    assert not per_seed["value"].isna().any()  # no row for a metric where it is not scored
    row = _one(per_seed, geometry="H", loss="S", seed=2, level="all", metric="ot@5")
    assert row["value"] == pytest.approx(0.1 * 7 + 0.25 + 0.02)  # arm 7, mean shift .25
    assert per_seed["metric"].unique().tolist() == ["map", "r@1", "ot@5", "ot@50"]
    assert per_seed["level"].unique().tolist() == [
        "leaf",
        "middle",
        "high",
        "mean_hierarchy",
        "all",
    ]
    assert len(per_seed) == 9 * (2 * 4 + 2)


def test_effects_on_ot_and_their_tables():
    per_seed = per_seed_from_evaluations(evaluation_summaries())
    summary = effects_summary(effects_by_seed(per_seed))
    # arms in order E_R 0-1, E_S 2-3, H_R 4-5, H_S 6-7 (index · 0.1): geom_R = H_R − E_R = 0.4
    row = _one(summary, level="all", metric="ot@5", effect="geom_R")
    assert row["mean"] == pytest.approx(0.4) and row["positive_seeds"] == 2
    table = ot_effects_table(summary)
    assert list(table.columns) == [
        "dataset",
        "metric",
        "effect",
        "mean ± SD",
        "positive seeds",
        "95% interval",
        "p (seeds, these test images)",
        "rules out (interval holds 0)",
    ]
    assert table["metric"].tolist() == ["ot@5"] * 5 + ["ot@50"] * 5
    assert _one(table, metric="ot@50", effect="geom_R")["mean ± SD"] == "+0.8000 ± 0.0000"
    arms = ot_table(arms_summary(per_seed))
    assert list(arms.columns) == ["dataset", "arm", "ot@5", "ot@50"]
    assert arms["arm"].tolist() == ["frozen", "E_R", "H_R", "E_S", "H_S"]
    assert _one(arms, arm="frozen")["ot@5"] == "1.0500"  # one seed: no SD


def test_pipeline_tables_write_every_paper_table_and_summary(tmp_path: Path):
    per_seed = per_seed_from_evaluations(evaluation_summaries())
    plan = plan_effects(per_seed)
    assert list(plan.paper) == list(PAPER_TABLES) and plan.notes() == [plan.uncertainty]
    paths = write_plan(plan, tmp_path, JOB, complete=True)
    assert {f"{name}.md" for name in PAPER_TABLES} <= set(paths)
    page = summary_markdown("toy", plan, "group_macro")
    assert page.startswith("# toy: results (group-macro, mean ± SD over training seeds)")
    assert "The query-micro sensitivity tables are in `sensitivity/`." in page
    assert "## Our OT scores per arm" in page and "## Simple effects on our OT scores" in page
    assert "| toy | ot@50 | geom_R | +0.8000 ± 0.0000 | 2/2 |" in page
    assert "Where the data leave the interval's model" not in page
    from hierbench.effects.noise_regimes import REGIME_COLUMNS

    named = pd.DataFrame(
        [["toy", "int", "mean_hierarchy", "map", "few images", 0.5, 0.3, "a few test images"]],
        columns=list(REGIME_COLUMNS),
    )
    flagged = summary_markdown("toy", plan, "group_macro", regimes=named)
    planned = flagged.split("## Planned endpoints")[1].split("## Exploratory")[0]
    assert "- toy int: a few test images." in planned
    # The planned endpoints lead, then the exploratory intervals, then the paper's sections
    lead = page.index("## Planned endpoints: the five simple effects on mean hierarchy mAP")
    assert lead < page.index("## Exploratory") < page.index("## mAP per arm")
    assert page.index("## mAP per arm") < page.index("## Recall@K") < page.index("## Our OT scores")
    assert "Intervals: 95% t intervals over the training seeds alone" in page
    assert "excludes zero" not in page and "significant" not in page


def test_the_summary_shows_the_companion_cells_ranked_by_angle_beside_distance():
    """The method ranks by exterior angle: summary.md shows its ranking table right after the
    mAP per arm, with the dataset's level names."""
    plan = plan_effects(per_seed_from_evaluations(evaluation_summaries()))
    ranking = pd.DataFrame(
        {
            "arm": ["E_A", "E_A", "E_A"],
            "ranking": ["distance", "angle", "angle − distance"],
            "leaf": ["0.1383 ± 0.0069", "0.0756 ± 0.0007", ""],
            "mean_hierarchy": ["0.0907 ± 0.0019", "0.0818 ± 0.0026", "-0.0090 ± 0.0016"],
        }
    )
    labels = {"leaf": "class", "middle": "genus", "high": "family"}
    page = summary_markdown("toy", plan, "query_micro", labels, ranking)
    heading = page.index("## The companion cells ranked both ways")
    assert page.index("## mAP per arm") < heading < page.index("## Simple effects on mean")
    assert "| arm | ranking | class | mean_hierarchy |" in page[heading:]
    assert "| E_A | angle | 0.0756 ± 0.0007 | 0.0818 ± 0.0026 |" in page[heading:]
    assert "ranked both ways" not in summary_markdown("toy", plan, "query_micro", labels)


def test_two_companion_ranking_tables_are_refused_before_any_table_is_written(tmp_path: Path):
    from hierbench.effects import EffectsError
    from hierbench.stages.tables import build_tables

    summaries = tmp_path / "summaries.parquet"
    evaluation_summaries().to_parquet(summaries)
    with pytest.raises(EffectsError, match="one companion ranking table"):
        build_tables(
            "toy",
            [summaries],
            tmp_path / "tables",
            JOB,
            aggregation="query_micro",
            companion_angle=["a.parquet", "b.parquet"],
        )
    assert not (tmp_path / "tables").exists()


def test_tree_referenced_ot_goes_beside_ot_at_k_in_every_table(tmp_path: Path):
    per_seed = per_seed_from_evaluations(evaluation_summaries(tree=True))
    order = ["map", "r@1", "ot@5", "ot@50", "ot_tree@5", "ot_tree@50", "ot_tree@tree"]
    assert per_seed["metric"].unique().tolist() == order
    tree_rows = per_seed[per_seed["metric"].str.startswith("ot_tree@")]
    assert set(tree_rows["level"]) == {"all"} and len(tree_rows) == 9 * 3
    # The ot@K rows are those of a table without the tree scores
    plain = per_seed_from_evaluations(evaluation_summaries())
    pd.testing.assert_frame_equal(
        per_seed[~per_seed["metric"].str.startswith("ot_tree@")].reset_index(drop=True), plain
    )
    summary = effects_summary(effects_by_seed(per_seed))
    row = _one(summary, level="all", metric="ot_tree@tree", effect="geom_R")
    assert row["mean"] == pytest.approx(4 * 0.4) and row["positive_seeds"] == 2
    assert _one(summary, level="all", metric="ot_tree@5", effect="geom_R")["mean"] == (
        pytest.approx(0.2)
    )
    table = ot_effects_table(summary)
    assert table["metric"].tolist() == [m for m in order[2:] for _ in range(5)]
    arms = ot_table(arms_summary(per_seed))
    assert list(arms.columns) == ["dataset", "arm", *order[2:]]
    assert _one(arms, arm="frozen")["ot_tree@tree"] == "4.2000"  # 4 · 1.05, one seed
    plan = plan_effects(per_seed)
    assert list(plan.paper) == list(PAPER_TABLES) and plan.notes() == [plan.uncertainty]
    page = summary_markdown("toy", plan, "query_micro")
    assert "| toy | ot_tree@tree | geom_R | +1.6000 ± 0.0000 | 2/2 |" in page
    # A table with tree scores only still gets the OT tables
    only_tree = per_seed[~per_seed["metric"].str.startswith("ot@")]
    assert {"table_ot", "table_effects_ot"} <= set(plan_effects(only_tree).paper)


def test_ot_metrics_are_only_scored_at_level_all():
    table = published_table()
    table.loc[0, "metric"] = "ot@10"
    with pytest.raises(EffectsError, match=r"'ot@10' at level 'leaf'.*only at level 'all'"):
        validate_per_seed(table)
    for name in ("ot_tree@10", "ot_tree@tree"):
        table = published_table()
        table.loc[0, "metric"] = name
        with pytest.raises(EffectsError, match=rf"'{name}' at level 'leaf'.*only at level 'all'"):
            validate_per_seed(table)
    table = published_table()
    table.loc[0, "level"] = "all"
    with pytest.raises(EffectsError, match=r"'map' at level 'all'.*not at 'all'"):
        validate_per_seed(table)


def test_write_effects_keeps_its_interface(tmp_path: Path):
    paths = write_effects(published_table(), tmp_path, JOB)
    assert len(paths) == 16 and all(path.is_file() for path in paths.values())
