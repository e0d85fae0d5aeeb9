"""Tests for the self-checks of notebook 01."""

import pytest
import torch
from IPython.lib.pretty import pretty

from d2lmini.exercises.hidden_state import (
    check_all_states,
    check_hidden_state_shape,
    check_ngram_order,
    check_rnn_parameter_count,
    check_same_bag,
    rnn_parameter_count,
    same_bag_of_characters,
)
from d2lmini.rnn import RNNScratch

pytestmark = pytest.mark.torch_dependent


def test_ngram_order_is_the_first_table_above_the_limit():
    assert 28**6 <= 10**9 < 28**7
    assert check_ngram_order(7, vocab_size=28)
    assert not check_ngram_order(6, vocab_size=28)
    assert not check_ngram_order(8, vocab_size=28)
    assert not check_ngram_order(None)
    assert check_ngram_order(4, vocab_size=10, limit=1000)  # 10**3 is not above 1000


def test_rnn_parameter_count_matches_a_real_model():
    model = RNNScratch(28, 64)
    real = sum(p.numel() for p in model.parameters())
    assert rnn_parameter_count(28, 64) == real == 1792 + 4096 + 64 + 1792 + 28
    assert check_rnn_parameter_count(real)
    assert not check_rnn_parameter_count(real - 28)
    assert not check_rnn_parameter_count("many")


def test_hidden_state_shape():
    assert check_hidden_state_shape((8, 64))
    assert check_hidden_state_shape([8, 64])
    assert not check_hidden_state_shape((64, 8))
    assert not check_hidden_state_shape(None)


def test_same_bag():
    assert same_bag_of_characters("listen", "silent")
    assert not same_bag_of_characters("listen", "listen")
    assert not same_bag_of_characters("listen", "lisent ")
    assert check_same_bag(("cat bites dog", "dog bites cat"))
    assert not check_same_bag(("abc", "abd"))
    assert not check_same_bag(None)
    assert not check_same_bag(("only one",))


def test_same_bag_rejects_strings_that_all_become_unknown_tokens():
    # "XY" and "YX" are both <unk><unk> to the model: they prove nothing about order.
    result = check_same_bag(("XY", "YX"))
    assert not result and "not in the vocabulary" in result.message
    assert not check_same_bag(("a!", "!a"))


def test_a_verdict_prints_nothing_and_displays_its_message(capsys):
    wrong, right = check_ngram_order(6, vocab_size=28), check_ngram_order(7, vocab_size=28)
    assert capsys.readouterr().out == ""
    assert pretty(wrong).startswith("Not yet.") and pretty(right).startswith("Correct!")
    assert pretty(wrong) == wrong.message and str(right) == right.message


def all_states_from_a_zero_state(tokens, W_xh, W_hh, b_h, dtype=None):
    H = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=dtype or W_hh.dtype, device=W_hh.device)
    states = []
    for t in range(tokens.shape[1]):
        H = torch.tanh(W_xh[tokens[:, t]] + H @ W_hh + b_h)
        states.append(H)
    return torch.stack(states)


def test_all_states_keep_the_weights_dtype():
    # #45, the third held-apart set: a zero state made float32 whatever the weights' dtype was accepted
    # while every case was float32; a float64 case refuses it and names the dtype, not the values.
    right = check_all_states(all_states_from_a_zero_state)
    assert right, right.message
    result = check_all_states(lambda *args: all_states_from_a_zero_state(*args, dtype=torch.float32))
    assert not result and "float64" in result.message, result.message
