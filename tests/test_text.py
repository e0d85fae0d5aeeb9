"""Tokenisation and the vocabulary."""

import pytest

from d2lmini.text import UNK, Vocab, preprocess, tokenize


def test_preprocess_keeps_letters_and_single_spaces():
    assert preprocess("The Time-Machine, 1895!\n\nBy H.G.") == "the time machine by h g "


def test_tokenize_characters_and_words():
    assert tokenize("ab c") == ["a", "b", " ", "c"]
    assert tokenize("ab  c", level="word") == ["ab", "c"]
    with pytest.raises(ValueError, match="char"):
        tokenize("abc", level="byte")


def test_vocab_orders_by_frequency_then_alphabet_and_reserves_unk():
    vocab = Vocab(tokenize("banana bread"))
    assert vocab.idx_to_token[0] == UNK
    assert vocab.idx_to_token[1:4] == ["a", "b", "n"]  # a:4, then b:2 and n:2 in alphabetical order
    assert len(vocab) == 1 + len(set("banana bread"))


def test_vocab_round_trip_and_unknown_tokens():
    vocab = Vocab(tokenize("hello world"))
    indices = vocab.indices("low")
    assert vocab.decode(indices) == "low"
    assert vocab["z"] == vocab.unk == 0
    assert vocab.to_tokens([vocab["h"], 0]) == ["h", UNK]
    assert vocab.unknown_characters("hi zoe") == ["i", "z"]
    assert "h" in vocab and "z" not in vocab


def test_min_freq_drops_rare_tokens():
    vocab = Vocab(tokenize("aaab"), min_freq=2)
    assert vocab.idx_to_token == [UNK, "a"]
