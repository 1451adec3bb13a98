"""Statistics of the factorial: arithmetic, validation, renderings and deterministic writing."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.effects import (
    EffectsError,
    add_arm,
    arm_table,
    arms_summary,
    baseline_rows,
    effects_by_seed,
    effects_summary,
    effects_table,
    per_seed_from_evaluations,
    read_per_seed,
    recall_table,
    render_csv,
    render_latex,
    render_markdown,
)
from hierbench.effects.sign_flip import sign_flip_p
from hierbench.provenance.artifacts import provenance_path, read_parquet_metadata
from hierbench.provenance.records import JobContext
from hierbench.stages.tables import write_effects

JOB = JobContext(rule="effects", wildcards={"dataset": "toy"}, code="c0de")
SEEDS = (1, 2, 3)
# Hand-made per-seed values (exact binary fractions) for seeds 1, 2, 3.
ARMS = {
    "E_R": (1.0, 2.0, 4.0),
    "H_R": (1.5, 2.0, 5.0),
    "E_S": (3.0, 2.5, 4.0),
    "H_S": (2.0, 4.0, 7.0),
}
# The five effects per seed, worked out by hand from ARMS.
EXPECTED_EFFECTS = {
    "geom_R": (0.5, 0.0, 1.0),
    "geom_S": (-1.0, 1.5, 3.0),
    "loss_E": (2.0, 0.5, 0.0),
    "loss_H": (0.5, 2.0, 2.0),
    "int": (-1.5, 1.5, 2.0),
}
EXPECTED_POSITIVE = {"geom_R": 2, "geom_S": 2, "loss_E": 2, "loss_H": 3, "int": 2}
FROZEN_VALUE = 0.25


def sample_sd(values: tuple[float, ...]) -> float:
    """Sample SD written out: sqrt(Σ(x − mean)² / (n − 1))."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def per_seed_table(*, frozen: bool = True) -> pd.DataFrame:
    """Two datasets × four arms × three seeds on two levels and two metrics, plus frozen rows."""
    rows = []
    for dataset, offset in (("toy", 0.0), ("zoo", 10.0)):
        for level, metric in (("mean_hierarchy", "map"), ("leaf", "r@1")):
            for arm, values in ARMS.items():
                geometry, loss = arm.split("_")
                for seed, value in zip(SEEDS, values, strict=True):
                    rows.append((dataset, geometry, loss, seed, level, metric, value + offset))
            if frozen:
                rows.append((dataset, "frozen", "frozen", -1, level, metric, FROZEN_VALUE))
    columns = ["dataset", "geometry", "loss", "seed", "level", "metric", "value"]
    return pd.DataFrame(rows, columns=columns)


def _one(frame: pd.DataFrame, **where: object) -> pd.Series:
    """The single row matching ``where``."""
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column] == value).to_numpy()
    assert mask.sum() == 1, f"expected one row for {where}, found {mask.sum()}"
    return frame[mask].iloc[0]


# ------------------------------------------------------------------------------ arithmetic


def test_arm_means_and_sample_sd_over_seeds():
    summary = arms_summary(per_seed_table())
    row = _one(summary, dataset="toy", geometry="E", loss="R", level="mean_hierarchy", metric="map")
    assert row["mean"] == pytest.approx(7 / 3)
    expected_sd = math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    assert row["sd"] == pytest.approx(expected_sd)
    assert row["sd"] != pytest.approx(np.std([1.0, 2.0, 4.0]))  # not the population SD
    assert row["n"] == 3
    for arm, values in ARMS.items():
        geometry, loss = arm.split("_")
        row = _one(summary, dataset="zoo", geometry=geometry, loss=loss, level="leaf", metric="r@1")
        assert row["mean"] == pytest.approx(sum(values) / 3 + 10.0)
        assert row["sd"] == pytest.approx(sample_sd(values))


def test_arms_summary_keeps_the_frozen_baseline_with_undefined_sd():
    summary = arms_summary(per_seed_table())
    assert list(summary.columns) == [
        "dataset",
        "geometry",
        "loss",
        "level",
        "metric",
        "mean",
        "sd",
        "n",
    ]
    row = _one(summary, dataset="toy", geometry="frozen", level="leaf", metric="r@1")
    assert row["mean"] == FROZEN_VALUE
    assert math.isnan(row["sd"])
    assert row["n"] == 1
    assert len(summary) == 2 * 2 * 5


@pytest.mark.parametrize("effect", sorted(EXPECTED_EFFECTS))
def test_each_effect_for_each_seed(effect: str):
    effects = effects_by_seed(per_seed_table())
    for dataset in ("toy", "zoo"):  # zoo's offset of 10 is shared by every arm and cancels out
        chosen = effects[
            (effects["dataset"] == dataset)
            & (effects["effect"] == effect)
            & (effects["level"] == "mean_hierarchy")
        ]
        assert chosen["seed"].tolist() == list(SEEDS)
        assert chosen["value"].tolist() == pytest.approx(EXPECTED_EFFECTS[effect])


def test_effects_by_seed_schema_and_order_ignore_the_baseline():
    with_frozen = effects_by_seed(per_seed_table())
    without = effects_by_seed(per_seed_table(frozen=False))
    pd.testing.assert_frame_equal(with_frozen, without)
    assert list(with_frozen.columns) == ["dataset", "level", "metric", "effect", "seed", "value"]
    assert len(with_frozen) == 2 * 2 * 5 * 3
    toy = with_frozen[(with_frozen["dataset"] == "toy") & (with_frozen["metric"] == "map")]
    assert toy["effect"].unique().tolist() == ["geom_R", "geom_S", "loss_E", "loss_H", "int"]


def test_effects_summary_mean_sd_and_positive_seeds():
    summary = effects_summary(effects_by_seed(per_seed_table()))
    assert list(summary.columns) == [
        "dataset",
        "level",
        "metric",
        "effect",
        "mean",
        "sd",
        "n",
        "positive_seeds",
        "negative_seeds",
        "se",
        "df",
        "ci_low",
        "ci_high",
        "p_seeds",
        "p_min",
    ]
    for effect, values in EXPECTED_EFFECTS.items():
        row = _one(summary, dataset="toy", level="leaf", metric="r@1", effect=effect)
        assert row["mean"] == pytest.approx(sum(values) / 3)
        assert row["sd"] == pytest.approx(sample_sd(values))
        assert row["n"] == 3
        assert row["positive_seeds"] == EXPECTED_POSITIVE[effect]
        # seeds only (no per-query rows): the t interval over the three seeds, 2 df
        low, high = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
        assert row["df"] == 2 and row["se"] == pytest.approx(stats.sem(values))
        assert row["p_seeds"] == pytest.approx(sign_flip_p(values))
        assert row["p_min"] == 0.25


def test_baseline_rows_are_the_frozen_rows():
    rows = baseline_rows(per_seed_table())
    assert set(rows["geometry"]) == {"frozen"}
    assert len(rows) == 4
    assert baseline_rows(per_seed_table(frozen=False)).empty


# ------------------------------------------------------------------- evaluation summaries


def evaluation_summaries() -> pd.DataFrame:
    """Summary rows of every arm, seed and Q/G draw with values that identify the row."""
    rows = []
    arms = [("E_R", "E", "R", s) for s in (1, 2)] + [("H_S", "H", "S", s) for s in (1, 2)]
    arms.append(("frozen", "frozen", "frozen", -1))
    for arm, geometry, loss, seed in arms:
        for qg_seed, shift in ((7, 0.0), (8, 0.03), (9, 0.06)):
            for aggregation, base in (("query_micro", 0.1), ("group_macro", 0.5)):
                for level, step in (("leaf", 0.0), ("middle", 0.1), ("high", 0.2)):
                    value = base + step + shift + 0.001 * max(seed, 0)
                    rows.append(
                        {
                            "dataset": "toy",
                            "arm": arm,
                            "geometry": geometry,
                            "loss": loss,
                            "seed": seed,
                            "qg_seed": qg_seed,
                            "aggregation": aggregation,
                            "level": level,
                            "n_valid": 10,
                            "map": value,
                            "r@1": value / 2,
                            "r@10": value / 4,
                        }
                    )
    return pd.DataFrame(rows)


def test_per_seed_from_evaluations_averages_over_qg_seeds():
    per_seed = per_seed_from_evaluations(evaluation_summaries())
    assert list(per_seed.columns) == [
        "dataset",
        "geometry",
        "loss",
        "seed",
        "level",
        "metric",
        "value",
    ]
    row = _one(per_seed, geometry="E", loss="R", seed=2, level="middle", metric="map")
    assert row["value"] == pytest.approx(0.1 + 0.1 + 0.03 + 0.002)  # mean shift of 0, .03, .06
    row = _one(per_seed, geometry="H", loss="S", seed=1, level="leaf", metric="r@10")
    assert row["value"] == pytest.approx((0.1 + 0.03 + 0.001) / 4)
    assert sorted(set(per_seed["metric"])) == ["map", "r@1", "r@10"]


def test_per_seed_from_evaluations_adds_mean_hierarchy_and_keeps_frozen():
    per_seed = per_seed_from_evaluations(evaluation_summaries())
    row = _one(per_seed, geometry="E", loss="R", seed=1, level="mean_hierarchy", metric="map")
    middle = 0.1 + 0.1 + 0.03 + 0.001
    high = 0.1 + 0.2 + 0.03 + 0.001
    assert row["value"] == pytest.approx((middle + high) / 2)
    frozen = _one(per_seed, geometry="frozen", seed=-1, level="mean_hierarchy", metric="r@1")
    assert frozen["value"] == pytest.approx(((0.1 + 0.1 + 0.03) / 2 + (0.1 + 0.2 + 0.03) / 2) / 2)
    assert len(per_seed) == 5 * 4 * 3


def test_per_seed_from_evaluations_uses_the_chosen_aggregation():
    macro = per_seed_from_evaluations(evaluation_summaries(), aggregation="group_macro")
    row = _one(macro, geometry="E", loss="R", seed=1, level="leaf", metric="map")
    assert row["value"] == pytest.approx(0.5 + 0.03 + 0.001)
    with pytest.raises(EffectsError, match=r"'nope'.*group_macro"):
        per_seed_from_evaluations(evaluation_summaries(), aggregation="nope")


def test_nan_in_one_draw_or_level_propagates():
    summaries = evaluation_summaries()
    hit = (
        (summaries["arm"] == "H_S")
        & (summaries["seed"] == 2)
        & (summaries["qg_seed"] == 8)
        & (summaries["level"] == "high")
        & (summaries["aggregation"] == "query_micro")
    )
    summaries.loc[hit, "map"] = np.nan
    per_seed = per_seed_from_evaluations(summaries)
    for level in ("high", "mean_hierarchy"):
        row = _one(per_seed, geometry="H", loss="S", seed=2, level=level, metric="map")
        assert math.isnan(row["value"])
    row = _one(per_seed, geometry="H", loss="S", seed=2, level="middle", metric="map")
    assert not math.isnan(row["value"])


def test_evaluation_cells_with_different_qg_draws_are_an_error():
    summaries = evaluation_summaries()
    drop = (summaries["arm"] == "E_R") & (summaries["seed"] == 2) & (summaries["qg_seed"] == 9)
    with pytest.raises(EffectsError, match=r"arm 'E_R', seed 2.*\[7, 8\].*\[7, 8, 9\]"):
        per_seed_from_evaluations(summaries[~drop])


def test_evaluation_arm_must_match_geometry_and_loss():
    summaries = evaluation_summaries()
    summaries.loc[summaries["arm"] == "H_S", "arm"] = "H_R"
    with pytest.raises(EffectsError, match="arm 'H_R' but geometry 'H' and loss 'S'"):
        per_seed_from_evaluations(summaries)


# ----------------------------------------------------------------------------- inputs


def test_csv_and_parquet_inputs_give_identical_outputs(tmp_path: Path):
    table = per_seed_table()
    table.loc[3, "value"] = 0.1 + 0.2  # a value whose decimal text must round-trip
    csv_path = tmp_path / "per_seed.csv"
    parquet_path = tmp_path / "per_seed.parquet"
    table.sample(frac=1.0, random_state=3).to_csv(csv_path, index=False)
    table.to_parquet(parquet_path, index=False)
    from_csv, from_parquet = read_per_seed(csv_path), read_per_seed(parquet_path)
    pd.testing.assert_frame_equal(from_csv, from_parquet)
    csv_paths = write_effects(csv_path, tmp_path / "from_csv", JOB)
    parquet_paths = write_effects(parquet_path, tmp_path / "from_parquet", JOB)
    assert sorted(csv_paths) == sorted(parquet_paths)
    for name in csv_paths:
        assert csv_paths[name].read_bytes() == parquet_paths[name].read_bytes(), name


def test_csv_keeps_nan_values_and_dataset_names_like_na(tmp_path: Path):
    table = per_seed_table()
    table["dataset"] = table["dataset"].replace({"zoo": "NA"})
    table.loc[0, "value"] = np.nan
    path = tmp_path / "per_seed.csv"
    table.to_csv(path, index=False)
    frame = read_per_seed(path)
    assert set(frame["dataset"]) == {"NA", "toy"}
    assert int(frame["value"].isna().sum()) == 1


def test_missing_column_error_names_the_file_and_column(tmp_path: Path):
    path = tmp_path / "broken.csv"
    per_seed_table().drop(columns=["metric"]).to_csv(path, index=False)
    with pytest.raises(EffectsError, match=r"broken\.csv lacks column\(s\) \['metric'\]"):
        read_per_seed(path)


def test_bad_geometry_error_names_the_value(tmp_path: Path):
    table = per_seed_table()
    table.loc[5, "geometry"] = "poincare"  # a name, not a code (one capital letter)
    path = tmp_path / "bad.parquet"
    table.to_parquet(path, index=False)
    with pytest.raises(EffectsError, match=r"bad\.parquet.*'geometry'.*\['poincare'\]"):
        read_per_seed(path)


def test_frozen_geometry_needs_frozen_loss():
    table = per_seed_table()
    table.loc[table["geometry"] == "frozen", "loss"] = "R"
    with pytest.raises(EffectsError, match="geometry 'frozen' with loss 'R'"):
        arms_summary(table)


def test_duplicate_row_error_names_the_key():
    table = per_seed_table()
    table = pd.concat([table, table.iloc[[7]]], ignore_index=True)
    key = table.iloc[7]
    with pytest.raises(EffectsError, match="duplicate rows") as caught:
        arms_summary(table)
    message = str(caught.value)
    for column in ("dataset", "geometry", "loss", "seed", "level", "metric"):
        assert f"'{column}': {key[column].item() if column == 'seed' else key[column]!r}" in message
    assert "2 rows" in message


def test_non_finite_or_text_values_are_errors():
    table = per_seed_table()
    table.loc[2, "value"] = np.inf
    with pytest.raises(EffectsError, match="finite numbers or NaN"):
        arms_summary(table)
    table = per_seed_table().astype({"value": object})
    table.loc[2, "value"] = "high"
    with pytest.raises(EffectsError, match="'high'"):
        arms_summary(table)


def test_fractional_seed_and_unknown_level_are_errors():
    table = per_seed_table()
    table["seed"] = table["seed"].astype(float)
    table.loc[0, "seed"] = 1.5
    with pytest.raises(EffectsError, match="'seed' needs whole numbers"):
        arms_summary(table)
    table = per_seed_table()
    table.loc[0, "level"] = "class"
    with pytest.raises(EffectsError, match=r"'level'.*\['class'\]"):
        arms_summary(table)


def test_missing_arm_for_a_seed_names_dataset_seed_and_arm():
    table = per_seed_table()
    gone = (
        (table["dataset"] == "zoo")
        & (table["geometry"] == "H")
        & (table["loss"] == "S")
        & (table["seed"] == 2)
    )
    with pytest.raises(EffectsError, match=r"dataset 'zoo', seed 2 lacks arm\(s\) \['H_S'\]"):
        effects_by_seed(table[~gone])


# The companion cells' per-seed values (seeds 1, 2, 3) and their three contrasts, by hand.
COMPANION_ARMS = {"E_A": (3.5, 2.0, 4.5), "L_A": (2.5, 4.5, 6.0)}
EXPECTED_COMPANION = {
    "loss_AS_E": (0.5, -0.5, 0.5),  # E_A - E_S
    "loss_AS_hyp": (0.5, 0.5, -1.0),  # L_A - H_S
    "geom_A": (-1.0, 2.5, 1.5),  # L_A - E_A
}


def with_companion(table: pd.DataFrame, dataset: str = "toy") -> pd.DataFrame:
    """A per-seed table plus E_A and L_A rows for one dataset, at mean_hierarchy mAP."""
    rows = [
        (dataset, arm[0], "A", seed, level, metric, value)
        for arm, values in COMPANION_ARMS.items()
        for seed, value in zip(SEEDS, values, strict=True)
        for level, metric in (("mean_hierarchy", "map"), ("leaf", "r@1"))
    ]
    return pd.concat([table, pd.DataFrame(rows, columns=table.columns)], ignore_index=True)


def test_companion_contrasts_for_each_seed_only_where_its_cells_ran():
    effects = effects_by_seed(with_companion(per_seed_table()))
    toy = effects[(effects["dataset"] == "toy") & (effects["metric"] == "map")]
    assert toy["effect"].unique().tolist() == [
        "geom_R", "geom_S", "loss_E", "loss_H", "int", "loss_AS_E", "loss_AS_hyp", "geom_A"
    ]  # fmt: skip
    for effect, expected in {**EXPECTED_EFFECTS, **EXPECTED_COMPANION}.items():
        chosen = toy[toy["effect"] == effect]
        assert chosen["seed"].tolist() == list(SEEDS)
        assert chosen["value"].tolist() == pytest.approx(expected)
    zoo = effects[effects["dataset"] == "zoo"]
    assert set(zoo["effect"]) == set(EXPECTED_EFFECTS)
    summary = effects_summary(effects)
    row = _one(summary, dataset="toy", level="mean_hierarchy", metric="map", effect="geom_A")
    assert row["mean"] == pytest.approx(1.0) and row["positive_seeds"] == 2


def test_companion_arms_in_the_arm_tables_after_the_factorial():
    arms = arms_summary(with_companion(per_seed_table()))
    toy = add_arm(arms[(arms["dataset"] == "toy") & (arms["metric"] == "map")])
    assert toy["arm"].tolist() == ["frozen", "E_R", "H_R", "E_S", "H_S", "E_A", "L_A"]
    assert _one(toy, arm="L_A")["mean"] == pytest.approx(13 / 3)
    table = arm_table(arms)
    assert table[table["dataset"] == "toy"]["arm"].tolist()[-2:] == ["E_A", "L_A"]


def test_a_companion_arm_missing_for_a_seed_is_named():
    table = with_companion(per_seed_table())
    gone = (table["geometry"] == "L") & (table["seed"] == 3)
    with pytest.raises(EffectsError, match=r"dataset 'toy', seed 3 lacks arm\(s\) \['L_A'\]"):
        effects_by_seed(table[~gone])


def test_unknown_arm_pairings_are_errors():
    table = per_seed_table()
    table.loc[0, "geometry"] = "L"  # the Lorentz head is only trained with the A loss
    with pytest.raises(EffectsError, match=r"geometry 'L' with loss 'R'.*no arm of the study"):
        arms_summary(table)


def test_unknown_suffix_and_missing_file(tmp_path: Path):
    path = tmp_path / "per_seed.json"
    path.write_text("{}")
    with pytest.raises(EffectsError, match=r"unknown suffix '\.json'"):
        read_per_seed(path)
    with pytest.raises(FileNotFoundError, match=r"nowhere\.csv"):
        read_per_seed(tmp_path / "nowhere.csv")


# ----------------------------------------------------------------------------- renderings


def test_markdown_and_latex_contain_the_numbers_and_are_deterministic():
    summary = arms_summary(per_seed_table())
    markdown = render_markdown(summary)
    latex = render_latex(summary)
    assert markdown == render_markdown(arms_summary(per_seed_table().iloc[::-1]))
    assert latex == render_latex(summary)
    assert "| toy | E | R | mean_hierarchy | map | 2.3333 | 1.5275 | 3 |" in markdown
    assert r"toy & E & R & mean\_hierarchy & map & 2.3333 & 1.5275 & 3 \\" in latex
    assert latex.startswith(r"\begin{tabular}{lllllrrr}")
    assert latex.rstrip().endswith(r"\end{tabular}")
    assert "NaN" in markdown  # the frozen baseline's undefined SD


def test_latex_escapes_underscores_percent_and_plus_minus():
    frame = pd.DataFrame({"a_b": ["5% of x_y", "1 ± 2"], "v": [0.5, -0.00001]})
    latex = render_latex(frame, digits=2)
    assert r"a\_b" in latex
    assert r"5\% of x\_y & 0.50 \\" in latex
    assert r"1 $\pm$ 2 & 0.00 \\" in latex  # no negative zero either
    assert "| 1 ± 2 | 0.00 |" in render_markdown(frame, digits=2)


def test_csv_rendering_has_a_fixed_float_format():
    frame = pd.DataFrame({"name": ["a", "b"], "v": [1 / 3, -1e-9], "n": [3, 1]})
    assert render_csv(frame, digits=4) == "name,v,n\na,0.3333,3\nb,0.0000,1\n"


def test_arm_table_layout():
    table = arm_table(arms_summary(per_seed_table()), metric="map")
    assert list(table.columns) == ["dataset", "arm", "mean_hierarchy"]
    assert table["arm"].tolist()[:5] == ["frozen", "E_R", "H_R", "E_S", "H_S"]
    row = _one(table, dataset="toy", arm="E_R")
    assert row["mean_hierarchy"] == "2.3333 ± 1.5275"
    assert _one(table, dataset="toy", arm="frozen")["mean_hierarchy"] == "0.2500"
    with pytest.raises(EffectsError, match="no metric 'r@5'"):
        arm_table(arms_summary(per_seed_table()), metric="r@5")


def test_recall_table_layout():
    table = recall_table(arms_summary(per_seed_table()))
    assert list(table.columns) == ["dataset", "arm", "level", "r@1"]
    assert _one(table, dataset="zoo", arm="H_S")["r@1"] == "14.3333 ± 2.5166"


def test_effects_table_layout():
    summary = effects_summary(effects_by_seed(per_seed_table()))
    table = effects_table(summary)
    assert list(table.columns) == [
        "dataset",
        "effect",
        "mean ± SD",
        "positive seeds",
        "95% interval",
        "p (seeds, these test images)",
        "rules out (interval holds 0)",
    ]
    assert table["effect"].tolist()[:5] == ["geom_R", "geom_S", "loss_E", "loss_H", "int"]
    assert _one(table, dataset="toy", effect="loss_H")["positive seeds"] == "3/3"
    row = _one(summary, dataset="toy", level="mean_hierarchy", metric="map", effect="loss_H")
    interval = f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"
    assert _one(table, dataset="toy", effect="loss_H")["95% interval"] == interval
    assert (
        _one(table, dataset="toy", effect="loss_H")["p (seeds, these test images)"]
        == "0.25 (floor 0.25)"
    )
    assert list(effects_table(summary, interval_level=0.9).columns)[4] == "90% interval"
    assert _one(table, dataset="toy", effect="geom_R")["mean ± SD"] == "+0.5000 ± 0.5000"
    assert _one(table, dataset="toy", effect="int")["mean ± SD"].startswith("+0.6667 ± 1.8930")
    with pytest.raises(EffectsError, match="no level 'high'"):
        effects_table(summary, level="high")


# ------------------------------------------------------------------------------- writing

EXPECTED_FILES = sorted(
    [
        f"{stem}.{ext}"
        for stem in ("arms_summary", "effects_by_seed", "effects_summary")
        for ext in ("parquet", "md", "tex", "csv")
    ]
    + [
        f"{stem}.{ext}"
        for stem in ("table_arms_map", "table_effects_map", "table_recall")
        for ext in ("md", "tex")
    ]
)


def test_write_effects_writes_every_file_with_provenance(tmp_path: Path):
    paths = write_effects(per_seed_table(), tmp_path / "out", JOB)
    assert sorted(paths) == EXPECTED_FILES
    for name, path in paths.items():
        assert path == tmp_path / "out" / name
        assert path.is_file()
        assert provenance_path(path).is_file()
    written = pd.read_parquet(paths["effects_summary.parquet"])
    pd.testing.assert_frame_equal(
        written, effects_summary(effects_by_seed(per_seed_table())), check_dtype=False
    )
    assert read_parquet_metadata(paths["arms_summary.parquet"])["table"] == "arms_summary"
    assert "2.3333 ± 1.5275" in paths["table_arms_map.md"].read_text(encoding="utf-8")
    assert "3/3" in paths["table_effects_map.tex"].read_text(encoding="utf-8")


def test_write_effects_twice_gives_byte_identical_files(tmp_path: Path):
    first = write_effects(per_seed_table(), tmp_path / "out", JOB)
    before = {name: path.read_bytes() for name, path in first.items()}
    records = {name: provenance_path(path).read_bytes() for name, path in first.items()}
    shuffled = per_seed_table().sample(frac=1.0, random_state=11)
    second = write_effects(shuffled, tmp_path / "out", JOB)
    assert {name: path.read_bytes() for name, path in second.items()} == before
    assert {name: provenance_path(p).read_bytes() for name, p in second.items()} == records


def test_an_added_geometrys_arms_give_its_effects_against_each_paper_geometry():
    added = {"C_R": (2.0, 2.5, 4.5), "C_S": (3.0, 3.0, 8.0)}
    extra = [
        ("toy", arm.split("_")[0], arm.split("_")[1], seed, level, metric, value)
        for level, metric in (("mean_hierarchy", "map"), ("leaf", "r@1"))
        for arm, values in added.items()
        for seed, value in zip(SEEDS, values, strict=True)
    ]
    table = per_seed_table(frozen=False)
    table = pd.concat([table, pd.DataFrame(extra, columns=table.columns)], ignore_index=True)
    effects = effects_by_seed(table)
    toy = effects[(effects["dataset"] == "toy") & (effects["metric"] == "map")]
    values = toy.pivot(index="seed", columns="effect", values="value")
    arms = {**ARMS, **added}
    for effect, (first, second) in {
        "geom_CE_R": ("C_R", "E_R"),
        "geom_CH_S": ("C_S", "H_S"),
        "loss_C": ("C_S", "C_R"),
    }.items():
        expected = [a - b for a, b in zip(arms[first], arms[second], strict=True)]
        assert values[effect].tolist() == expected, effect
    assert values[list(EXPECTED_EFFECTS)].to_dict("list") == {
        name: list(seeds) for name, seeds in EXPECTED_EFFECTS.items()
    }  # the paper's five unchanged beside them
    zoo = effects[effects["dataset"] == "zoo"]
    assert not zoo["effect"].str.contains("C").any()  # no C arms there, no C effects
