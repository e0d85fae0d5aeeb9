"""The divergence net: when a training run has blown up, and the error that says so (notebooks 04 and 06).

`train_step` refuses an update whose loss passes `divergence_limit` or whose gradient is not
finite (`stop_if_diverged` raises `StepDiverged`), and an update that overflows the optimizer's
state (`overflow_is_divergence`); `d2lmini.train` turns that into `TrainingDiverged`, which keeps
the history so far, and judges the last update with `validate_final_model`.
"""

import contextlib
import math

import torch
from torch import nn

from d2lmini.history import History
from d2lmini.i18n import _

# A loss above this many nats per token means a perplexity beyond e**700, which a float
# cannot hold: the run has diverged even if the loss itself is still a finite number.
MAX_LOSS = 700.0
# A loss above BLOW_UP times that of a uniform guess (ln |V| nats per token) means the run has
# blown up: the model is far worse than guessing and will not come back. Judging by this
# limit, not by overflow to inf, makes the verdict the same whichever CPU kernels (AVX2,
# AVX-512, ARM) or device computed it: one path may overflow where another stays finite.
BLOW_UP = 10.0


class TrainingDiverged(RuntimeError):
    """The run blew up (see `blown_up`); `step` and `epoch` say where, `reason` says how.

    `history` holds what was measured up to that minibatch, so a plot can still show it.
    """

    def __init__(self, step: int, epoch: int, loss: float, lr: float, grad_norm: float = 0.0,
                 history: History | None = None, reason: str | None = None, clipping: bool = False):
        self.step, self.epoch, self.loss, self.lr = step, epoch, loss, lr
        self.grad_norm, self.history = grad_norm, history
        if reason is None:
            reason = (_("the loss became {loss:.4g} nats per token").format(loss=loss)
                      if math.isfinite(grad_norm)
                      else _("the gradient norm became {norm:.4g}").format(norm=grad_norm))
        self.reason = reason
        advice = (_("Try a learning rate ten times smaller.") if clipping
                  else _("Try a learning rate ten times smaller, or turn on gradient clipping (a threshold "
                         "such as 1)."))
        # TRANSLATORS: {reason} says how the run blew up ("the loss became 45.2 nats per token"); {advice}
        # is what to try ("Try a learning rate ten times smaller.").
        super().__init__(_("Training diverged: {reason} at minibatch {step} of the run (epoch {epoch}) "
                           "(learning rate {lr:g}). {advice}").format(reason=reason, step=step, epoch=epoch,
                                                                      lr=lr, advice=advice))


def divergence_limit(vocab_size: int) -> float:
    """Return the loss (nats per token) above which a run over `vocab_size` tokens has blown up."""
    return min(MAX_LOSS, BLOW_UP * math.log(max(vocab_size, 2)))


def blown_up(loss: float, vocab_size: int) -> bool:
    """Return True when `loss` (nats per token) is not finite or above `divergence_limit`."""
    return not loss < divergence_limit(vocab_size)


def parameters_finite(model: nn.Module) -> bool:
    """Return True when every parameter of `model` is finite (no inf, no nan)."""
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def safe_exp(x: float) -> float:
    """Return exp(x), or infinity where exp overflows (a perplexity past any float)."""
    return math.exp(x) if x < MAX_LOSS else math.inf


class StepDiverged(ArithmeticError):
    """`train_step` refused to update: the loss or the gradient says the run has blown up."""

    def __init__(self, loss: float, norm: float, reason: str | None = None):
        super().__init__(reason or _("loss {loss:.4g}, gradient norm {norm:.4g}").format(loss=loss,
                                                                                         norm=norm))
        self.loss, self.norm, self.reason = loss, norm, reason


def stop_if_diverged(model: nn.Module, loss: float, clipped) -> None:
    """Raise `StepDiverged` when `loss` reached the model's `divergence_limit` or the gradient's norm
    (`clipped.norm`, a `d2lmini.clipping.Clipped`) is not finite: updating would only make it worse."""
    if not loss < divergence_limit(model.vocab_size) or not math.isfinite(clipped.norm):
        raise StepDiverged(loss, clipped.norm)


@contextlib.contextmanager
def overflow_is_divergence(loss: float, clipped):
    """Turn an overflow of the optimizer's state inside the block into `StepDiverged`.

    torch reports it as a RuntimeError, e.g. "value cannot be converted to type float without
    overflow" when Adam's running averages pass float32's range.
    """
    try:
        yield
    except RuntimeError as error:
        raise StepDiverged(loss, clipped.norm, _("the optimizer's state overflowed")) from error


def diverged(error: StepDiverged, step: int, epoch: int, lr: float, history: History,
             clipping: bool) -> TrainingDiverged:
    """Return the `TrainingDiverged` for `error` at minibatch `step` of the run, with the history so far."""
    return TrainingDiverged(step, epoch, error.loss, lr, error.norm, history, error.reason, clipping)


def validate_final_model(model: nn.Module, history: History, lr: float) -> None:
    """Raise `TrainingDiverged` if the trained model blew up with its last update.

    Every minibatch's loss is checked before its update, so only the last update is judged
    here: by the parameters (finite?) and the last validation perplexity (see `blown_up`).
    """
    epoch = history.epoch[-1] if history.epoch else 0
    valid = history.valid_perplexity[-1] if history.valid_perplexity else 1.0
    nats = math.log(valid) if valid > 0 else math.inf
    if not parameters_finite(model):
        reason = _("the parameters stopped being finite after the last update")
    elif blown_up(nats, model.vocab_size):
        reason = _("the validation loss reached {loss:.4g} nats per token after the last update").format(
            loss=nats)
    else:
        return
    raise TrainingDiverged(len(history.step_loss), int(epoch), nats, lr, 0.0, history, reason)
