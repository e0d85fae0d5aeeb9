"""The GRU's backpropagation through time written by hand, as one autograd node (notebook 09).

The same idea as `d2lmini.lstm_bptt` for the LSTM. With a = X W_x + b and h = H W_h (torch's
form: the reset gate acts after the product), one step is

    R = σ(a_r + h_r)    Z = σ(a_z + h_z)    N = tanh(a_n + R ⊙ (h_n + b_hn))
    H' = Z ⊙ H + (1 - Z) ⊙ N

and with dH = dL/dH', everything the step needs is dH times a factor that does not depend on
the recursion:

    da_n = dH ⊙ (1 - Z)(1 - N²)                    (the candidate's input term)
    dh_n = da_n ⊙ R                                 (the candidate's product with H)
    da_r = dh_r = da_n ⊙ (h_n + b_hn) ⊙ R (1 - R)
    da_z = dh_z = dH ⊙ (H - N) ⊙ Z (1 - Z)
    dH_prev = dH ⊙ Z + [dh_r, dh_z, dh_n] W_hᵀ

So the factors are computed for all steps at once after the forward pass, and each backward
step is three calls: the three blocks [dh_r, dh_z, dh_n] as one product of the factors with dH,
the product with W_hᵀ, and the direct path dH ⊙ Z. `tests/test_gates.py` checks the result
against autograd on `d2lmini.gates.gru_forward` and against `torch.nn.GRU`.

The forward pass uses the LSTM's tricks (`d2lmini.lstm_bptt`): the bias rides on the row
lookup, tanh is 2σ(2a) - 1 with the candidate's columns doubled once per call, and each step
writes into buffers made once per call.
"""

import torch
import torch.nn.functional as F

from d2lmini.lstm_bptt import double_candidate, sigmoid_to_tanh_, weight_gradients


@torch.no_grad()
def gru_forward_cached(X, state, W_x, W_h, b, b_hn, W_hq, b_q):
    """Run the GRU over X (batch, steps); return (outputs, final state, cache for backward).

    The cache holds every step's R, Z (side by side), N, h_n + b_hn and H.
    """
    steps, batch, hiddens = X.shape[1], X.shape[0], W_h.shape[0]
    like = dict(dtype=W_x.dtype, device=W_x.device)
    inputs = F.embedding(X.T, double_candidate(W_x + b, 3))  # (steps, batch, 3h): [a_r, a_z, 2 a_n]
    W_h2 = double_candidate(W_h, 3)
    b_h2 = torch.cat([torch.zeros(2 * hiddens, **like), 2 * b_hn])
    products = torch.empty(steps, batch, 3 * hiddens, **like)  # [h_r, h_z, 2 (h_n + b_hn)] per step
    gates = torch.empty(steps, batch, 2 * hiddens, **like)  # [R, Z]
    candidates = torch.empty(steps, batch, hiddens, **like)  # N
    hs = torch.empty(steps + 1, batch, hiddens, **like)  # index t + 1 holds step t
    hs[0] = state
    H, one = state, torch.ones((), **like)
    per_step = zip(inputs, products, gates, candidates, hs[1:], strict=True)
    for a, h, RZ, N, H_t in per_step:
        torch.addmm(b_h2, H, W_h2, out=h)
        torch.add(a[:, :2 * hiddens], h[:, :2 * hiddens], out=RZ).sigmoid_()
        R, Z = RZ[:, :hiddens], RZ[:, hiddens:]
        sigmoid_to_tanh_(torch.addcmul(a[:, 2 * hiddens:], R, h[:, 2 * hiddens:], out=N).sigmoid_(), one)
        H = torch.sub(H, N, out=H_t).mul_(Z).add_(N)  # N + Z (H - N)
    outputs = torch.addmm(b_q, hs[1:].reshape(-1, hiddens), W_hq)
    cache = (X, products[:, :, 2 * hiddens:], gates, candidates, hs, W_x, W_h, W_hq)
    return outputs, H, cache


def gru_factors(doubled_hn, gates, candidates, hs):
    """Return (to_da_n, factors) for all steps: da_n = dH ⊙ to_da_n, [dh_r, dh_z, dh_n] = dH ⊙ factors.

    `doubled_hn` is 2 (h_n + b_hn), as the forward pass kept it; factors is (steps, batch, 3, hiddens).
    """
    steps, batch, hiddens = candidates.shape
    R, Z = gates[:, :, :hiddens], gates[:, :, hiddens:]
    N = candidates
    to_da_n = torch.mul(N, N).neg_().add_(1).mul_(1 - Z)  # (1 - N²)(1 - Z)
    factors = torch.empty(steps, batch, 3, hiddens, dtype=N.dtype, device=N.device)
    f_r, f_z, f_n = factors.unbind(dim=2)
    torch.addcmul(R, R, R, value=-1, out=f_r).mul_(doubled_hn).mul_(to_da_n).mul_(0.5)
    torch.addcmul(Z, Z, Z, value=-1, out=f_z).mul_(hs[:-1] - N)
    torch.mul(to_da_n, R, out=f_n)
    return to_da_n, factors


@torch.no_grad()
def gru_backward(d_outputs, d_final_state, cache):
    """Return the gradients (d_state, dW_x, dW_h, db, db_hn, dW_hq, db_q) of one cached forward pass."""
    X, doubled_hn, gates, candidates, hs, W_x, W_h, W_hq = cache
    steps, batch, hiddens = candidates.shape
    to_da_n, factors = gru_factors(doubled_hn, gates, candidates, hs)
    d_products = factors.view(steps, batch, 3 * hiddens)  # the loop turns the factors into these
    # d_hs[t + 1] = dL/dH_t; the loop adds the recurrent share to the output layer's
    d_hs = torch.empty_like(hs)
    torch.mm(d_outputs, W_hq.T, out=d_hs[1:].view(-1, hiddens))
    d_hs[steps] += d_final_state
    d_hs[0] = 0
    W_hT = W_h.T
    Z = gates[:, :, hiddens:]
    per_step = zip(d_hs[1:], d_hs[:-1], factors, d_products, Z, strict=True)
    for dH, dH_prev, d_blocks, d_products_t, Z_t in reversed(list(per_step)):
        d_blocks.mul_(dH.unsqueeze(1))
        dH_prev.addmm_(d_products_t, W_hT).addcmul_(dH, Z_t)
    d_inputs = d_products.clone()
    torch.mul(d_hs[1:], to_da_n, out=d_inputs[:, :, 2 * hiddens:])
    dW_x, dW_h, db, dW_hq, db_q = weight_gradients(X, d_inputs, d_products, hs, d_outputs, W_x)
    db_hn = d_products[:, :, 2 * hiddens:].sum(dim=(0, 1))
    return d_hs[0].clone(), dW_x, dW_h, db, db_hn, dW_hq, db_q


class HandWrittenGRUBPTT(torch.autograd.Function):
    """The whole GRU forward pass as one autograd node whose backward is `gru_backward`."""

    @staticmethod
    def forward(ctx, X, state, W_x, W_h, b, b_hn, W_hq, b_q):
        outputs, final_state, cache = gru_forward_cached(X, state, W_x, W_h, b, b_hn, W_hq, b_q)
        ctx.cache = cache
        return outputs, final_state

    @staticmethod
    def backward(ctx, d_outputs, d_final_state):
        return (None, *gru_backward(d_outputs, d_final_state, ctx.cache))


def gru_forward_bptt(X, state, W_x, W_h, b, b_hn, W_hq, b_q):
    """`gates.gru_forward` with the hand-written backward pass; returns (outputs, state)."""
    return HandWrittenGRUBPTT.apply(X, state, W_x, W_h, b, b_hn, W_hq, b_q)
