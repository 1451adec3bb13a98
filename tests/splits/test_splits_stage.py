"""The splits stage in the pipeline: sealing, identities and the manifest."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from conftest import TINY_RUN

from hierbench.provenance.artifacts import read_provenance
from hierbench.splits.construction import split_identity

DATASETS = ("cub", "nabirds")


def _load(repo: Path, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    base = repo / f"{TINY_RUN}/{dataset}/splits"
    dev = pd.read_parquet(base / "dev.parquet")
    sealed = pd.read_parquet(base / "sealed/test.parquet")
    manifest = pd.concat(
        [
            pd.read_parquet(base / "manifest.parquet"),
            pd.read_parquet(base / "sealed/manifest.parquet"),
        ]
    )
    return dev, sealed, manifest


def test_sealed_rows_only_in_sealed_artifacts(built_repo: Path):
    for dataset in DATASETS:
        dev, sealed, _ = _load(built_repo, dataset)
        assert not dev["sealed"].any() and sealed["sealed"].all()
        test_ids = set(sealed["image_id"])
        assert not set(dev["image_id"]) & test_ids, dataset
        assert set(sealed["split"]) == {"final", "qg-42", "qg-2024", "qg-3407"}


def test_manifest_identities_recompute_from_the_files(built_repo: Path):
    for dataset in DATASETS:
        dev, sealed, manifest = _load(built_repo, dataset)
        both = pd.concat([dev, sealed])
        for row in manifest.itertuples():
            ids = both.loc[(both["split"] == row.split) & (both["role"] == row.role), "image_id"]
            assert len(ids) == row.count
            assert split_identity(ids) == row.sha256, (dataset, row.split, row.role)


def test_manifest_identities_are_in_the_provenance_record(built_repo: Path):
    path = built_repo / f"{TINY_RUN}/cub/splits/sealed/manifest.parquet"
    recorded = read_provenance(path)["facts"]["splits"]
    manifest = pd.read_parquet(path)
    assert recorded == {f"{r.split}/{r.role}": r.sha256 for r in manifest.itertuples()}


def test_every_perturbation_uses_every_test_image_once(built_repo: Path):
    for dataset in DATASETS:
        _, sealed, _ = _load(built_repo, dataset)
        test_ids = set(sealed.loc[sealed["split"] == "final", "image_id"])
        for seed in (42, 2024, 3407):
            draw = sealed[sealed["split"] == f"qg-{seed}"]
            assert set(draw["image_id"]) == test_ids
            assert not draw["image_id"].duplicated().any()
