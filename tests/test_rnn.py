"""The scratch RNN against torch.nn.RNN and the textbook one-hot loop; text generation."""

import pytest
import torch
import torch.nn.functional as F

from d2lmini.rnn import (
    RNNScratch,
    TorchRNN,
    copy_scratch_to_torch,
    init_rnn_params,
    init_rnn_state,
    predict,
    rnn_forward,
    rnn_forward_one_hot,
)
from d2lmini.text import Vocab, tokenize

pytestmark = pytest.mark.torch_dependent


def test_one_hot_times_matrix_is_a_row_lookup(generator):
    W = torch.randn(28, 7, generator=generator)
    x = torch.randint(28, (5, 3), generator=generator)
    assert torch.allclose(F.one_hot(x, 28).float() @ W, W[x])


def test_parameter_shapes_and_initial_state():
    params = init_rnn_params(28, 16, generator=torch.Generator().manual_seed(0))
    assert {k: tuple(v.shape) for k, v in params.items()} == {
        "W_xh": (28, 16), "W_hh": (16, 16), "b_h": (16,), "W_hq": (16, 28), "b_q": (28,)}
    assert torch.equal(init_rnn_state(4, 16), torch.zeros(4, 16))
    small = init_rnn_params(28, 16, init="normal", generator=torch.Generator().manual_seed(0))
    assert small["W_hh"].std() < 0.02 < params["W_hh"].std()
    with pytest.raises(ValueError, match="lecun"):
        init_rnn_params(28, 16, init="orthogonal")


def test_fast_forward_equals_the_textbook_one_hot_loop():
    params = init_rnn_params(10, 6, generator=torch.Generator().manual_seed(1))
    params = {k: v.double() for k, v in params.items()}
    params["b_h"] += 0.1
    X = torch.randint(10, (3, 7), generator=torch.Generator().manual_seed(2))
    state = torch.rand(3, 6, dtype=torch.float64)
    fast_out, fast_state = rnn_forward(X, state, **params)
    slow_out, slow_state = rnn_forward_one_hot(X, state, **params)
    assert fast_out.shape == (7 * 3, 10) and fast_state.shape == (3, 6)
    assert torch.allclose(fast_out, slow_out) and torch.allclose(fast_state, slow_state)


def test_scratch_model_equals_torch_rnn_with_the_same_weights():
    scratch = RNNScratch(12, 8, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        scratch.b_h.uniform_(-0.5, 0.5)
        scratch.b_q.uniform_(-0.5, 0.5)
    twin = TorchRNN(12, 8)
    copy_scratch_to_torch(scratch, twin)
    # In float64, where the two orders of summation agree to ~1e-15: in float32 they differ by about
    # 1e-6 after 9 steps, so a float32 bound of 1e-6 passed or failed with the global random state.
    scratch, twin = scratch.double(), twin.double()
    X = torch.randint(12, (4, 9), generator=torch.Generator().manual_seed(4))
    state = torch.rand(4, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64) - 0.5
    out_a, state_a = scratch(X, state)
    out_b, state_b = twin(X, state)
    assert torch.allclose(out_a, out_b, rtol=0, atol=1e-12)
    assert torch.allclose(state_a, state_b, rtol=0, atol=1e-12)


def test_predict_warms_up_and_generates_known_characters():
    vocab = Vocab(tokenize("abcab cab"))
    model = RNNScratch(len(vocab), 8, generator=torch.Generator().manual_seed(0))
    greedy = predict(model, vocab, "ab", 12)
    assert greedy.startswith("ab") and len(greedy) == 14
    assert greedy == predict(model, vocab, "ab", 12), "greedy decoding is deterministic"
    sampled = predict(model, vocab, "ab", 40, temperature=1.0, generator=torch.Generator().manual_seed(1))
    again = predict(model, vocab, "ab", 40, temperature=1.0, generator=torch.Generator().manual_seed(1))
    assert sampled == again
    assert set(sampled) <= set("abc "), "<unk> must never be generated"


def test_predict_rejects_bad_input_with_helpful_messages():
    vocab = Vocab(tokenize("abc"))
    model = RNNScratch(len(vocab), 4)
    with pytest.raises(ValueError, match="empty"):
        predict(model, vocab, "", 5)
    with pytest.raises(ValueError, match="never seen"):
        predict(model, vocab, "abz", 5)
    with pytest.raises(ValueError, match="positive"):
        predict(model, vocab, "ab", 5, temperature=0)


@pytest.mark.parametrize("change, error, words", [
    ({"num_chars": -3}, ValueError, "num_chars"),
    ({"num_chars": 2.5}, TypeError, "num_chars"),
    ({"num_chars": "10"}, TypeError, "num_chars"),
    ({"num_chars": True}, TypeError, "num_chars"),
    ({"num_chars": 10**9}, ValueError, "num_chars"),
    ({"prefix": 5}, TypeError, "prefix"),
    ({"temperature": -1.0}, ValueError, "temperature"),
    ({"temperature": float("nan")}, ValueError, "temperature"),
    ({"temperature": float("inf")}, ValueError, "temperature"),
    ({"temperature": "1"}, TypeError, "temperature"),
    ({"generator": 0}, TypeError, "generator"),
    ({"vocab": "abc"}, TypeError, "vocab"),
    ({"model": "model"}, TypeError, "model"),
])
def test_predict_names_the_argument_that_is_wrong(change, error, words):
    vocab = Vocab(tokenize("abc"))
    arguments = {"model": RNNScratch(len(vocab), 4), "vocab": vocab, "prefix": "ab", "num_chars": 5,
                 "temperature": None, "generator": None, **change}
    with pytest.raises(error, match=words):
        predict(**arguments)


@pytest.mark.parametrize("temperature", [1e-40, 1e-300, 5e-324, 1e-3, 1.0, 1e6, 1e300])
def test_any_positive_temperature_samples_known_characters(temperature):
    vocab = Vocab(tokenize("abcab cab"))
    model = RNNScratch(len(vocab), 8, generator=torch.Generator().manual_seed(0))
    text = predict(model, vocab, "ab", 30, temperature, torch.Generator().manual_seed(0))
    assert len(text) == 32 and set(text) <= set("abc ")
    if temperature <= 1e-40:
        assert text == predict(model, vocab, "ab", 30), "a vanishing temperature is greedy decoding"


@pytest.mark.parametrize("temperature", [None, 1.0])
def test_a_diverged_model_cannot_predict(temperature):
    vocab = Vocab(tokenize("abc"))
    model = RNNScratch(len(vocab), 4)
    with torch.no_grad():
        model.W_hq.fill_(float("nan"))
    with pytest.raises(ValueError, match="not finite"):
        predict(model, vocab, "ab", 5, temperature, torch.Generator().manual_seed(0))


# Issue 20: predict checks that the model is a d2lmini model made for the vocabulary, and bounds the prefix.
def _models_that_do_not_fit():
    vocab = Vocab(tokenize("abcab cab"))
    good = RNNScratch(len(vocab), 4, generator=torch.Generator().manual_seed(0))
    return vocab, {
        "nn.Linear": (torch.nn.Linear(3, 3), "d2lmini model"),
        "nn.Identity": (torch.nn.Identity(), "d2lmini model"),
        "double": (RNNScratch(len(vocab), 4).double(), "float64"),
        "half": (RNNScratch(len(vocab), 4).half(), "float16"),
        "meta": (RNNScratch(len(vocab), 4).to("meta"), "meta"),
        "60 tokens": (RNNScratch(60, 4), "made for 60 tokens"),
        "good": (good, None),
    }


@pytest.mark.parametrize("case", ["nn.Linear", "nn.Identity", "double", "half", "meta", "60 tokens"])
def test_predict_refuses_a_model_that_does_not_fit_the_vocabulary(case):
    vocab, models = _models_that_do_not_fit()
    model, words = models[case]
    with pytest.raises(ValueError, match=words):
        predict(model, vocab, "ab", 5)


def test_a_ten_token_model_with_the_course_vocabulary_is_refused(bundled):
    with pytest.raises(ValueError, match="made for 10 tokens but the vocabulary has 28"):
        predict(RNNScratch(10, 4), bundled.vocab, "zzz", 5)
    with pytest.raises(ValueError, match="made for 10 tokens"):
        predict(RNNScratch(10, 4), bundled.vocab, "the ", 5)


def test_the_prefix_is_bounded():
    vocab, models = _models_that_do_not_fit()
    with pytest.raises(ValueError, match="prefix"):
        predict(models["good"][0], vocab, "a" * 1_000_000, 5)
    assert len(predict(models["good"][0], vocab, "a" * 10_000, 5)) == 10_005
