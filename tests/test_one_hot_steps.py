"""Tests for d2lmini.one_hot_steps: every scratch model as a step on one-hot inputs, and the
memory scrubber's influence on the GRU and the LSTM."""

import pytest
import torch
import torch.nn.functional as F

from d2lmini.gates import GRUScratch, LSTMScratch, TorchGated
from d2lmini.one_hot_steps import one_hot_cell, states_along
from d2lmini.rnn import RNNScratch
from d2lmini.widgets.memory import influence_by_lag, next_probability

pytestmark = pytest.mark.torch_dependent

MODELS = {"rnn": RNNScratch, "gru": GRUScratch, "lstm": LSTMScratch}


def random_model(kind, vocab_size=5, num_hiddens=6, seed=0):
    model = MODELS[kind](vocab_size, num_hiddens, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():  # biases away from zero, so that every term of the step matters
        for name, p in model.named_parameters():
            if name.startswith("b"):
                p.normal_(0, 0.3, generator=torch.Generator().manual_seed(seed + 1))
    return model.double()


@pytest.mark.parametrize("kind", MODELS)
def test_the_cell_computes_what_the_model_computes(kind):
    model = random_model(kind)
    indices = torch.randint(0, 5, (23,), generator=torch.Generator().manual_seed(2))
    cell = one_hot_cell(model)
    states = states_along(cell, indices)
    outputs, final = model(indices[None], cell.zero_state())
    torch.testing.assert_close(cell.readout(states), outputs, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(states[-1:], final, rtol=1e-10, atol=1e-12)
    assert states.shape == (23, cell.state_width) and cell.vocab_size == 5


def full_context_influence(model, indices, position, max_lag):
    """The definition, by autograd over the whole prefix: every input one-hot and a leaf."""
    cell = one_hot_cell(model)
    one_hot = F.one_hot(indices[:position], cell.vocab_size).to(cell.dtype).requires_grad_(True)
    state = cell.zero_state()
    for x in one_hot:
        state = cell.step(x[None], state)
    torch.log_softmax(cell.readout(state), dim=1)[0, indices[position]].backward()
    return one_hot.grad.norm(dim=1).flip(0)[:max_lag]


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_the_influence_of_gated_cells_is_the_gradient_norm(kind):
    model = random_model(kind, seed=3)
    indices = torch.randint(0, 5, (40,), generator=torch.Generator().manual_seed(4))
    positions = [4, 9, 20, 39]
    influence = influence_by_lag(model, indices, positions, max_lag=4)
    assert influence.shape == (4, 4) and influence.dtype == torch.float64
    for row, p in zip(influence, positions, strict=True):
        torch.testing.assert_close(row, full_context_influence(model, indices, p, 4), rtol=1e-10, atol=1e-12)
    assert float(influence.min()) > 0


@pytest.mark.parametrize("kind", MODELS)
def test_the_probability_is_the_models(kind):
    model = random_model(kind, seed=5)
    indices = torch.randint(0, 5, (30,), generator=torch.Generator().manual_seed(6))
    outputs, _ = model(indices[None, :17], one_hot_cell(model).zero_state())
    expected = float(torch.softmax(outputs[-1], dim=0)[indices[17]])
    assert next_probability(model, indices, 17) == pytest.approx(expected, rel=1e-10)


def test_models_without_a_written_step_are_refused():
    with pytest.raises(TypeError, match="model must be a scratch model.*GRUScratch.*TorchGated"):
        one_hot_cell(TorchGated("gru", 5, 3))
