"""Student code runs guarded, and no coding exercise can be passed by calling the package (#17, #20).

Each test feeds a checker a function that does something a student might do (or that used to
slip through) and checks the verdict and its message; the guard's own promises (time limit,
interrupts, restored torch, capped output) are tested on `run_guarded` directly.
"""

import math
import signal
import sys
import threading
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from IPython.lib.pretty import pretty
from solution_files import load_solution

import d2lmini.batching
import d2lmini.clipping
import d2lmini.ngram
import d2lmini.rnn
import d2lmini.train
from d2lmini.exercises import (
    bptt,
    clipping,
    concat_matmul,
    guard,
    hidden_state,
    one_hot,
    perplexity,
    rnn_scratch,
)
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.exercises.guard import CappedText, run_guarded

pytestmark = pytest.mark.torch_dependent

# --- calling the package's reference is refused ------------------------------------------------


def batches_by_the_package(indices, batch_size, num_steps, offset):
    return d2lmini.batching.sequential_batches(indices, batch_size, num_steps, device=indices.device,
                                               offset=offset)


def forward_by_the_package(*args):
    return d2lmini.rnn.rnn_forward(*args)


def train_loop_by_the_package(model, batches, optimizer):
    return d2lmini.train.train_epoch(model, batches, optimizer, None, True, d2lmini.train.History(), 0)[0]


def bptt_by_the_package(*args):
    return bptt.reference_bptt(*args)


def kn_by_the_package(text, context, char, discount=0.75):
    return d2lmini.ngram.KneserNey(2, discount, floor=False).fit(text).prob(context, char)


def clip_by_the_package(grads, theta):
    holders = [g.clone().requires_grad_() for g in grads]
    for holder in holders:
        holder.grad = holder.detach().clone()
    d2lmini.clipping.clip_gradients(holders, theta)
    return [holder.grad for holder in holders]


def clip_by_torch(grads, theta):
    holders = [g.clone().requires_grad_() for g in grads]
    for holder in holders:
        holder.grad = holder.detach().clone()
    torch.nn.utils.clip_grad_norm_(holders, theta)
    return [holder.grad for holder in holders]


def clip_by_torch_total_norm(grads, theta):
    norm = torch.nn.utils.get_total_norm(grads)
    return [g * min(1.0, theta / float(norm)) for g in grads]


def clip_catching_the_refusal(grads, theta):
    try:
        return clip_by_torch(grads, theta)
    except Exception:  # a student who hides the refusal still gets it named
        return load_solution("06").my_clip(grads, theta)


def step_by_the_package(*args):
    return d2lmini.rnn.rnn_step(*args)


@pytest.mark.parametrize("check, wrong, words", [
    (one_hot.check_sequential_batches, batches_by_the_package, "d2lmini.batching.sequential_batches"),
    (rnn_scratch.check_forward, forward_by_the_package, "d2lmini.rnn.rnn_forward"),
    (rnn_scratch.check_train_loop, train_loop_by_the_package, "d2lmini.train.train_epoch"),
    (bptt.check_bptt, bptt_by_the_package, "d2lmini.exercises.bptt.reference_bptt"),
    (perplexity.check_kn_bigram, kn_by_the_package, "d2lmini.ngram.KneserNey"),
    (clipping.check_clip_function, clip_by_the_package, "d2lmini.clipping.clip_gradients"),
    (clipping.check_clip_function, clip_by_torch, "torch's gradient clipping"),
    pytest.param(clipping.check_clip_function, clip_by_torch_total_norm, "torch's gradient clipping",
                 marks=pytest.mark.skipif(not hasattr(torch.nn.utils, "get_total_norm"),
                                          reason="torch.nn.utils.get_total_norm is new in torch 2.6")),
    (clipping.check_clip_function, clip_catching_the_refusal, "torch's gradient clipping"),
    (hidden_state.check_rnn_step, step_by_the_package, "d2lmini.rnn.rnn_step"),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) and not hasattr(v, "__self__") else None)
def test_calling_the_reference_is_refused_and_named(check, wrong, words):
    result = check(wrong)
    assert not result and result.message.startswith("Not yet"), result.message
    assert words in result.message and "write it yourself" in result.message, result.message


# --- the holes of #17 ------------------------------------------------------------------------------


def one_hot_as_wide_as_the_largest_index(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(int(X.max()) + 1, device=X.device)).float()


def one_hot_in_float64(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)).double()


def one_hot_in_float16(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)).half()


def fused_with_a_broadcast_product(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + (H.unsqueeze(2) * W_hh.unsqueeze(0)).sum(1) + b_h)


def fused_with_a_column_loop(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + sum(H[:, k : k + 1] * W_hh[k] for k in range(H.shape[1])) + b_h)


def fused_with_two_einsums(X, H, W_xh, W_hh, b_h):
    return torch.tanh(torch.einsum("bi,ih->bh", X, W_xh) + torch.einsum("bj,jh->bh", H, W_hh) + b_h)


def fused_with_tensordot(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + torch.tensordot(H, W_hh, dims=1) + b_h)


def lookup_by_eye_and_a_broadcast_sum(W, X):
    rows = torch.eye(W.shape[0], dtype=W.dtype, device=W.device)[X]
    return (rows.unsqueeze(-1) * W).sum(-2)


def lookup_by_comparison_and_a_broadcast_sum(W, X):
    rows = X.unsqueeze(-1) == torch.arange(W.shape[0], device=W.device)
    return (rows.unsqueeze(-1) * W).sum(-2)


def lookup_by_where(W, X):
    rows = X.unsqueeze(-1) == torch.arange(W.shape[0], device=W.device)
    return torch.where(rows.unsqueeze(-1), W, 0.0).sum(-2)


@pytest.mark.parametrize("check, wrong, words", [
    (one_hot.check_one_hot, one_hot_as_wide_as_the_largest_index, "(largest index 2) and vocab_size=6"),
    (one_hot.check_one_hot, one_hot_in_float64, "has dtype torch.float64; expected torch.float32"),
    (one_hot.check_one_hot, one_hot_in_float16, "has dtype torch.float16; expected torch.float32"),
    (concat_matmul.check_fused_step, fused_with_a_broadcast_product, "more than once"),
    (concat_matmul.check_fused_step, fused_with_a_column_loop, "more than once"),
    (concat_matmul.check_fused_step, fused_with_two_einsums, "more than once"),
    (concat_matmul.check_fused_step, fused_with_tensordot, "more than once"),
    (one_hot.check_lookup, lookup_by_eye_and_a_broadcast_sum, "rows of eye"),
    (one_hot.check_lookup, lookup_by_comparison_and_a_broadcast_sum, "broadcast multiply"),
    (one_hot.check_lookup, lookup_by_where, "broadcast multiply"),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) and not hasattr(v, "__self__") else None)
def test_a_disguised_shortcut_fails_and_is_named(check, wrong, words):
    result = check(wrong)
    assert not result and result.message.startswith("Not yet"), result.message
    assert words in result.message, result.message


def step_that_replaces_tanh(X_t, H, W_xh, W_hh, b_h):
    result = torch.tanh(X_t @ W_xh + H @ W_hh + b_h)
    torch.tanh = lambda x: x  # after its first call: later references would use it if computed lazily
    return result


def step_that_replaces_matmul(X_t, H, W_xh, W_hh, b_h):
    torch.matmul = lambda a, b: a @ b
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


def step_that_replaces_a_tensor_method(X_t, H, W_xh, W_hh, b_h):
    torch.Tensor.tanh = lambda self: self
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


def step_that_replaces_a_functional(X_t, H, W_xh, W_hh, b_h):
    F.one_hot = lambda *args: None
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


@pytest.mark.parametrize("wrong, name", [
    (step_that_replaces_tanh, "torch.tanh"), (step_that_replaces_matmul, "torch.matmul"),
    (step_that_replaces_a_tensor_method, "Tensor.tanh"), (step_that_replaces_a_functional, "one_hot"),
])
def test_a_replaced_torch_function_is_put_back_and_named(wrong, name):
    originals = torch.tanh, torch.matmul, torch.Tensor.tanh, F.one_hot
    result = hidden_state.check_rnn_step(wrong)
    assert (torch.tanh, torch.matmul, torch.Tensor.tanh, F.one_hot) == originals
    assert not result and name in result.message and "put back" in result.message, result.message
    assert hidden_state.check_rnn_step(load_solution("01").rnn_step)


def test_expected_values_are_sealed_before_the_students_code_runs_and_recomputed_after(monkeypatch):
    calls = []
    real_step = hidden_state.rnn_step

    def counting_reference(*args):
        calls.append("reference")
        return real_step(*args)

    def student(*args):
        calls.append("student")
        return load_solution("01").rnn_step(*args)

    monkeypatch.setattr(hidden_state, "rnn_step", counting_reference)
    assert hidden_state.check_rnn_step(student)
    cases = calls.index("student")  # every case's reference ran (its digest kept) before the student's code
    assert cases == 3 and calls[cases:] == ["student", "reference"] * cases  # ... and again after each call


# --- the guard: time, exits, interrupts, output, odd results -----------------------------------------


def loops_forever(*args):
    while True:
        pass


def endless_batches(indices, batch_size, num_steps, offset):
    while True:
        yield indices[: batch_size * num_steps].reshape(batch_size, num_steps), indices[:1]


def batches_stuck_before_the_first(indices, batch_size, num_steps, offset):
    while True:
        pass
    yield indices, indices


def loops_and_catches_exceptions(*args):
    while True:
        try:
            sum(range(100))
        except Exception:  # the time limit is not an Exception: it still ends the loop
            pass


@pytest.mark.parametrize("check, wrong, words", [
    (hidden_state.check_rnn_step, loops_forever, "still running after"),
    (one_hot.check_sequential_batches, endless_batches, "sequence of"),
    (one_hot.check_sequential_batches, batches_stuck_before_the_first, "still running after"),
    (rnn_scratch.check_train_loop, loops_forever, "still running after"),
    (hidden_state.check_rnn_step, loops_and_catches_exceptions, "still running after"),
])
def test_a_function_that_never_ends_gets_a_verdict_in_seconds(check, wrong, words, monkeypatch):
    monkeypatch.setattr(guard, "TIME_LIMIT", 0.5)  # read at each call: the check waits half a second
    start = time.monotonic()
    result = check(wrong)
    assert time.monotonic() - start < 4
    assert not result and words in result.message, result.message
    assert "0.5 seconds" in result.message or words == "sequence of"
    assert threading.active_count() == 1  # no watchdog or student thread left behind


def exits(*args):
    sys.exit(3)


def interrupts(*args):
    raise KeyboardInterrupt


def raises_generator_exit(*args):
    raise GeneratorExit


@pytest.mark.parametrize("wrong, words", [
    (exits, "SystemExit"), (interrupts, "KeyboardInterrupt"), (raises_generator_exit, "GeneratorExit"),
])
def test_exits_and_interrupts_raised_by_the_code_become_a_verdict(wrong, words):
    result = hidden_state.check_rnn_step(wrong)
    assert not result and words in result.message


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs signals")
def test_a_real_interrupt_is_raised_again_after_cleanup():
    original, handler = torch.tanh, signal.getsignal(signal.SIGINT)  # SIG_IGN in a background job

    def interrupted_by_the_user():
        torch.tanh = None
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        time.sleep(2)

    with pytest.raises(KeyboardInterrupt):
        run_guarded(interrupted_by_the_user, ())
    assert torch.tanh is original and sys.getprofile() is None
    assert signal.getsignal(signal.SIGINT) == handler, "the handler in place before the check is back"


def prints_a_lot(X_t, H, W_xh, W_hh, b_h):
    print("x" * 2_000_000)
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


def test_printing_is_capped(capsys):
    result = hidden_state.check_rnn_step(prints_a_lot)
    assert result and capsys.readouterr().out == ""
    shown = pretty(result)  # what the notebook shows: the capped printing, then the verdict
    assert len(shown) < 5000 and "more characters printed, not shown" in shown
    assert shown.startswith("What your function printed:\nxxx") and shown.endswith(result.message)


def test_capped_text_keeps_the_start():
    text = CappedText(limit=5)
    text.write("abc")
    text.write("defgh")
    assert text.shown().startswith("abcde") and "3 more characters" in text.shown()


ODD_RESULTS = [10**400, "0.5", b"x", np.zeros((3, 2)), np.float64("nan"), float("inf"), -0.0,
               torch.zeros(3, 2).to_sparse(), torch.zeros(3, 2, device="meta"),
               torch.tensor(1.0, device="meta"), (x for x in range(3)), object(), [None], (1, 2, 3),
               torch.zeros(0), torch.zeros(3, 2, dtype=torch.complex64), torch.nn.Parameter(torch.zeros(2)),
               {"a": 1}, math.nan, True, 1j]


@pytest.mark.parametrize("value", ODD_RESULTS, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("name, check", [
    ("rnn_step", hidden_state.check_rnn_step), ("perplexity", perplexity.check_perplexity_function),
    ("kn_bigram", perplexity.check_kn_bigram), ("batches_with_tail", one_hot.check_sequential_batches),
    ("bptt", bptt.check_bptt), ("train_loop", rnn_scratch.check_train_loop),
    ("my_clip", clipping.check_clip_function),
])
def test_an_odd_result_gets_a_verdict(name, check, value):
    result = check(lambda *args, **kwargs: value)
    assert not result
    assert result.message.startswith("Not yet") or result.message == NOT_ATTEMPTED
