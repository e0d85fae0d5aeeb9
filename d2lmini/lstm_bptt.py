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

What makes it fast on a CPU without changing the maths (`benchmarks/throughput.py --gated`;
README, "Throughput of the gated cells"):

- the bias is folded into the input rows: a one-hot row sums to one, so
  X W_x + b = (W_x + b)[x], one lookup for every step;
- no tanh on the recursion: PyTorch's CPU tanh costs about four sigmoids, so both tanhs are
  computed as tanh(a) = 2σ(2a) - 1. The candidate's columns of W_x + b and W_h are doubled
  once per call, so one sigmoid serves all four blocks;
- each step writes into buffers allocated once per call, and the additions ride on the
  matmuls (`addmm_`, and the output layer's share of dH inside `addmm`);
- at 32 × 128 a PyTorch call costs microseconds whatever it computes, so the loops make
  their per-step views in one `unbind` and use a 0-dim tensor where the number 1 would be
  converted on every call;
- what does not depend on the recursion (the gates' derivatives) is computed for all steps
  at once, and each weight gradient is one product over all steps.
"""

import torch
import torch.nn.functional as F


def double_candidate(M: torch.Tensor, num_blocks: int) -> torch.Tensor:
    """Return a copy of M (…, num_blocks·hiddens) with the candidate block [2h, 3h) of columns doubled.

    The candidate is the third block in both gated cells: [I, F, G, O] for the LSTM (4 blocks),
    [R, Z, N] for the GRU (3). With its pre-activation doubled, σ(2a) = (tanh(a) + 1) / 2 comes
    out of a sigmoid, the same one as the gates' where they are side by side.
    """
    hiddens = M.shape[-1] // num_blocks
    doubled = M.clone()
    doubled[..., 2 * hiddens:3 * hiddens] *= 2
    return doubled


def sigmoid_to_tanh_(s: torch.Tensor, one: torch.Tensor) -> torch.Tensor:
    """Turn s = σ(2a) into tanh(a) = 2s - 1 in place and return it.

    `one` is a 0-dim tensor: with the number 1, PyTorch converts it to a tensor on every call,
    which at these sizes costs about as much as the arithmetic.
    """
    return s.add_(s).sub_(one)


@torch.no_grad()
def lstm_forward_cached(X, state, W_x, W_h, b, W_hq, b_q):
    """Run the LSTM over X (batch, steps) and return (outputs, final state, cache for backward).

    The cache holds, for every step, the gates [I, F, G, O], C_t, tanh(C_t) and H_t.
    """
    steps, hiddens = X.shape[1], W_h.shape[0]
    # gates[t] starts as X_t W_x + b (candidate doubled) and becomes [I, F, G, O] in the loop
    gates = F.embedding(X.T, double_candidate(W_x + b, 4))
    W_h2 = double_candidate(W_h, 4)
    like = dict(dtype=W_x.dtype, device=W_x.device)
    # index t + 1 holds step t; index 0 holds the initial state
    cells = torch.empty(steps + 1, X.shape[0], hiddens, **like)
    hs = torch.empty_like(cells)
    tanh_cells = torch.empty(steps, X.shape[0], hiddens, **like)
    H, C = state.chunk(2, dim=1)
    hs[0], cells[0] = H, C
    # one view per step and gate, made at once before the loop (indexing in the loop costs as
    # much as the arithmetic at these sizes)
    blocks = gates.view(steps, X.shape[0], 4, hiddens).unbind(2)
    one = torch.ones((), **like)
    for a, i, f, g, o, C_t, tanh_C, H_t in zip(gates, *blocks, cells[1:], tanh_cells, hs[1:], strict=True):
        a.addmm_(H, W_h2).sigmoid_()  # I, F, σ(2 a_g), O
        sigmoid_to_tanh_(g, one)  # G = tanh(a_g)
        C = torch.mul(f, C, out=C_t).addcmul_(i, g)
        sigmoid_to_tanh_(torch.add(C, C, out=tanh_C).sigmoid_(), one)  # tanh(C_t)
        H = torch.mul(o, tanh_C, out=H_t)
    outputs = torch.addmm(b_q, hs[1:].reshape(-1, hiddens), W_hq)
    cache = (X, gates, cells, tanh_cells, hs, W_x, W_h, W_hq)
    return outputs, torch.cat([H, C], dim=1), cache


def gate_factors(gates, cells, tanh_cells):
    """Return (to_dC, factors) for all steps at once: what does not depend on the recursion.

    dC_t += dH_t ⊙ to_dC_t, and the gates' gradients are factors_t ⊙ [dC, dC, dC, dH]:
    factors is (steps, batch, 4, hiddens) with G I(1-I), C_{t-1} F(1-F), I (1-G²) and
    tanh(C_t) O(1-O). Written without temporaries: a fresh large buffer costs a page fault
    per 4 KiB on its first write, as much as the arithmetic.
    """
    steps, batch, width = gates.shape
    i, f, g, o = gates.chunk(4, dim=2)
    factors = torch.empty(steps, batch, 4, width // 4, dtype=gates.dtype, device=gates.device)
    d_i, d_f, d_g, d_o = factors.unbind(dim=2)
    torch.addcmul(i, i, i, value=-1, out=d_i).mul_(g)  # I - I² = I (1 - I)
    torch.addcmul(f, f, f, value=-1, out=d_f).mul_(cells[:-1])
    torch.sub(i, torch.mul(g, g, out=d_g).mul_(i), out=d_g)  # I - I G² = I (1 - G²)
    torch.addcmul(o, o, o, value=-1, out=d_o).mul_(tanh_cells)
    to_dC = torch.mul(tanh_cells, tanh_cells).mul_(o)
    return torch.sub(o, to_dC, out=to_dC), factors  # O - O tanh²(C_t) = O (1 - tanh²(C_t))


@torch.no_grad()
def lstm_backward(d_outputs, d_final_state, cache):
    """Return the gradients (d_state, dW_x, dW_h, db, dW_hq, db_q) of one cached forward pass.

    Each step does only what must wait for the step after it: dH, dC, the gates' gradients
    (written over their factors, in place) and one product with W_hᵀ (which also adds the
    output layer's share of dH_{t-1}).
    """
    X, gates, cells, tanh_cells, hs, W_x, W_h, W_hq = cache
    steps, batch, hiddens = tanh_cells.shape
    to_dC, factors = gate_factors(gates, cells, tanh_cells)
    d_gates = factors.view(steps, batch, 4 * hiddens)  # what the loop turns the factors into
    forget = gates[:, :, hiddens:2 * hiddens]
    # d_hs[t + 1] = dL/dH_t through the output layer; d_hs[0] (the initial state's) is zero
    d_hs = torch.empty_like(hs)
    d_hs[0] = 0
    torch.mm(d_outputs, W_hq.T, out=d_hs[1:].view(-1, hiddens))
    dH_last, dC = (d.clone() for d in d_final_state.chunk(2, dim=1))
    dH = dH_last.add_(d_hs[steps])
    dC_rows, W_hT = dC.unsqueeze(1), W_h.T  # dC_rows: dC as (batch, 1, hiddens), for I, F and G
    per_step = zip(to_dC, factors[:, :, :3], factors[:, :, 3], forget, d_gates, d_hs[:-1], strict=True)
    for to_dC_t, d_ifg, d_o, F_t, d_gates_t, dH_out in reversed(list(per_step)):
        dC.addcmul_(dH, to_dC_t)
        d_ifg.mul_(dC_rows)
        d_o.mul_(dH)
        dC.mul_(F_t)
        dH = torch.addmm(dH_out, d_gates_t, W_hT)  # dH_{t-1}: this step's and the output's share
    return (torch.cat([dH, dC], dim=1),) + weight_gradients(X, d_gates, d_gates, hs, d_outputs, W_x)


def weight_gradients(X, d_inputs, d_products, hs, d_outputs, W_x):
    """Return (dW_x, dW_h, db, dW_hq, db_q), each summed over all steps in one operation.

    `d_inputs` are the gradients of the input terms X W_x + b, `d_products` those of the products
    H W_h (steps, batch, gates·hiddens): the same tensor for the LSTM; for the GRU the candidate's
    block differs, since R multiplies its product (`d2lmini.gru_bptt`).
    """
    hiddens = hs.shape[2]
    flat_inputs = d_inputs.reshape(-1, d_inputs.shape[2])
    flat_products = d_products.reshape(-1, d_products.shape[2])
    # a sum over rows as a product with ones: faster on CPUs
    ones = torch.ones(flat_inputs.shape[0], dtype=flat_inputs.dtype, device=flat_inputs.device)
    dW_x = torch.zeros_like(W_x).index_add_(0, X.T.reshape(-1), flat_inputs)
    return (dW_x, hs[:-1].reshape(-1, hiddens).T @ flat_products, ones @ flat_inputs,
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
