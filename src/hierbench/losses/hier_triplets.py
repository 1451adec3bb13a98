"""HIER's triplet term: reciprocal-neighbour triplets and the Gumbel straight-through LCA hinge.

Triplets (i, j, k) come from a similarity matrix (N, N): j is a positive of anchor i when each
is in the other's top-k, k any other node. For distances d (N, P) from the nodes to P proxies,
Gumbel noise g, g' (T, P) and temperature τ:

    LCA_ij  = straight-through one-hot of softmax(−max(d_i, d_j)/τ + g)             (T, P)
    LCA_ijk = the same for max(d_k, max(d_i, d_j)) with noise g'
    hc      = [δ + ⟨d_i, LCA_ij − LCA_ijk⟩]₊ + [δ + ⟨d_j, LCA_ij − LCA_ijk⟩]₊
              + [δ + ⟨d_k, LCA_ijk − LCA_ij⟩]₊,  times [argmax_ij ≠ argmax_ijk]
    L       = mean of hc over the T triplets

as ``HIERLoss.compute_gHHC`` of the authors (tjddus9597/HIER-CVPR23). With T·P in the millions
(P = 512 proxies, 50 triplets per anchor), ``lca_triplet_loss`` computes this in one autograd
Function: the forward value of ⟨d_x, LCA_ij − LCA_ijk⟩ is d_x[argmax_ij] − d_x[argmax_ijk]
(argmax of the noisy logits, i.e. of the softmax barring rounding ties),
and the backward (the straight-through softmax gradient, routed through both maxima with
torch's half-and-half rule at ties) is formed only for the triplets whose hinge is active; a
masked or inactive triplet has zero value and zero gradient in the autograd formula too.
Both passes work through the triplets in chunks of rows, so their (rows, P) buffers stay in
cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.autograd.function import once_differentiable

from hierbench.geometry.validation import check_positive

_CHUNK_ROWS = 256  # triplets per chunk of the (T, P) work: the value is the same for any size


def gumbel_noise(shape: Sequence[int], generator: torch.Generator) -> torch.Tensor:
    """Standard Gumbel samples g = −log(−log U), U ~ U[0, 1) from ``generator`` (float32, CPU).

    U is clamped to [tiny, 1 − 2⁻²⁴]: ``torch.rand`` can return exactly 0, which would give
    g = −inf; the upper bound is rand's largest value, so it only guards against 1. An explicit
    generator keeps the global RNG (the trainer's dropout) untouched.
    """
    uniform = torch.rand(tuple(shape), generator=generator)
    info = torch.finfo(uniform.dtype)
    uniform.clamp_(info.tiny, 1.0 - info.eps / 2)
    return uniform.log_().neg_().log_().neg_()


def straight_through_lca(
    max_distances: torch.Tensor, noise: torch.Tensor, tau: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hard one-hot LCA choice per row with the softmax's gradient (Gumbel straight-through).

    As ``F.gumbel_softmax(−max/τ, hard=True)`` with the given noise: soft = softmax(−max/τ + g),
    returns (hard − soft.detach() + soft (T, P), argmax index (T,)).
    """
    check_positive("gumbel tau", tau)
    if max_distances.ndim != 2 or noise.shape != max_distances.shape:
        raise ValueError(
            f"max_distances and noise must be (T, P) tensors of one shape, got "
            f"{tuple(max_distances.shape)} and {tuple(noise.shape)}"
        )
    noise = noise.to(dtype=max_distances.dtype, device=max_distances.device)
    soft = torch.softmax(max_distances / -tau + noise, dim=1)
    index = soft.argmax(dim=1)
    hard = torch.zeros_like(soft).scatter_(1, index[:, None], 1.0)
    return hard - soft.detach() + soft, index


def check_count(name: str, value: int) -> int:
    """``value`` if it is an integer >= 1, else a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _draw_members(
    members: torch.Tensor, uniform: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, the member columns at ranks floor(U·count) of the ascending list, and counts.

    members (N, N) bool, uniform (N, m) in [0, 1); returns ((N, m) column indices, (N,) counts).
    The product is taken in float64 and capped at count − 1, so rounding never passes the end;
    rows without members give column N (callers drop those rows).
    """
    counts = members.sum(dim=1)
    scaled = uniform.to(torch.float64) * counts[:, None].to(torch.float64)
    ranks = scaled.floor_().long().minimum((counts[:, None] - 1).clamp_min(0))
    cumulative = members.long().cumsum(dim=1)  # (N, N), the rank + 1 of each member
    return torch.searchsorted(cumulative, ranks + 1), counts


def reciprocal_triplets(
    similarity: torch.Tensor, topk: int, per_anchor: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(anchor, positive, negative) int64 triplets from reciprocal top-k neighbours.

    Top-k is over the full row (self included, k = min(topk, N)); positives of i are the j ≠ i
    with i and j in each other's top-k, negatives every other j ≠ i (the authors' code can draw
    the anchor itself as a negative; excluding it is deliberate). Anchors with < 2 positives or
    no negative are skipped. Each anchor draws ``per_anchor`` positives and negatives uniformly
    with replacement: U_pos then U_neg, (N, per_anchor) each, always drawn for all N rows.
    Output is ordered by anchor, then draw.
    """
    if similarity.ndim != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(
            f"similarity must be a square (N, N) matrix, got {tuple(similarity.shape)}"
        )
    check_count("topk", topk)
    check_count("per_anchor", per_anchor)
    size, device = len(similarity), similarity.device
    uniform_pos = torch.rand((size, per_anchor), generator=generator).to(device)
    uniform_neg = torch.rand((size, per_anchor), generator=generator).to(device)
    if size == 0:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return empty, empty, empty
    nearest = torch.topk(similarity.detach(), min(topk, size), dim=1).indices
    neighbour = torch.zeros((size, size), dtype=torch.bool, device=device)
    neighbour.scatter_(1, nearest, True)
    not_self = ~torch.eye(size, dtype=torch.bool, device=device)
    reciprocal = neighbour & neighbour.T
    positive, pos_count = _draw_members(reciprocal & not_self, uniform_pos)
    negative, neg_count = _draw_members(~reciprocal & not_self, uniform_neg)
    keep = (pos_count >= 2) & (neg_count >= 1)
    anchor = torch.arange(size, device=device)[:, None].expand(size, per_anchor)
    return anchor[keep].reshape(-1), positive[keep].reshape(-1), negative[keep].reshape(-1)


def _tie_share(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """Share of max(first, second)'s gradient that goes to ``first``: 1, ½ at ties, or 0."""
    return (first > second).to(first.dtype).masked_fill_(first == second, 0.5)


def _softmax_backward(upstream: torch.Tensor, soft: torch.Tensor, scale: float) -> torch.Tensor:
    """scale·s ⊙ (u − ⟨u, s⟩) per row: the softmax's vector-Jacobian product, scaled."""
    dot = (upstream * soft).sum(dim=1, keepdim=True)
    return (upstream - dot).mul_(soft).mul_(scale)


def _lca_logits(
    distances: torch.Tensor,
    triplets: Sequence[torch.Tensor],
    noise: Sequence[torch.Tensor],
    tau: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Noisy logits −max(d_i, d_j)/τ + g and −max(d_k, d_i, d_j)/τ + g' (T, P) each.

    Built in two (T, P) buffers, in place: for P = 512 proxies these are tens of megabytes.
    """
    anchor, positive, negative = triplets
    max_ij = torch.index_select(distances, 0, anchor)
    max_ijk = torch.index_select(distances, 0, positive)
    torch.maximum(max_ij, max_ijk, out=max_ij)
    torch.index_select(distances, 0, negative, out=max_ijk)
    torch.maximum(max_ijk, max_ij, out=max_ijk)
    return max_ij.mul_(-1.0 / tau).add_(noise[0]), max_ijk.mul_(-1.0 / tau).add_(noise[1])


def _row_chunks(count: int) -> list[slice]:
    """Consecutive slices of ``_CHUNK_ROWS`` triplets: each chunk's (rows, P) buffers stay in
    cache, where whole (T, P) buffers (tens of megabytes) would stream through memory."""
    return [slice(start, start + _CHUNK_ROWS) for start in range(0, count, _CHUNK_ROWS)]


def _chunk_terms(
    d: torch.Tensor,
    triplets: Sequence[torch.Tensor],
    noise: Sequence[torch.Tensor],
    tau: float,
    margin: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For one chunk of triplets: the three hinge arguments (c, 3) and both LCA indices (c,)."""
    logits_ij, logits_ijk = _lca_logits(d, triplets, noise, tau)
    index_ij, index_ijk = logits_ij.argmax(dim=1), logits_ijk.argmax(dim=1)
    anchor, positive, negative = triplets
    terms = torch.stack(
        [
            d[anchor, index_ij] - d[anchor, index_ijk] + margin,
            d[positive, index_ij] - d[positive, index_ijk] + margin,
            d[negative, index_ijk] - d[negative, index_ij] + margin,
        ],
        dim=1,
    )
    return terms, index_ij, index_ijk


def _add_softmax_gradient(
    grad_d: torch.Tensor,
    d: torch.Tensor,
    triplets: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    noise: tuple[torch.Tensor, torch.Tensor],
    weight: torch.Tensor,
    tau: float,
) -> None:
    """Add one chunk of active triplets' gradient through both Gumbel softmaxes to ``grad_d``.

    weight (c, 3) is ∂L/∂⟨d_x, ±(LCA_ij − LCA_ijk)⟩ for x = i, j, k (zero where inactive).
    """
    anchor, positive, negative = triplets
    d_i, d_j, d_k = d[anchor], d[positive], d[negative]  # (c, P)
    max_ij = torch.maximum(d_i, d_j)
    logits_ij = max_ij.mul(-1.0 / tau).add_(noise[0])
    logits_ijk = torch.maximum(d_k, max_ij).mul_(-1.0 / tau).add_(noise[1])
    # ∂L/∂LCA_ij = w_i·d_i + w_j·d_j − w_k·d_k = −∂L/∂LCA_ijk
    upstream = (d_i * weight[:, :1]).addcmul_(d_j, weight[:, 1:2]).addcmul_(d_k, -weight[:, 2:])
    # softmax backward: ∂L/∂logits = s ⊙ (u − ⟨u, s⟩); ∂logits/∂max = −1/τ
    grad_max_ij = _softmax_backward(upstream, torch.softmax(logits_ij, dim=1), -1.0 / tau)
    grad_max_ijk = _softmax_backward(upstream, torch.softmax(logits_ijk, dim=1), 1.0 / tau)
    to_k = grad_max_ijk * _tie_share(d_k, max_ij)  # max_ijk's gradient: d_k's share ...
    grad_max_ij += grad_max_ijk.sub_(to_k)  # ... and the rest flows on to max_ij
    grad_d.index_add_(0, negative, to_k)
    to_i = grad_max_ij * _tie_share(d_i, d_j)
    grad_d.index_add_(0, anchor, to_i)
    grad_d.index_add_(0, positive, grad_max_ij.sub_(to_i))


class _LcaTripletHinge(torch.autograd.Function):
    """Sum of the masked hinges over triplets (see the module docstring), with its gradient."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        distances: torch.Tensor,
        triplets: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        noise: tuple[torch.Tensor, torch.Tensor],
        tau: float,
        margin: float,
    ) -> torch.Tensor:
        """Hinge sum; keeps the active triplets' indices and per-term slopes for the backward."""
        d = distances.detach()
        chunks = [
            _chunk_terms(d, [t[rows] for t in triplets], [n[rows] for n in noise], tau, margin)
            for rows in _row_chunks(len(triplets[0]))
        ]
        terms, index_ij, index_ijk = (torch.cat(parts) for parts in zip(*chunks, strict=True))
        slopes = (terms > 0) & (index_ij != index_ijk)[:, None]
        rows = slopes.any(dim=1).nonzero().squeeze(1)
        kept = (t[rows] for t in (*triplets, index_ij, index_ijk, slopes))
        ctx.save_for_backward(distances, *noise, rows, *kept)  # noise whole: no (R, P) copy
        ctx.tau = tau
        return torch.where(slopes, terms, 0.0).sum()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None, None]:  # type: ignore[override]
        """Straight-through gradient of the active triplets, scattered onto the distance rows."""
        d, noise_ij, noise_ijk, active, anchor, positive, negative, index_ij, index_ijk, slopes = (
            ctx.saved_tensors
        )
        d = d.detach()
        grad_d = torch.zeros_like(d)
        if len(anchor) == 0:
            return grad_d, None, None, None, None
        weight = slopes.to(grad.dtype) * grad  # (R, 3) ∂L/∂⟨d_x, ±(LCA_ij − LCA_ijk)⟩
        for rows in _row_chunks(len(anchor)):
            noise = (noise_ij[active[rows]], noise_ijk[active[rows]])
            triplets = (anchor[rows], positive[rows], negative[rows])
            _add_softmax_gradient(grad_d, d, triplets, noise, weight[rows], ctx.tau)
        for rows, column, sign in ((anchor, 0, 1.0), (positive, 1, 1.0), (negative, 2, -1.0)):
            # the direct term: ∂⟨d_x, LCA_ij − LCA_ijk⟩/∂d_x is the one-hot difference
            grad_d.index_put_((rows, index_ij), sign * weight[:, column], accumulate=True)
            grad_d.index_put_((rows, index_ijk), -sign * weight[:, column], accumulate=True)
        return grad_d, None, None, None, None


def lca_triplet_loss(
    distances: torch.Tensor,
    anchor: torch.Tensor,
    positive: torch.Tensor,
    negative: torch.Tensor,
    noise_ij: torch.Tensor,
    noise_ijk: torch.Tensor,
    tau: float,
    margin: float,
) -> torch.Tensor:
    """HIER's triplet term (the authors' compute_gHHC): mean hinge over T triplets (scalar).

    distances (N, P) node-to-proxy; anchor/positive/negative (T,) rows of it; noise (T, P)
    each. An empty triplet set gives 0 with a grad_fn connected to ``distances``.
    """
    if not isinstance(distances, torch.Tensor) or distances.ndim != 2:
        raise ValueError(
            f"distances must be an (N, P) matrix, got {getattr(distances, 'shape', distances)}"
        )
    check_positive("gumbel tau", tau)
    count = len(anchor)
    if not (len(positive) == len(negative) == count):
        raise ValueError(
            f"anchor, positive, negative must have one length, got "
            f"{len(anchor)}, {len(positive)}, {len(negative)}"
        )
    expected = (count, distances.shape[1])
    if tuple(noise_ij.shape) != expected or tuple(noise_ijk.shape) != expected:
        raise ValueError(
            f"noise must be {expected} for {count} triplets, got "
            f"{tuple(noise_ij.shape)} and {tuple(noise_ijk.shape)}"
        )
    if count == 0:
        return distances.sum() * 0.0
    rows = torch.stack([anchor, positive, negative])
    if int(rows.min()) < 0 or int(rows.max()) >= len(distances):
        raise ValueError(f"a triplet index is not a row of the {len(distances)} distance rows")
    noise = tuple(
        n.to(dtype=distances.dtype, device=distances.device) for n in (noise_ij, noise_ijk)
    )
    triplets = tuple(
        t.to(device=distances.device, dtype=torch.long) for t in (anchor, positive, negative)
    )
    return _LcaTripletHinge.apply(distances, triplets, noise, float(tau), float(margin)) / count
