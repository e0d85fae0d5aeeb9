"""Tests for the self-checks of notebook 01."""

from d2lmini.exercises.hidden_state import (
    check_hidden_state_shape,
    check_ngram_order,
    check_rnn_parameter_count,
    check_same_bag,
    rnn_parameter_count,
    same_bag_of_characters,
)
from d2lmini.rnn import RNNScratch


def test_ngram_order_is_the_first_table_above_the_limit():
    assert 28**6 <= 10**9 < 28**7
    assert check_ngram_order(7, vocab_size=28, quiet=True)
    assert not check_ngram_order(6, vocab_size=28, quiet=True)
    assert not check_ngram_order(8, vocab_size=28, quiet=True)
    assert not check_ngram_order(None, quiet=True)
    assert check_ngram_order(4, vocab_size=10, limit=1000, quiet=True)  # 10**3 is not above 1000


def test_rnn_parameter_count_matches_a_real_model():
    model = RNNScratch(28, 64)
    real = sum(p.numel() for p in model.parameters())
    assert rnn_parameter_count(28, 64) == real == 1792 + 4096 + 64 + 1792 + 28
    assert check_rnn_parameter_count(real, quiet=True)
    assert not check_rnn_parameter_count(real - 28, quiet=True)
    assert not check_rnn_parameter_count("many", quiet=True)


def test_hidden_state_shape():
    assert check_hidden_state_shape((8, 64), quiet=True)
    assert check_hidden_state_shape([8, 64], quiet=True)
    assert not check_hidden_state_shape((64, 8), quiet=True)
    assert not check_hidden_state_shape(None, quiet=True)


def test_same_bag():
    assert same_bag_of_characters("listen", "silent")
    assert not same_bag_of_characters("listen", "listen")
    assert not same_bag_of_characters("listen", "lisent ")
    assert check_same_bag(("cat bites dog", "dog bites cat"), quiet=True)
    assert not check_same_bag(("abc", "abd"), quiet=True)
    assert not check_same_bag(None, quiet=True)
    assert not check_same_bag(("only one",), quiet=True)


def test_same_bag_rejects_strings_that_all_become_unknown_tokens():
    # "XY" and "YX" are both <unk><unk> to the model: they prove nothing about order.
    result = check_same_bag(("XY", "YX"), quiet=True)
    assert not result and "not in the vocabulary" in result.message
    assert not check_same_bag(("a!", "!a"), quiet=True)


def test_messages_are_printed_unless_quiet(capsys):
    check_ngram_order(6, vocab_size=28)
    assert capsys.readouterr().out.startswith("Not yet.")
    check_ngram_order(7, vocab_size=28, quiet=True)
    assert capsys.readouterr().out == ""
