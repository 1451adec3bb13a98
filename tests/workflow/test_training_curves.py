"""Training curves (#63) in a complete tiny run: one figure per kind of cell a dataset trains
and the τ search's, published with provenance, the same bytes when redrawn, and retraining
one kind of cell redraws its own figure only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from conftest import TINY, TINY_RUN, TINY_SEEDS, scheduled_rules, snakemake

from hierbench.cells.cell_folders import cell_key
from hierbench.config import load_config
from hierbench.effects.curves import loss_problems, problems_caption
from hierbench.layout import CELL_FILES, TRAINING_PROBLEMS
from hierbench.paths import RunPaths
from hierbench.provenance.artifacts import read_provenance
from hierbench.provenance.hashing import sha256_file

# configs/tiny.yaml trains the controls and the HIER baseline on CUB only.
KINDS = {
    "cub": ("factorial", "curvature", "semantic", "hier", "outer", "companion"),
    "nabirds": ("factorial", "companion"),
}
# The searches drawn beside the training curves: the τ search on both, the semantic and outer
# controls' duration searches where they run.
SEARCHES = {"cub": ("tau_search", "duration_search"), "nabirds": ("tau_search",)}


def _figures(repo: Path) -> list[Path]:
    """Every training-curves and τ-search file the tiny run should hold."""
    names = {
        dataset: [*(f"training_curves_{kind}" for kind in kinds), *SEARCHES[dataset]]
        for dataset, kinds in KINDS.items()
    }
    return [
        repo / f"{TINY_RUN}/{dataset}/curves/{name}.{ext}"
        for dataset, listed in names.items()
        for name in listed
        for ext in ("png", "pdf")
    ]


def _captions(repo: Path) -> list[Path]:
    """Every training-curves figure's caption paragraph (its flat or non-finite cells)."""
    return [
        repo / f"{TINY_RUN}/{dataset}/curves/training_curves_{kind}_problems.rst"
        for dataset, kinds in KINDS.items()
        for kind in kinds
    ]


def test_every_kind_of_cell_has_its_curves_with_provenance(built_repo: Path):
    figures = _figures(built_repo)
    for path in [*figures, *_captions(built_repo)]:
        assert read_provenance(path)["sha256"] == sha256_file(path), path
    assert all(path.stat().st_size > 1000 for path in figures)
    paths = RunPaths(TINY_RUN, load_config(built_repo / "configs/tiny.yaml"))
    for dataset, kinds in KINDS.items():
        for kind in kinds:
            logs = paths.cells(dataset, [kind], CELL_FILES["log"])
            frames = {cell_key(log): pd.read_parquet(built_repo / log) for log in logs}
            paragraph = paths.at(TRAINING_PROBLEMS, dataset=dataset, kind=kind)
            assert (built_repo / paragraph).read_text() == problems_caption(
                loss_problems(frames)
            ), paragraph
    assert all(p.read_bytes()[:5] == b"%PDF-" for p in figures if p.suffix == ".pdf")
    drawn = sorted((built_repo / TINY_RUN).glob("*/curves/training_curves_*.png"))
    assert len(drawn) == sum(len(kinds) for kinds in KINDS.values())


def test_redrawn_curves_are_the_same_bytes(built_repo: Path):
    figures = [*_figures(built_repo), *_captions(built_repo)]
    before = [sha256_file(path) for path in figures]
    snakemake(built_repo, *TINY, "--forcerun", "training_curves", "tau_curves", "duration_curves")
    assert [sha256_file(path) for path in figures] == before


def test_retraining_one_kind_redraws_its_own_curves_only(built_repo: Path):
    rules = scheduled_rules(built_repo, *TINY, "--forcerun", "train_hier_cell")
    assert rules["train_hier_cell"] == len(TINY_SEEDS), rules
    assert rules["training_curves"] == 1 and "tau_curves" not in rules, rules
    assert "duration_curves" not in rules, rules
