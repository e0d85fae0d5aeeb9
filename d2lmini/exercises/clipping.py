"""Self-checks for the exercises of notebook 06 (gradient clipping).

Each `check_*` takes the student's answer, prints whether it is right (with a hint when
it is not) and returns a `Verdict`; `quiet=True` suppresses the printing.
"""

import math

import torch

from d2lmini.exercises import Verdict, close_enough, verdict

# The notebook's model: vocabulary of 28 characters, 32 hidden units.
# Parameters: W_xh (28 x 32), W_hh (32 x 32), b_h (32), W_hq (32 x 28), b_q (28).
MODEL_PARAMETERS = 28 * 32 + 32 * 32 + 32 + 32 * 28 + 28


def check_clipped_entry(answer, quiet: bool = False) -> Verdict:
    """Exercise 1: g_W = (3, 4), g_b = (12,), θ = 6.5; the entry of g_b after global-norm clipping is 6."""
    return verdict(
        close_enough(answer, 6.0),
        "The joint norm is sqrt(9 + 16 + 144) = 13, so every entry is multiplied by 6.5 / 13 = 0.5.",
        "Stack all three numbers into one vector, take its norm, and scale by min(1, θ / norm).",
        quiet,
    )


def check_per_tensor_bound(answer, quiet: bool = False) -> Verdict:
    """Exercise 2: clipping each of the RNN's 5 tensors to θ = 1 separately allows a joint norm of sqrt(5)."""
    return verdict(
        close_enough(answer, math.sqrt(5), rel=1e-3),
        "With k tensors each of norm at most θ, the joint norm is at most θ·sqrt(k) = sqrt(5) ≈ 2.236.",
        "The squared joint norm is the sum of the five squared tensor norms; make each as large as allowed.",
        quiet,
    )


def check_value_clip_bound(answer, quiet: bool = False) -> Verdict:
    """Exercise 3: per-element clipping at c = 0.05 of the 2876-parameter model allows 0.05·sqrt(2876)."""
    expected = 0.05 * math.sqrt(MODEL_PARAMETERS)
    return verdict(
        close_enough(answer, expected, rel=1e-3),
        f"Every one of the {MODEL_PARAMETERS} entries can be ±c, so the norm can reach "
        f"c·sqrt(n) = {expected:.3f}: the bound grows with the size of the model.",
        f"First count the parameters (the model has {MODEL_PARAMETERS}); then imagine every entry at ±c.",
        quiet,
    )


def check_max_step(answer, quiet: bool = False) -> Verdict:
    """Exercise 4: with learning rate 2.5 and θ = 1, one SGD step moves the parameters at most 2.5."""
    return verdict(
        close_enough(answer, 2.5),
        "The step is -η·g' and ‖g'‖ ≤ θ, so its length is at most η·θ = 2.5, however steep the loss.",
        "An SGD step is -η times the clipped gradient; how long can the clipped gradient be at most?",
        quiet,
    )


def _cases():
    generator = torch.Generator().manual_seed(6)
    shapes = [(3, 4), (4,), (4, 2)]
    for scale, theta in [(10.0, 1.0), (0.01, 1.0), (1.0, 0.3), (5.0, 2.0)]:
        yield [torch.randn(shape, generator=generator) * scale for shape in shapes], theta


def check_clip_function(clip, quiet: bool = False) -> Verdict:
    """Exercise 5: `clip(grads, theta)` returns new tensors, clipped by their joint norm (not per tensor)."""
    hint = ("Write a function clip(grads, theta) that returns a list of new tensors: compute one norm "
            "over all tensors together, then multiply every tensor by min(1, theta / norm).")
    if not callable(clip):
        return verdict(False, "", hint, quiet)
    for grads, theta in _cases():
        norm = torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads]))
        scale = min(1.0, theta / float(norm))
        expected = [g * scale for g in grads]
        try:
            got = clip([g.clone() for g in grads], theta)
            ok = (got is not None and len(got) == len(expected)
                  and all(torch.allclose(a, b, rtol=1e-4, atol=1e-7)
                          for a, b in zip(got, expected, strict=True)))
        except Exception as error:  # the student's code may fail in any way
            return verdict(False, "", f"Your function raised {type(error).__name__}: {error}. {hint}", quiet)
        if not ok:
            where = "above" if float(norm) > theta else "below"
            return verdict(False, "", f"Wrong result for gradients whose joint norm is {where} θ. {hint}",
                           quiet)
    return verdict(True, "Your function clips by the joint norm and leaves small gradients alone.", hint,
                   quiet)
