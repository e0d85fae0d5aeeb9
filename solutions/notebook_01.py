"""Solutions to the exercises of notebook 01 (hidden state)."""

import torch

ANSWERS = {
    "check_ngram_order": 5,  # 100**4 = 10**8 <= 10**9 < 100**5
    "check_rnn_parameter_count": 28 * 64 + 64 * 64 + 64 + 64 * 28 + 28,
    "check_hidden_state_shape": (8, 64),
    "check_same_bag": ("stop", "pots"),  # not the notebook's own ("listen", "silent")
}


def rnn_step(X_t, H, W_xh, W_hh, b_h):
    """One step of the recurrence: the new hidden state from the input and the previous state."""
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


def all_states(tokens, W_xh, W_hh, b_h):
    """Every hidden state H_1 ... H_T for token indices (batch, steps), from a zero H_0."""
    H = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for x_t in tokens.T:  # the tokens of every sequence at step t
        H = torch.tanh(W_xh[x_t] + H @ W_hh + b_h)
        states.append(H)
    return torch.stack(states)
