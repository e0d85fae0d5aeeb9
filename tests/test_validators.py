"""Inputs the validators used to miss get a clear message naming the argument, or work (issue 33)."""

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from d2lmini.corpus import corpus_from_text  # noqa: E402
from d2lmini.exercises import capstone  # noqa: E402
from d2lmini.exercises.capstone.loop import Budget  # noqa: E402
from d2lmini.train import TrainConfig, estimate_perplexity, evaluate_perplexity, make_model  # noqa: E402
from d2lmini.widgets.memory import memory_view  # noqa: E402

VOCAB = 12
MODEL = make_model("scratch", VOCAB, TrainConfig(num_hiddens=8))
TEXT = torch.randint(0, VOCAB, (200,), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8, torch.int8])
def test_indices_of_another_integer_dtype_are_refused_naming_the_argument(dtype):
    with pytest.raises(TypeError, match=r"\(indices\) must hold its token indices as int64") as raised:
        evaluate_perplexity(MODEL, TEXT.to(dtype))
    assert str(dtype) in str(raised.value)
    with pytest.raises(TypeError, match=r"\(before\)"):
        evaluate_perplexity(MODEL, TEXT, TEXT.to(dtype))


@pytest.mark.parametrize("num_steps", [-1, 0, 2.5, "7", True])
def test_num_steps_below_one_or_not_whole_is_refused(num_steps):
    with pytest.raises((TypeError, ValueError), match="eval_num_steps"):
        evaluate_perplexity(MODEL, TEXT, num_steps=num_steps)


@given(num_steps=st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True), st.none(),
                          st.text(max_size=3)))
@settings(max_examples=40, deadline=None)
def test_any_num_steps_gives_a_perplexity_or_a_message_naming_it(num_steps):
    try:
        value = evaluate_perplexity(MODEL, TEXT[:40], num_steps=num_steps)
    except (TypeError, ValueError) as error:
        assert "eval_num_steps" in str(error)
    else:
        assert value > 1.0 and math.isfinite(value)


def test_estimate_perplexity_takes_none_as_its_setting_documents():
    default = estimate_perplexity(MODEL, TEXT)
    assert estimate_perplexity(MODEL, TEXT, batch_size=None, num_steps=None) == default


@pytest.mark.parametrize("field, value", [("lr", math.nan), ("batch_size", 0), ("epochs", 0),
                                          ("theta", -1.0), ("num_hiddens", 2.5)])
def test_a_capstone_budget_that_cannot_run_blames_the_caller(field, value):
    budget = Budget(**{field: value})
    with pytest.raises((TypeError, ValueError), match=f"budget.{field} = ") as raised:
        capstone.check_capstone(budget=budget)
    assert "not by the student" in str(raised.value)
    with pytest.raises(TypeError, match="Budget or None"):
        capstone.check_capstone(budget={"lr": 0.1})


@pytest.fixture(scope="module")
def corpus():
    return corpus_from_text("abcd", "abcdabdcacbd" * 20)


def test_memory_view_takes_a_numpy_position(corpus):
    model = make_model("scratch", len(corpus.vocab), TrainConfig(num_hiddens=8))
    text = corpus.text[:100]
    view = memory_view(model, text, corpus.vocab, np.int64(60), max_lag=10)
    assert view.position == 60 and type(view.position) is int
    with pytest.raises(ValueError, match="from max_lag = 10 to 99"):
        memory_view(model, text, corpus.vocab, np.float64(60.5), max_lag=10)


def test_memory_view_of_nan_weights_says_so_instead_of_a_probability(corpus):
    model = make_model("scratch", len(corpus.vocab), TrainConfig(num_hiddens=8))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(math.nan)
    view = memory_view(model, corpus.text[:100], corpus.vocab, 60, max_lag=10)
    assert "NaN or infinity" in view.summary and "P = nan" not in view.summary
