"""The LSTM's backpropagation through time written by hand, as one autograd node (notebook 09).

The same idea as `d2lmini.bptt` for the RNN: the forward pass keeps every gate's value, the
backward pass walks the steps from last to first carrying only dH and dC, and each weight's
gradient, summed over all steps, is one large matmul at the end. For one step, with
dH = dL/dH_t and dC = dL/dC_t (from the step after and from H_t = O ⊙ tanh(C_t)):

    dO = dH ⊙ tanh(C_t)                     da_o = dO ⊙ O (1 - O)
    dC += dH ⊙ O ⊙ (1 - tanh²(C_t))
    dI = dC ⊙ G   da_i = dI ⊙ I (1 - I);    dF = dC ⊙ C_{t-1}   da_f = dF ⊙ F (1 - F)
    dG = dC ⊙ I   da_g = dG ⊙ (1 - G²)
    dC_{t-1} = dC ⊙ F                       (the additive path: only the forget gate in between)
    dH_{t-1} = [da_i, da_f, da_g, da_o] W_hᵀ

`lstm_forward_bptt` computes exactly what `d2lmini.gates.lstm_forward` computes, with these
gradients instead of autograd's; `tests/test_gates.py` checks that they agree.
"""

import torch
import torch.nn.functional as F


@torch.no_grad()
def lstm_forward_cached(X, state, W_x, W_h, b, W_hq, b_q):
    """Run the LSTM over X (batch, steps) and return (outputs, final state, cache for backward)."""
    input_terms = F.embedding(X.T, W_x) + b
    steps, (batch, width) = X.shape[1], input_terms.shape[1:]
    hiddens = width // 4
    gates = torch.empty(steps, batch, width, dtype=W_x.dtype, device=W_x.device)
    # cells[t + 1] is C_t and hs[t + 1] is H_t; index 0 holds the initial state.
    cells = torch.empty(steps + 1, batch, hiddens, dtype=W_x.dtype, device=W_x.device)
    hs = torch.empty(steps + 1, batch, hiddens, dtype=W_x.dtype, device=W_x.device)
    H, C = state.chunk(2, dim=1)
    hs[0], cells[0] = H, C
    for t in range(steps):
        a = torch.addmm(input_terms[t], H, W_h)
        g = gates[t]
        torch.sigmoid(a, out=g)  # I, F and O; the cell candidate's block is overwritten next
        torch.tanh(a[:, 2 * hiddens:3 * hiddens], out=g[:, 2 * hiddens:3 * hiddens])
        i, f, c, o = g.chunk(4, dim=1)
        C = torch.addcmul(f * C, i, c, out=cells[t + 1])
        H = torch.mul(o, torch.tanh(C), out=hs[t + 1])
    outputs = torch.addmm(b_q, hs[1:].reshape(-1, hiddens), W_hq)
    cache = (X, gates, cells, hs, W_x, W_h, W_hq)
    return outputs, torch.cat([H, C], dim=1), cache


@torch.no_grad()
def lstm_backward(d_outputs, d_final_state, cache):
    """Return the gradients (d_state, dW_x, dW_h, db, dW_hq, db_q) of one cached forward pass.

    Every factor that does not depend on the recursion (the gates' derivatives, tanh(C_t),
    C_{t-1}) is computed for all steps at once before the loop, so each step does only what
    must wait for the step after it: dH, dC, the gates' gradients and one product with W_hᵀ.
    """
    X, gates, cells, hs, W_x, W_h, W_hq = cache
    steps, batch, hiddens = gates.shape[0], gates.shape[1], hs.shape[2]
    d_hs = (d_outputs @ W_hq.T).reshape(steps, batch, hiddens)
    i, f, c, o = gates.chunk(4, dim=2)
    tanh_c, c_prev = torch.tanh(cells[1:]), cells[:-1]
    to_dC = o * (1 - tanh_c * tanh_c)  # dC_t += dH_t ⊙ to_dC_t
    # Gate gradients per unit of dC (input, forget, candidate) and of dH (output): (steps, batch, 4, hiddens)
    factors = torch.stack([c * i * (1 - i), c_prev * f * (1 - f), i * (1 - c * c),
                           tanh_c * o * (1 - o)], dim=2)
    dH, dC = (d.clone() for d in d_final_state.chunk(2, dim=1))
    d_gates = torch.empty_like(gates)
    both = torch.empty(batch, 4, hiddens, dtype=gates.dtype, device=gates.device)
    for t in range(steps - 1, -1, -1):
        dH += d_hs[t]
        dC.addcmul_(dH, to_dC[t])
        both[:, :3] = dC.unsqueeze(1)
        both[:, 3] = dH
        torch.mul(both, factors[t], out=d_gates[t].view(batch, 4, hiddens))
        dC *= f[t]
        dH = d_gates[t] @ W_h.T
    flat = d_gates.reshape(-1, 4 * hiddens)
    ones = torch.ones(flat.shape[0], dtype=flat.dtype, device=flat.device)  # a sum over rows as a
    dW_x = torch.zeros_like(W_x).index_add_(0, X.T.reshape(-1), flat)      # product: faster on CPUs
    return (torch.cat([dH, dC], dim=1), dW_x, hs[:-1].reshape(-1, hiddens).T @ flat, ones @ flat,
            hs[1:].reshape(-1, hiddens).T @ d_outputs, ones @ d_outputs)


class HandWrittenLSTMBPTT(torch.autograd.Function):
    """The whole LSTM forward pass as one autograd node whose backward is `lstm_backward`."""

    @staticmethod
    def forward(ctx, X, state, W_x, W_h, b, W_hq, b_q):
        outputs, final_state, cache = lstm_forward_cached(X, state, W_x, W_h, b, W_hq, b_q)
        ctx.cache = cache
        return outputs, final_state

    @staticmethod
    def backward(ctx, d_outputs, d_final_state):
        d_state, dW_x, dW_h, db, dW_hq, db_q = lstm_backward(d_outputs, d_final_state, ctx.cache)
        return None, d_state, dW_x, dW_h, db, dW_hq, db_q


def lstm_forward_bptt(X, state, W_x, W_h, b, W_hq, b_q):
    """`gates.lstm_forward` with the hand-written backward pass; returns (outputs, state)."""
    return HandWrittenLSTMBPTT.apply(X, state, W_x, W_h, b, W_hq, b_q)
