"""Proxy-Anchor loss on cosine similarities (Kim et al., CVPR 2020), as HIER's metric term.

With x̂ = x/‖x‖ (B, D), p̂ = p/‖p‖ (K, D), s_ik = ⟨x̂_i, p̂_k⟩ (B, K), P⁺ = the proxies with at
least one positive in the batch and X⁺_k / X⁻_k = the items with / without label k:

    L = 1/|P⁺| Σ_{k∈P⁺} log(1 + Σ_{i∈X⁺_k} exp(−α(s_ik − δ)))
      + 1/K    Σ_k      log(1 + Σ_{i∈X⁻_k} exp( α(s_ik + δ)))

This is the value of ``PALoss_Angle`` in the HIER authors' code (tjddus9597/HIER-CVPR23). Each
log(1 + Σ exp(a)) is computed as a logsumexp over the masked exponents and a zero, which is the
same value without overflow for large α. Normalisation is ``F.normalize`` (‖x‖ clamped ≥ 1e-12),
as the authors, so a row at the origin has cosine 0 and a finite, if large, gradient.
"""

from __future__ import annotations

import math
from numbers import Real

import torch
import torch.nn.functional as F

from hierbench.geometry.validation import check_points


def _check_proxy_anchor_inputs(
    embeddings: torch.Tensor, proxies: torch.Tensor, labels: torch.Tensor
) -> None:
    """Raise unless embeddings (B, D), proxies (K, D) and labels (B,) in [0, K) fit together."""
    check_points("embeddings", embeddings)
    check_points("proxies", proxies)
    if embeddings.shape[1] != proxies.shape[1]:
        raise ValueError(
            f"embedding dim {embeddings.shape[1]} differs from proxy dim {proxies.shape[1]}"
        )
    if len(embeddings) == 0 or len(proxies) == 0:
        raise ValueError(
            f"proxy anchor needs at least one embedding and one proxy, got "
            f"{len(embeddings)} and {len(proxies)}"
        )
    if not isinstance(labels, torch.Tensor) or tuple(labels.shape) != (len(embeddings),):
        shape = tuple(labels.shape) if hasattr(labels, "shape") else type(labels).__name__
        raise ValueError(f"labels must be a ({len(embeddings)},) tensor, got {shape}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise ValueError(f"labels must be an integer tensor of proxy indices, got {labels.dtype}")
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= len(proxies):
        bad = low if low < 0 else high
        raise ValueError(f"label {bad} is not a proxy index in [0, {len(proxies)})")


def _check_scalar(name: str, value: float, *, positive: bool) -> float:
    """``value`` as a float, or a ValueError unless it is a finite real (and > 0 if asked)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return float(value)


def _log1p_sum_exp(exponents: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log(1 + Σ_i exp(a_ik)) over the rows i where mask is True, per column k (K,)."""
    masked = exponents.masked_fill(~mask, float("-inf"))
    one = exponents.new_zeros((1, exponents.shape[1]))  # the "1 +" as exp(0)
    return torch.logsumexp(torch.cat([one, masked]), dim=0)


def proxy_anchor_loss(
    embeddings: torch.Tensor,
    proxies: torch.Tensor,
    labels: torch.Tensor,
    alpha: float = 32.0,
    margin: float = 0.1,
) -> torch.Tensor:
    """Proxy-Anchor loss of a batch (scalar): pull items to their class proxy, push the rest.

    embeddings (B, D), proxies (K, D), labels (B,) int64 proxy indices in [0, K).
    """
    _check_proxy_anchor_inputs(embeddings, proxies, labels)
    alpha = _check_scalar("alpha", alpha, positive=True)
    margin = _check_scalar("margin", margin, positive=False)
    cosine = F.normalize(embeddings, dim=1) @ F.normalize(proxies, dim=1).T  # (B, K)
    classes = torch.arange(len(proxies), device=labels.device)
    positive = labels[:, None] == classes[None, :]  # (B, K)
    with_positive = positive.any(dim=0).sum()
    pos_term = _log1p_sum_exp(-alpha * (cosine - margin), positive).sum() / with_positive
    neg_term = _log1p_sum_exp(alpha * (cosine + margin), ~positive).sum() / len(proxies)
    return pos_term + neg_term
