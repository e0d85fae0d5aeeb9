"""Anything a caller might pass to a model's constructor, and which argument a model must name for it.

Shared by the tests of every model (tests/test_gates.py, tests/test_rnn_arguments.py), whose
constructors check their arguments with `d2lmini.model_sizes` (#43 item 9).
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

# A size, a generator or a flag as a caller might pass it: 40 such cases reached torch's own errors in the
# gated cells ("randn(): argument 'size' ... must be tuple of ints", "Trying to create tensor with negative
# dimension", a forget bias written into an empty slice) and as many in the RNN.
ANY_ARGUMENT = (st.integers(-3, 50) | st.integers() | st.floats() | st.just(math.nan) | st.booleans()
                | st.none() | st.text(max_size=3) | st.integers(-3, 50).map(np.int64)
                | st.integers(1, 9).map(np.float32) | st.integers(1, 9).map(torch.tensor)
                | st.fractions(max_denominator=3) | st.lists(st.integers(1, 5), max_size=2)
                | st.builds(lambda seed: torch.Generator().manual_seed(seed), st.integers(0, 9)))
# How a size's message names it (its setting's label), with its declared largest value.
SIZES = {"vocab_size": ("vocabulary size", 10_000_000), "num_hiddens": ("hidden size", 100_000)}


def size_problem(vocab_size, num_hiddens) -> str | None:
    """The words naming the first size that is not a whole number in its range, or None if both are."""
    for name, value in (("vocab_size", vocab_size), ("num_hiddens", num_hiddens)):
        label, high = SIZES[name]
        whole = isinstance(value, int | np.integer) and not isinstance(value, bool)
        if not (whole and 1 <= value <= high):
            return label
    return None


def generator_problem(generator) -> str | None:
    """"generator" unless `generator` is None or a torch.Generator (every drawn one is on the CPU)."""
    return None if generator is None or isinstance(generator, torch.Generator) else "generator"


def assert_built_or_refused(construct, problem: str | None, sizes: tuple | None) -> None:
    """`construct()` builds a model when `problem` is None (of `sizes`, (vocab_size, num_hiddens), as plain
    ints, unless None: a parameter dict), else raises a one-line TypeError/ValueError holding `problem`.
    On the meta device, so that a large valid model costs no memory."""
    with torch.device("meta"):
        if problem is None:
            model = construct()
            if sizes is not None:
                assert (model.vocab_size, model.num_hiddens) == sizes
                assert type(model.vocab_size) is int and type(model.num_hiddens) is int
            return
        with pytest.raises((TypeError, ValueError)) as refused:
            construct()
    assert problem in str(refused.value) and "\n" not in str(refused.value)
