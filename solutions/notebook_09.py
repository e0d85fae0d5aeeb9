"""Solutions to the exercises of notebook 09 (gated cells: the GRU and the LSTM)."""

import torch

ANSWERS = {
    "check_saturated_gate_slope": 0.04518,
}


def gru_cell(X, H, params):
    """One GRU step with a weight matrix per gate; the reset gate scales H W_hn + b_hn."""
    p = params
    R = torch.sigmoid(X @ p["W_xr"] + H @ p["W_hr"] + p["b_r"])
    Z = torch.sigmoid(X @ p["W_xz"] + H @ p["W_hz"] + p["b_z"])
    N = torch.tanh(X @ p["W_xn"] + p["b_n"] + R * (H @ p["W_hn"] + p["b_hn"]))
    return Z * H + (1 - Z) * N


def lstm_cell(X, H, C, params):
    """One LSTM step with a weight matrix per gate: the cell is updated by addition."""
    p = params
    I = torch.sigmoid(X @ p["W_xi"] + H @ p["W_hi"] + p["b_i"])
    F = torch.sigmoid(X @ p["W_xf"] + H @ p["W_hf"] + p["b_f"])
    G = torch.tanh(X @ p["W_xg"] + H @ p["W_hg"] + p["b_g"])
    O = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"] + p["b_o"])
    C = F * C + I * G
    return O * torch.tanh(C), C


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    """One LSTM step backward: the cell gathers dC and H_t's share, then each gate goes through its slope."""
    I, F, G, O = gates.chunk(4, dim=1)
    tanh_C = torch.tanh(C)
    dC = dC + dH * O * (1 - tanh_C**2)  # C_t reaches the loss along the cell and through H_t
    dA = torch.cat([dC * G * I * (1 - I), dC * C_prev * F * (1 - F), dC * I * (1 - G**2),
                    dH * tanh_C * O * (1 - O)], dim=1)
    return dA @ W_x.T, dA @ W_h.T, dC * F, X.T @ dA, H_prev.T @ dA, dA.sum(0)
