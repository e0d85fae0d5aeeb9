"""Self-checks for the exercises of notebook 06 (gradient clipping).

Each `check_*` takes the student's answer and returns a `Verdict` (shown by the notebook):
whether it is right, with a hint when it is not.
"""

import math

import torch

from d2lmini.clipping import clip_gradients
from d2lmini.exercises import Verdict, number_verdict, self_check
from d2lmini.exercises.coding import Case, check_function, never, new_tensors, sampler
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import N_, _

# Exercise 3: a larger model than the notebook's (which prints its own bound): 28 characters,
# 64 hidden units. Parameters: W_xh (28 x 64), W_hh (64 x 64), b_h (64), W_hq (64 x 28), b_q (28).
MODEL_PARAMETERS = 28 * 64 + 64 * 64 + 64 + 64 * 28 + 28


@self_check
def check_clipped_entry(answer, theta: float = 6.5) -> Verdict:
    """Exercise 1: g_W = (3, 4), g_b = (12,): the entry of g_b after clipping the joint norm to `theta`."""
    scale = min(1.0, theta / 13)
    return number_verdict(
        answer, 12 * scale,
        _("The joint norm is sqrt(9 + 16 + 144) = 13, so every entry is multiplied by min(1, {theta:g} / "
          "13) = {scale:.4g}.").format(theta=theta, scale=scale),
        _("Stack all three numbers into one vector, take its norm, and scale by min(1, θ / norm)."),
    )


@self_check
def check_per_tensor_bound(answer, theta: float = 1.0) -> Verdict:
    """Exercise 2: the largest joint norm when each of the RNN's 5 tensors is clipped to `theta` alone."""
    expected = theta * math.sqrt(5)
    return number_verdict(
        answer, expected,
        _("With k tensors each of norm at most θ, the joint norm is at most θ·sqrt(k) = {theta:g}·sqrt(5) "
          "≈ {expected:.4g}.").format(theta=theta, expected=expected),
        _("The squared joint norm is the sum of the five squared tensor norms; make each as large as "
          "allowed."),
    )


@self_check
def check_value_clip_bound(answer, clip: float = 0.05) -> Verdict:
    """Exercise 3: the largest gradient norm after per-element clipping at `clip` (28 symbols, 64 units)."""
    expected = clip * math.sqrt(MODEL_PARAMETERS)
    return number_verdict(
        answer, expected,
        _("Every one of the {count} entries can be ±c, so the norm can reach c·sqrt(n) = {expected:.3f}: "
          "the bound grows with the size of the model.").format(count=MODEL_PARAMETERS, expected=expected),
        _("First count the parameters of the model (W_xh, W_hh, b_h, W_hq and b_q); then imagine every "
          "entry at ±c."),
    )


@self_check
def check_max_step(answer, lr: float = 2.5, theta: float = 1.0) -> Verdict:
    """Exercise 4: the longest step one SGD update can take with learning rate `lr`, clipping at `theta`."""
    return number_verdict(
        answer, lr * theta,
        _("The step is -η·g' and ‖g'‖ ≤ θ, so its length is at most η·θ = {longest:g}, however steep the "
          "loss.").format(longest=lr * theta),
        _("An SGD step is -η times the clipped gradient; how long can the clipped gradient be at most?"),
    )


def reference_clip(grads: list[torch.Tensor], theta: float) -> list[torch.Tensor]:
    """New tensors: `grads` clipped by the package's own `d2lmini.clipping.clip_gradients`.

    `clip_gradients` clips the `.grad` of parameters in place, so each gradient is copied into
    the `.grad` of a stand-in parameter first.
    """
    holders = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for holder, grad in zip(holders, grads, strict=True):
        holder.grad = grad.clone()
    clip_gradients(holders, theta)
    return [holder.grad for holder in holders]


# The five tensors of an RNN (W_xh, W_hh, b_h, W_hq, b_q): a clip must use every one of them.
RNN_SHAPES = [(5, 4), (4, 4), (4,), (4, 5), (5,)]


def _clip_cases(device: torch.device):
    rand = sampler(6, device)
    shapes = [(3, 4), (4,), (4, 2)]
    labels = {"far above": N_("gradients whose joint norm is far above θ = {theta:g}"),
              "below": N_("gradients whose joint norm is below θ = {theta:g}"),
              "above": N_("gradients whose joint norm is above θ = {theta:g}")}
    for scale, theta, label in [(10.0, 1.0, "far above"), (0.01, 1.0, "below"), (1.0, 0.3, "above"),
                                (5.0, 2.0, "above")]:
        grads = [rand(*shape) * scale for shape in shapes]
        yield Case(_(labels[label]).format(theta=theta), (grads, theta), reference=reference_clip)
    zeros = [torch.zeros(shape, device=device) for shape in shapes]
    yield Case(_("gradients that are all zero"), (zeros, 1.0), reference=reference_clip)
    one = [torch.tensor([3.0, 4.0], device=device)]
    yield Case(_("one gradient (3, 4), exactly at θ = 5"), (one, 5.0), reference=reference_clip)
    # Most of the norm in the last tensors: a clip that looks at only the first few gets it wrong.
    rnn = [rand(*shape) * (0.01 if i < 3 else 3.0) for i, shape in enumerate(RNN_SHAPES)]
    yield Case(_("the five gradients of an RNN, most of the norm in the last two, θ = 1"), (rnn, 1.0),
               reference=reference_clip)
    many = [rand(3) * 0.1 for _unused in range(6)] + [torch.full((2,), 4.0, device=device)]
    yield Case(_("seven gradients, the largest last, θ = 2"), (many, 2.0), reference=reference_clip)


def check_clip_function(clip) -> Verdict:
    """Exercise 5: `clip(grads, theta)` returns new tensors, clipped by their joint norm (not per tensor).

    The inputs must stay as they were (no in-place clipping), and `.data` is not needed. The returned
    tensors must be new ones, as the exercise says: below θ neither the inputs themselves nor views
    of their memory.
    """
    return check_function(
        clip, _clip_cases,
        _("Your function clips by the joint norm, leaves small gradients alone, and does not touch its "
          "inputs."),
        rules=[never({"data"}, N_("Your function reads .data; work with the tensors themselves.")),
               never({"clip_grad_norm_", "clip_grad_value_"}, N_("Write the clipping yourself, without "
                                                                 "torch.nn.utils."))],
        signature="my_clip(grads, theta)", rtol=1e-5, atol=1e-7,
        mistakes=mistakes_of("06:clip_function"), form=new_tensors)
