"""The context baselines' library code: PCA fitted on development rows only, its projection,
and the baselines table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.baselines.context_table import (
    BaselinesError,
    baselines_differences,
    baselines_per_seed,
    baselines_table,
)
from hierbench.baselines.pca import PcaError, fit_pca, load_pca, pca_writer, project
from hierbench.features.store import feature_table, write_feature_parquet
from hierbench.provenance.artifacts import write_parquet
from hierbench.provenance.records import JobContext
from hierbench.stages.baselines import fit_pca_on_development

JOB = JobContext(rule="baselines_test")
RNG = np.random.default_rng(7)


def _features(n: int, width: int = 12) -> np.ndarray:
    """Anisotropic features: a few strong directions, so the components are well separated."""
    scales = np.linspace(5.0, 0.2, width)
    return (RNG.normal(size=(n, width)) * scales).astype(np.float32)


def test_components_are_orthonormal_principal_directions_with_fixed_signs() -> None:
    x = _features(200)
    projection = fit_pca(x, 4)
    components = projection.components
    np.testing.assert_allclose(components @ components.T, np.eye(4), atol=1e-10)
    covariance = np.cov(x.astype(np.float64), rowvar=False)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    top = eigenvectors[:, ::-1][:, :4].T
    np.testing.assert_allclose(np.abs(components @ top.T), np.eye(4), atol=1e-6)
    largest = np.argmax(np.abs(components), axis=1)
    assert (components[np.arange(4), largest] > 0).all()
    share = eigenvalues[::-1][:4] / eigenvalues.sum()
    np.testing.assert_allclose(projection.explained_variance_ratio, share, rtol=1e-6)


def test_projection_is_unit_norm_and_deterministic(tmp_path) -> None:
    x = _features(100)
    projection = fit_pca(x, 3)
    embeddings = project(projection, x)
    assert embeddings.shape == (100, 3) and embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-6)
    path = tmp_path / "p.safetensors"
    pca_writer(projection)(path)
    again = tmp_path / "q.safetensors"
    pca_writer(fit_pca(x, 3))(again)
    assert path.read_bytes() == again.read_bytes()
    np.testing.assert_array_equal(project(load_pca(path), x), embeddings)


def test_bad_dimensions_and_widths_are_errors_with_numbers() -> None:
    with pytest.raises(PcaError, match="12-D features"):
        fit_pca(_features(50), 40)
    with pytest.raises(PcaError, match="fitted on 12-D"):
        project(fit_pca(_features(50), 3), _features(5, width=10))


def _labelled(ids: list[str]) -> pd.DataFrame:
    codes = np.arange(len(ids))
    return pd.DataFrame(
        {"image_id": ids, "leaf_code": codes % 5, "middle_code": codes % 3, "high_code": 0}
    )


def test_the_fit_reads_only_final_train_rows(tmp_path) -> None:
    """Rows outside final/train (here: ids of the sealed test, planted in the features file)
    carry huge outliers; had they reached the fit, its mean and components would differ."""
    train_ids = [f"d{i:03d}" for i in range(80)]
    sealed_ids = [f"s{i:03d}" for i in range(20)]
    train = _features(80)
    planted = (RNG.normal(size=(20, 12)) * 1e3).astype(np.float32)
    features = tmp_path / "dev.parquet"
    table = feature_table(_labelled(train_ids + sealed_ids), np.vstack([train, planted]))
    write_feature_parquet(table, features, JOB)
    splits = tmp_path / "splits.parquet"
    rows = pd.DataFrame(
        {
            "split": "final",
            "role": "train",
            "seed": pd.array([None] * 80, dtype="Int64"),
            "sealed": False,
            "image_id": train_ids,
        }
    )
    write_parquet(rows, splits, JOB, sort_by=["image_id"])
    outputs = {"model": tmp_path / "pca.safetensors", "record": tmp_path / "record.json"}
    record = fit_pca_on_development("cub", features, splits, 3, outputs, JOB)
    fitted = load_pca(outputs["model"])
    expected = fit_pca(train, 3)
    np.testing.assert_allclose(fitted.mean, expected.mean)
    np.testing.assert_allclose(fitted.components, expected.components)
    assert record["fit_examples"] == 80
    assert json.loads(outputs["record"].read_text())["fit_split"] == "final/train"


def _summary(arm: str, geometry: str, loss: str, seed: int, values: dict[str, float]) -> list:
    return [
        {
            "dataset": "cub",
            "arm": arm,
            "geometry": geometry,
            "loss": loss,
            "seed": seed,
            "qg_seed": qg,
            "aggregation": "query_micro",
            "level": level,
            "n_valid": 5,
            "map": value,
            "r@1": value,
        }
        for qg in (1, 2)
        for level, value in values.items()
    ]


def _summaries() -> pd.DataFrame:
    rows = _summary("frozen", "frozen", "frozen", -1, {"leaf": 0.6, "middle": 0.3, "high": 0.4})
    rows += _summary("pca", "pca", "pca", -1, {"leaf": 0.5, "middle": 0.2, "high": 0.3})
    for seed, shift in ((42, 0.0), (7, 0.02)):
        values = {"leaf": 0.7 + shift, "middle": 0.2, "high": 0.1 + shift}
        rows += _summary("hier", "H", "hier", seed, values)
        rows += _summary("E_S", "E", "S", seed, {"leaf": 0.4, "middle": 0.5, "high": 0.6})
    return pd.DataFrame(rows)


def test_baselines_table_rows_and_values() -> None:
    per_seed = baselines_per_seed(_summaries(), "query_micro")
    table = baselines_table(per_seed, 32)
    assert table["arm"].tolist() == ["Frozen features", "PCA-32", "HIER-style", "E_S"]
    assert table["kind"].tolist() == ["context", "context", "context", "factorial"]
    frozen = table.iloc[0]
    assert (frozen["leaf"], frozen["middle"], frozen["high"]) == ("0.6000", "0.3000", "0.4000")
    assert frozen["mean_hierarchy"] == "0.3500"
    hier = table.iloc[2]
    assert hier["leaf"].startswith("0.7100 ± 0.0141") and hier["seeds"] == 2


def test_differences_from_the_frozen_features_per_arm_and_level() -> None:
    per_seed = baselines_per_seed(_summaries(), "query_micro")
    table = baselines_differences(per_seed, 32).set_index(["arm", "level"])
    assert [arm for arm, _ in table.index[::4]] == ["PCA-32", "HIER-style", "E_S"]
    hier = table.loc[("HIER-style", "leaf")]  # 0.70 and 0.72 against 0.60
    assert hier["mean"] == pytest.approx(0.11) and hier["signs"] == "+ +"
    # two seeds, no per-query rows: the t interval on one df
    low, high = stats.t.interval(0.95, 1, loc=0.11, scale=stats.sem([0.10, 0.12]))
    assert (hier["ci_low"], hier["ci_high"]) == pytest.approx((low, high))
    assert hier["p_seeds"] == pytest.approx(0.5) and hier["p_min"] == pytest.approx(0.5)
    flat = table.loc[("E_S", "mean_hierarchy")]  # 0.55 against 0.35 on both seeds
    assert flat["mean"] == pytest.approx(0.20) and flat["positive_seeds"] == 2
    pca = table.loc[("PCA-32", "middle")]  # deterministic: no seed, no sign-flip test
    assert pca["mean"] == pytest.approx(-0.1) and pca["seeds"] == pca["negative_seeds"] == 0
    assert np.isnan(pca["p_seeds"]) and np.isnan(pca["p_min"])
    assert np.isnan(pca["ci_low"])  # no per-query rows: no test-image noise to put around it


def test_baselines_table_needs_every_baseline() -> None:
    summaries = _summaries()
    with pytest.raises(BaselinesError, match="pca"):
        baselines_per_seed(summaries[summaries["arm"] != "pca"], "query_micro")
