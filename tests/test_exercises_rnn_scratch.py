"""Tests for the self-checks of notebook 04."""

import math

import torch

from d2lmini.exercises.rnn_scratch import (
    check_initial_loss,
    check_output_row,
    check_temperature_probability,
    check_xavier_std,
    output_row,
    temperature_probability,
)
from d2lmini.rnn import RNNScratch


def test_output_row_matches_the_model():
    model = RNNScratch(10, 6, generator=torch.Generator().manual_seed(0))
    X = torch.randint(10, (4, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        outputs, _ = model(X, model.begin_state(4))
        alone, _ = model(X[2:3, :4], model.begin_state(1))  # sequence 2 alone, steps 0..3
    assert torch.allclose(outputs[output_row(3, 2, 4)], alone[-1], atol=1e-6)
    assert check_output_row(14, quiet=True)
    assert not check_output_row(11, quiet=True)  # example * steps + step: batch-major
    assert not check_output_row("row", quiet=True)
    assert check_output_row(7, step=1, example=3, batch_size=4, quiet=True)


def test_xavier_std():
    assert check_xavier_std(1 / math.sqrt(28), quiet=True)
    assert check_xavier_std(0.18898, quiet=True)
    assert not check_xavier_std(0.01, quiet=True)
    assert not check_xavier_std(1 / 28, quiet=True)
    assert not check_xavier_std(None, quiet=True)


def test_temperature_probability_agrees_with_torch():
    logits = (2.0, 1.0, 0.0)
    expected = float(torch.softmax(torch.tensor(logits) / 0.5, dim=0)[0])
    assert math.isclose(temperature_probability(logits, 0.5), expected, rel_tol=1e-6)
    assert check_temperature_probability(expected, quiet=True)
    assert not check_temperature_probability(float(torch.softmax(torch.tensor(logits), 0)[0]), quiet=True)
    assert not check_temperature_probability("high", quiet=True)


def test_initial_loss_matches_an_untrained_model():
    model = RNNScratch(28, 64, init="normal", generator=torch.Generator().manual_seed(0))
    X = torch.randint(28, (8, 12), generator=torch.Generator().manual_seed(1))
    Y = torch.randint(28, (8, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        outputs, _ = model(X, model.begin_state(8))
        loss = float(torch.nn.functional.cross_entropy(outputs, Y.T.reshape(-1)))
    assert check_initial_loss(loss, quiet=True)
    assert check_initial_loss(3.3322, quiet=True)
    assert not check_initial_loss(28, quiet=True)  # the perplexity, not the loss
    assert not check_initial_loss(math.log2(28), quiet=True)  # bits, not nats
    assert not check_initial_loss(None, quiet=True)


def test_verdicts_print_a_message(capsys):
    check_initial_loss(28)
    assert "Not yet." in capsys.readouterr().out
    check_output_row(14)
    assert "Correct!" in capsys.readouterr().out
