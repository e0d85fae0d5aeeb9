"""Dynamic evaluation: scores before it adapts, leaves the model alone, and helps on text that repeats."""

import numpy as np
import pytest
import torch

from d2lmini.dynamic import DynamicSettings, dynamic_log_probs, training_gradient_rms
from d2lmini.mixture import perplexity_of, rnn_log_probs
from d2lmini.rnn import RNNScratch

pytestmark = pytest.mark.torch_dependent


@pytest.fixture
def setup():
    generator = torch.Generator().manual_seed(0)
    model = RNNScratch(6, 16, generator=generator)
    train_text = torch.randint(6, (600,), generator=generator)
    phrase = torch.randint(6, (23,), generator=generator)
    held_out = phrase.repeat(12)  # the same 23 characters again and again
    return model, train_text, held_out


def test_without_a_step_it_is_the_static_score(setup):
    model, train_text, held_out = setup
    rms = training_gradient_rms(model, train_text)
    static = rnn_log_probs(model, held_out, history=train_text)
    dynamic = dynamic_log_probs(model, held_out, train_text, rms, DynamicSettings(lr=0.0, segment=17))
    assert dynamic.shape == static.shape == (len(held_out),)
    np.testing.assert_allclose(dynamic, static, rtol=1e-5, atol=1e-5)


def test_the_model_itself_is_not_changed(setup):
    model, train_text, held_out = setup
    before = [p.detach().clone() for p in model.parameters()]
    dynamic_log_probs(model, held_out, train_text, training_gradient_rms(model, train_text),
                      DynamicSettings(lr=0.01))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_adapting_helps_on_text_that_repeats(setup):
    model, train_text, held_out = setup
    rms = training_gradient_rms(model, train_text)
    static = perplexity_of(rnn_log_probs(model, held_out, history=train_text))
    dynamic = perplexity_of(dynamic_log_probs(model, held_out, train_text, rms, DynamicSettings(lr=0.01)))
    assert dynamic < 0.8 * static


def test_full_decay_forgets_every_step(setup):
    # decay 1 puts the weights back to the trained ones after every step: nothing is learned
    model, train_text, held_out = setup
    rms = training_gradient_rms(model, train_text)
    static = rnn_log_probs(model, held_out, history=train_text)
    reset = dynamic_log_probs(model, held_out, train_text, rms, DynamicSettings(lr=0.01, decay=1.0))
    np.testing.assert_allclose(reset, static, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bad", [{"lr": -1.0}, {"decay": 1.5}, {"segment": 0}, {"eps": 0.0}])
def test_settings_are_checked(bad):
    with pytest.raises(ValueError):
        DynamicSettings(**bad)
