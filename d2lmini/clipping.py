"""Gradient clipping (notebook 06): the joint-norm rule, per-element clipping, and the rule a run uses."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from d2lmini.i18n import _


def check_threshold(theta: float) -> None:
    """Raise ValueError unless the clipping threshold `theta` is positive (None, for off, is not its case)."""
    if not theta > 0:
        raise ValueError(_("the clipping threshold must be positive (or None for off), not {theta}").format(
            theta=theta))


def clip_gradients(params: Iterable[torch.Tensor], theta: float | None) -> float:
    """Rescale all gradients together so their joint norm is at most `theta`; return the old norm.

    g <- min(1, theta / ||g||) * g, where ||g|| is the norm of all gradients stacked
    into one vector. `theta=None` only measures the norm.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    if theta is not None:
        check_threshold(theta)
        scale = torch.clamp(theta / (norm + 1e-12), max=1.0)
        for g in grads:
            g.mul_(scale)
    return float(norm)


def clip_gradient_values(params: Iterable[torch.Tensor], limit: float) -> tuple[float, float]:
    """Clamp every gradient entry to [-limit, limit] (per-element clipping).

    Returns the joint norm before clipping and the cosine between the gradient before
    and after, which shows how much per-element clipping turned its direction.
    """
    check_threshold(limit)
    grads = [p.grad for p in params if p.grad is not None]
    before = torch.cat([g.flatten() for g in grads])
    for g in grads:
        g.clamp_(-limit, limit)
    after = torch.cat([g.flatten() for g in grads])
    cosine = F.cosine_similarity(before, after, dim=0)
    return float(torch.linalg.vector_norm(before)), float(cosine)


@dataclass(frozen=True)
class Clipped:
    """What clipping did in one step: the joint norm before, whether it acted, and (per-element
    clipping only) the cosine between the gradient before and after."""

    norm: float
    acted: bool
    cosine: float | None = None


def clipping_rule(theta: float | None, mode: str = "norm") -> Callable[[list[torch.Tensor]], Clipped]:
    """Return the clipping a run applies to its parameters' gradients at every step.

    `mode` "norm" clips the joint norm to `theta` (`clip_gradients`), "value" clamps every entry
    to [-theta, theta] (`clip_gradient_values`); `theta=None` only measures the norm. Decided
    once per run, so the loop does not look at `mode` again.
    """
    if mode not in ("norm", "value"):
        raise ValueError(_("clip_mode must be 'norm' or 'value', not {mode}").format(mode=repr(mode)))
    if theta is not None:
        check_threshold(theta)
    if theta is None:
        return lambda params: Clipped(clip_gradients(params, None), False)
    if mode == "value":
        def clip_values(params: list[torch.Tensor]) -> Clipped:
            norm, cosine = clip_gradient_values(params, theta)
            return Clipped(norm, cosine < 1.0 - 1e-7, cosine)
        return clip_values

    def clip_norm(params: list[torch.Tensor]) -> Clipped:
        norm = clip_gradients(params, theta)
        return Clipped(norm, norm > theta)
    return clip_norm
