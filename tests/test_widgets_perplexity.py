"""Notebook 07's confidence panel: the plain functions, then the panel driven from Python."""

import math

import pytest
import torch

from d2lmini.widgets.perplexity import (
    bigram_log_probs,
    make_confidence_panel,
    perplexity_curve,
    tempered_perplexity,
)

pytestmark = pytest.mark.torch_dependent


def test_bigram_table_counts_pairs_with_add_one():
    table = bigram_log_probs(torch.tensor([0, 1, 0, 1, 1]), 3)
    # after 0: "1" twice, plus one for each of 3 symbols -> p(1 | 0) = 3/5, p(0 | 0) = 1/5
    assert math.isclose(table[0, 1].exp().item(), 3 / 5)
    assert math.isclose(table[0, 0].exp().item(), 1 / 5)
    assert torch.allclose(table.exp().sum(dim=1), torch.ones(3, dtype=torch.float64))


def test_temperature_one_is_the_model_itself():
    log_probs = torch.log(torch.tensor([[0.8, 0.2], [0.2, 0.8]], dtype=torch.float64))
    targets = torch.tensor([0, 1])
    assert math.isclose(tempered_perplexity(log_probs, targets, 1.0), 1.25)


def test_sharpening_a_wrong_model_hurts_and_flattening_tends_to_uniform():
    log_probs = torch.log(torch.tensor([[0.9, 0.1]] * 4, dtype=torch.float64))
    targets = torch.tensor([0, 0, 0, 1])  # one confident miss in four
    sharp, itself = tempered_perplexity(log_probs, targets, 0.2), tempered_perplexity(log_probs, targets, 1.0)
    assert sharp > itself
    assert math.isclose(tempered_perplexity(log_probs, targets, 1e6), 2.0, rel_tol=1e-5)


@pytest.mark.parametrize("temperature", [0.0, -1.0, float("nan")])
def test_a_temperature_that_is_not_positive_is_refused(temperature):
    with pytest.raises(ValueError, match="temperature must be positive"):
        tempered_perplexity(torch.zeros(2, 2), torch.tensor([0, 1]), temperature)


def test_the_curve_has_a_point_per_temperature():
    curve = perplexity_curve(torch.zeros(3, 4), torch.tensor([0, 1, 2]), temperatures=(0.5, 1.0, 2.0))
    assert [t for t, _ in curve] == [0.5, 1.0, 2.0]
    assert all(math.isclose(ppl, 4.0) for _, ppl in curve)  # a uniform model ignores temperature


def test_the_panel_follows_its_slider():
    log_probs = torch.log(torch.tensor([[0.7, 0.2, 0.1]] * 3, dtype=torch.float64))
    targets = torch.tensor([0, 1, 0])
    panel = make_confidence_panel(log_probs, targets)
    assert panel.shown == (1.0, pytest.approx(tempered_perplexity(log_probs, targets, 1.0)))
    panel.slider.value = 0.5
    assert panel.shown[0] == pytest.approx(0.5)
    assert panel.shown[1] == pytest.approx(tempered_perplexity(log_probs, targets, 0.5))
    assert f"{panel.shown[1]:.2f}" in panel.readout.value
