"""Self-checks for the exercises of notebook 01 (hidden state)."""

import collections
import string

import torch
import torch.nn.functional as F

from d2lmini.exercises import Verdict, as_shape, count_verdict, self_check, verdict
from d2lmini.exercises.coding import Case, check_function, sampler
from d2lmini.exercises.guard.refusals import RNN
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import _
from d2lmini.rnn import rnn_step


def ngram_table_size(vocab_size: int, n: int) -> int:
    """Return the number of entries of a full n-gram table: |V|^(n-1) contexts times |V| next tokens."""
    return vocab_size**n


def rnn_parameter_count(vocab_size: int, num_hiddens: int) -> int:
    """Return the number of parameters of a one-layer character RNN: W_xh, W_hh, b_h, W_hq, b_q."""
    hidden_layer = vocab_size * num_hiddens + num_hiddens * num_hiddens + num_hiddens
    output_layer = num_hiddens * vocab_size + vocab_size
    return hidden_layer + output_layer


def smallest_order_above(vocab_size: int, limit: int) -> int:
    """Return the smallest n for which the full n-gram table over `vocab_size` tokens exceeds `limit`."""
    n = 1
    while ngram_table_size(vocab_size, n) <= limit:
        n += 1
    return n


@self_check
def check_ngram_order(answer, vocab_size: int = 100, limit: int = 10**9) -> Verdict:
    """Exercise 1: the smallest n whose n-gram table over `vocab_size` tokens exceeds `limit` entries."""
    expected = smallest_order_above(vocab_size, limit)
    below = ngram_table_size(vocab_size, expected - 1)
    return count_verdict(
        answer, expected,
        # TRANSLATORS: {vocab}^{n} is a power (|V| to the n).
        _("{vocab}^{below_n} = {below:,} is still below {limit:,}, and {vocab}^{n} = {above:,} is above: "
          "each extra token of context multiplies the table by {vocab}.").format(
              vocab=vocab_size, below_n=expected - 1, below=below, limit=limit, n=expected,
              above=ngram_table_size(vocab_size, expected)),
        _("Each extra token of context multiplies the table by |V|. Work out |V|^n for growing n (in your "
          "head or in a cell) and stop at the first one above the limit."),
    )


@self_check
def check_rnn_parameter_count(answer, vocab_size: int = 28, num_hiddens: int = 64) -> Verdict:
    """Exercise 2: how many parameters does the RNN have (for any sequence length)?"""
    expected = rnn_parameter_count(vocab_size, num_hiddens)
    return count_verdict(
        answer, expected,
        _("{expected:,} parameters, and the same number for a sequence of 10 or 10,000 characters.").format(
            expected=expected),
        _("Add up the sizes of W_xh (|V| x h), W_hh (h x h), b_h (h), W_hq (h x |V|) and b_q (|V|)."),
    )


@self_check
def check_hidden_state_shape(answer, batch_size: int = 8, num_hiddens: int = 64) -> Verdict:
    """Exercise 3: the shape of H_t for a minibatch of `batch_size` sequences."""
    expected = (batch_size, num_hiddens)
    return verdict(
        as_shape(answer) == expected,
        _("H_t has one row per sequence of the minibatch and one column per hidden unit: {expected}.").format(
            expected=expected),
        # TRANSLATORS: H_{t-1} is the formula's H with index t-1, not a field: keep it as it is.
        _("H_t = tanh(X_t W_xh + H_{t-1} W_hh + b_h): which shape does X_t W_xh have? Give a tuple of "
          "whole numbers such as (rows, columns)."),
    )


# The tokens of the course's vocabulary; any other character becomes <unk>.
TOKENS = set(string.ascii_lowercase + " ")


# The pairs the notebook shows (section 8); the exercise asks for a pair of the student's own.
SHOWN_PAIRS = frozenset({frozenset({"listen", "silent"}), frozenset({"dog bites man", "man bites dog"})})


def same_bag_of_characters(first: str, second: str) -> bool:
    """Return True if the two strings are different but contain the same characters equally often."""
    return first != second and collections.Counter(first) == collections.Counter(second)


@self_check
def check_same_bag(answer) -> Verdict:
    """Exercise 4: two different strings of vocabulary tokens that a bag of characters cannot tell apart."""
    pair = isinstance(answer, tuple | list) and len(answer) == 2 and all(type(s) is str for s in answer)
    outside = sorted(set("".join(answer)) - TOKENS) if pair else []
    shown_pair = pair and frozenset(answer) in SHOWN_PAIRS
    hint = _("Give a tuple of two *different* strings that use exactly the same characters, each the same "
             "number of times.")
    if shown_pair:
        hint = _("That pair is the notebook's own example: find a pair of your own.")
    elif outside:
        # TRANSLATORS: {characters} is a Python string of the characters outside the vocabulary, quoted.
        hint = _("Use only lower-case letters and spaces: {characters} is not in the vocabulary, so the "
                 "model reads it as <unk> and your two strings may look the same to it too.").format(
                     characters=repr("".join(outside)))
    return verdict(
        pair and not outside and not shown_pair and same_bag_of_characters(*answer),
        _("Same bag of characters, different order: a bag-of-words context cannot tell them apart, an "
          "RNN's hidden state can."),
        hint,
    )


def rnn_step_cases(device: torch.device, seed: int = 1, sizes=((3, 4, 2), (8, 28, 16), (1, 1, 1))):
    """Cases for a student's RNN step (here and notebook 02's fused step): random X, H and weights
    for each (batch, inputs, hiddens) in `sizes`, with `d2lmini.rnn.rnn_step` as the reference."""
    rand = sampler(seed, device)
    for batch, num_inputs, num_hiddens in sizes:
        args = (rand(batch, num_inputs), rand(batch, num_hiddens), rand(num_inputs, num_hiddens),
                rand(num_hiddens, num_hiddens), rand(num_hiddens))
        yield Case(f"batch={batch}, inputs={num_inputs}, hiddens={num_hiddens}", args, reference=rnn_step)


def check_rnn_step(step_fn) -> Verdict:
    """`step_fn(X_t, H, W_xh, W_hh, b_h)` must return tanh(X_t W_xh + H W_hh + b_h).

    Section 6 of notebook 01 writes this step out, so its exercise (`check_all_states`) asks
    for the loop over time instead; this check stays for a step written on its own.
    """
    return check_function(
        step_fn, rnn_step_cases,
        _("Your step computes the next hidden state for any batch, input and hidden size: the same "
          "function, with the same weights, runs at every time step."),
        signature="rnn_step(X_t, H, W_xh, W_hh, b_h)", bans=(RNN,),
        mistakes=mistakes_of("01:rnn_step"))


def all_states_reference(tokens, W_xh, W_hh, b_h) -> torch.Tensor:
    """H_1 ... H_T for token indices `tokens` (batch, steps) from a zero H_0: (steps, batch, hiddens)."""
    H = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for t in range(tokens.shape[1]):
        H = rnn_step(F.one_hot(tokens[:, t], W_xh.shape[0]).to(W_xh.dtype), H, W_xh, W_hh, b_h)
        states.append(H)
    return torch.stack(states)


def _all_states_cases(device: torch.device):
    rand = sampler(11, device)
    generator = torch.Generator().manual_seed(12)
    for batch, steps, vocab, hiddens in ((2, 4, 5, 3), (3, 1, 28, 8), (1, 6, 4, 2)):
        tokens = torch.randint(vocab, (batch, steps), generator=generator).to(device)
        args = (tokens, rand(vocab, hiddens), rand(hiddens, hiddens), rand(hiddens))
        yield Case(f"batch={batch}, steps={steps}, vocab={vocab}, hiddens={hiddens}", args,
                   reference=all_states_reference, locate=_locate_state)
    # Weights in float64: the states have the weights' dtype, so a zero state made float32 whatever the
    # weights is seen (#45, the third held-apart set).
    rand64 = sampler(13, device, torch.float64)
    tokens = torch.randint(5, (2, 3), generator=generator).to(device)
    yield Case(_("batch=2, steps=3, vocab=5, hiddens=3, weights in float64"),
               (tokens, rand64(5, 3), rand64(3, 3), rand64(3)), reference=all_states_reference,
               locate=_locate_state)


def _locate_state(what: str, index: tuple) -> str:
    if len(index) != 3:
        return ""
    # TRANSLATORS: {where} of "the result is wrong{where}", with its leading space in English.
    return _(" at time step {step} (H_{step}), sequence {sequence}").format(step=index[0] + 1,
                                                                            sequence=index[1])


def check_all_states(fn) -> Verdict:
    """Exercise 5: `fn(tokens, W_xh, W_hh, b_h)` returns H_1 ... H_T stacked, (steps, batch, hiddens)."""
    return check_function(
        fn, _all_states_cases,
        _("The same step, with the same weights, ran at every time step, each one starting from the state "
          "the previous one left."), signature="all_states(tokens, W_xh, W_hh, b_h)", bans=(RNN,),
        mistakes=mistakes_of("01:all_states"))
