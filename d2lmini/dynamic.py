"""Dynamic evaluation: let a trained RNN keep learning from the text it has just scored.

Reading a held-out text as one stream, segment by segment, the model first scores a segment
(those log-probabilities are the result: nothing is predicted after seeing it) and then
takes one gradient step on that segment, so later segments are predicted by a model that has
adapted to the text so far (Krause et al., 2018). The step is RMS-normalised, each weight's
gradient divided by the root mean square of its gradients on the *training* text, and every
step pulls the weights back towards the trained ones by a share `decay`:

    theta <- theta - lr * g / (rms_train + eps) + decay * (theta_trained - theta)

`lr` and `decay` are chosen on text cut from the end of the training text, never on the
held-out text (`benchmarks/quality.py`). These updates adapt a copy of the model during
evaluation; they are not training, which happens only in `d2lmini.train`.
"""

import copy
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from d2lmini.i18n import _


@dataclass(frozen=True)
class DynamicSettings:
    """Step size, pull back to the trained weights, and segment length of dynamic evaluation."""

    lr: float = 1e-4
    decay: float = 0.0
    segment: int = 50
    eps: float = 1e-8

    def __post_init__(self):
        if not (self.lr >= 0 and 0 <= self.decay <= 1 and self.segment >= 1 and self.eps > 0):
            raise ValueError(_("need lr >= 0, 0 <= decay <= 1, segment >= 1 and eps > 0; got "
                               "{settings}").format(settings=self))


def _segment_loss(model, X: torch.Tensor, Y: torch.Tensor, state: torch.Tensor):
    outputs, state = model(X.reshape(1, -1), state.detach())
    return F.cross_entropy(outputs.float(), Y, reduction="none"), state


def training_gradient_rms(model, indices: torch.Tensor, segment: int = 50,
                          max_segments: int = 200) -> list[torch.Tensor]:
    """Root mean square, per weight, of the gradients of `model` on segments of training text."""
    device = next(model.parameters()).device
    squares = [torch.zeros_like(p) for p in model.parameters()]
    state, count = model.begin_state(1), 0
    for start in range(0, min(len(indices) - 1, segment * max_segments), segment):
        X = indices[start : start + segment].to(device)
        Y = indices[start + 1 : start + 1 + segment].to(device)
        losses, state = _segment_loss(model, X[: len(Y)], Y, state)
        grads = torch.autograd.grad(losses.mean(), list(model.parameters()))
        for square, grad in zip(squares, grads, strict=True):
            square += grad**2
        count += 1
    return [(square / max(count, 1)).sqrt() for square in squares]


def dynamic_log_probs(model, indices: torch.Tensor, history: torch.Tensor, rms: list[torch.Tensor],
                      settings: DynamicSettings = DynamicSettings()) -> np.ndarray:
    """Return ln p(indices[t] | history, indices[:t]) under dynamic evaluation (see the module docstring).

    `model` itself is left unchanged (a copy adapts). With lr = 0 the result equals
    `d2lmini.mixture.rnn_log_probs` up to rounding: the segments are scored before any update.
    """
    adapted = copy.deepcopy(model)
    params = list(adapted.parameters())
    trained = [p.detach().clone() for p in params]
    device = params[0].device
    state = adapted.begin_state(1)
    with torch.no_grad():  # read the history but its last character (not scored) to warm the state up
        for start in range(0, len(history) - 1, 500):
            _, state = adapted(history[start : min(start + 500, len(history) - 1)].reshape(1, -1).to(device),
                               state)
    stream = torch.cat([history[-1:], indices])
    out = []
    for start in range(0, len(stream) - 1, settings.segment):
        X = stream[start : start + settings.segment].to(device)
        Y = stream[start + 1 : start + 1 + settings.segment].to(device)
        losses, state = _segment_loss(adapted, X[: len(Y)], Y, state)
        out.append(-losses.detach().cpu())  # scored before the model learns from this segment
        if settings.lr > 0:
            grads = torch.autograd.grad(losses.mean(), params)
            with torch.no_grad():
                for p, g, r, p0 in zip(params, grads, rms, trained, strict=True):
                    p.sub_(settings.lr * g / (r + settings.eps)).add_(settings.decay * (p0 - p))
    return torch.cat(out).double().numpy()
