"""Features, training, the Final lock and sealed evaluation in a complete tiny run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bird_artifacts import bird_artifact_hashes
from conftest import TINY, TINY_LOGS, TINY_RUN, TINY_SEEDS, snakemake
from test_splits import assert_outer_splits_disjoint

from hierbench.effects.companion_angle import ranking_per_seed
from hierbench.effects.intervals import IntervalSettings, t_interval
from hierbench.effects.query_contrasts import QueryContrasts
from hierbench.features.store import read_feature_matrix
from hierbench.metrics.sealed_scoring import SealedCell
from hierbench.protocol import LEVEL_NAMES, REGISTERED_AGGREGATION
from hierbench.provenance.artifacts import provenance_path, read_parquet_metadata, read_provenance
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.lock import LockError
from hierbench.provenance.numerics import PORTABLE, kernel_settings
from hierbench.provenance.records import JobContext
from hierbench.splits.construction import split_identity
from hierbench.stages.evaluation import evaluate_cell_on_sealed_test

DATASETS = ("cub", "nabirds")
CELLS = [f"{g}{o}-{s}" for g in "EH" for o in "RS" for s in TINY_SEEDS]
# configs/tiny.yaml runs the companion cells on both datasets.
COMPANION = [f"{g}A-{s}" for g in "EL" for s in TINY_SEEDS]
# configs/tiny.yaml runs the controls and the baselines on CUB only.
CONTROLS = {
    "cub": [
        f"{control}/{variant}/{cell}-{s}"
        for control, variants, cell in (
            ("curvature", ("c1e-06_r0.4", "c1_r0.4", "c2_r0.4"), "HR"),
            ("curvature", ("euclidean",), "ER"),
            ("semantic", ("leaf", "leaf_parent", "full", "shuffle"), "ES"),
        )
        for variant in variants
        for s in TINY_SEEDS
    ]
    + [f"hier/hier-{s}" for s in TINY_SEEDS],
    "nabirds": [],
}
PCA = {"cub": [f"{TINY_RUN}/cub/baselines/pca/projection.safetensors"], "nabirds": []}


def test_sealed_features_hold_exactly_the_test_images(built_repo: Path):
    for dataset in DATASETS:
        base = built_repo / f"{TINY_RUN}/{dataset}"
        dev, dev_matrix = read_feature_matrix(base / "features/dev.parquet")
        test, test_matrix = read_feature_matrix(base / "features/sealed/test.parquet")
        sealed = pd.read_parquet(base / "splits/sealed/test.parquet")
        test_ids = set(sealed.loc[sealed["split"] == "final", "image_id"])
        assert set(test["image_id"]) == test_ids
        assert not set(dev["image_id"]) & test_ids
        assert set(dev["image_id"]) == set(pd.read_parquet(base / "splits/dev.parquet")["image_id"])
        assert dev_matrix.dtype == np.float32 and dev_matrix.shape[1] == 1280
        assert test_matrix.shape == (len(test_ids), 1280)
        metadata = read_parquet_metadata(base / "features/dev.parquet")
        assert metadata["feature_dim"] == 1280 and metadata["image_size"] == 64
        assert len(metadata["weights_sha256"]) == 64


def test_every_cell_trained_with_a_record_and_the_audit_passed(built_repo: Path):
    for dataset in DATASETS:
        base = built_repo / f"{TINY_RUN}/{dataset}"
        train = pd.read_parquet(base / "splits/dev.parquet")
        n_train = ((train["split"] == "final") & (train["role"] == "train")).sum()
        for cell in CELLS:
            record = json.loads((base / f"cells/{cell}/record.json").read_text())
            assert record["train_examples"] == n_train
            assert record["updates"] == 2 * (n_train // 16)
            assert record["reload_max_abs_diff"] == 0.0
            provenance = read_provenance(base / f"cells/{cell}/model.safetensors")
            assert provenance["rule"] == "train_factorial"
            assert record["bundle"] == list(CELLS)  # one bundle: the dataset's factorial
        audit = pd.read_parquet(base / "audit/fairness.parquet")
        assert audit["passed"].all() and len(audit) >= 30
        selection = pd.read_parquet(base / "tuning/selection.parquet")
        assert selection.groupby("geometry")["selected"].sum().to_dict() == {"E": 1, "H": 1}


def test_every_arm_is_scored_on_the_same_locked_draws(built_repo: Path):
    for dataset in DATASETS:
        base = built_repo / f"{TINY_RUN}/{dataset}"
        sealed = pd.read_parquet(base / "splits/sealed/test.parquet")
        draws = {
            seed: split_identity(
                sealed.loc[
                    (sealed["split"] == f"qg-{seed}") & (sealed["role"] == "query"), "image_id"
                ]
            )
            for seed in (42, 2024, 3407)
        }
        for arm in [*CELLS, "frozen", *(f"angle/{cell}" for cell in COMPANION)]:
            per_query = pd.read_parquet(base / f"eval/{arm}.parquet")
            for seed, identity in draws.items():
                ids = per_query.loc[per_query["qg_seed"] == seed, "image_id"].unique()
                assert split_identity(ids) == identity, (dataset, arm, seed)
            assert {
                "dataset",
                "geometry",
                "loss",
                "seed",
                "qg_seed",
                "query",
                "level",
                "valid",
                "ap",
                "r@1",
                "r@20",
                "ot@5",
                "ot@20",
                "ot_tree@5",
                "ot_tree@20",
                "ot_tree@tree",
            } <= set(per_query.columns)
            # OT@K: one row of level "all" per query and draw, every query scored
            scored = per_query[per_query["level"] == "all"]
            assert len(scored) == per_query["query"].groupby(per_query["qg_seed"]).nunique().sum()
            assert scored["valid"].all() and scored["ot@20"].between(0, 3).all()
            # ot_tree: scored where the query's tree holds a gallery item, NaN elsewhere
            tree = scored["ot_tree@tree"]
            assert tree.notna().any() and tree.dropna().between(0, 3).all()
        lock = json.loads((base / "lock/final_lock.json").read_text())
        assert set(lock["artifacts"]["checkpoints"]) == {
            f"{TINY_RUN}/{dataset}/cells/{c}/model.safetensors"
            for c in CELLS + CONTROLS[dataset] + COMPANION
        } | set(PCA[dataset])


def test_test_data_reads_are_logged_after_the_lock(built_repo: Path):
    lines = (built_repo / f"{TINY_LOGS}/cub/lock/test_access.log").read_text().splitlines()
    # Each companion cell is read twice: ranked by distance and by angle; the pictures job once
    # for every arm it draws.
    expected = len(CELLS) + 1 + len(CONTROLS["cub"]) + len(PCA["cub"]) + 2 * len(COMPANION) + 1
    assert len(lines) == expected
    assert sum(line.endswith("(pictures)") for line in lines) == 1
    angle_reads = sum(line.endswith("angle (evaluate_companion_angle)") for line in lines)
    assert angle_reads == len(COMPANION)
    lock = json.loads((built_repo / f"{TINY_RUN}/cub/lock/final_lock.json").read_text())
    assert min(line.split()[0] for line in lines) >= lock["training_finished_at"]


def _evaluate(repo: Path, lock: Path, tmp_path: Path) -> None:
    base = repo / f"{TINY_RUN}/cub"
    config = {
        "evaluation": {"recall_ks": [1, 5], "query_chunk": 64},
        "training": {"distance_clip_test": 1e6},
        "datasets": {"cub": {"splits": {"query_gallery": {"seeds": [42]}}}},
    }
    evaluate_cell_on_sealed_test(
        "cub",
        SealedCell(
            base / "cells/HS-42/record.json",
            base / "cells/HS-42/model.safetensors",
            lock,
            base / "features/sealed/test.parquet",
            base / "splits/sealed/test.parquet",
        ),
        config,
        {"per_query": tmp_path / "q.parquet", "summary": tmp_path / "s.parquet"},
        JobContext(rule="unit"),
        access_log=tmp_path / "access.log",
    )


def test_evaluation_without_a_lock_refuses_and_reads_nothing(built_repo: Path, tmp_path: Path):
    with pytest.raises(LockError, match="no Final lock"):
        _evaluate(built_repo, tmp_path / "missing_lock.json", tmp_path)
    assert not (tmp_path / "access.log").exists() and not (tmp_path / "q.parquet").exists()


def test_evaluation_refuses_a_checkpoint_changed_after_the_lock(
    built_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkey = built_repo / f"{TINY_RUN}/cub/cells/HS-42/model.safetensors"
    data = bytearray(monkey.read_bytes())
    data[-1] ^= 0xFF
    monkey.write_bytes(bytes(data))
    # The record made to match, so the job's verified read passes and the lock itself refuses.
    record_path = provenance_path(monkey)
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps(record | {"sha256": sha256_file(monkey)}))
    monkeypatch.chdir(built_repo)
    with pytest.raises(LockError, match=r"HS-42/model\.safetensors changed after the Final lock"):
        _evaluate(Path("."), Path(f"{TINY_RUN}/cub/lock/final_lock.json"), tmp_path)
    result = snakemake(
        built_repo,
        f"{TINY_RUN}/cub/eval/HS-42.parquet",
        "-f",
        "--allowed-rules",
        "evaluate_cell",
        *TINY,
        check=False,
    )
    assert result.returncode != 0
    assert "changed after the Final lock" in result.stdout


def test_tables_and_figures_of_the_study(built_repo: Path):
    for dataset in DATASETS:
        base = built_repo / f"{TINY_RUN}/{dataset}"
        summary = (base / "tables/summary.md").read_text()
        for arm in ("frozen", "E_R", "H_R", "E_S", "H_S", "E_A", "L_A"):
            assert f"| {dataset} | {arm} |" in summary
        assert "## Our OT scores per arm" in summary
        assert "## Simple effects on our OT scores" in summary
        assert (
            (base / "tables/table_ot.md")
            .read_text()
            .startswith(
                "| dataset | arm | ot@5 | ot@10 | ot@20 | ot_tree@5 | ot_tree@10 | ot_tree@20 "
                "| ot_tree@tree |"
            )
        )
        effects = pd.read_parquet(base / "tables/effects_summary.parquet")
        assert effects["effect"].drop_duplicates().tolist() == [
            *("geom_R", "geom_S", "loss_E", "loss_H", "int"),  # the factorial's simple effects
            *("loss_AS_E", "loss_AS_hyp", "geom_A"),  # the companion cells' contrasts (tiny: on)
        ]
        # Every planned endpoint says what its p is about, and a null one what it rules out,
        # tested at the tiny config's equivalence margin (effects.equivalence_margin: 0.02).
        planned = summary.split("## Planned endpoints")[1].split("## ")[0]
        header = "| p (seeds, these test images) | seeds agreeing in sign | rules out (interval "
        assert header + "holds 0) | within the margin |" in planned
        endpoints = effects[(effects["level"] == "mean_hierarchy") & (effects["metric"] == "map")]
        endpoints = endpoints[
            endpoints["effect"].isin(["geom_R", "geom_S", "loss_E", "loss_H", "int"])
        ]
        nulls = int(((endpoints["ci_low"] <= 0) & (endpoints["ci_high"] >= 0)).sum())
        if nulls:
            assert f"{nulls} planned endpoint(s) have an interval that holds zero" in planned
            assert "At the config's equivalence margin ±0.02" in planned
        assert "the sign-flip test over seeds, whether the seeds' effect on these test" in planned
        # Tiny NABirds has no test supergroup with two parents: no valid high-level query.
        complete = effects[effects["level"].isin(["leaf", "middle"]) | (dataset == "cub")]
        assert (complete["n"] == len(TINY_SEEDS)).all()
        # The main tables use the dataset's registered aggregation, the other is the sensitivity.
        registered = {"cub": "query-micro", "nabirds": "group-macro"}[dataset]
        other = {"cub": "group-macro", "nabirds": "query-micro"}[dataset]
        assert summary.startswith(f"# {dataset}: results ({registered}, mean ± SD")
        assert f"The {other} sensitivity tables are in `sensitivity/`." in summary
        assert (base / "tables/sensitivity/arms_summary.md").is_file()
        for name in ("effects", "map_by_level", "hyperbolic_norms", "ot_by_k"):
            assert (base / f"figures/{name}.png").stat().st_size > 1000
            assert (base / f"figures/{name}.pdf").read_bytes()[:5] == b"%PDF-"


def _effects_command(repo: Path, *args: str) -> None:
    """``hierbench effects`` in a process of its own, in the pipeline's numeric mode (the
    settings a job inherits: the command line computes in the mode of the process that runs it)."""
    env = {**os.environ, **kernel_settings(PORTABLE), "PYTHONPATH": str(repo / "src")}
    command = [sys.executable, "-m", "hierbench.cli", "effects", *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]


def test_cli_reaggregates_the_pipeline_per_seed_table(built_repo: Path, tmp_path: Path):
    per_seed = built_repo / f"{TINY_RUN}/cub/tables/per_seed.parquet"
    csv = tmp_path / "per_seed.csv"
    pd.read_parquet(per_seed).to_csv(csv, index=False)
    evaluations = (built_repo / f"{TINY_RUN}/cub/eval").glob("*.parquet")
    scores = sorted(str(p) for p in evaluations if not p.name.endswith("_summary.parquet"))
    given = [str(csv), "--per-query", *scores]
    _effects_command(
        built_repo, *given, "--aggregation", "query_micro", "--out", str(tmp_path / "out")
    )
    mine = pd.read_parquet(tmp_path / "out/effects_summary.parquet")
    pipeline = pd.read_parquet(built_repo / f"{TINY_RUN}/cub/tables/effects_summary.parquet")
    pd.testing.assert_frame_equal(mine, pipeline)  # the two-stage intervals included
    # without the per-query rows the intervals are the seeds' alone; the rest is the same
    _effects_command(built_repo, str(csv), "--out", str(tmp_path / "seeds"))
    seeds_only = pd.read_parquet(tmp_path / "seeds/effects_summary.parquet")
    same = ["dataset", "level", "metric", "effect", "mean", "sd", "n", "positive_seeds"]
    pd.testing.assert_frame_equal(seeds_only[same], pipeline[same])


def test_html_report_is_built_with_tables_and_figures(tiny_report: Path):
    html = tiny_report.read_text(encoding="utf-8", errors="replace")
    assert len(html) > 100_000
    figures = ("effects.png", "map_by_level.png", "hyperbolic_norms.png", "ot_by_k.png")
    for name in ("summary.md", *figures):
        assert name in html
    # the caption: the planned endpoints, effect by effect, and no verdict beyond the design
    assert "Planned endpoints (mean hierarchy mAP)" in html and "seeds agree in sign" in html
    caption = (tiny_report.parent / f"{TINY_RUN}/cub/figures/effects_intervals.rst").read_text()
    assert "excludes zero" not in caption and "significant" not in caption.lower()


def test_the_baselines_and_outer_splits_ran_on_their_artifacts(built_repo: Path):
    base = built_repo / f"{TINY_RUN}/cub"
    labels = pd.read_parquet(
        base / "features/dev.parquet", columns=["image_id", "leaf_code", "middle_code", "high_code"]
    )
    assert_outer_splits_disjoint(pd.read_parquet(base / "splits/dev.parquet"), labels, 3)
    pca = json.loads((base / "baselines/pca/record.json").read_text())
    dev = pd.read_parquet(base / "splits/dev.parquet")
    final_train = ((dev["split"] == "final") & (dev["role"] == "train")).sum()
    assert pca["fit_examples"] == final_train and pca["dimensions"] == 8
    table = pd.read_parquet(base / "tables/baselines.parquet")
    assert table["arm"].tolist()[:3] == ["Frozen features", "PCA-8", "HIER-style"]
    audit = pd.read_parquet(base / "audit/fairness.parquet")
    assert audit["scope"].astype(str).str.contains("hier-42").any()
    for split in ("outer-1", "outer-2", "outer-3"):
        # each arm's epochs chosen on the split's validation side, then trained alone for them
        durations = json.loads((base / f"outer/{split}/durations.json").read_text())
        assert durations["validation"] == f"{split}-tuning"
        assert durations["aggregation"] == "group_macro"
        assert set(durations["arms"]) == {"E_R", "H_R", "H_S"}
        for arm, chosen in durations["arms"].items():
            scores = chosen["scores"]
            assert len(scores) == 2  # the tiny config's controls.outer.max_epochs
            best = max(range(len(scores)), key=lambda e: (scores[e], -e)) + 1
            assert chosen["epochs"] == best
            cell = arm.replace("_", "")
            record = json.loads((base / f"cells/outer/{split}/{cell}-42/record.json").read_text())
            n_train = ((dev["split"] == split) & (dev["role"] == "train")).sum()
            assert record["train_split"] == split and record["train_examples"] == n_train
            assert record["cell"] == f"{cell}-42@{split}" and "bundle" not in record
            assert record["spec"]["epochs"] == chosen["epochs"]
            assert record["epochs_chosen_on"] == f"{split}-tuning"
        scores = pd.read_parquet(base / f"outer/{split}/scores.parquet")
        assert set(scores["arm"]) == {"frozen", "E_R", "H_R", "H_S"}
    outer = pd.read_parquet(base / "outer/outer.parquet")
    assert outer["arm"].tolist() == ["frozen", "E_R", "H_R", "H_S"]
    assert outer[["outer-1", "outer-2", "outer-3"]].notna().all().all()
    gains = pd.read_parquet(base / "outer/outer_gains.parquet")
    assert (gains["splits"] == 3).all()
    assert_outer_gains_are_a_plain_loop(base, gains)


def assert_outer_gains_are_a_plain_loop(base: Path, gains: pd.DataFrame) -> None:
    """The outer gains, recomputed from each split's scores by plain loops: group-macro mAP per
    level averaged over the draws (a seed per split), mean hierarchy their middle-high mean,
    SupCon − matched H and matched H − matched E per split."""
    value = {}
    for split in ("outer-1", "outer-2", "outer-3"):
        scores = pd.read_parquet(base / f"outer/{split}/scores.parquet")
        for arm in ("E_R", "H_R", "H_S"):
            for level in ("middle", "high"):
                rows = scores[
                    (scores["arm"] == arm)
                    & (scores["aggregation"] == "group_macro")
                    & (scores["level"] == level)
                ]
                value[split, arm, level] = sum(rows["map"]) / len(rows)
            value[split, arm, "mean_hierarchy"] = (
                value[split, arm, "middle"] + value[split, arm, "high"]
            ) / 2
    for (first, second), name in (
        (("H_S", "H_R"), "SupCon − matched H"),
        (("H_R", "E_R"), "matched H − matched E"),
    ):
        for level in ("middle", "high", "mean_hierarchy"):
            row = gains[(gains["gain"] == name) & (gains["level"] == level)].iloc[0]
            for split in ("outer-1", "outer-2", "outer-3"):
                expected = value[split, first, level] - value[split, second, level]
                assert row[split] == pytest.approx(expected, abs=1e-12), (name, level, split)


def test_the_controls_report_the_papers_contrasts_within_their_own_cells(built_repo: Path):
    base = built_repo / f"{TINY_RUN}/cub"
    # The curvature control trains its base point and matched E_R itself, for its own budget
    # (configs/tiny.yaml: 1 epoch against the factorial's 2), audited against that budget.
    for variant, cell in (("c2_r0.4", "HR"), ("euclidean", "ER")):
        record = json.loads((base / f"cells/curvature/{variant}/{cell}-42/record.json").read_text())
        assert record["control"] == "curvature" and record["spec"]["epochs"] == 1
        assert (
            record["batch_order_hashes"]
            == json.loads((base / f"cells/{cell}-42/record.json").read_text())[
                "batch_order_hashes"
            ][:1]
        )
    audit = pd.read_parquet(base / "audit/fairness.parquet")
    counts = audit[audit["check"] == "update_count"].set_index("scope")
    assert counts.loc["curvature cells, own budget", "passed"]
    contrasts = pd.read_parquet(base / "tables/controls/curvature_contrasts.parquet")
    assert contrasts["contrast"].tolist() == [
        "Base − Near-flat",
        "Near-flat − Matched Euclidean",
        "c1_r0.4 − Base",
    ]
    seeds = len(TINY_SEEDS)  # a sign per seed, space-separated
    assert (contrasts["seeds"] == seeds).all()
    assert contrasts["signs"].str.count(" ").eq(seeds - 1).all()
    semantic = pd.read_parquet(base / "tables/controls/semantic_contrasts.parquet")
    # every contrast of the paper's Table 2 at every level
    assert list(zip(semantic["contrast"], semantic["level"], strict=True)) == [
        (contrast, level)
        for contrast in ("Full − Shuffle", "Leaf+Parent − Leaf-only", "Full − Leaf+Parent")
        for level in ("leaf", "middle", "high", "mean_hierarchy")
    ]


def _query_contrasts(paths: list[Path], label: str = "variant") -> QueryContrasts:
    """The run's per-query rows of ``paths`` as paired contrasts at the default settings, under
    CUB's registered aggregation."""
    rows = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    return QueryContrasts(rows, REGISTERED_AGGREGATION["cub"], IntervalSettings(), label)


def test_contrasts_outside_the_factorial_carry_the_test_images_share(built_repo: Path):
    """Recomputed from the run's per-query files, the intervals of a semantic contrast and of a
    baseline's difference equal the tables' (seeds alone would leave the test images out)."""
    base = built_repo / f"{TINY_RUN}/cub"
    settings = IntervalSettings()
    semantic = pd.read_parquet(base / "tables/controls/semantic_contrasts.parquet").iloc[0]
    query = _query_contrasts(sorted((base / "eval/semantic").glob("*/ES-*[0-9].parquet")))
    noise = query.contrast("full", "shuffle", semantic["level"])
    per_seed = pd.read_parquet(base / "tables/controls/semantic_per_seed.parquet")
    wide = per_seed[(per_seed["level"] == semantic["level"]) & (per_seed["metric"] == "map")]
    wide = wide.pivot(index="seed", columns="variant", values="value")
    expected = t_interval(wide["full"] - wide["shuffle"], noise.shared, settings.level)
    assert (semantic["ci_low"], semantic["ci_high"]) == pytest.approx(
        (expected.low, expected.high), abs=1e-12
    )
    differences = pd.read_parquet(base / "tables/baselines_differences.parquet")
    hs = differences[(differences["arm"] == "H_S") & (differences["level"] == "mean_hierarchy")]
    arms = [base / "eval/frozen.parquet", *sorted(base.glob("eval/HS-*[0-9].parquet"))]
    noise = _query_contrasts(arms, "arm").contrast("H_S", "frozen", "mean_hierarchy")
    assert hs["mean"].item() == pytest.approx(noise.observed, abs=1e-9)
    assert hs["se"].item() ** 2 >= noise.shared - 1e-15  # the shared part is in its se
    pca = differences[differences["arm"].str.startswith("PCA")]
    assert (pca["seeds"] == 0).all() and pca["p_seeds"].isna().all()  # deterministic
    gains = pd.read_parquet(base / "outer/outer_gains.parquet")
    assert gains[["ci_low", "ci_high", "p_splits"]].notna().all().all()
    assert (gains["p_min"] == 0.25).all()  # three splits


def test_the_companion_cells_trained_audited_and_scored(built_repo: Path):
    for dataset in DATASETS:
        base = built_repo / f"{TINY_RUN}/{dataset}"
        dev = pd.read_parquet(base / "splits/dev.parquet")
        n_train = ((dev["split"] == "final") & (dev["role"] == "train")).sum()
        factorial = json.loads((base / "cells/ER-42/record.json").read_text())
        for cell in COMPANION:
            record = json.loads((base / f"cells/{cell}/record.json").read_text())
            assert record["train_examples"] == n_train and record["updates"] == factorial["updates"]
            assert (
                record["initial_weight_hash"]
                == json.loads(
                    (base / f"cells/ER-{record['spec']['seed']}/record.json").read_text()
                )["initial_weight_hash"]
            )
            assert "objective.temperature.log_inverse" in record["initial_extra_hashes"]
            norms = record["validation_norms"]  # the tuning query + gallery images, and crops
            assert norms["images"]["mean"] > 0 and norms["crops"]["mean"] > 0
            if cell.startswith("EA-"):  # unnormalised: its embeddings do not share one norm
                assert record["spec"]["normalise"] is False and norms["images"]["std"] > 0
        assert "normalise" not in factorial["spec"]  # the factorial's records keep their bytes
        lorentz = json.loads((base / "cells/LA-42/record.json").read_text())
        assert "head.log_curvature" in lorentz["initial_extra_hashes"]
        audit = pd.read_parquet(base / "audit/fairness.parquet")
        extras = audit[audit["check"] == "extra_initial_weights"]
        assert extras["passed"].all() and extras["detail"].str.contains("LA-42").any()
        summary = pd.read_parquet(base / "eval/LA-42_summary.parquet")
        assert set(summary["arm"]) == {"L_A"} and summary["map"].notna().any()
        per_seed = pd.read_parquet(base / "tables/per_seed.parquet")
        chosen = per_seed[(per_seed["level"] == "mean_hierarchy") & (per_seed["metric"] == "map")]
        value = chosen.assign(arm=chosen["geometry"] + "_" + chosen["loss"]).pivot(
            index="seed", columns="arm", values="value"
        )
        effects = pd.read_parquet(base / "tables/effects_by_seed.parquet")
        effects = effects[(effects["level"] == "mean_hierarchy") & (effects["metric"] == "map")]
        contrast = effects.pivot(index="seed", columns="effect", values="value")
        for effect, (first, second) in {
            "loss_AS_E": ("E_A", "E_S"),
            "loss_AS_hyp": ("L_A", "H_S"),
            "geom_A": ("L_A", "E_A"),
        }.items():
            expected = (value[first] - value[second]).loc[contrast.index].to_numpy()
            # Tiny NABirds has no valid high-level query: its mean hierarchy is NaN throughout.
            assert np.isfinite(expected).all() == (dataset == "cub")
            assert contrast[effect].to_numpy() == pytest.approx(expected, nan_ok=True)
        effects_table = (base / "tables/table_effects_map.md").read_text(encoding="utf-8")
        arms_table = (base / "tables/table_arms_map.md").read_text(encoding="utf-8")
        assert "| geom_A |" in effects_table and "| L_A |" in arms_table
        crops, _ = read_feature_matrix(base / "features/dev_crops.parquet")
        assert set(crops["image_id"]) == set(dev["image_id"])


def test_the_companion_cells_ranked_by_angle_and_their_table(built_repo: Path):
    for dataset, aggregation in (("cub", "query_micro"), ("nabirds", "group_macro")):
        base = built_repo / f"{TINY_RUN}/{dataset}"
        distance, angle = [], []
        for cell in COMPANION:
            by_distance = pd.read_parquet(base / f"eval/{cell}_summary.parquet")
            by_angle = pd.read_parquet(base / f"eval/angle/{cell}_summary.parquet")
            assert by_angle.columns.tolist() == [*by_distance.columns, "ranking"]
            assert set(by_angle["ranking"]) == {"angle"}
            assert read_provenance(base / f"eval/angle/{cell}.parquet")["rule"] == (
                "evaluate_companion_angle"
            )
            distance.append(by_distance.assign(ranking="distance"))
            angle.append(by_angle)
        summaries = pd.concat([*distance, *angle], ignore_index=True)
        per_seed = pd.read_parquet(base / "tables/companion_angle_per_seed.parquet")
        expected = ranking_per_seed(summaries, aggregation)
        keys = ["ranking", "dataset", "geometry", "loss", "seed", "level", "metric"]
        expected = expected[[*keys, "value"]].sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(per_seed, expected)
        table = pd.read_parquet(base / "tables/companion_angle.parquet")
        assert table[["arm", "ranking"]].to_numpy().tolist() == [
            [arm, ranking]
            for arm in ("E_A", "L_A")
            for ranking in ("distance", "angle", "angle − distance")
        ]
        # Tiny NABirds has no valid high-level query: no seed has a mean hierarchy to pair.
        seeds = len(TINY_SEEDS)
        paired = seeds if dataset == "cub" else 0
        assert table["seeds"].tolist() == [seeds, seeds, paired] * 2
        leaf, middle, high = LEVEL_NAMES[dataset]  # the dataset's own level names, for people
        header = f"| arm | ranking | {leaf} | {middle} | {high} | mean_hierarchy | positive seeds |"
        assert (base / "tables/companion_angle.md").read_text(encoding="utf-8").startswith(header)
        # summary.md shows the same table after the mAP per arm: the method ranks by angle
        summary = (base / "tables/summary.md").read_text(encoding="utf-8")
        section = summary.index("## The companion cells ranked both ways")
        assert summary.index("## mAP per arm") < section
        assert header in summary[section:]


def test_the_bird_datasets_data_artifacts_are_those_made_before_datasets_were_configurable(
    built_repo: Path,
):
    """Taxonomy, inputs, demo folder, image table and splits of CUB and NABirds: the same
    bytes as the tiny run made before datasets became config entries with a kind."""
    golden = json.loads(
        (Path(__file__).parents[1] / "fixtures/tiny_bird_artifacts.json").read_text()
    )
    hashes = bird_artifact_hashes(built_repo)
    assert {path: hashes.get(path) for path in golden} == golden
    # Added since: each dataset's content identity (layout tables, images), nothing else.
    fingerprints = {
        f"{d}/data/{n}_files.parquet" for d in ("cub", "nabirds") for n in ("layout", "image")
    }
    assert set(hashes) - set(golden) == fingerprints
