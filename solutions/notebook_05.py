"""Solutions to the exercises of notebook 05 (backpropagation through time)."""

import torch

ANSWERS = {
    "check_tanh_backward": 2.0 * (1 - 0.6**2),
    "check_vanishing_steps": 44,  # 0.9**43 = 0.0108, 0.9**44 = 0.0097
    "check_truncation_reach": 21,
}


def input_weight_grad(x_t, dA, vocab_size):
    """X_t^T dA for one-hot X_t: row b of dA is added into row x_t[b]."""
    return torch.zeros(vocab_size, dA.shape[1], dtype=dA.dtype, device=dA.device).index_add_(0, x_t, dA)


def bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    """Walk the unrolled RNN backwards; return (dW_xh, dW_hh, db_h)."""
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
