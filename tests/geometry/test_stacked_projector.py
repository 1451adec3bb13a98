"""K projectors stacked into one module give each cell what its own projector gives."""

from __future__ import annotations

import pytest
import torch

from hierbench.geometry import Projector
from hierbench.geometry.stacked_projector import StackedProjector

IN_DIM, HIDDEN, OUT, BATCH = 12, 16, 4, 10


def _projectors(seeds: list[int], dropout: float = 0.1) -> list[Projector]:
    """One projector per seed, built after ``torch.manual_seed`` as the trainer builds a head."""
    built = []
    for seed in seeds:
        torch.manual_seed(seed)
        built.append(Projector(IN_DIM, HIDDEN, OUT, dropout).double())
    return built


def _batches(cells: int) -> torch.Tensor:
    return torch.randn(cells, BATCH, IN_DIM, generator=torch.Generator().manual_seed(7)).double()


def test_each_slice_starts_as_its_cells_projector_and_writes_back_to_one():
    singles = _projectors([42, 2024, 3407])
    stacked = StackedProjector(singles).double()
    for cell, single in enumerate(singles):
        back = stacked.projector(cell)
        assert back.state_dict().keys() == single.state_dict().keys()
        for name, tensor in single.state_dict().items():
            assert torch.equal(back.state_dict()[name], tensor), name


@pytest.mark.parametrize("training", [False, True])
def test_the_stacked_forward_and_gradients_match_each_projector(training):
    singles = _projectors([42, 2024, 3407], dropout=0.0)
    stacked = StackedProjector(singles).double().train(training)
    x = _batches(3)
    out = stacked(x)
    out.square().sum().backward()
    for cell, single in enumerate(singles):
        single.train(training)
        expected = single(x[cell])
        expected.square().sum().backward()
        torch.testing.assert_close(out[cell], expected, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(
            stacked.hidden_weight.grad[cell], single.hidden.weight.grad.T, rtol=1e-10, atol=1e-12
        )
        torch.testing.assert_close(
            stacked.norm_weight.grad[cell], single.norm.weight.grad, rtol=1e-10, atol=1e-12
        )
        back = stacked.projector(cell)
        torch.testing.assert_close(back.norm.running_mean, single.norm.running_mean)
        torch.testing.assert_close(back.norm.running_var, single.norm.running_var)
        assert int(back.norm.num_batches_tracked) == int(single.norm.num_batches_tracked)


def test_a_cells_dropout_mask_is_the_one_its_own_projector_draws():
    """The generator continues from the RNG state after the cell's initialisation, as the
    trainer's global RNG does: the stacked masks are those nn.Dropout draws for that cell."""
    seeds = [42, 2024]
    singles, generators, expected = [], [], []
    x = _batches(2)
    for cell, seed in enumerate(seeds):
        torch.manual_seed(seed)
        single = Projector(IN_DIM, HIDDEN, OUT, 0.5).double().train()
        generator = torch.Generator()
        generator.set_state(torch.get_rng_state())
        singles.append(single)
        generators.append(generator)
        expected.append(single(x[cell]))  # draws from the global RNG, in the same state
    stacked = StackedProjector(_projectors(seeds, dropout=0.5)).double().train()
    out = stacked(x, generators)
    for cell in range(2):
        torch.testing.assert_close(out[cell], expected[cell], rtol=1e-12, atol=1e-12)


def test_a_cells_output_does_not_depend_on_the_other_cells():
    x = _batches(3)
    gens = lambda: [torch.Generator().manual_seed(s) for s in (1, 2, 3)]  # noqa: E731
    three = StackedProjector(_projectors([42, 2024, 3407], 0.3)).double().train()
    one = StackedProjector(_projectors([2024], 0.3)).double().train()
    torch.testing.assert_close(three(x, gens())[1], one(x[1:2], gens()[1:2])[0])


def test_mismatched_projectors_and_inputs_are_errors():
    with pytest.raises(ValueError, match="share their shapes and settings"):
        StackedProjector([Projector(IN_DIM, HIDDEN, OUT), Projector(IN_DIM, HIDDEN, OUT + 1)])
    stacked = StackedProjector(_projectors([1, 2])).double().train()
    with pytest.raises(ValueError, match=r"features must be \(2, batch, in_dim\)"):
        stacked(_batches(3))
    with pytest.raises(ValueError, match="one generator per cell"):
        stacked(_batches(2))
