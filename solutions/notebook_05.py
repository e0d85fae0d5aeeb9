"""Solutions to the exercises of notebook 05 (backpropagation through time)."""

import torch

ANSWERS = {
    "check_tanh_backward": 2.0 * (1 - 0.6**2),
    "check_vanishing_steps": 44,  # 0.9**43 = 0.0108, 0.9**44 = 0.0097
    "check_truncation_reach": 21,
}


def masked_loss_and_grad(outputs, Y, lengths):
    """Exercise 4: the mean cross-entropy over the real (unpadded) steps, and dL/doutputs.

    outputs: logits (steps*batch, vocab), step-major; Y: targets (batch, steps); lengths[i]:
    the number of real steps of sequence i, the rest of its row is padding.
    """
    steps = Y.shape[1]
    # True for the real steps, in the step-major order of the rows of outputs
    real = (torch.arange(steps, device=Y.device) < lengths[:, None]).T.reshape(-1)
    labels = Y.T.reshape(-1)
    rows = torch.arange(len(labels), device=labels.device)
    n = int(real.sum())  # only the real steps count in the mean
    log_probs = torch.log_softmax(outputs, dim=1)
    loss = -log_probs[rows, labels][real].sum() / n
    d_outputs = torch.softmax(outputs, dim=1)
    d_outputs[rows, labels] -= 1
    return loss, d_outputs * real[:, None] / n  # a padded row's loss is not in L: its gradient is 0


def bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    """The capstone's backward piece (`check_bptt`, the tanh RNN of notebook 05): (dW_xh, dW_hh, db_h)."""
    steps, batch, num_hiddens = hiddens.shape
    vocab_size = W_hq.shape[1]
    d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    dW_xh = torch.zeros(vocab_size, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    dW_hh = torch.zeros(num_hiddens, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    db_h = torch.zeros(num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    d_from_next = torch.zeros(batch, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    for t in reversed(range(steps)):
        dH = d_from_outputs[t] + d_from_next  # H_t feeds its output and the next step
        dA = dH * (1 - hiddens[t] ** 2)
        H_prev = hiddens[t - 1] if t > 0 else state
        dW_hh = dW_hh + H_prev.T @ dA
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        db_h = db_h + dA.sum(0)
        d_from_next = dA @ W_hh.T
    return dW_xh, dW_hh, db_h


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    """Exercise 5: BPTT for H_t = (1 - alpha) H_{t-1} + alpha relu(A_t).

    Returns (dW_xh, dW_hh, db_h, d_state), d_state = dL/dH_0.
    """
    steps, batch, num_hiddens = hiddens.shape
    d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    dW_xh, dW_hh, db_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
    d_from_next = torch.zeros_like(state)
    for t in reversed(range(steps)):
        H_prev = hiddens[t - 1] if t > 0 else state
        A = W_xh[X[:, t]] + H_prev @ W_hh + b_h  # not kept by the forward pass: recompute it
        dH = d_from_outputs[t] + d_from_next
        dA = alpha * dH * (A > 0)  # relu'(a) is 1 where a > 0; H_t > 0 does not say that A_t > 0
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        dW_hh = dW_hh + H_prev.T @ dA
        db_h = db_h + dA.sum(0)
        d_from_next = (1 - alpha) * dH + dA @ W_hh.T  # H_{t-1} reaches H_t directly and through A_t
    return dW_xh, dW_hh, db_h, d_from_next
