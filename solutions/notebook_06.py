"""Solutions to the exercises of notebook 06 (gradient clipping)."""

import math

import torch

ANSWERS = {
    "check_clipped_entry": 6.0,
    "check_per_tensor_bound": 2.236,
    "check_value_clip_bound": round(0.05 * math.sqrt(28 * 64 + 64 * 64 + 64 + 64 * 28 + 28), 3),
    "check_max_step": 2.5,
}


def my_clip(grads, theta):
    """New tensors: the gradients scaled by min(1, theta / their joint norm)."""
    norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if norm <= theta:
        return [g.clone() for g in grads]
    return [g * (theta / norm) for g in grads]
