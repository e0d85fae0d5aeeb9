"""RNN per-character probabilities and the RNN + n-gram mixture (d2lmini.mixture)."""

import math

import numpy as np
import pytest

from d2lmini.mixture import (
    fit_mixture_weight,
    harmonic_mean_of_probs,
    mixture_log_probs,
    perplexity_of,
    rnn_log_probs,
)
from d2lmini.train import TrainConfig, evaluate_perplexity, make_model

pytestmark = pytest.mark.torch_dependent


def test_rnn_log_probs_agree_with_evaluate_perplexity_and_carry_the_history(bundled):
    model = make_model("scratch", len(bundled.vocab), TrainConfig(num_hiddens=16))
    indices = bundled.indices[:400]
    logs = rnn_log_probs(model, indices, num_steps=37)
    assert logs.shape == (399,)
    assert perplexity_of(logs) == pytest.approx(evaluate_perplexity(model, indices, num_steps=50), rel=1e-5)
    tail = rnn_log_probs(model, indices[200:], history=indices[:200], num_steps=37)
    assert tail == pytest.approx(logs[199:], abs=1e-5)


def test_mixture_of_a_model_with_itself_is_that_model():
    logs = np.log(np.random.default_rng(0).uniform(0.01, 1, 100))
    for lam in (0.0, 0.3, 1.0):
        assert mixture_log_probs(logs, logs, lam) == pytest.approx(logs)


def test_the_weight_goes_to_the_better_model():
    rng = np.random.default_rng(0)
    perfect, poor = np.zeros(200), np.log(rng.uniform(0.01, 0.5, 200))
    assert fit_mixture_weight(perfect, poor) > 0.99
    assert fit_mixture_weight(poor, perfect) < 0.01


def test_the_fitted_weight_maximises_the_likelihood():
    rng = np.random.default_rng(1)
    a, b = np.log(rng.uniform(0.01, 1, 500)), np.log(rng.uniform(0.01, 1, 500))
    lam = fit_mixture_weight(a, b)
    best = mixture_log_probs(a, b, lam).mean()
    for other in np.linspace(0, 1, 101):
        assert mixture_log_probs(a, b, other).mean() <= best + 1e-12


def test_the_mixture_is_a_distribution():
    rng = np.random.default_rng(2)
    p_a, p_b = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    mixed = np.exp(mixture_log_probs(np.log(p_a), np.log(p_b), 0.37))
    assert mixed.sum() == pytest.approx(1.0)


def test_harmonic_mean_is_below_perplexity():
    logs = np.log(np.array([0.9, 0.9, 0.01]))
    assert harmonic_mean_of_probs(logs) == pytest.approx(3 / 1.81)
    assert perplexity_of(logs) == pytest.approx(math.exp(-np.mean(logs)))
    assert harmonic_mean_of_probs(logs) < perplexity_of(logs)


def test_rejects_a_weight_outside_the_unit_interval():
    with pytest.raises(ValueError, match="lam"):
        mixture_log_probs(np.zeros(2), np.zeros(2), 1.5)
    with pytest.raises(ValueError, match="shape"):
        fit_mixture_weight(np.zeros(2), np.zeros(3))
