"""Solutions to the exercises of notebook 02 (one matmul instead of two)."""

import torch

ANSWERS = {
    "check_stacked_weight_shape": (28 + 64, 64),
    "check_multiplication_count": 32 * (28 + 64) * 64,
    "check_gru_weight_shape": (3 * 64, 28),
}


def fused_step(X, H, W_xh, W_hh, b_h):
    """tanh(X W_xh + H W_hh + b_h) with a single matrix product."""
    return torch.tanh(torch.cat((X, H), dim=1) @ torch.cat((W_xh, W_hh), dim=0) + b_h)
