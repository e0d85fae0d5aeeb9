"""Tests for the self-checks of notebook 05's exercises."""

import pytest
import torch
import torch.nn.functional as F
from IPython.lib.pretty import pretty
from solution_files import load_solution

from d2lmini.bptt import PARAM_NAMES, plain_backward, plain_forward, sequence_loss_and_grad
from d2lmini.exercises import bptt as ex
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.rnn import init_rnn_params, rnn_forward

pytestmark = pytest.mark.torch_dependent


def test_tanh_backward():
    assert ex.check_tanh_backward(2.0 * (1 - 0.36))
    assert ex.check_tanh_backward(1.28)
    assert not ex.check_tanh_backward(2.0 * (1 - 0.6))  # forgot to square
    assert not ex.check_tanh_backward(None)


def test_vanishing_steps():
    k = 0
    while 0.9**k >= 0.01:
        k += 1
    assert k == 44
    assert ex.vanishing_steps() == k
    assert ex.vanishing_steps(0.5, 0.25) == 3  # 0.5^2 = 0.25 is not below 0.25
    assert ex.check_vanishing_steps(44)
    assert not ex.check_vanishing_steps(43)
    assert not ex.check_vanishing_steps(True)
    assert not ex.check_vanishing_steps("forty-four")


def test_truncation_reach():
    assert ex.check_truncation_reach(21)
    assert not ex.check_truncation_reach(20)  # H_20 entered the window detached
    assert not ex.check_truncation_reach(0)
    assert not ex.check_truncation_reach(13)
    assert not ex.check_truncation_reach(None)


# --- exercise 4: the loss and its gradient for sequences padded at their ends ----------------

def masked_loss_and_grad_with(mistake=None):
    """Exercise 4's function, right (mistake None) or with one named mistake."""
    def masked_loss_and_grad(outputs, Y, lengths):
        steps = Y.shape[1]
        mask = torch.arange(steps) < lengths[:, None]  # (batch, steps)
        real = mask.reshape(-1) if mistake == "batch-major mask" else mask.T.reshape(-1)
        labels = Y.T.reshape(-1)
        rows = torch.arange(len(labels))
        n = len(labels) if mistake == "mean over all rows" else int(real.sum())
        loss = -torch.log_softmax(outputs, 1)[rows, labels][real].sum() / n
        d_outputs = torch.softmax(outputs, 1)
        d_outputs[rows, labels] -= 1
        if mistake != "padded rows kept":
            d_outputs = d_outputs * real[:, None]
        return loss, d_outputs if mistake == "gradient not divided by n" else d_outputs / n
    return masked_loss_and_grad


def test_masked_loss_accepts_the_solution_and_the_right_function():
    assert ex.check_masked_loss_and_grad(load_solution("05").masked_loss_and_grad)
    result = ex.check_masked_loss_and_grad(masked_loss_and_grad_with(None))
    assert result and result.message.startswith("Correct!")


MASKED_LOSS_MISTAKES = {
    "mean over all rows": "the result, loss, is",
    "batch-major mask": "the result, loss, is",
    "padded rows kept": "d_outputs, is wrong at row 5 (step 2, sequence 2)",  # lengths [4, 2, 1]
    "gradient not divided by n": "d_outputs, is wrong at row 0 (step 1, sequence 0)",
}


@pytest.mark.parametrize("mistake", MASKED_LOSS_MISTAKES)
def test_masked_loss_rejects_each_mistake(mistake):
    result = ex.check_masked_loss_and_grad(masked_loss_and_grad_with(mistake))
    assert not result and result.message.startswith("Not yet"), result.message
    assert MASKED_LOSS_MISTAKES[mistake] in result.message, result.message


def test_masked_loss_mistakes_get_messages_of_their_own():
    messages = {ex.check_masked_loss_and_grad(masked_loss_and_grad_with(m)).message
                for m in MASKED_LOSS_MISTAKES}
    assert len(messages) == len(MASKED_LOSS_MISTAKES)


def test_masked_loss_refuses_autograd_and_the_package():
    def by_autograd(outputs, Y, lengths):
        leaf = outputs.clone().requires_grad_()
        real = (torch.arange(Y.shape[1]) < lengths[:, None]).T.reshape(-1)
        loss = F.cross_entropy(leaf[real], Y.T.reshape(-1)[real])
        loss.backward()
        return loss.detach(), leaf.grad

    def by_the_package(outputs, Y, lengths):
        return ex.reference_masked_loss_and_grad(outputs, Y, lengths)

    result = ex.check_masked_loss_and_grad(by_autograd)
    assert not result and "autograd" in result.message, result.message
    result = ex.check_masked_loss_and_grad(by_the_package)
    assert not result and "reference_masked_loss_and_grad" in result.message, result.message
    assert ex.check_masked_loss_and_grad(lambda *args: None).message == NOT_ATTEMPTED
    assert not ex.check_masked_loss_and_grad(42)


def test_masked_loss_reference_is_the_masked_mean():
    """Without padding it is the page's `sequence_loss_and_grad`; with it, padded rows weigh nothing."""
    g = torch.Generator().manual_seed(4)
    outputs, Y = torch.randn(12, 5, generator=g, dtype=torch.float64), torch.randint(5, (3, 4), generator=g)
    loss, d_outputs = ex.reference_masked_loss_and_grad(outputs, Y, torch.tensor([4, 4, 4]))
    page_loss, page_d = sequence_loss_and_grad(outputs, Y)
    assert abs(loss - float(page_loss)) < 1e-12 and torch.allclose(d_outputs, page_d, atol=1e-15)
    loss, d_outputs = ex.reference_masked_loss_and_grad(outputs, Y, torch.tensor([4, 2, 1]))
    real = [0, 1, 2, 3, 4, 6, 9]  # step-major rows (step 1: sequences 0-2, step 2: 0-1, steps 3-4: 0)
    assert ex.real_steps(torch.tensor([4, 2, 1]), 4).nonzero().flatten().tolist() == real
    assert abs(loss - float(F.cross_entropy(outputs[real], Y.T.reshape(-1)[real]))) < 1e-12
    assert not d_outputs[[5, 7, 8, 10, 11]].any()


def test_trailing_padding_needs_no_change_to_the_backward_loop():
    """As the success message says: the page's loop, fed the masked dL/dO, gives its gradients."""
    g = torch.Generator().manual_seed(5)
    params = {n: p.double() for n, p in init_rnn_params(6, 4, "lecun", g).items()}
    X, Y = torch.randint(6, (2, 2, 5), generator=g)
    lengths, state = torch.tensor([5, 2]), torch.zeros(2, 4, dtype=torch.float64)
    outputs, _, cache = plain_forward(X, state, *(params[n] for n in PARAM_NAMES))
    _, d_outputs = ex.reference_masked_loss_and_grad(outputs, Y, lengths)
    by_hand = plain_backward(d_outputs, None, cache)
    leaves = {n: p.clone().requires_grad_() for n, p in params.items()}
    logits, _ = rnn_forward(X, state, *(leaves[n] for n in PARAM_NAMES))
    real = ex.real_steps(lengths, 5)
    F.cross_entropy(logits[real], Y.T.reshape(-1)[real]).backward()
    for name in PARAM_NAMES:
        assert torch.allclose(by_hand[name], leaves[name].grad, atol=1e-12), name


def test_masked_loss_cases_cover_the_edges():
    cases = list(ex._masked_loss_cases(torch.device("cpu")))
    shapes = [(c.args[1].shape, c.args[0].shape[1]) for c in cases]
    assert ((1, 1), 2) in [(tuple(Y), V) for Y, V in shapes]  # one token, a vocabulary of 2
    assert any(bool((c.args[2] == c.args[1].shape[1]).all()) for c in cases)  # no padding at all
    assert any(bool((c.args[2] < c.args[1].shape[1]).any()) and 1 in c.args[2].tolist() for c in cases)
    for case in cases:  # targets repeat within the real steps of a case
        if case.args[1].numel() > 1:
            real = ex.real_steps(case.args[2], case.args[1].shape[1])
            targets = case.args[1].T.reshape(-1)[real]
            assert len(set(targets.tolist())) < len(targets)


def test_the_verdict_displays_itself_and_prints_nothing(capsys):
    assert pretty(ex.check_tanh_backward(1.28)).startswith("Correct!")
    assert capsys.readouterr().out == ""


# --- exercise 5: BPTT by hand for the leaky-integrator ReLU RNN -------------------------------

def leaky_bptt_with(mistake=None):
    """The backward pass of exercise 5, right (mistake None) or with one named mistake."""
    def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
        steps, batch, h = hiddens.shape
        d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, h)
        dW_xh, dW_hh, db_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
        d_from_next = torch.zeros_like(state)
        d_first_H = None
        for t in reversed(range(steps)):
            H_prev = hiddens[t - 1] if t > 0 else state
            A = W_xh[X[:, t]] + H_prev @ W_hh + b_h
            dH = d_from_outputs[t] + d_from_next
            if mistake == "tanh derivative":
                dA = alpha * dH * (1 - torch.relu(A) ** 2)
            elif mistake == "mask from H_t":
                dA = alpha * dH * (hiddens[t] > 0)
            else:
                dA = alpha * dH * (A > 0)
            dW_xh = dW_xh.index_add(0, X[:, t], dA)
            dW_hh = H_prev.T @ dA if mistake == "no sum over time" else dW_hh + H_prev.T @ dA
            db_h = db_h + dA.sum(0)
            W = W_hh if mistake == "wrong transpose" else W_hh.T
            skip = 0 if mistake == "no direct path" else (1 - alpha) * dH
            d_from_next = skip + dA @ W
            d_first_H = dH
        d_state = d_first_H if mistake == "dL/dH_1 for dL/dH_0" else d_from_next
        return dW_xh, dW_hh, db_h, d_state
    return leaky_bptt


def leaky_bptt_by_autograd(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    leaves = [t.clone().requires_grad_() for t in (W_xh, W_hh, b_h, state)]
    H, outputs = leaves[3], []
    for t in range(X.shape[1]):
        H = (1 - alpha) * H + alpha * torch.relu(leaves[0][X[:, t]] + H @ leaves[1] + leaves[2])
        outputs.append(H @ W_hq)
    return torch.autograd.grad(torch.cat(outputs), leaves, grad_outputs=d_outputs)


def leaky_bptt_by_the_package(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    return ex.reference_leaky_bptt(X, state, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)[0]


def test_leaky_bptt_accepts_the_solution_and_the_right_loop():
    assert ex.check_leaky_bptt(load_solution("05").leaky_bptt)
    result = ex.check_leaky_bptt(leaky_bptt_with(None))
    assert result and result.message.startswith("Correct!")


def test_leaky_bptt_reference_is_the_forward_pass_differentiated():
    """The autograd reference agrees with a central difference of <dL/dO, O> (so it is not circular)."""
    g = torch.Generator().manual_seed(3)
    X = torch.randint(4, (2, 3), generator=g)
    W_xh, W_hh, b_h = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((4, 3), (3, 3), (3,)))
    W_hq, state = torch.randn(3, 4, generator=g, dtype=torch.float64), torch.rand(2, 3, generator=g).double()
    d_out = torch.randn(6, 4, generator=g, dtype=torch.float64)

    def loss(W):
        return float((ex.leaky_states(X, state, W_xh, W, b_h, 0.4).reshape(-1, 3) @ W_hq * d_out).sum())

    (_, dW_hh, _, _), _ = ex.reference_leaky_bptt(X, state, d_out, W_xh, W_hh, b_h, W_hq, 0.4)
    bump = torch.zeros(3, 3, dtype=torch.float64)
    bump[1, 2] = 1e-6
    assert abs((loss(W_hh + bump) - loss(W_hh - bump)) / 2e-6 - float(dW_hh[1, 2])) < 1e-6


@pytest.mark.parametrize("mistake, words", [
    ("tanh derivative", "dW_xh, is wrong"),
    ("mask from H_t", "dW_xh, is wrong"),
    ("no sum over time", "dW_hh, is wrong"),
    ("wrong transpose", "is wrong"),
    ("no direct path", "is wrong"),
    ("dL/dH_1 for dL/dH_0", "d_state, is wrong"),
])
def test_leaky_bptt_rejects_each_mistake(mistake, words):
    result = ex.check_leaky_bptt(leaky_bptt_with(mistake))
    assert not result and result.message.startswith("Not yet"), result.message
    assert words in result.message, result.message


def test_leaky_bptt_refuses_autograd_and_the_package():
    result = ex.check_leaky_bptt(leaky_bptt_by_autograd)
    assert not result and "autograd" in result.message, result.message
    result = ex.check_leaky_bptt(leaky_bptt_by_the_package)
    assert not result and "d2lmini.exercises.bptt.reference_leaky_bptt" in result.message, result.message


def test_leaky_bptt_tells_the_old_signature_and_the_stub():
    def three_gradients(*args):
        return leaky_bptt_with(None)(*args)[:3]

    result = ex.check_leaky_bptt(three_gradients)
    assert not result and "sequence of 4 items" in result.message, result.message
    assert ex.check_leaky_bptt(lambda *args: None).message == NOT_ATTEMPTED
    assert not ex.check_leaky_bptt(42)


def test_leaky_bptt_cases_cover_the_edges():
    cases = list(ex._leaky_bptt_cases(torch.device("cpu")))
    shapes = {(c.args[0].shape, c.args[-1]) for c in cases}
    assert any(X == (1, 1) for X, _ in shapes)  # one step, batch 1
    assert any(alpha == 1.0 for _, alpha in shapes) and any(alpha < 1 for _, alpha in shapes)
    assert any(not c.args[1].any() for c in cases)  # a zero initial state
    for case in cases:  # each case has units on both sides of ReLU's kink, so the mask matters
        X, state, hiddens, _, W_xh, W_hh, b_h = case.args[:7]
        H_prev = torch.cat((state[None], hiddens[:-1]))
        A = W_xh[X.T] + H_prev @ W_hh + b_h
        assert (A > 0).any() and (A < 0).any()
