"""What the summaries claim (hierbench.effects.verdicts): the planned endpoints lead, read as the
paper reads them; the design's limits are said in words; everything else is exploratory, with
the number of intervals examined."""

from __future__ import annotations

import pandas as pd

from hierbench.effects.verdicts import (
    agreeing_seeds,
    caption,
    design_limits,
    endpoints_table,
    exploratory,
    exploratory_lines,
    undefined_levels,
)
from hierbench.levelnames import level_labels

LABELS = {"leaf": "species", "middle": "genus", "high": "family"}


def _summary(seeds: int = 3, floor: float = 0.25) -> pd.DataFrame:
    """Effects on mAP: the five endpoints at mean hierarchy, and four others (one r@1 row)."""
    rows = []
    for index, effect in enumerate(("geom_R", "geom_S", "loss_E", "loss_H", "int")):
        mean = [0.01, 0.0005, 0.05, 0.04, -0.009][index]
        rows.append(
            {
                "dataset": "cub",
                "level": "mean_hierarchy",
                "metric": "map",
                "effect": effect,
                "mean": mean,
                "sd": 0.002,
                "n": seeds,
                "positive_seeds": seeds if mean > 0 else 0,
                "negative_seeds": 0 if mean > 0 else seeds,
                "ci_low": mean - 0.005,
                "ci_high": mean + 0.005,
                "p_seeds": floor,
                "p_min": floor,
            }
        )
    for level, effect, metric, low, high, mean in (
        ("leaf", "loss_E", "map", -0.05, -0.01, -0.03),
        ("high", "int", "map", -0.002, 0.004, 0.001),
        ("middle", "geom_R", "map", 0.001, 0.02, 0.01),
        ("leaf", "geom_R", "r@1", 0.4, 0.6, 0.5),
        ("mean_hierarchy", "loss_AS_E", "map", 0.1, 0.3, 0.2),
    ):
        rows.append(
            {
                "dataset": "cub",
                "level": level,
                "metric": metric,
                "effect": effect,
                "mean": mean,
                "sd": 0.01,
                "n": seeds,
                "positive_seeds": 2,
                "negative_seeds": 1,
                "ci_low": low,
                "ci_high": high,
                "p_seeds": 0.5,
                "p_min": floor,
            }
        )
    return pd.DataFrame(rows)


def test_the_planned_endpoints_are_the_five_effects_on_mean_hierarchy_map():
    table = endpoints_table(_summary(), 0.95)
    assert table["effect"].tolist() == ["geom_R", "geom_S", "loss_E", "loss_H", "int"]
    first = table.iloc[0]
    assert first["estimate"] == "+0.0100" and first["95% interval"] == "[+0.0050, +0.0150]"
    assert first["p (seeds, these test images)"] == "0.25 (floor 0.25)"
    # the seeds that agree with the estimate's sign, as the paper counts them
    assert table["seeds agreeing in sign"].tolist() == ["3/3"] * 5


def test_agreeing_seeds_follow_the_sign_of_the_mean():
    row = pd.Series({"mean": -0.2, "positive_seeds": 1, "negative_seeds": 2, "n": 3})
    assert agreeing_seeds(row) == "2/3"
    assert agreeing_seeds(row.copy().replace({-0.2: 0.0})) == "0/3"


def test_a_floor_above_the_level_is_said_in_words():
    words = " ".join(design_limits(_summary(), 0.95))
    assert "With 3 training seeds the sign-flip test's smallest p-value is 0.25" in words
    assert "cannot reject a zero effect at that level by that test" in words
    five = _summary(seeds=5, floor=0.0625)
    assert "0.0625, above the 5% level" in " ".join(design_limits(five, 0.95))
    assert "can reach p = 0.0625, below the 10% level" in " ".join(design_limits(five, 0.90))
    ten = " ".join(design_limits(_summary(seeds=10, floor=2**-9), 0.95))
    assert "can reach p = 0.00195, below the 5% level" in ten and "cannot" not in ten


def test_everything_else_is_exploratory_with_the_count_examined():
    summary = _summary()
    rows = exploratory(summary)
    assert len(rows) == 4  # map rows beyond the endpoints; r@1 is not counted
    lines = exploratory_lines(summary, 0.95, LABELS)
    assert lines[0].startswith(
        "4 further intervals on mAP were examined (the five simple effects at species, genus, "
        "family; the companion contrasts at every level and on mean hierarchy); 3 exclude zero"
    )
    assert "3 exclude zero, where about 0.2 would by chance alone" in lines[0]
    assert "not adjusted for multiplicity" in lines[0]
    listed = [line for line in lines if line.startswith("- ")]
    assert listed == [
        "- cub loss_AS_E (E_A - E_S), mean hierarchy: +0.2000 [+0.1000, +0.3000]",
        "- cub loss_E (E_S - E_R), species: -0.0300 [-0.0500, -0.0100]",
        "- cub geom_R (H_R - E_R), genus: +0.0100 [+0.0010, +0.0200]",
    ]
    assert exploratory_lines(summary[summary["level"] == "mean_hierarchy"].iloc[:5], 0.95, {}) == [
        "No further intervals on mAP."
    ]


def test_the_caption_leads_with_the_endpoints_and_labels_the_rest_exploratory():
    text = caption(_summary(), 0.95)
    assert text.startswith("Planned endpoints (mean hierarchy mAP)")
    assert (
        "- ``geom_R``: +0.0100 [+0.0050, +0.0150]; p (seeds, these test images) 0.25 "
        "(floor 0.25); 3/3 seeds agree"
    ) in text
    assert "cannot reject a zero effect at that level" in text
    assert "Exploratory, not planned (4 intervals; about 0.20 would exclude zero" in text
    assert "excludes zero**" not in text and "significant" not in text
    missing = _summary().assign(ci_low=float("nan"))
    assert caption(missing, 0.95).count("no interval") == 5


def test_a_level_without_valid_queries_is_named_as_why_the_endpoints_are_nan():
    rows = [
        {"geometry": g, "loss": s, "metric": "map", "level": level, "mean": mean}
        for g in "EH"
        for s in "RS"
        for level, mean in (("leaf", 0.3), ("middle", 0.2), ("high", float("nan")))
    ]
    arms = pd.DataFrame(rows)
    labels = level_labels(("leaf", "parent", "supergroup"))
    [line] = undefined_levels(arms, labels)
    assert line.startswith("The supergroup (high) level has no valid query in any test draw")
    assert "the mean of the parent and supergroup levels, is undefined" in line
    arms.loc[(arms["level"] == "high") & (arms["geometry"] == "E"), "mean"] = 0.1
    assert undefined_levels(arms, labels) == []  # one arm scored there: the level is defined


def test_regimes_the_data_show_are_said_beside_the_endpoints():
    from hierbench.effects.noise_regimes import REGIME_COLUMNS
    from hierbench.effects.verdicts import regime_lines

    assert regime_lines(pd.DataFrame(columns=list(REGIME_COLUMNS))) == []
    named = pd.DataFrame(
        [["cub", "geom_R", "mean_hierarchy", "map", "outlying seed", 1.15, 1.15, "one seed lies"]],
        columns=list(REGIME_COLUMNS),
    )
    lines = regime_lines(named)
    assert lines[0].startswith("Where the data leave the interval's model")
    assert "- cub geom_R: one seed lies." in lines
