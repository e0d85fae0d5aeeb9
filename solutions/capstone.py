"""The instructors' capstone for notebook 08 (`d2lmini.exercises.capstone`): every piece and the loop.

Each function is written from the formulas, as a student would, with the signature the
notebook's stub gives; none calls d2lmini. `params` is always the list
[W_xh, W_hh, b_h, W_hq, b_q]. The checks refuse this file's own code when a student passes it
(`d2lmini.exercises.guard.refusals`); `tests/test_capstone.py` compiles it without docstrings, as a
student who wrote the same functions in a cell would have them.
"""

import math

import torch


def minibatches(indices, batch_size, num_steps):
    """Sequential partitioning from offset 0: row i of minibatch k+1 continues row i of minibatch k."""
    stream = (len(indices) - 1) // batch_size
    xs = indices[: stream * batch_size].reshape(batch_size, stream)
    ys = indices[1 : stream * batch_size + 1].reshape(batch_size, stream)
    for start in range(0, stream - num_steps + 1, num_steps):
        yield xs[:, start : start + num_steps], ys[:, start : start + num_steps]


def forward(X, state, params):
    """The outputs of every step (steps * batch, vocab), step-major, and the states (steps, batch, hidden)."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    H, hiddens = state, []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)  # a row of W_xh is one_hot(x) @ W_xh
        hiddens.append(H)
    hiddens = torch.stack(hiddens)
    return hiddens.reshape(-1, W_hh.shape[0]) @ W_hq + b_q, hiddens


def loss_and_grad(outputs, Y):
    """The mean cross-entropy (nats) of step-major `outputs` against Y (batch, steps), and dL/d outputs."""
    targets = Y.T.reshape(-1)
    shifted = outputs - outputs.max(dim=1, keepdim=True).values
    log_probs = shifted - torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))
    rows = torch.arange(len(targets), device=outputs.device)
    loss = -log_probs[rows, targets].mean()
    d_outputs = torch.exp(log_probs)  # softmax
    d_outputs[rows, targets] -= 1  # a new tensor, so changing it in place is safe
    return loss, d_outputs / len(targets)


def backward(X, state, hiddens, d_outputs, d_final, params):
    """BPTT: the gradients of the five parameters, and the gradient reaching the initial state."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    steps, batch, num_hiddens = hiddens.shape
    d_W_hq = hiddens.reshape(-1, num_hiddens).T @ d_outputs
    d_b_q = d_outputs.sum(0)
    d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    d_W_xh, d_W_hh, d_b_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
    d_H = d_final
    for t in reversed(range(steps)):
        dA = (d_from_outputs[t] + d_H) * (1 - hiddens[t] ** 2)
        H_prev = state if t == 0 else hiddens[t - 1]
        d_W_hh = d_W_hh + H_prev.T @ dA
        d_W_xh = d_W_xh.index_add(0, X[:, t], dA)
        d_b_h = d_b_h + dA.sum(0)
        d_H = dA @ W_hh.T  # the gradient reaching H_{t-1}
    return [d_W_xh, d_W_hh, d_b_h, d_W_hq, d_b_q], d_H


def clip(grads, theta):
    """New gradients scaled together so that their joint norm is at most theta, and the norm before."""
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = min(1.0, theta / (norm + 1e-12))
    return [g * scale for g in grads], norm


def sgd(params, grads, lr):
    """One step of plain SGD: new tensors p - lr * g."""
    return [p - lr * g for p, g in zip(params, grads, strict=True)]


def perplexity(logits, targets):
    """exp of the mean of -log p(true token), with a stable log-sum-exp."""
    top = logits.max(dim=1, keepdim=True).values
    log_z = top.squeeze(1) + torch.log(torch.exp(logits - top).sum(dim=1))
    nats = (log_z - logits[torch.arange(len(targets), device=logits.device), targets]).mean()
    return math.exp(float(nats))


def train(indices, params, budget):
    """Train for `budget.epochs` passes over `indices`; return (params, every minibatch's loss and norm).

    Each pass starts from a zero state; the state's value is carried from one minibatch to
    the next, and no gradient crosses between them: each backward starts from d_final = 0
    and drops what reaches the initial state (the hand-written form of `state.detach()`).
    """
    W_hh = params[1]
    losses, norms = [], []
    for _ in range(budget.epochs):
        state = torch.zeros(budget.batch_size, W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
        for X, Y in minibatches(indices, budget.batch_size, budget.num_steps):
            outputs, hiddens = forward(X, state, params)
            loss, d_outputs = loss_and_grad(outputs, Y)
            grads, _ = backward(X, state, hiddens, d_outputs, torch.zeros_like(state), params)
            grads, norm = clip(grads, budget.theta)
            params = sgd(params, grads, budget.lr)
            state = hiddens[-1]
            losses.append(float(loss))
            norms.append(norm)
    return params, losses, norms
