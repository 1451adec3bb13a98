"""The effects' intervals for the whole demo, against the 30-second goal (issues #37, #49).

Per dataset the tables stage computes, under both aggregations (the registered one and the
sensitivity one), the test images' share of every effect's interval on every metric and level
from the cells' per-query rows (``hierbench.effects.query_intervals``: the query images
resampled within their leaves), and the t quantile calibrated for its seed count
(``hierbench.effects.calibration``, once per process). This times that work on synthetic rows
of the demo's shape: two datasets, six arms (the factorial's four and the companion cells),
three seeds, three query/gallery draws of 180 queries, mAP and Recall@1/5/10/20 at three levels
and seven OT scores at level all, 10,000 replicates. ``--paper`` times the paper's sizes
(870 queries per draw) instead, as context. The reference is the goal's 30 seconds, a constant.
Run: ``.venv/bin/python benchmarks/intervals.py [--repeats 1] [--paper]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from benchrows import Row, row

from hierbench.effects.calibration import calibrated_quantile
from hierbench.effects.intervals import IntervalSettings
from hierbench.effects.query_intervals import query_noise_table

GOAL_S = 30.0
ARMS = ("E_R", "H_R", "E_S", "H_S", "E_A", "L_A")
SEEDS, DRAWS = (42, 2024, 3407), (42, 2024, 3407)
RANKING = ("ap", "r@1", "r@5", "r@10", "r@20")
OT = ("ot@10", "ot@50", "ot@100", "ot_tree@10", "ot_tree@50", "ot_tree@100", "ot_tree@tree")
LEVELS = ("leaf", "middle", "high")


def per_query_rows(dataset: str, queries: int, seed: int = 0) -> pd.DataFrame:
    """Per-query rows of every arm, seed and draw: random scores, a tree of queries//3 leaves."""
    rng = np.random.default_rng(seed)
    leaf = rng.integers(0, max(1, queries // 3), size=queries)
    groups = {"leaf": leaf, "middle": leaf // 3, "high": leaf // 9, "all": np.arange(queries)}
    # a query's validity depends on the gallery only: the same for every arm and seed
    valid = {(d, lv): rng.random(queries) > 0.05 for d in DRAWS for lv in LEVELS}
    frames = []
    for arm in ARMS:
        for train_seed in SEEDS:
            for draw in DRAWS:
                for level in (*LEVELS, "all"):
                    frame = pd.DataFrame(
                        {
                            "query": np.arange(queries),
                            "image_id": [f"{draw}-{q}" for q in range(queries)],
                            "level": level,
                            "group": groups[level],
                        }
                    )
                    frame["valid"] = valid[draw, level] if level != "all" else True
                    for metric in (*RANKING, *OT):
                        scored = (metric in OT) == (level == "all")
                        frame[metric] = rng.random(queries) if scored else np.nan
                    frames.append(
                        frame.assign(dataset=dataset, arm=arm, seed=train_seed, qg_seed=draw)
                    )
    return pd.concat(frames, ignore_index=True)


def rows(repeats: int = 1, paper: bool = False) -> list[Row]:
    """Seconds of every interval of two datasets under both aggregations."""
    queries = 870 if paper else 180
    data = [per_query_rows(name, queries, index) for index, name in enumerate(("cub", "nabirds"))]
    settings = IntervalSettings()
    times = []
    for _ in range(repeats):
        calibrated_quantile.cache_clear()
        start = time.perf_counter()
        calibrated_quantile(len(SEEDS), settings.level)
        for frame in data:
            for aggregation in ("query_micro", "group_macro"):
                query_noise_table(frame, aggregation, settings)
        times.append(time.perf_counter() - start)
    seconds = min(times)
    return [
        row(
            "intervals",
            f"intervals of the whole {'paper-size' if paper else 'demo'} run vs the goal",
            seconds,
            GOAL_S,
            "s",
            "<= 1",
            note=(
                f"2 datasets x 2 aggregations, {len(ARMS)} arms x {len(SEEDS)} seeds x "
                f"{len(DRAWS)} draws of {queries} queries, {settings.replicates} query-image "
                "resamples, the calibrated quantile for 3 seeds; "
                f"best of {repeats}; the reference is the goal (30 s), a constant"
            ),
        )
    ]


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--paper", action="store_true", help="870 queries per draw")
    args = parser.parse_args()
    for item in rows(args.repeats, args.paper):
        print(f"{item['figure']}: {item['value']:.1f} s ({item['note']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
