"""Gradient clipping, perplexity evaluation and training."""

import dataclasses
import math
import time

import pytest
import torch
from settings_examples import an_invalid_choice

from d2lmini.divergence import BLOW_UP, MAX_LOSS, blown_up, divergence_limit
from d2lmini.metrics import perplexity_from_bits, unigram_bits
from d2lmini.rnn import RNNScratch
from d2lmini.settings import TRAIN_SETTINGS
from d2lmini.train import (
    TrainConfig,
    TrainingDiverged,
    estimate_perplexity,
    evaluate_perplexity,
    make_model,
    train,
)

pytestmark = pytest.mark.torch_dependent


def test_a_uniform_model_has_perplexity_equal_to_the_vocabulary_size(bundled):
    model = RNNScratch(len(bundled.vocab), 8)
    with torch.no_grad():
        model.W_hq.zero_()  # all logits equal: every token gets probability 1/|V|
    _, valid = bundled.split()
    assert evaluate_perplexity(model, valid) == pytest.approx(len(bundled.vocab), rel=1e-5)


def test_evaluation_weights_every_token_equally():
    model = RNNScratch(5, 4, generator=torch.Generator().manual_seed(0))
    text = torch.randint(5, (301,), generator=torch.Generator().manual_seed(1))
    one_stream = evaluate_perplexity(model, text, num_steps=300)
    chunked = evaluate_perplexity(model, text, num_steps=7)
    assert chunked == pytest.approx(one_stream, rel=1e-5), "carrying the state makes chunking invisible"
    assert estimate_perplexity(model, text, 1, 300) == pytest.approx(one_stream, rel=1e-5)


def test_one_stream_evaluation_continues_the_text_before_it():
    """With `before`, every token of the text is scored, each seeing the text before it (as a
    baseline does): the same as scoring the tail of one long stream by hand."""
    model = RNNScratch(5, 6, generator=torch.Generator().manual_seed(0))
    whole = torch.randint(5, (400,), generator=torch.Generator().manual_seed(2))
    before, text = whole[:300], whole[300:]
    with torch.no_grad():
        logits, _ = model(whole[None, :-1], model.begin_state(1))
        nats = torch.nn.functional.cross_entropy(logits[299:], whole[300:], reduction="mean")
    assert evaluate_perplexity(model, text, before, num_steps=13) == pytest.approx(math.exp(nats), rel=1e-5)
    cold = evaluate_perplexity(model, text)
    assert evaluate_perplexity(model, text, before) != pytest.approx(cold, rel=1e-4)


def test_cold_started_streams_are_a_different_number_after_stateful_training(bundled):
    """The estimate that many zero-state streams give is not the one-stream measurement."""
    config = TrainConfig(num_hiddens=32, num_epochs=None, max_minibatches=60, batch_size=16, seed=0)
    model = make_model("scratch", len(bundled.vocab), config)
    train_idx, valid_idx = bundled.split()
    history = train(model, train_idx, valid_idx, config)
    one_stream = evaluate_perplexity(model, valid_idx, train_idx)
    assert history.valid_perplexity[-1] == one_stream, "train records the one-stream number"
    cold = estimate_perplexity(model, valid_idx, batch_size=512, num_steps=35)  # streams of 25 characters
    assert cold > one_stream * 1.02


def run(corpus, **overrides):
    config = TrainConfig(**{"num_hiddens": 32, "num_epochs": 1, "seed": 0, **overrides})
    model = make_model("scratch", len(corpus.vocab), config)
    train_idx, valid_idx = corpus.split()
    return train(model, train_idx[:20_000], valid_idx[:4000], config)


def test_two_seeded_runs_give_identical_numbers(bundled):
    first, second = run(bundled), run(bundled)
    assert first.step_loss == second.step_loss
    assert first.valid_perplexity == second.valid_perplexity
    assert run(bundled, seed=1).step_loss != first.step_loss


def test_a_few_seconds_of_training_beat_the_unigram_baseline(bundled):
    config = TrainConfig(num_hiddens=64, num_epochs=1, seed=0)  # the defaults, a fixed amount of work
    model = make_model("scratch", len(bundled.vocab), config)
    train_idx, valid_idx = bundled.split()
    history = train(model, train_idx, valid_idx, config)
    train_text, valid_text = bundled.split_text()
    unigram = perplexity_from_bits(unigram_bits(train_text, valid_text))
    assert history.valid_perplexity[-1] < unigram
    assert len(history.step_grad_norm) == len(history.step_loss) > 0
    assert all(math.isfinite(r) and r > 0 for r in history.tokens_per_second)


def test_a_huge_learning_rate_is_reported_as_divergence(bundled):
    with pytest.raises(TrainingDiverged, match="learning rate") as info:
        run(bundled, lr=1e6, theta=None)
    assert info.value.epoch == 1 and info.value.step >= 1


def test_impossible_settings_are_clear_errors(bundled):
    with pytest.raises(ValueError, match="learning rate"):
        run(bundled, lr=-1)
    with pytest.raises(ValueError, match="optimizer"):
        run(bundled, optimizer=an_invalid_choice(TRAIN_SETTINGS["optimizer"]))
    with pytest.raises(ValueError, match="does not fit"):
        run(bundled, batch_size=4000, num_steps=100)


def test_training_with_per_element_clipping_records_the_turn(bundled):
    history = run(bundled, clip_mode="value", theta=0.01)
    assert len(history.step_clip_cosine) == len(history.step_loss)
    assert all(-1 <= c <= 1 + 1e-6 for c in history.step_clip_cosine)
    assert history.clipped_steps > 0
    with pytest.raises(ValueError, match="clip_mode"):
        run(bundled, clip_mode="sign")


def test_divergence_keeps_the_history_measured_so_far(bundled):
    with pytest.raises(TrainingDiverged) as info:
        run(bundled, lr=1e6, theta=None)
    assert len(info.value.history.step_loss) == info.value.step - 1


def test_learning_rate_schedules():
    from d2lmini.train import scheduled_lr

    assert [scheduled_lr(0.1, "constant", p) for p in (0, 0.5, 1)] == [0.1, 0.1, 0.1]
    assert [scheduled_lr(0.1, "cosine", p) for p in (0, 0.5, 1, 2)] == pytest.approx([0.1, 0.05, 0, 0])
    with pytest.raises(ValueError, match="lr_schedule"):
        scheduled_lr(0.1, "step", 0.5)


def test_training_follows_the_schedule_over_all_minibatches(bundled):
    history = run(bundled, num_epochs=2)
    lrs = history.step_lr
    assert lrs[0] == pytest.approx(0.01)
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False)), "a cosine only falls"
    assert lrs[-1] < 0.0005, "it reaches (nearly) zero at the end of the last epoch"
    assert run(bundled, lr_schedule="constant").step_lr == [0.01] * len(lrs[: len(lrs) // 2])


def test_a_stricter_loss_limit_stops_training_before_the_update(bundled, monkeypatch):
    import d2lmini.divergence
    from d2lmini.batching import sequential_batches
    from d2lmini.train import History, make_optimizer, train_epoch

    # ln 28 > 1 at the start
    monkeypatch.setattr(d2lmini.divergence, "divergence_limit", lambda vocab_size: 1.0)

    config = TrainConfig(num_hiddens=16, seed=0)
    model = make_model("scratch", len(bundled.vocab), config)
    before = [p.detach().clone() for p in model.parameters()]
    history = History()
    batches = sequential_batches(bundled.indices[:5000], 8, 10, torch.Generator().manual_seed(0))
    with pytest.raises(TrainingDiverged, match="the loss became") as info:
        train_epoch(model, batches, make_optimizer("sgd", model.parameters(), 0.1), None, True,
                    history, 1)
    assert info.value.step == 1 and history.step_loss == []
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_blow_up_is_judged_against_the_uniform_guess_not_by_overflow():
    limit = divergence_limit(28)
    assert limit == pytest.approx(BLOW_UP * math.log(28))
    assert not blown_up(limit * 0.99, 28) and blown_up(limit, 28)
    assert blown_up(math.inf, 28) and blown_up(math.nan, 28)
    assert divergence_limit(2**1100) == MAX_LOSS  # a huge vocabulary: capped where exp overflows


def test_an_overflowing_optimizer_is_divergence_not_a_crash(bundled):
    train_indices, valid_indices = bundled.split()
    config = TrainConfig(num_hiddens=16, optimizer="adam", lr=1e38, theta=None, num_epochs=1,
                         batch_size=8, num_steps=10)
    model = make_model("scratch", len(bundled.vocab), config)
    with pytest.raises(TrainingDiverged) as caught:
        train(model, train_indices[:2000], valid_indices[:500], config)
    assert "diverged" in str(caught.value)


def test_the_last_update_is_judged_too(bundled):
    """One minibatch at an absurd rate: nothing is left to check it but the final model."""
    train_indices, valid_indices = bundled.split()
    config = TrainConfig(num_hiddens=16, optimizer="sgd", lr=1e30, theta=None, num_epochs=1,
                         batch_size=4, num_steps=10, lr_schedule="constant")
    model = make_model("scratch", len(bundled.vocab), config)
    with pytest.raises(TrainingDiverged) as caught:
        train(model, train_indices[:55], valid_indices[:500], config)
    assert len(caught.value.history.step_loss) == 1  # one minibatch, whose loss was still fine
    assert "after the last update" in caught.value.reason


# Issue 20: no number from a non-measurement, runs that end with a result, messages naming the setting.
def tiny(bundled, **change) -> tuple:
    train_indices, valid_indices = bundled.split()
    config = TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, num_epochs=None, max_minibatches=6,
                         checkpoints=2, **change)
    return make_model("scratch", len(bundled.vocab), config), train_indices[:400], valid_indices[:100], config


@pytest.mark.parametrize("valid", [torch.zeros(0, dtype=torch.long), torch.zeros(1, dtype=torch.long)])
def test_a_validation_text_too_short_to_measure_is_an_error(bundled, valid):
    model, train_indices, _, config = tiny(bundled)
    with pytest.raises(ValueError, match="validation text"):
        train(model, train_indices, valid, config)
    with pytest.raises(ValueError, match="validation text"):
        evaluate_perplexity(model, valid)


def test_texts_must_be_index_tensors_of_the_model(bundled):
    model, train_indices, valid_indices, config = tiny(bundled)
    with pytest.raises(TypeError, match="training text"):
        train(model, train_indices.float(), valid_indices, config)
    with pytest.raises(ValueError, match="outside"):
        train(model, train_indices, valid_indices + 100, config)


@pytest.mark.parametrize("change, words", [
    ({"eval_num_steps": -1}, "evaluation steps"), ({"max_seconds": 1e-300}, "time limit"),
    ({"theta": float("nan")}, "clipping θ"), ({"lr": "0.1"}, "learning rate"),
    ({"batch_size": 0}, "batch size"),
])
def test_settings_errors_name_the_setting(bundled, change, words):
    model, train_indices, valid_indices, config = tiny(bundled)
    with pytest.raises((TypeError, ValueError), match=words):
        train(model, train_indices, valid_indices, dataclasses.replace(config, **change))


def test_a_budget_spent_before_one_minibatch_is_an_error_not_a_history(bundled, monkeypatch):
    from d2lmini.train import Budget

    model, train_indices, valid_indices, config = tiny(bundled)
    monkeypatch.setattr(Budget, "spent", lambda self, steps, epochs: True)
    with pytest.raises(ValueError, match="before one minibatch"):
        train(model, train_indices, valid_indices, config)


@pytest.mark.parametrize("raised, words", [(KeyboardInterrupt, "interrupt"),
                                           (ZeroDivisionError, "on_checkpoint callback raised")])
def test_a_stopped_run_returns_its_history_and_says_why(bundled, raised, words):
    model, train_indices, valid_indices, config = tiny(bundled)
    before = [p.detach().clone() for p in model.parameters()]

    def callback(history):
        raise raised

    with pytest.warns(RuntimeWarning, match=words):
        history = train(model, train_indices, valid_indices, config, on_checkpoint=callback)
    assert words in history.stopped and len(history.epoch) == 1 and len(history.step_loss) == 3
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_a_finished_run_has_not_stopped(bundled):
    model, train_indices, valid_indices, config = tiny(bundled)
    seen = []
    history = train(model, train_indices, valid_indices, config,
                    on_checkpoint=lambda h: seen.append(len(h.epoch)))
    assert history.stopped is None and seen == [1, 2] and len(history.step_loss) == 6


@pytest.mark.parametrize("limits, share", [
    ({"max_minibatches": 100, "num_epochs": None, "max_seconds": 1e-3}, 0.1),  # the lab's safety limit
    ({"max_minibatches": None, "num_epochs": 2, "max_seconds": 1e-3}, 0.25),
    ({"max_minibatches": 100, "num_epochs": 1, "max_seconds": None}, 0.5),  # whichever count ends first
])
def test_the_schedule_follows_a_counted_budget_never_the_clock_beside_it(limits, share):
    from d2lmini.train import Budget

    budget = Budget(TrainConfig(**limits), steps_per_epoch=20)
    time.sleep(0.01)  # ten times the time limit: the clock is far ahead of the count
    assert budget.progress(10) == pytest.approx(share)


def test_the_clock_steers_the_schedule_when_it_is_the_only_limit():
    from d2lmini.train import Budget

    config = TrainConfig(max_minibatches=None, num_epochs=None, max_seconds=0.05)
    budget = Budget(config, steps_per_epoch=20)
    time.sleep(0.02)
    assert 0.3 < budget.progress(0) < 1.5



def test_training_validates_once_and_never_inside_the_loop(bundled, monkeypatch):
    """`train` validates its configuration once, at its start; the loop never looks at a setting's
    schema again (the schedule, the clipping mode and the optimizer are resolved before the first step)."""
    import d2lmini.train

    calls, resolved = [], {"lr_schedule", "clip_mode", "lr", "optimizer"}
    validate = d2lmini.train.validate_config
    monkeypatch.setattr(d2lmini.train, "validate_config", lambda *a: calls.append(a) or validate(*a))
    value = d2lmini.train.validate_value

    def checked_once(setting, *args):
        assert setting.name not in resolved, f"{setting.name} was validated again after the start"
        return value(setting, *args)

    for clip_mode, theta in [("norm", 1.0), ("value", 0.5), ("norm", None)]:
        calls.clear()
        model, train_indices, valid_indices, config = tiny(bundled, clip_mode=clip_mode, theta=theta)
        monkeypatch.setattr(d2lmini.train, "validate_value", checked_once)
        history = train(model, train_indices, valid_indices, config)
        monkeypatch.setattr(d2lmini.train, "validate_value", value)
        assert len(calls) == 1 and len(history.step_loss) == config.max_minibatches


def test_the_first_step_uses_the_learning_rate_the_optimizer_was_given(bundled):
    model, train_indices, valid_indices, config = tiny(bundled, lr=0.05)
    history = train(model, train_indices, valid_indices, config)
    assert history.step_lr[0] == 0.05 and history.step_lr[-1] < 0.05
