"""The coding exercises: each checker accepts the instructors' solution and rejects typical mistakes.

For every checker, the solution in `solutions/` passes and at least two distinct wrong
functions fail with a message that names what is wrong. The framework itself
(`d2lmini.exercises.coding`) is tested at the end.
"""

import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from IPython.lib.pretty import pretty
from solution_files import load_solution

from d2lmini.exercises import bptt, clipping, concat_matmul, hidden_state, one_hot, perplexity, rnn_scratch
from d2lmini.exercises.coding import NOT_ATTEMPTED, CallRecorder, Case, Mistake, check_function, count_matmuls

pytestmark = pytest.mark.torch_dependent

# --- wrong solutions, each a mistake a student makes ------------------------------------------

def step_without_tanh(X, H, W_xh, W_hh, b_h):
    return X @ W_xh + H @ W_hh + b_h


def step_without_bias(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh)


def step_with_swapped_weights(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_hh + H @ W_xh + b_h)


def two_matmuls(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


def fused_in_the_wrong_order(X, H, W_xh, W_hh, b_h):
    return torch.tanh(torch.cat((H, X), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)


def lookup_by_one_hot(W, X):
    return F.one_hot(X, W.shape[0]).to(W.dtype) @ W


def lookup_transposed(W, X):
    return W[X.T] if X.dim() == 2 else W[X]


def one_hot_by_library(X, vocab_size):
    return F.one_hot(X, vocab_size).float()


def one_hot_as_integers(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)).long()


def one_hot_shifted(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(1, vocab_size + 1, device=X.device)).float()


def batches_with_unshifted_labels(indices, batch_size, num_steps, offset):
    for X, _ in load_solution("03").batches_with_tail(indices, batch_size, num_steps, offset):
        yield X, X


def batches_cut_across_rows(indices, batch_size, num_steps, offset):
    length = (len(indices) - offset - 1) // batch_size
    xs = indices[offset : offset + length * batch_size].reshape(length, batch_size).T
    ys = indices[offset + 1 : offset + 1 + length * batch_size].reshape(length, batch_size).T
    for start in range(0, length, num_steps):
        yield xs[:, start : start + num_steps], ys[:, start : start + num_steps]


def batches_dropping_the_tail(indices, batch_size, num_steps, offset):
    """Section 7's iterator as it stands: the leftover steps are dropped."""
    length = (len(indices) - offset - 1) // batch_size
    xs = indices[offset : offset + length * batch_size].reshape(batch_size, length)
    ys = indices[offset + 1 : offset + 1 + length * batch_size].reshape(batch_size, length)
    for start in range(0, length - num_steps + 1, num_steps):
        yield xs[:, start : start + num_steps], ys[:, start : start + num_steps]


def batches_one_short(indices, batch_size, num_steps, offset):
    return list(load_solution("03").batches_with_tail(indices, batch_size, num_steps, offset))[:-1]


def forward_batch_major(X, state, W_xh, W_hh, b_h, W_hq, b_q):
    outputs, H = load_solution("04").forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)
    steps, batch = X.shape[1], X.shape[0]
    return outputs.reshape(steps, batch, -1).transpose(0, 1).reshape(steps * batch, -1), H


def forward_returning_the_first_state(X, state, W_xh, W_hh, b_h, W_hq, b_q):
    outputs, _ = load_solution("04").forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)
    return outputs, state


def _loop(model, batches, optimizer, detach=True, carry=True, zero_grad=True):
    state, losses = None, []
    for X, Y in batches:
        if state is None or not carry:
            state = model.begin_state(X.shape[0])
        elif detach:
            state = state.detach()
        outputs, state = model(X, state)
        loss = F.cross_entropy(outputs, Y.T.reshape(-1))
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def loop_without_detach(model, batches, optimizer):
    return _loop(model, batches, optimizer, detach=False)


def loop_with_fresh_states(model, batches, optimizer):
    return _loop(model, batches, optimizer, carry=False)


def loop_without_zero_grad(model, batches, optimizer):
    return _loop(model, batches, optimizer, zero_grad=False)


def loop_returning_the_last_loss(model, batches, optimizer):
    _loop(model, batches, optimizer)
    return 0.0


def masked_loss_over_all_rows(outputs, Y, lengths):
    unpadded = torch.full_like(lengths, Y.shape[1])
    loss, d_outputs = load_solution("05").masked_loss_and_grad(outputs, Y, unpadded)
    real = (torch.arange(Y.shape[1], device=Y.device) < lengths[:, None]).T.reshape(-1)
    return loss, d_outputs * real[:, None]  # padding left out of the gradient, but counted in the mean


def masked_loss_keeping_padded_rows(outputs, Y, lengths):
    loss, _ = load_solution("05").masked_loss_and_grad(outputs, Y, lengths)
    real = (torch.arange(Y.shape[1], device=Y.device) < lengths[:, None]).T.reshape(-1)
    d_outputs = torch.softmax(outputs, 1)
    d_outputs[torch.arange(len(real)), Y.T.reshape(-1)] -= 1
    return loss, d_outputs / int(real.sum())


def bptt_without_recursion(X, state, hiddens, d_outputs, W_hh, W_hq):
    steps, batch, h = hiddens.shape
    d_outputs = d_outputs.clone()
    zero_next = torch.zeros_like(W_hh)
    return load_solution("05").bptt(X, state, hiddens, d_outputs, zero_next, W_hq)


def bptt_without_tanh_derivative(X, state, hiddens, d_outputs, W_hh, W_hq):
    flat = torch.zeros_like(hiddens)  # 1 - 0**2 = 1: as if tanh were the identity
    grads = load_solution("05").bptt(X, state, flat, d_outputs, W_hh, W_hq)
    return grads


def bptt_with_autograd(X, state, hiddens, d_outputs, W_hh, W_hq):
    W = W_hh.clone().requires_grad_()
    (W.sum() * 0).backward()
    return load_solution("05").bptt(X, state, hiddens, d_outputs, W_hh, W_hq)


def clip_in_place(grads, theta):
    norm = float(torch.sqrt(sum((g**2).sum() for g in grads)))
    for g in grads:
        g.mul_(min(1.0, theta / norm) if norm > 0 else 1.0)
    return grads


def clip_per_tensor(grads, theta):
    return [g * min(1.0, theta / float(g.norm())) if float(g.norm()) > 0 else g.clone() for g in grads]


def clip_dividing_by_zero(grads, theta):
    norm = float(torch.sqrt(sum((g**2).sum() for g in grads)))
    return [g * min(1.0, theta / norm) for g in grads]


def clip_through_data(grads, theta):
    return load_solution("06").my_clip([g.data for g in grads], theta)


def perplexity_naive_softmax(logits, targets):
    probs = logits.exp() / logits.exp().sum(1, keepdim=True)
    return math.exp(-probs[torch.arange(len(targets)), targets].log().mean().item())


def perplexity_by_library(logits, targets):
    return math.exp(F.cross_entropy(logits, targets).item())


def perplexity_harmonic(logits, targets):
    return 1 / logits.softmax(1)[torch.arange(len(targets)), targets].mean().item()


def kn_with_raw_unigram(text, context, char, discount=0.75):
    pairs = Counter(zip(text, text[1:], strict=False))
    followers = {b: c for (a, b), c in pairs.items() if a == context}
    p_unigram = text.count(char) / len(text)
    total = sum(followers.values())
    if total == 0:
        return p_unigram
    return max(followers.get(char, 0) - discount, 0) / total + discount * len(followers) / total * p_unigram


def kn_without_unseen_contexts(text, context, char, discount=0.75):
    pairs = Counter(zip(text, text[1:], strict=False))
    followers = {b: c for (a, b), c in pairs.items() if a == context}
    total = sum(followers.values())
    p_cont = Counter(b for _, b in pairs)[char] / len(pairs)
    return max(followers.get(char, 0) - discount, 0) / total + discount * len(followers) / total * p_cont


def kn_without_discount(text, context, char, discount=0.75):
    return load_solution("07").kn_bigram(text, context, char, discount=1e-12)


def states_from_the_last_step_only(tokens, W_xh, W_hh, b_h):
    return load_solution("01").all_states(tokens, W_xh, W_hh, b_h)[-1:].expand(tokens.shape[1], -1, -1)


def states_that_restart_from_zero(tokens, W_xh, W_hh, b_h):
    zero = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    return torch.stack([torch.tanh(W_xh[x_t] + zero @ W_hh + b_h) for x_t in tokens.T])


def states_batch_first(tokens, W_xh, W_hh, b_h):
    return load_solution("01").all_states(tokens, W_xh, W_hh, b_h).transpose(0, 1)


CHECKERS = {
    "all_states": (hidden_state.check_all_states, "01", [
        (states_from_the_last_step_only, "at time step 1 (H_1)"), (states_that_restart_from_zero, "is wrong"),
        (states_batch_first, "has shape")]),
    "rnn_step": (hidden_state.check_rnn_step, "01", [
        (step_without_tanh, "is wrong at row"), (step_without_bias, "is wrong at row"),
        (step_with_swapped_weights, "raised RuntimeError")]),
    "fused_step": (concat_matmul.check_fused_step, "02", [
        (two_matmuls, "more than once"), (fused_in_the_wrong_order, "is wrong at row")]),
    "lookup": (one_hot.check_lookup, "03", [
        (lookup_by_one_hot, "one-hot vectors"), (lookup_transposed, "has shape")]),
    "one_hot": (one_hot.check_one_hot, "03", [
        (one_hot_by_library, "calls one_hot"), (one_hot_as_integers, "dtype"),
        (one_hot_shifted, "is wrong at")]),
    "batches_with_tail": (one_hot.check_sequential_batches, "03", [
        (batches_with_unshifted_labels, "Y of minibatch 0"), (batches_cut_across_rows, "X of minibatch 0"),
        (batches_one_short, "sequence of"), (batches_dropping_the_tail, "sequence of")]),
    "forward": (rnn_scratch.check_forward, "04", [
        (forward_batch_major, "(time step 0, sequence 1)"),
        (forward_returning_the_first_state, "final state")]),
    "train_loop": (rnn_scratch.check_train_loop, "04", [
        (loop_without_detach, "detach it"), (loop_with_fresh_states, "fresh state"),
        (loop_without_zero_grad, "the parameters, W_xh, is wrong"),
        (loop_returning_the_last_loss, "mean loss")]),
    "masked_loss_and_grad": (bptt.check_masked_loss_and_grad, "05", [
        (masked_loss_over_all_rows, "loss, is"),
        (masked_loss_keeping_padded_rows, "d_outputs, is wrong at row 5 (step 2, sequence 2)")]),
    "bptt": (bptt.check_bptt, "05", [
        (bptt_without_recursion, "is wrong"), (bptt_without_tanh_derivative, "is wrong"),
        (bptt_with_autograd, "autograd")]),
    "my_clip": (clipping.check_clip_function, "06", [
        (clip_in_place, "in place"), (clip_per_tensor, "is wrong"), (clip_dividing_by_zero, "all zero"),
        (clip_through_data, ".data")]),
    "perplexity": (perplexity.check_perplexity_function, "07", [
        (perplexity_naive_softmax, "nan"), (perplexity_by_library, "F.cross_entropy"),
        (perplexity_harmonic, "not the right value")]),
    "kn_bigram": (perplexity.check_kn_bigram, "07", [
        (kn_with_raw_unigram, "not the right value"), (kn_without_unseen_contexts, "ZeroDivisionError"),
        (kn_without_discount, "not the right value")]),
}


@pytest.mark.parametrize("name", CHECKERS)
def test_the_solution_passes(name):
    check, notebook, _ = CHECKERS[name]
    result = check(getattr(load_solution(notebook), name))
    assert result, result.message
    assert result.message.startswith("Correct!")


@pytest.mark.parametrize("name, wrong, expected_words", [
    (name, wrong, words) for name, (_, _, mistakes) in CHECKERS.items() for wrong, words in mistakes
], ids=lambda value: getattr(value, "__name__", None) if callable(value) else None)
def test_a_mistake_fails_and_is_named(name, wrong, expected_words):
    check = CHECKERS[name][0]
    result = check(wrong)
    assert not result
    assert result.message.startswith("Not yet"), result.message
    assert expected_words in result.message, result.message


@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_knows_at_least_two_mistakes(name):
    assert len({wrong for wrong, _ in CHECKERS[name][2]}) >= 2


@pytest.mark.parametrize("name", CHECKERS)
def test_the_stub_is_not_attempted_and_shows_nothing_else(name, capsys):
    def stub(*args, **kwargs):
        return None  # your code here

    check = CHECKERS[name][0]
    assert check(stub).message == NOT_ATTEMPTED
    assert pretty(check(None)) == NOT_ATTEMPTED  # what the notebook shows
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("name", CHECKERS)
def test_something_that_is_not_a_function_is_told_so(name):
    result = CHECKERS[name][0](42)
    assert not result and "function" in result.message


# --- the framework --------------------------------------------------------------------------------

def test_the_recorder_counts_every_kind_of_matrix_product():
    A, B = torch.randn(3, 3), torch.randn(3, 3)
    with CallRecorder() as recorder:
        _ = A @ B
        _ = torch.mm(A, B)
        _ = torch.addmm(A, A, B)
        _ = F.linear(A, B)
        _ = torch.einsum("ij,jk->ik", A, B)
        _ = A + B
    assert count_matmuls(recorder.calls) == 5


def test_the_recorder_sees_data():
    A = torch.randn(2, requires_grad=True)
    with CallRecorder() as recorder:
        _ = A.data
    assert recorder.calls["data"] == 1


def test_a_changed_input_is_reported_before_the_values():
    def cases(device):
        x = torch.ones(3, device=device)
        yield Case("three ones", (x,), x * 2)

    def doubles_in_place(x):
        return x.mul_(2)

    result = check_function(doubles_in_place, cases, "fine")
    assert not result and "in place" in result.message
    assert check_function(lambda x: x * 2, cases, "fine")


def _softmax_cases(device):
    rand = torch.Generator().manual_seed(3)
    for scale in (1.0, 300.0):
        x = (torch.randn(4, 5, generator=rand) * scale).to(device)
        yield Case(f"logits of size about {scale:g}", (x,), reference=lambda x: torch.softmax(x, dim=1))


SOFTMAX_MISTAKES = (Mistake("the softmax runs over the columns.", lambda x: torch.softmax(x, dim=0)),
                    Mistake("this mistake cannot occur here.", lambda x: x[99]),
                    Mistake("an overflow."))


@pytest.mark.parametrize("wrong, words", [
    (lambda x: torch.softmax(x, dim=0),
     ["about 1: the result is wrong", "Likely cause: the softmax runs over the columns."]),
    (lambda x: torch.exp(x) / torch.exp(x).sum(dim=1, keepdim=True),
     ["about 300: the result contains nan or inf", "Likely cause: an overflow."]),
], ids=["columns", "overflow"])
def test_a_known_mistake_is_told_by_its_cause(wrong, words):
    """A wrong result that a known mistake gives names its cause; a mistake that raises is passed over."""
    verdict = check_function(wrong, _softmax_cases, "fine", mistakes=SOFTMAX_MISTAKES)
    assert not verdict and all(word in verdict.message for word in words), verdict.message
    right = check_function(lambda x: torch.softmax(x, dim=1), _softmax_cases, "fine",
                           mistakes=SOFTMAX_MISTAKES)
    assert right, right.message


def test_a_wrong_result_no_known_mistake_gives_is_told_only_where_it_is_wrong():
    verdict = check_function(lambda x: torch.softmax(x, dim=1) * 2, _softmax_cases, "fine",
                             mistakes=SOFTMAX_MISTAKES)
    assert not verdict and "Likely cause" not in verdict.message, verdict.message
    assert "the result is wrong at row 0, column 0 (20 of 20 entries differ)" in verdict.message


def test_a_wrong_entry_of_a_vector_is_told_by_its_index():
    def cases(device):
        yield Case("four numbers", (torch.arange(4.0, device=device),), reference=lambda x: x * 2)

    verdict = check_function(lambda x: x * 2 + (x == 2), cases, "fine")
    assert not verdict and "is wrong at index 2 (1 of 4 entries differ)" in verdict.message, verdict.message
