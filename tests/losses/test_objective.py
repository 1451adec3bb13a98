"""The one objective interface (hierbench.losses.objective): every objective meets it, and the
plain objectives behind it give exactly the loss of the batch's sanitised distances."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from hierbench.geometry import EuclideanHead, PoincareHead, Projector, sanitise_and_clip
from hierbench.losses import DistanceObjective, Objective
from hierbench.losses.entailment_objective import EntailmentObjective
from hierbench.losses.hier import HierObjective
from hierbench.losses.registry import BUILT_IN
from hierbench.losses.regression import DEFAULT_REGRESSION_TARGETS
from hierbench.protocol import REGRESSION, SUPCON

SPEC = SimpleNamespace(
    distance_clip=50.0,
    regression_targets=DEFAULT_REGRESSION_TARGETS,
    tau=0.1,
    supcon_weights=(1.0, 1.0, 1.0),
)


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(12, 6, generator=generator)
    labels = torch.tensor([[i % 4, i % 2, 0] for i in range(12)])
    return features, labels


@pytest.mark.parametrize("loss", [REGRESSION, SUPCON])
@pytest.mark.parametrize("head", ["E", "H"])
def test_a_plain_objective_is_its_loss_on_the_sanitised_distances(loss: str, head: str):
    torch.manual_seed(3)
    projector = Projector(6, 8, 4)
    model = EuclideanHead(projector) if head == "E" else PoincareHead(projector, 1.0, 0.4)
    model.eval()  # no dropout draw: both passes see the same embeddings
    features, labels = _batch()
    spec = SimpleNamespace(**vars(SPEC), loss=loss)
    got, got_levels = DistanceObjective(spec).batch_loss(model, features, labels, torch.arange(12))
    embeddings = model(features)
    distances = sanitise_and_clip(model.distance(embeddings, embeddings), spec.distance_clip)
    expected, levels = BUILT_IN[loss].loss(distances, labels, spec)
    assert torch.equal(got, expected) and got_levels == levels


def test_a_plain_objective_has_no_parameters_of_its_own():
    objective = DistanceObjective(SimpleNamespace(**vars(SPEC), loss=REGRESSION))
    assert list(objective.parameters()) == [] and objective.param_groups(0.01) == []


def test_an_unknown_plain_loss_is_an_error_naming_the_plain_ones():
    with pytest.raises(
        ValueError, match=r"no plain objective for loss 'A'; plain losses: \['R', 'S'\]"
    ):
        DistanceObjective(SimpleNamespace(**vars(SPEC), loss="A"))


def test_every_objective_meets_the_one_interface():
    assert issubclass(HierObjective, Objective) and issubclass(EntailmentObjective, Objective)
    with pytest.raises(TypeError, match="abstract"):
        Objective()  # batch_loss must be implemented
