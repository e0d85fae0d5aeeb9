"""The instructors' pieces for the capstone of notebook 07 (`d2lmini.exercises.capstone`).

Each is written from the formulas, as a student would, with the signature of the exercise
that first asked for it; none calls d2lmini.
"""

import math

import torch


def rnn_step(X_t, H, W_xh, W_hh, b_h):
    """Notebook 01: H_t = tanh(X_t W_xh + H_{t-1} W_hh + b_h)."""
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


def forward(X, state, W_xh, W_hh, b_h, W_hq, b_q):
    """Notebook 04: outputs (steps * batch, vocab), step-major, and the final state."""
    H, outputs = state, []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)
        outputs.append(H @ W_hq + b_q)
    return torch.cat(outputs), H


def backward(X, state, hiddens, d_outputs, W_hh, W_hq):
    """Notebook 05: (dW_xh, dW_hh, db_h) by walking the unrolled graph from the last step back."""
    steps, batch, num_hiddens = hiddens.shape
    d_W_xh = torch.zeros(W_hq.shape[1], num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    d_W_hh, d_b_h = torch.zeros_like(W_hh), torch.zeros(num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    d_next = torch.zeros(batch, num_hiddens, dtype=W_hh.dtype, device=W_hh.device)
    for t in reversed(range(steps)):
        dH = d_outputs[t * batch : (t + 1) * batch] @ W_hq.T + d_next
        dA = dH * (1 - hiddens[t] ** 2)
        H_prev = state if t == 0 else hiddens[t - 1]
        d_W_hh = d_W_hh + H_prev.T @ dA
        d_W_xh = d_W_xh.index_add(0, X[:, t], dA)
        d_b_h = d_b_h + dA.sum(0)
        d_next = dA @ W_hh.T
    return d_W_xh, d_W_hh, d_b_h


def clip(grads, theta):
    """Notebook 06: scale all gradients together so that their joint norm is at most theta."""
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = min(1.0, theta / (norm + 1e-12))
    return [g * scale for g in grads]


def perplexity(logits, targets):
    """Notebook 07: exp of the mean of -log p(true token), with a stable log-sum-exp."""
    top = logits.max(dim=1, keepdim=True).values
    log_z = top.squeeze(1) + torch.log(torch.exp(logits - top).sum(dim=1))
    nats = (log_z - logits[torch.arange(len(targets), device=logits.device), targets]).mean()
    return math.exp(float(nats))
