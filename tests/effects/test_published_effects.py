"""The Geometry × Loss study's published per-seed mAP, fed as printed to ``hierbench effects``,
reproduces every published effect on mean hierarchy mAP: per seed, mean and sample SD.

The two tables and their source are described in ``tests/fixtures/published/README.md``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from hierbench.cli import main

PUBLISHED = REPO / "tests/fixtures/published"
PER_SEED_MAP = PUBLISHED / "paper_per_seed_map.csv"
PUBLISHED_EFFECTS = PUBLISHED / "paper_effects_mean_hierarchy.csv"
# Both tables are printed to six decimals; re-aggregating the rounded per-seed values moves an
# effect by at most a few units of the sixth decimal.
TOLERANCE = 5e-6
KEYS = ["dataset", "effect"]


def reaggregate(per_seed_csv: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> pd.DataFrame:
    """Run ``hierbench effects`` on a per-seed CSV and return its mean hierarchy mAP effects in
    the published layout (``dataset, effect, seed_<seed>…, mean, sd``), at full precision."""
    assert main(["effects", str(per_seed_csv), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for dataset in ("cub", "nabirds"):
        assert f"derived level 'mean_hierarchy' = (middle + high) / 2 for dataset {dataset!r}" in (
            printed
        )
    by_seed = _mean_hierarchy_map(pd.read_parquet(out / "effects_by_seed.parquet"))
    summary = _mean_hierarchy_map(pd.read_parquet(out / "effects_summary.parquet"))
    per_seed = by_seed.pivot(index=KEYS, columns="seed", values="value")
    per_seed.columns = [f"seed_{seed}" for seed in per_seed.columns]
    return per_seed.join(summary.set_index(KEYS)[["mean", "sd"]])


def _mean_hierarchy_map(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of an effects table at level mean_hierarchy, metric map."""
    return frame[(frame["level"] == "mean_hierarchy") & (frame["metric"] == "map")]


def mismatches(ours: pd.DataFrame, published: pd.DataFrame) -> list[str]:
    """Every published number that ours lacks or misses by more than the tolerance, named by
    dataset, effect and column (seed_<seed>, mean or sd)."""
    found = []
    for _, row in published.iterrows():
        key = (row["dataset"], row["effect"])
        for column in published.columns.drop(KEYS):
            where = f"{key[0]} {key[1]} {column}"
            if key not in ours.index or column not in ours.columns:
                found.append(f"{where}: published {row[column]:.6f}, not computed")
                continue
            value = ours.at[key, column]
            if not abs(value - row[column]) <= TOLERANCE:  # also catches NaN
                found.append(f"{where}: published {row[column]:.6f}, ours {value:.9f}")
    return found


def read_published_effects() -> pd.DataFrame:
    """The published effects table: dataset, effect, a column per seed, mean, sd."""
    published = pd.read_csv(PUBLISHED_EFFECTS)
    seeds = [column for column in published.columns if column.startswith("seed_")]
    assert list(published.columns) == [*KEYS, *seeds, "mean", "sd"] and len(seeds) == 3
    return published


def perturbed_copy(tmp_path: Path, row_start: str, change: float) -> Path:
    """The published per-seed CSV with the value of the one row starting with ``row_start``
    changed by ``change`` (printed to six decimals like the rest); every other byte as is."""
    lines = PER_SEED_MAP.read_bytes().decode().splitlines(keepends=True)
    matching = [index for index, line in enumerate(lines) if line.startswith(row_start)]
    assert len(matching) == 1, f"expected one row starting {row_start!r}, found {len(matching)}"
    line = lines[matching[0]]
    ending = line[len(line.rstrip("\r\n")) :]
    value = float(line.rstrip("\r\n").rsplit(",", 1)[1])
    lines[matching[0]] = f"{row_start}{value + change:.6f}{ending}"
    path = tmp_path / "perturbed.csv"
    path.write_bytes("".join(lines).encode())
    return path


def test_published_per_seed_table_reproduces_every_published_effect(tmp_path: Path, capsys):
    published = read_published_effects()
    ours = reaggregate(PER_SEED_MAP, tmp_path / "out", capsys)
    # The same effects on both sides: none published that we do not compute, and vice versa.
    assert sorted(ours.index) == sorted(published.set_index(KEYS).index)
    assert mismatches(ours, published) == []


@pytest.mark.parametrize(
    ("row_start", "affected"),
    [
        # E_R's middle level enters mean hierarchy, so every effect with E_R moves at seed 42.
        ("cub,E,R,42,middle,map,", {"geom_R", "loss_E", "int"}),
        ("nabirds,H,S,3407,high,map,", {"geom_S", "loss_H", "int"}),
    ],
)
def test_changing_one_published_value_by_1e_4_breaks_the_match(
    tmp_path: Path, capsys, row_start: str, affected: set[str]
):
    """The check is not vacuous: 1e-4 on one middle or high mAP moves that seed's mean
    hierarchy by 5e-5, and the comparison names exactly the effects it enters."""
    dataset, _, _, seed = row_start.split(",")[:4]
    path = perturbed_copy(tmp_path, row_start, 1e-4)
    found = mismatches(reaggregate(path, tmp_path / "out", capsys), read_published_effects())
    assert found, "a 1e-4 change to a published value went unnoticed"
    named = {tuple(line.split(":")[0].split()) for line in found}
    # That seed's value and the mean (moved by 5e-5 / 3) of each affected effect; an SD may move
    # less than the tolerance, so it is allowed but not required.
    required = {
        (dataset, effect, column) for effect in affected for column in (f"seed_{seed}", "mean")
    }
    allowed = required | {(dataset, effect, "sd") for effect in affected}
    assert required <= named <= allowed, found


def test_a_leaf_value_does_not_enter_the_mean_hierarchy_effects(tmp_path: Path, capsys):
    """Mean hierarchy is derived from middle and high only: a change at leaf matches still."""
    path = perturbed_copy(tmp_path, "cub,E,R,42,leaf,map,", 1e-2)
    assert mismatches(reaggregate(path, tmp_path / "out", capsys), read_published_effects()) == []
