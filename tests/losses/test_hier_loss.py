"""HIER's pieces (Proxy-Anchor, triplet mining, LCA hinge, ball proxies, the objective) against
plain-loop references written here, for values and gradients, in float64."""

from __future__ import annotations

import math

import geoopt
import pytest
import torch
import torch.nn.functional as F

from hierbench.geometry import poincare_distance, sanitise_and_clip
from hierbench.losses import hier_triplets, level_floats
from hierbench.losses.hier import (
    HierObjective,
    HierSettings,
    gumbel_noise,
    lca_triplet_loss,
    poincare_proxies,
    reciprocal_triplets,
    straight_through_lca,
)
from hierbench.losses.proxy_anchor import proxy_anchor_loss

F64 = torch.float64
SMALL = HierSettings(proxies=12, topk=4, triplets_per_anchor=5)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return (scale * torch.randn(*shape, dtype=F64, generator=_gen(seed))).requires_grad_(True)


# ---------------------------------------------------------------- Proxy-Anchor
def _loop_proxy_anchor(x, p, labels, alpha, margin):
    pos_terms, neg_terms = [], []
    for k in range(len(p)):
        pos, neg = [], []
        for i in range(len(x)):
            cos = (x[i] @ p[k]) / (x[i].norm() * p[k].norm())
            if labels[i] == k:
                pos.append(torch.exp(-alpha * (cos - margin)))
            else:
                neg.append(torch.exp(alpha * (cos + margin)))
        if pos:
            pos_terms.append(torch.log(1 + sum(pos)))
        neg_terms.append(torch.log(1 + sum(neg)) if neg else torch.zeros((), dtype=F64))
    return sum(pos_terms) / len(pos_terms) + sum(neg_terms) / len(p)


@pytest.mark.parametrize(("alpha", "margin"), [(32.0, 0.1), (2.0, -0.3)])
def test_proxy_anchor_matches_a_loop_over_proxies(alpha, margin):
    labels = torch.tensor([0, 0, 3, 1, 3, 3, 0])  # proxies 2 and 4 have no positive
    x, p = _randn(7, 5, seed=0), _randn(5, 5, seed=1)
    xr, pr = x.detach().clone().requires_grad_(True), p.detach().clone().requires_grad_(True)
    got = proxy_anchor_loss(x, p, labels, alpha, margin)
    expected = _loop_proxy_anchor(xr, pr, labels.tolist(), alpha, margin)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    got.backward()
    expected.backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(p.grad, pr.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("labels", "match"),
    [([0, 1, 5], "label 5"), ([0, -1, 2], "label -1"), ([0, 1], r"\(3,\)")],
)
def test_proxy_anchor_rejects_bad_labels(labels, match):
    with pytest.raises(ValueError, match=match):
        proxy_anchor_loss(torch.randn(3, 4), torch.randn(5, 4), torch.tensor(labels))


def test_proxy_anchor_rejects_mismatched_dims():
    with pytest.raises(ValueError, match="embedding dim 4 differs from proxy dim 3"):
        proxy_anchor_loss(torch.randn(3, 4), torch.randn(5, 3), torch.tensor([0, 1, 2]))


# ---------------------------------------------------------------- Gumbel and straight-through
def test_gumbel_noise_is_minus_log_minus_log_uniform_from_the_generator():
    got = gumbel_noise((400, 300), _gen(5))
    expected = -torch.log(-torch.log(torch.rand((400, 300), generator=_gen(5))))
    torch.testing.assert_close(got, expected)
    assert abs(float(got.mean()) - 0.5772156649) < 0.01  # Euler–Mascheroni: the Gumbel mean


def test_gumbel_noise_is_finite_when_rand_returns_zero(monkeypatch):
    monkeypatch.setattr(torch, "rand", lambda shape, generator: torch.zeros(shape))
    assert torch.isfinite(gumbel_noise((3, 4), _gen(0))).all()


def test_gumbel_noise_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    gumbel_noise((10, 10), _gen(1))
    assert torch.equal(state, torch.get_rng_state())


def test_straight_through_lca_equals_torch_gumbel_softmax_hard():
    tau, max_d = 0.3, _randn(9, 6, seed=3)
    reference_input = max_d.detach().clone().requires_grad_(True)
    torch.manual_seed(11)  # F.gumbel_softmax draws −log(Exp(1)) from the global RNG
    noise = -torch.empty_like(max_d).exponential_().log()
    torch.manual_seed(11)
    expected = F.gumbel_softmax(-reference_input / tau, tau=1.0, hard=True)
    probs, index = straight_through_lca(max_d, noise, tau)
    torch.testing.assert_close(probs, expected)
    assert torch.equal(index, expected.argmax(dim=1))
    weights = torch.randn(9, 6, dtype=F64, generator=_gen(4))
    (probs * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(max_d.grad, reference_input.grad)


# ---------------------------------------------------------------- reciprocal triplets
def _loop_triplets(similarity, topk, per_anchor, seed):
    generator = _gen(seed)
    n = len(similarity)
    u_pos = torch.rand((n, per_anchor), generator=generator)
    u_neg = torch.rand((n, per_anchor), generator=generator)
    rows = similarity.tolist()
    top = [set(sorted(range(n), key=lambda j, r=r: -r[j])[: min(topk, n)]) for r in rows]
    triplets, skipped = [], 0
    for i in range(n):
        positives = [j for j in range(n) if j != i and j in top[i] and i in top[j]]
        negatives = [j for j in range(n) if j != i and j not in positives]
        if len(positives) < 2 or not negatives:
            skipped += 1
            continue
        for m in range(per_anchor):
            pos = positives[math.floor(float(u_pos[i, m]) * len(positives))]
            neg = negatives[math.floor(float(u_neg[i, m]) * len(negatives))]
            triplets.append((i, pos, neg))
    return triplets, skipped


def _clustered_similarity(n: int) -> torch.Tensor:
    """exp(−distance) + 1 within random groups, like the objective's item similarity."""
    points = torch.randn(n, 3, generator=_gen(n), dtype=F64)
    groups = torch.randint(0, n // 2, (n,), generator=_gen(n + 1))
    return torch.exp(-torch.cdist(points, points)) + (groups[:, None] == groups[None, :])


@pytest.mark.parametrize(("n", "topk", "per_anchor"), [(16, 4, 7), (40, 4, 4), (40, 7, 50)])
def test_reciprocal_triplets_match_a_per_anchor_loop(n, topk, per_anchor):
    similarity = _clustered_similarity(n)
    triplets = reciprocal_triplets(similarity, topk, per_anchor, _gen(7))
    expected, skipped = _loop_triplets(similarity, topk, per_anchor, seed=7)
    got = list(zip(*(t.tolist() for t in triplets), strict=True))
    assert all(t.dtype == torch.int64 for t in triplets)
    assert got == expected
    assert expected and skipped > 0, "the case must keep some anchors and skip others"


def test_reciprocal_triplets_with_topk_beyond_n_have_no_negatives_so_no_triplets():
    similarity = _clustered_similarity(9)
    assert all(len(t) == 0 for t in reciprocal_triplets(similarity, 30, 3, _gen(1)))
    assert _loop_triplets(similarity, 30, 3, seed=1) == ([], 9)


def test_reciprocal_triplets_never_use_the_anchor_as_its_negative():
    similarity = torch.rand(30, 30, generator=_gen(2))
    anchor, positive, negative = reciprocal_triplets(similarity, 8, 50, _gen(3))
    assert len(anchor) > 0
    assert not (anchor == negative).any() and not (anchor == positive).any()


# ---------------------------------------------------------------- the LCA hinge
def _loop_lca_loss(d, anchor, positive, negative, noise_ij, noise_ijk, tau, margin):
    def lca(max_row, noise):
        soft = torch.softmax(-max_row / tau + noise, dim=0)
        index = int(soft.argmax())
        hard = torch.zeros_like(soft)
        hard[index] = 1.0
        return hard - soft.detach() + soft, index

    terms = []
    for t, (i, j, k) in enumerate(
        zip(anchor.tolist(), positive.tolist(), negative.tolist(), strict=True)
    ):
        max_ij = torch.maximum(d[i], d[j])
        p_ij, a = lca(max_ij, noise_ij[t])
        p_ijk, b = lca(torch.maximum(d[k], max_ij), noise_ijk[t])
        hc = (
            torch.relu((d[i] * p_ij).sum() - (d[i] * p_ijk).sum() + margin)
            + torch.relu((d[j] * p_ij).sum() - (d[j] * p_ijk).sum() + margin)
            + torch.relu((d[k] * p_ijk).sum() - (d[k] * p_ij).sum() + margin)
        )
        terms.append(hc * float(a != b))
    return sum(terms) / len(terms), terms


def _lca_case(n: int, p: int, t: int, seed: int, tied: bool):
    generator = _gen(seed)
    if tied:  # few distinct values: ties inside both maxima exercise torch's ½-½ rule
        values = torch.randint(1, 4, (n, p), generator=generator).to(F64) * 0.5
    else:
        values = 3 * torch.rand((n, p), generator=generator, dtype=F64)
    triplets = [torch.randint(0, n, (t,), generator=generator) for _ in range(3)]
    noise = [gumbel_noise((t, p), generator).to(F64) for _ in range(2)]
    return values, triplets, noise


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize(("tau", "margin"), [(0.5, 0.1), (2.0, 0.5)])
def test_lca_triplet_loss_matches_a_per_triplet_loop(tied, tau, margin):
    values, triplets, noise = _lca_case(7, 6, 60, seed=int(tied), tied=tied)
    d, dr = values.clone().requires_grad_(True), values.clone().requires_grad_(True)
    got = lca_triplet_loss(d, *triplets, *noise, tau, margin)
    expected, terms = _loop_lca_loss(dr, *triplets, *noise, tau, margin)
    hinges = [float(term.detach()) for term in terms]
    assert 0.0 in hinges and max(hinges) > 0
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    got.backward()
    expected.backward()
    assert dr.grad.abs().sum() > 0
    torch.testing.assert_close(d.grad, dr.grad, rtol=1e-10, atol=1e-12)


def test_lca_triplet_loss_matches_the_straight_through_formula_at_scale():
    values, triplets, noise = _lca_case(40, 32, 2000, seed=5, tied=False)
    d, dr = values.clone().requires_grad_(True), values.clone().requires_grad_(True)
    got = lca_triplet_loss(d, *triplets, *noise, 0.1, 0.1)
    i, j, k = (dr[rows] for rows in triplets)
    p_ij, a = straight_through_lca(torch.maximum(i, j), noise[0], 0.1)
    p_ijk, b = straight_through_lca(torch.maximum(k, torch.maximum(i, j)), noise[1], 0.1)
    shift = p_ij - p_ijk
    hinge = sum(torch.relu(s * (x * shift).sum(1) + 0.1) for s, x in ((1, i), (1, j), (-1, k)))
    expected = (hinge * (a != b)).mean()
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    got.backward()
    expected.backward()
    torch.testing.assert_close(d.grad, dr.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_lca_triplet_loss_in_chunks_matches_the_loop(monkeypatch, chunk):
    """Triplets are processed in chunks of rows (cache-sized buffers); a chunk size that splits
    the 60 triplets unevenly, one row per chunk and one chunk for all give the loop's value and
    gradient."""
    monkeypatch.setattr(hier_triplets, "_CHUNK_ROWS", chunk)
    values, triplets, noise = _lca_case(7, 6, 60, seed=3, tied=True)
    d, dr = values.clone().requires_grad_(True), values.clone().requires_grad_(True)
    got = lca_triplet_loss(d, *triplets, *noise, 0.5, 0.1)
    expected, _ = _loop_lca_loss(dr, *triplets, *noise, 0.5, 0.1)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    got.backward()
    expected.backward()
    assert dr.grad.abs().sum() > 0
    torch.testing.assert_close(d.grad, dr.grad, rtol=1e-10, atol=1e-12)


def test_lca_triplet_loss_of_no_triplets_is_a_connected_zero():
    d = torch.rand(5, 4, dtype=F64, requires_grad=True)
    empty = torch.zeros(0, dtype=torch.long)
    loss = lca_triplet_loss(d, empty, empty, empty, torch.zeros(0, 4), torch.zeros(0, 4), 0.1, 0.1)
    assert float(loss.detach()) == 0.0 and loss.grad_fn is not None
    loss.backward()
    assert torch.equal(d.grad, torch.zeros_like(d))


def test_lca_triplet_loss_rejects_misshapen_noise():
    d, rows = torch.rand(5, 4), torch.tensor([0, 1])
    with pytest.raises(ValueError, match=r"noise must be \(2, 4\)"):
        lca_triplet_loss(d, rows, rows, rows, torch.zeros(2, 3), torch.zeros(2, 4), 0.1, 0.1)


# ---------------------------------------------------------------- proxies in the ball
def _geoopt_proxies(raw, curvature, clip_r):
    ball = geoopt.PoincareBall(c=torch.tensor(curvature, dtype=F64), learnable=False)
    norm = raw.norm(dim=1, keepdim=True) + 1e-5
    return ball.projx(ball.expmap0(raw * torch.clamp(clip_r / norm, max=1.0)))


@pytest.mark.parametrize(("curvature", "clip_r"), [(0.1, 2.3), (2.0, 0.4), (1.0, 1.5)])
def test_poincare_proxies_equal_geoopt_expmap0_with_the_riemannian_gradient(curvature, clip_r):
    raw = _randn(20, 6, seed=8, scale=clip_r / 2)  # norms around clip_r: some rows clipped
    reference = raw.detach().clone().requires_grad_(True)
    got, expected = (
        poincare_proxies(raw, curvature, clip_r),
        _geoopt_proxies(reference, curvature, clip_r),
    )
    assert (raw.norm(dim=1) > clip_r).any() and (raw.norm(dim=1) < clip_r).any()
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-14)
    weights = torch.randn(20, 6, dtype=F64, generator=_gen(9))
    scale = (1 - curvature * (expected.detach() ** 2).sum(1, keepdim=True)) ** 2 / 4
    (got * weights).sum().backward()
    (expected * weights * scale).sum().backward()
    assert not torch.allclose(scale, torch.ones_like(scale))
    torch.testing.assert_close(raw.grad, reference.grad, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_poincare_proxies_stay_inside_the_ball_for_huge_raw_values(dtype):
    raw = torch.randn(50, 8, generator=_gen(3)).to(dtype) * torch.logspace(0, 30, 50)[:, None]
    for curvature, clip_r in [(0.1, 2.3), (2.0, 100.0), (1.0, 1e6)]:
        norms = poincare_proxies(raw, curvature, clip_r).detach().norm(dim=1)
        assert torch.isfinite(norms).all()
        assert float(norms.max()) < 1 / math.sqrt(curvature)


def test_proxies_stay_inside_the_ball_after_adamw_steps_at_a_large_lr():
    raw = torch.nn.Parameter(torch.randn(30, 8, generator=_gen(4)))
    optimizer = torch.optim.AdamW([raw], lr=10.0, weight_decay=0.01)
    for _ in range(5):
        optimizer.zero_grad()
        (-poincare_proxies(raw, 2.0, 50.0).norm(dim=1).sum()).backward()  # push outwards
        optimizer.step()
        norms = poincare_proxies(raw, 2.0, 50.0).norm(dim=1)
        assert torch.isfinite(norms).all() and float(norms.detach().max()) < 1 / math.sqrt(2.0)


# ---------------------------------------------------------------- the objective
def _batch(size: int = 10, dim: int = 6, seed: int = 0):
    generator = _gen(seed)
    embeddings = 0.3 * torch.randn(size, dim, generator=generator, dtype=F64)
    leaf = torch.tensor([10, 10, 20, 20, 30, 30, 40, 40, 50, 50][:size])
    return embeddings.requires_grad_(True), torch.stack([leaf, leaf // 20, leaf // 40], dim=1)


def _objective(seed: int = 3, settings: HierSettings = SMALL, dim: int = 6) -> HierObjective:
    return HierObjective([50, 10, 20, 30, 40, 10], dim, 0.5, settings, seed).double()


def test_objective_is_deterministic_for_a_seed_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    results = []
    for _ in range(2):
        objective = _objective()
        embeddings, labels = _batch()
        loss, parts = objective(embeddings, labels)
        loss.backward()
        grads = [embeddings.grad, objective.class_proxies.grad, objective.lcas.grad]
        results.append((loss.detach(), parts, grads))
    assert torch.equal(state, torch.get_rng_state())
    assert torch.equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]
    for first, second in zip(results[0][2], results[1][2], strict=True):
        assert torch.equal(first, second) and first.abs().sum() > 0
    assert float(results[0][1]["loss_hier"]) > 0


def test_objective_initialises_its_parameters_from_the_seed():
    objective = HierObjective([3, 1, 2], 4, 0.1, HierSettings(proxies=5), seed=9)
    generator = _gen(9)
    class_proxies = torch.empty(3, 4)
    torch.nn.init.kaiming_normal_(class_proxies, mode="fan_out", generator=generator)
    lcas = torch.randn(5, 4, generator=generator) / 2.0 * 2.3 * 0.9
    assert torch.equal(objective.class_proxies.detach(), class_proxies)
    torch.testing.assert_close(objective.lcas.detach(), lcas)
    assert torch.equal(objective.leaf_classes, torch.tensor([1, 2, 3]))


def test_objective_is_the_documented_composition_of_its_parts():
    objective = _objective()
    embeddings, labels = _batch()
    loss, parts = objective(embeddings, labels)
    generator, settings, size = _gen(4), SMALL, len(embeddings)
    proxies = poincare_proxies(objective.lcas, 0.5, settings.proxy_clip_r)
    nodes = torch.cat([embeddings, proxies])
    d = sanitise_and_clip(poincare_distance(nodes, nodes, 0.5), 20.0)
    leaf = labels[:, 0]
    similarities = [
        torch.exp(-d[:size, :size]).detach() + (leaf[:, None] == leaf[None, :]),
        torch.exp(-d[size:, size:]).detach(),
    ]
    hier = 0.0
    for columns, similarity in zip((d[:size, size:], d[size:, size:]), similarities, strict=True):
        triplets = reciprocal_triplets(similarity, settings.topk, 5, generator)
        noise = [gumbel_noise((len(triplets[0]), 12), generator) for _ in range(2)]
        hier = hier + lca_triplet_loss(columns, *triplets, *noise, 0.1, 0.1)
    classes = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    metric = proxy_anchor_loss(embeddings, objective.class_proxies, classes, 32.0, 0.1)
    torch.testing.assert_close(loss, metric + 0.5 * hier, rtol=1e-12, atol=1e-12)
    assert level_floats(parts) == pytest.approx(
        {
            "loss_c": float(metric.detach()),
            "loss_m": None,
            "loss_h": None,
            "loss_hier": float(hier.detach()),
        }
    )


@pytest.mark.parametrize("case", ["coincident", "origin"])
def test_objective_gradients_are_finite_for_degenerate_embeddings(case):
    objective = _objective()
    embeddings, labels = _batch()
    fill = 0.0 if case == "origin" else 0.2
    degenerate = torch.full_like(embeddings, fill).requires_grad_(True)
    loss, _ = objective(degenerate, labels)
    loss.backward()
    assert torch.isfinite(loss)
    for grad in (degenerate.grad, objective.class_proxies.grad, objective.lcas.grad):
        assert grad is not None and torch.isfinite(grad).all()


def test_objective_rejects_an_unknown_leaf_code_naming_it():
    embeddings, labels = _batch()
    labels[3, 0] = 77
    with pytest.raises(ValueError, match="leaf code 77"):
        _objective()(embeddings, labels)


def test_objective_param_groups_use_the_settings_rates():
    objective = _objective(settings=HierSettings(proxies=4, proxy_lr=0.5, lca_lr=0.01))
    groups = objective.param_groups(0.02)
    assert [
        (g["params"][0] is p, g["lr"], g["weight_decay"])
        for g, p in zip(groups, (objective.class_proxies, objective.lcas), strict=True)
    ] == [(True, 0.5, 0.02), (True, 0.01, 0.02)]
    torch.optim.AdamW(groups)  # the groups are valid optimizer input


# ---------------------------------------------------------------- settings
def test_settings_defaults_are_the_authors_cub_script():
    settings = HierSettings.from_config({})
    assert settings == HierSettings()
    assert (settings.proxies, settings.topk, settings.proxy_clip_r) == (512, 20, 2.3)
    assert (settings.hier_weight, settings.proxy_lr, settings.lca_lr) == (0.5, 0.05, 2.5e-4)


def test_settings_from_config_takes_known_keys_and_rejects_an_unknown_one():
    assert HierSettings.from_config({"proxies": 64, "margin": 0.2}).proxies == 64
    with pytest.raises(ValueError, match="'num_hproxies'"):
        HierSettings.from_config({"proxies": 64, "num_hproxies": 64})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("proxies", 0),
        ("topk", 2.5),
        ("gumbel_tau", 0.0),
        ("proxy_clip_r", -1.0),
        ("hier_weight", float("nan")),
        ("pa_alpha", True),
        ("lca_lr", -1e-3),
    ],
)
def test_settings_check_names_the_nonsense_field(field, value):
    with pytest.raises(ValueError, match=field):
        HierSettings.from_config({field: value})
