"""Self-checks for the exercises of notebook 01 (hidden state)."""

import collections

from d2lmini.exercises import Verdict, is_count, verdict


def ngram_table_size(vocab_size: int, n: int) -> int:
    """Return the number of entries of a full n-gram table: |V|^(n-1) contexts times |V| next tokens."""
    return vocab_size**n


def rnn_parameter_count(vocab_size: int, num_hiddens: int) -> int:
    """Return the number of parameters of a one-layer character RNN: W_xh, W_hh, b_h, W_hq, b_q."""
    hidden_layer = vocab_size * num_hiddens + num_hiddens * num_hiddens + num_hiddens
    output_layer = num_hiddens * vocab_size + vocab_size
    return hidden_layer + output_layer


def check_ngram_table_size(answer, vocab_size: int = 28, n: int = 4, quiet: bool = False) -> Verdict:
    """Exercise 1: how many probabilities does a full n-gram table over `vocab_size` tokens hold?"""
    expected = ngram_table_size(vocab_size, n)
    return verdict(
        is_count(answer, expected),
        f"A {n}-gram table has {vocab_size}^{n - 1} contexts, each with {vocab_size} next tokens: "
        f"{expected:,} numbers.",
        f"Count the contexts (the previous {n - 1} tokens, each one of {vocab_size}) and multiply by "
        f"the {vocab_size} possible next tokens.",
        quiet,
    )


def check_rnn_parameter_count(answer, vocab_size: int = 28, num_hiddens: int = 64,
                              quiet: bool = False) -> Verdict:
    """Exercise 2: how many parameters does the RNN have (for any sequence length)?"""
    expected = rnn_parameter_count(vocab_size, num_hiddens)
    return verdict(
        is_count(answer, expected),
        f"{expected:,} parameters, and the same number for a sequence of 10 or 10,000 characters.",
        "Add up the sizes of W_xh (|V| x h), W_hh (h x h), b_h (h), W_hq (h x |V|) and b_q (|V|).",
        quiet,
    )


def check_hidden_state_shape(answer, batch_size: int = 8, num_hiddens: int = 64,
                             quiet: bool = False) -> Verdict:
    """Exercise 3: the shape of H_t for a minibatch of `batch_size` sequences."""
    expected = (batch_size, num_hiddens)
    try:
        given = tuple(int(a) for a in answer)
    except (TypeError, ValueError):
        given = None
    return verdict(
        given == expected,
        f"H_t has one row per sequence of the minibatch and one column per hidden unit: {expected}.",
        "H_t = tanh(X_t W_xh + H_{t-1} W_hh + b_h): which shape does X_t W_xh have? "
        "Give a tuple such as (rows, columns).",
        quiet,
    )


def same_bag_of_characters(first: str, second: str) -> bool:
    """Return True if the two strings are different but contain the same characters equally often."""
    return first != second and collections.Counter(first) == collections.Counter(second)


def check_same_bag(answer, quiet: bool = False) -> Verdict:
    """Exercise 4: two different strings that a bag-of-characters model cannot tell apart."""
    ok = (isinstance(answer, tuple | list) and len(answer) == 2
          and all(isinstance(s, str) for s in answer) and same_bag_of_characters(*answer))
    return verdict(
        ok,
        "Same bag of characters, different order: a bag-of-words context cannot tell them apart, "
        "an RNN's hidden state can.",
        "Give a tuple of two *different* strings that use exactly the same characters, "
        "each the same number of times.",
        quiet,
    )
