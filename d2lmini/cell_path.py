"""Why the LSTM can remember, as numbers: its forget gates, the cell path's product over many
steps, and the RNN's Jacobians over the same lags (notebook 09).

Along the LSTM's cell, dC_t/dC_{t-1} = diag(F_t), so over `lag` steps the cell path multiplies a
gradient by the product of `lag` forget gates, unit by unit. The RNN's state path multiplies it by
`lag` Jacobians diag(1 - H_t²) W_hhᵀ. Both are measured here on a text read as one stream.
"""

import torch
import torch.nn.functional as F

from d2lmini.i18n import _


@torch.no_grad()
def lstm_forget_gates(model, indices: torch.Tensor) -> torch.Tensor:
    """Return the forget gates F_t of a scratch LSTM reading `indices` as one stream: (steps, hiddens)."""
    h = model.num_hiddens
    input_terms = F.embedding(indices.to(model.W_x.device), model.W_x) + model.b
    H = C = torch.zeros(1, h, device=model.W_x.device)
    forgets = []
    for input_term in input_terms:
        i, f, g, o = (input_term[None] + H @ model.W_h).chunk(4, dim=1)
        F_t = torch.sigmoid(f)
        C = F_t * C + torch.sigmoid(i) * torch.tanh(g)
        H = torch.sigmoid(o) * torch.tanh(C)
        forgets.append(F_t[0])
    return torch.stack(forgets).cpu()


def cell_path_products(forgets: torch.Tensor, lag: int) -> torch.Tensor:
    """Return every product F_{t-lag+1} ⊙ … ⊙ F_t of `lag` consecutive forget gates.

    The shape is (steps - lag + 1, hiddens).

    Each entry is how much of a gradient on C_t reaches C_{t-lag} along the cell path alone.
    Computed as exp of a running sum of logs, so a product of a hundred gates does not underflow
    before it is taken.
    """
    logs = torch.cat([torch.zeros(1, forgets.shape[1], dtype=torch.float64),
                      forgets.double().log().cumsum(0)])
    return (logs[lag:] - logs[:-lag]).exp()


@torch.no_grad()
def rnn_states(model, indices: torch.Tensor) -> torch.Tensor:
    """Return the hidden states H_t of a scratch RNN reading `indices` as one stream: (steps, hiddens)."""
    input_terms = F.embedding(indices.to(model.W_xh.device), model.W_xh) + model.b_h
    H = torch.zeros(1, model.num_hiddens, device=model.W_xh.device)
    states = []
    for input_term in input_terms:
        H = torch.tanh(input_term[None] + H @ model.W_hh)
        states.append(H[0])
    return torch.stack(states).cpu()


@torch.no_grad()
def rnn_jacobian_norms(model, indices: torch.Tensor, lag: int, positions) -> torch.Tensor:
    """Return ‖∂H_t/∂H_{t-lag}‖₂ (spectral norm) of a scratch RNN at each t in `positions` (notebook 05).

    With row states, ∂H_t/∂H_{t-1} = diag(1 - H_t²) W_hhᵀ; the `lag` factors are multiplied in
    float64, and the norm is the largest singular value of the product.
    """
    states = rnn_states(model, indices).double()
    W_hh_T = model.W_hh.detach().cpu().double().T
    norms = []
    for t in positions:
        if t < lag:
            raise ValueError(_("position {position} has fewer than {lag} steps before it").format(
                position=t, lag=lag))
        J = torch.eye(W_hh_T.shape[0], dtype=torch.float64)
        for s in range(t - lag + 1, t + 1):
            J = ((1 - states[s] ** 2)[:, None] * W_hh_T) @ J  # ∂H_s/∂H_{s-1} times what came before
        norms.append(torch.linalg.matrix_norm(J, ord=2))
    return torch.stack(norms)
