"""benchmarks/budgets.py: the HIER-style and companion cells trained once per setting, scored on
held-out images after each reported epoch, with the training CPU they had taken (issue #53)."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest
from test_companion_demo import _load, _one_thread  # noqa: F401 (autouse: one torch thread)

from hierbench.protocol import HIER


def _curves(triplets: list[int], pairs: list[str]):
    budgets, sanity = _load("budgets"), _load("companion_sanity")
    collection = sanity.make_collection(42)
    config = sanity.sanity_config(epochs=3, lr=1e-3, batch_size=32)
    block = {"proxies": 8, "topk": 3, "triplets_per_anchor": 50}
    config["datasets"][sanity.DATASET]["controls"] = {"baselines": {"hier": block}}
    args = argparse.Namespace(
        dataset=sanity.DATASET, seeds=[42], report_epochs=[1, 3], triplets=triplets, pairs=pairs
    )
    return budgets, config, budgets.budget_curves(collection, config, args)


def test_each_setting_trains_once_and_is_scored_after_each_reported_epoch():
    budgets, config, frame = _curves([2, 6], ["method"])
    assert list(zip(frame["arm"], frame["setting"], frame["epoch"], strict=True)) == [
        ("frozen", "-", 0),
        (HIER, "triplets 2", 1),
        (HIER, "triplets 2", 3),
        (HIER, "triplets 6", 1),
        (HIER, "triplets 6", 3),
        ("E_A", "pairs method", 1),
        ("E_A", "pairs method", 3),
        ("L_A", "pairs method", 1),
        ("L_A", "pairs method", 3),
    ]
    # each setting on its own copy of the config
    assert (
        config["datasets"]["sanity"]["controls"]["baselines"]["hier"]["triplets_per_anchor"] == 50
    )
    trained = frame[frame["arm"] != "frozen"]
    for _, rows in trained.groupby(["arm", "setting"]):
        first, last = rows["cpu_s"]
        assert 0 < first < last  # training's CPU accumulates over the epochs
    hier = trained[trained["arm"] == HIER].set_index(["setting", "epoch"])["mean_hierarchy"]
    assert hier[("triplets 2", 3)] != hier[("triplets 6", 3)]  # the triplets differ
    table = budgets.markdown(frame, "heading")
    assert table.count(f"\n| {HIER} | triplets 2 | ") == 2


def test_the_method_pairs_leave_the_taxonomy_pairs_out():
    budgets, sanity = _load("budgets"), _load("companion_sanity")
    collection = sanity.make_collection(42)
    config = sanity.sanity_config(
        epochs=1, lr=1e-3, batch_size=32, pairs={"boxes": True, "cross_image": 2, "taxonomy": True}
    )
    _, mine = budgets.companion_cell(collection, config, sanity.DATASET, 42, "E_A", "config")
    _, method = budgets.companion_cell(collection, config, sanity.DATASET, 42, "E_A", "method")
    assert mine.sources.taxonomy and not method.sources.taxonomy
    assert config["companion"]["pairs"]["taxonomy"] is True


def test_the_rule_takes_the_fewest_triplets_and_epochs_within_the_tolerance_of_the_best():
    budgets = _load("budgets")
    rows = []
    for seed, shift in ((1, 0.0), (2, 0.002)):
        for setting, epoch, leaf, hierarchy in (
            ("triplets 10", 25, 0.150, 0.140),
            ("triplets 10", 50, 0.170, 0.141),
            ("triplets 10", 100, 0.174, 0.130),
            ("triplets 50", 100, 0.190, 0.100),
        ):
            rows.append(
                {
                    "seed": seed,
                    "arm": HIER,
                    "setting": setting,
                    "epoch": epoch,
                    "leaf": leaf + shift,
                    "mean_hierarchy": hierarchy,
                }
            )
    frame = pd.DataFrame(rows)
    assert budgets.chosen_budget(frame, HIER, "leaf", 0.005) == ("triplets 10", 50)
    assert budgets.chosen_budget(frame, HIER, "leaf", 0.001) == ("triplets 10", 100)
    assert budgets.chosen_budget(frame, HIER, "mean_hierarchy", 0.005) == ("triplets 10", 25)
    with pytest.raises(ValueError, match="no rows of arm"):
        budgets.chosen_budget(frame, "E_A")
    # the fewest triplets, whatever order the command line measured them in
    reversed_order = frame.iloc[::-1].reset_index(drop=True)
    assert budgets.chosen_budget(reversed_order, HIER, "leaf", 0.005) == ("triplets 10", 50)


def test_epochs_trains_the_hier_cells_past_the_configs_budget():
    budgets, sanity = _load("budgets"), _load("companion_sanity")
    collection = sanity.make_collection(42)
    config = sanity.sanity_config(epochs=3, lr=1e-3, batch_size=32)
    block = {"proxies": 8, "topk": 3, "triplets_per_anchor": 50, "epochs": 2}
    config["datasets"][sanity.DATASET]["controls"] = {"baselines": {"hier": block}}
    spec, _ = budgets.hier_cell(collection, config, sanity.DATASET, 42, 4, epochs=5)
    assert spec.epochs == 5 and block["epochs"] == 2  # on its own copy of the config
