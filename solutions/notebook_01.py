"""Solutions to the exercises of notebook 01 (hidden state)."""

import torch

ANSWERS = {
    "check_ngram_order": 7,  # 28**6 = 481,890,304 <= 10**9 < 28**7
    "check_rnn_parameter_count": 28 * 64 + 64 * 64 + 64 + 64 * 28 + 28,
    "check_hidden_state_shape": (8, 64),
    "check_same_bag": ("stop", "pots"),  # not the notebook's own ("listen", "silent")
}


def rnn_step(X_t, H, W_xh, W_hh, b_h):
    """One step of the recurrence: the new hidden state from the input and the previous state."""
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)
