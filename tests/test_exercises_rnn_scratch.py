"""Tests for the self-checks of notebook 04."""

import math

import pytest
import torch
from IPython.lib.pretty import pretty

from d2lmini.exercises.rnn_scratch import (
    check_hidden_term_std,
    check_initial_loss,
    check_output_row,
    check_temperature_probability,
    output_row,
    temperature_probability,
)
from d2lmini.rnn import RNNScratch

pytestmark = pytest.mark.torch_dependent


def test_output_row_matches_the_model():
    model = RNNScratch(10, 6, generator=torch.Generator().manual_seed(0))
    X = torch.randint(10, (4, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        outputs, _ = model(X, model.begin_state(4))
        alone, _ = model(X[2:3, :4], model.begin_state(1))  # sequence 2 alone, steps 0..3
    assert torch.allclose(outputs[output_row(3, 2, 4)], alone[-1], atol=1e-6)
    assert check_output_row(14)
    assert not check_output_row(11)  # example * steps + step: batch-major
    assert not check_output_row("row")
    assert check_output_row(7, step=1, example=3, batch_size=4)


def test_hidden_term_std_matches_a_sampled_model():
    generator = torch.Generator().manual_seed(3)
    W_hh = RNNScratch(28, 64, init="lecun", generator=generator).W_hh.detach()
    H = 0.5 * torch.randn(20_000, 64, generator=generator)
    assert abs(float((H @ W_hh).std()) - 0.5) < 0.05  # W_hh is one sample: a few % off at most
    assert check_hidden_term_std(0.5)
    assert check_hidden_term_std(0.50)
    assert not check_hidden_term_std(0.5 / 8)  # forgot the 64 terms
    assert not check_hidden_term_std(4.0)  # sqrt(64) * 0.5: forgot the 1/sqrt(h) weights
    assert not check_hidden_term_std(None)


def test_temperature_probability_agrees_with_torch():
    logits = (2.0, 1.0, 0.0)
    expected = float(torch.softmax(torch.tensor(logits) / 0.5, dim=0)[0])
    assert math.isclose(temperature_probability(logits, 0.5), expected, rel_tol=1e-6)
    assert check_temperature_probability(expected)
    assert not check_temperature_probability(float(torch.softmax(torch.tensor(logits), 0)[0]))
    assert not check_temperature_probability("high")


def test_initial_loss_matches_an_untrained_model():
    model = RNNScratch(60, 64, init="normal", generator=torch.Generator().manual_seed(0))
    X = torch.randint(60, (8, 12), generator=torch.Generator().manual_seed(1))
    Y = torch.randint(60, (8, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        outputs, _ = model(X, model.begin_state(8))
        loss = float(torch.nn.functional.cross_entropy(outputs, Y.T.reshape(-1)))
    assert check_initial_loss(round(loss, 3))
    assert check_initial_loss(4.094)
    assert not check_initial_loss(math.log(28))  # the notebook's vocabulary, not this one
    assert not check_initial_loss(60)  # the perplexity, not the loss
    assert not check_initial_loss(math.log2(60))  # bits, not nats
    assert not check_initial_loss(None)


def test_verdicts_display_a_message(capsys):
    assert pretty(check_initial_loss(60)).startswith("Not yet.")
    assert pretty(check_output_row(14)).startswith("Correct!")
    assert capsys.readouterr().out == ""
