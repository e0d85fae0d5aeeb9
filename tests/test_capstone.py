"""The capstone of notebook 07: the instructors' pieces pass, broken ones are named, stubs are unattempted."""

import importlib.util
import math

import pytest
import torch
from solution_files import SOLUTIONS

from d2lmini.corpus import load_corpus
from d2lmini.exercises import capstone
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.metrics import unigram_bits


def load_pieces() -> dict:
    spec = importlib.util.spec_from_file_location("solution_capstone", SOLUTIONS / "capstone.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: getattr(module, name) for name, _, _ in capstone.PIECES}


@pytest.fixture(scope="module")
def pieces():
    return load_pieces()


def stub(*args):
    return None


def test_the_solution_passes(pieces):
    verdict = capstone.check_capstone(**pieces)
    assert verdict and verdict.message.startswith("Correct!"), verdict.message


def test_the_solution_trains_to_the_package_perplexity(pieces):
    problem, mine, reference = capstone._compare_training(pieces, capstone.Budget())
    assert problem is None and abs(mine / reference - 1) <= capstone.TOLERANCE
    assert reference < 0.7 * 2 ** unigram_bits(*load_corpus("bundled").split_text())  # it really learns


def test_unattempted_shows_not_attempted(capsys):
    verdict = capstone.check_capstone()
    assert not verdict and verdict.message == NOT_ATTEMPTED
    assert capsys.readouterr().out == ""  # the verdict displays itself
    assert capstone.check_capstone(rnn_step=stub, forward=stub, backward=stub, clip=stub,
                                   perplexity=stub).message == NOT_ATTEMPTED


def test_a_piece_left_as_a_stub_is_named(pieces):
    verdict = capstone.check_capstone(**dict(pieces, clip=stub))
    assert not verdict
    assert "first piece that differs is clip" in verdict.message and "still returns None" in verdict.message


def bptt_without_tanh_derivative(X, state, hiddens, d_outputs, W_hh, W_hq):
    """The backward pass with dA = dH: the (1 - h^2) factor forgotten."""
    steps, batch, num_hiddens = hiddens.shape
    d_W_xh = torch.zeros(W_hq.shape[1], num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    d_W_hh, d_b_h = torch.zeros_like(W_hh), torch.zeros(num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    d_next = torch.zeros(batch, num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    for t in reversed(range(steps)):
        dA = d_outputs[t * batch : (t + 1) * batch] @ W_hq.T + d_next
        H_prev = state if t == 0 else hiddens[t - 1]
        d_W_hh, d_b_h = d_W_hh + H_prev.T @ dA, d_b_h + dA.sum(0)
        d_W_xh = d_W_xh.index_add(0, X[:, t], dA)
        d_next = dA @ W_hh.T
    return d_W_xh, d_W_hh, d_b_h


def clip_per_element(grads, theta):
    return [g.clamp(-theta, theta) for g in grads]


@pytest.mark.parametrize("name, broken", [
    ("backward", bptt_without_tanh_derivative),
    ("clip", clip_per_element),
])
def test_a_broken_piece_is_named(pieces, name, broken):
    verdict = capstone.check_capstone(**dict(pieces, **{name: broken}))
    assert not verdict
    assert verdict.message.startswith(f"Not yet. The first piece that differs is {name} (")


def test_the_first_of_two_broken_pieces_is_named(pieces):
    verdict = capstone.check_capstone(**dict(pieces, backward=bptt_without_tanh_derivative,
                                             clip=clip_per_element))
    assert "first piece that differs is backward" in verdict.message


def test_a_different_training_run_is_caught(pieces):
    """Pieces that each look right alone but train differently fail the comparison of perplexities."""
    def clip_and_shrink(grads, theta):  # as if the learning rate were 0.1% smaller
        return [0.999 * g for g in pieces["clip"](grads, theta)]

    problem, mine, reference = capstone._compare_training(dict(pieces, clip=clip_and_shrink),
                                                          capstone.Budget())
    assert problem is not None and "differs" in problem
    assert math.isfinite(mine) and mine != reference


def test_a_training_run_that_raises_is_reported(pieces):
    def forward_for_one_batch_size(X, state, *params):
        assert X.shape[0] != 8, "only written for the batch sizes of the checks"
        return pieces["forward"](X, state, *params)

    problem, _, _ = capstone._compare_training(dict(pieces, forward=forward_for_one_batch_size),
                                               capstone.Budget())
    assert problem.startswith("Each piece passed its check, but training with them raised AssertionError")


def test_threads_are_restored(pieces):
    threads = torch.get_num_threads()
    capstone._compare_training(pieces, capstone.Budget(minibatches=2))
    assert torch.get_num_threads() == threads
