"""Tests for d2lmini.widgets.clipping: the experiment behind the notebook-06 panel, and the panel."""

import math
import unittest.mock

import ipywidgets as widgets
import pytest
import torch

from d2lmini.batching import sequential_batches
from d2lmini.corpus import corpus_from_text, load_corpus
from d2lmini.train import make_model
from d2lmini.verdicts import text_baselines
from d2lmini.widgets.clipping import (
    ClippingPanel,
    ClippingResult,
    clipping_config,
    describe_result,
    draw_result,
    make_clipping_panel,
    parse_theta,
    run_clipping_experiment,
)

pytestmark = pytest.mark.torch_dependent


@pytest.fixture(scope="module")
def small(bundled):
    """The first 30,000 characters of the bundled corpus: about 24 minibatches per epoch."""
    return corpus_from_text("small", bundled.text[:30_000])


def test_parse_theta():
    assert parse_theta("off") is None
    assert parse_theta(None) is None
    assert parse_theta("0.25") == 0.25
    assert parse_theta(2) == 2.0
    for bad in ("0", -1.0, "nan", "inf"):
        with pytest.raises(ValueError):
            parse_theta(bad)


def test_clipped_run_records_every_minibatch(small):
    result = run_clipping_experiment("0.5", lr=1.0, num_epochs=1, corpus=small)
    train, _ = small.split()
    expected_steps = sum(1 for _ in sequential_batches(train, 32, 35, torch.Generator().manual_seed(0)))
    assert result.steps == expected_steps
    assert len(result.step_grad_norm) == len(result.step_loss) == expected_steps
    assert result.clipped_steps == sum(norm > 0.5 for norm in result.step_grad_norm)
    assert result.theta == 0.5 and result.method == "norm"
    assert result.status == "ok"
    assert result.train_perplexity < len(small.vocab)
    assert f"of {expected_steps} steps clipped" in result.message


def test_off_never_clips(small):
    result = run_clipping_experiment("off", lr=1.0, num_epochs=1, corpus=small)
    assert result.theta is None
    assert result.clipped_steps == 0
    assert result.steps > 0 and all(math.isfinite(n) for n in result.step_grad_norm)


def test_same_seed_same_run_other_seed_other_run(small):
    first = run_clipping_experiment(1.0, lr=1.0, num_epochs=1, seed=3, corpus=small)
    again = run_clipping_experiment(1.0, lr=1.0, num_epochs=1, seed=3, corpus=small)
    other = run_clipping_experiment(1.0, lr=1.0, num_epochs=1, seed=4, corpus=small)
    assert first.step_loss == again.step_loss
    assert first.step_loss != other.step_loss


def test_divergence_is_reported_not_raised(bundled):
    result = run_clipping_experiment("off", lr=100.0, num_epochs=1, corpus=bundled)
    assert result.status == "diverged"
    assert "diverged" in result.message.lower()
    assert result.train_perplexity is None and result.valid_perplexity is None


def test_large_learning_rate_without_clipping_explodes_and_clipping_saves_it(bundled):
    unclipped = run_clipping_experiment(None, lr=2.5, num_epochs=1, corpus=bundled)
    clipped = run_clipping_experiment(1.0, lr=2.5, num_epochs=1, corpus=bundled)
    assert unclipped.status in ("exploded", "diverged")
    assert clipped.status == "ok"
    assert clipped.train_perplexity < len(bundled.vocab)


def test_describe_result_explains_an_explosion():
    result = ClippingResult("norm", None, 3.0, seed=0, vocab_size=28, steps=10, step_grad_norm=[1.0, 500.0],
                            step_loss=[], clipped_steps=0, step_cosine=[], status="exploded",
                            train_perplexity=1e6, valid_perplexity=2e6)
    message = describe_result(result)
    assert "no clipping" in message and "500" in message
    assert "worse than guessing uniformly" in message and "28" in message


def test_norm_clipping_bounds_every_step(small):
    """With global-norm clipping each SGD step moves the parameters by at most lr * theta."""
    from d2lmini.train import train

    config = clipping_config(theta=1e-3, lr=1.0, num_epochs=1)
    model = make_model("scratch", len(small.vocab), config)
    before = torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])
    history = train(model, *small.split(), config)
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert history.clipped_steps == len(history.step_loss)  # every step needed clipping
    steps = len(history.step_loss)
    rounding = steps * float(before.abs().max()) * torch.finfo(torch.float32).eps * before.numel() ** 0.5
    assert float(torch.linalg.vector_norm(after - before)) <= steps * 1e-3 * (1 + 1e-5) + rounding


def test_value_clipping_bounds_every_entry_of_every_step(small):
    """With per-element clipping each SGD step moves every parameter by at most lr * c."""
    c, lr = 1e-4, 1.0
    from d2lmini.train import train

    config = clipping_config(theta=c, lr=lr, num_epochs=1, clip_mode="value")
    model = make_model("scratch", len(small.vocab), config)
    before = torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])
    history = train(model, *small.split(), config)
    cosines = history.step_clip_cosine
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    steps = len(history.step_loss)
    assert steps > 0 and len(cosines) == steps == len(history.step_grad_norm)
    rounding = steps * float(before.abs().max()) * torch.finfo(torch.float32).eps  # float32 updates
    assert float((after - before).abs().max()) <= steps * lr * c * (1 + 1e-5) + rounding
    assert history.clipped_steps == steps
    assert all(0 < x <= 1 + 1e-6 for x in cosines) and min(cosines) < 0.99  # clipping bends


def test_value_method_through_the_experiment(small):
    result = run_clipping_experiment(0.01, lr=1.0, num_epochs=1, method="value", corpus=small)
    bent = sum(x < 1 - 1e-6 for x in result.step_cosine)
    assert len(result.step_cosine) == result.steps > 0
    assert result.clipped_steps >= bent > 0
    assert result.method == "value" and "per element, c = 0.01" in result.message
    with pytest.raises(ValueError):
        run_clipping_experiment(None, method="value", corpus=small)
    with pytest.raises(ValueError):
        run_clipping_experiment(1.0, method="per-tensor", corpus=small)


def test_draw_result_handles_a_run_without_steps():
    result = ClippingResult("norm", None, 100.0, seed=0, vocab_size=28, steps=0, step_grad_norm=[],
                            step_loss=[], clipped_steps=0, step_cosine=[], status="diverged")
    figure = draw_result(result)
    assert len(figure.axes) == 2


def test_panel_retrains_when_sliders_move(small):
    panel = make_clipping_panel(small, num_epochs=1)
    assert panel.result.theta == 1.0 and panel.result.lr == 2.5
    assert bytes(panel.image.value).startswith(b"\x89PNG")

    panel.theta.value = "off"
    assert panel.result.theta is None and panel.result.clipped_steps == 0

    panel.theta.value = "0.5"
    panel.lr.value = 1.0
    assert panel.result.theta == 0.5 and panel.result.lr == 1.0
    assert panel.result.status == "ok" and "ok" in panel.status.value
    assert panel.result.clipped_steps == sum(n > 0.5 for n in panel.result.step_grad_norm)

    panel.seed.value = 2
    assert panel.result.seed == 2


def test_slider_values_are_shown_in_labels_that_cannot_be_typed_into(bundled):
    # ipywidgets 8 lets a student type into a SelectionSlider's readout and then ignores it.
    panel = ClippingPanel(bundled, num_epochs=1)
    theta_label, lr_label = panel.readouts
    assert panel.theta.readout is False and panel.lr.readout is False
    assert isinstance(theta_label, widgets.Label) and isinstance(lr_label, widgets.Label)
    assert (theta_label.value, lr_label.value) == ("1", "2.5")
    with unittest.mock.patch.object(ClippingPanel, "update"):  # the labels follow without training
        panel.theta.value, panel.lr.value = "off", 10.0
    assert (theta_label.value, lr_label.value) == ("off", "10.0")
    row = next(box.children for box in panel.widget.children if panel.theta in getattr(box, "children", ()))
    assert row.index(theta_label) == row.index(panel.theta) + 1
    assert row.index(lr_label) == row.index(panel.lr) + 1


def test_panel_shows_a_message_when_training_diverges(bundled):
    panel = ClippingPanel(bundled, num_epochs=1)
    assert panel.result is None  # nothing trained until a slider moves
    panel.lr.value = 100.0  # clipped at theta = 1, steps of length 100 still blow the loss up
    assert panel.result.status == "diverged"
    assert "learning rate 100" in panel.status.value and "turn on gradient clipping" not in panel.status.value
    panel.theta.value = "off"
    assert panel.result.status == "diverged"
    assert "diverged" in panel.status.value and "turn on gradient clipping" in panel.status.value
    assert "Traceback" not in panel.status.value
    assert bytes(panel.image.value).startswith(b"\x89PNG")


def test_a_run_worse_than_the_unigram_is_weak_not_ok():
    """The verdict comes from the baselines: a validation perplexity above the unigram's is "weak"."""
    corpus = load_corpus("bundled")
    baselines = text_baselines(*corpus.split_text())
    result = run_clipping_experiment(1.0, lr=0.01, num_epochs=1, seed=0, corpus=corpus)
    assert result.valid_perplexity > baselines["unigram"], "a barely trained model, for this test"
    assert result.status == "weak"
    assert "unigram" in result.message and "less than the text's letter counts" in result.message
