"""Training a character-level RNN: clipping, epochs, perplexity (notebooks 04, 06 and 07)."""

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from d2lmini.batching import make_batches
from d2lmini.rnn import RNNScratch, TorchRNN, model_device


@dataclass
class TrainConfig:
    """Hyperparameters of one training run; the defaults are the course's defaults.

    The defaults are what `benchmarks/quality.py` found best for a vanilla RNN trained for
    seconds to a minute on a 2-core CPU: 320 hidden units, Adam at 0.01 decaying along a
    half cosine to 0 by the end of training (`lr_schedule="cosine"`; "constant" keeps
    it fixed, as the book does with plain SGD), minibatches of 64 x 35 characters.

    `theta` is the clipping threshold (None: no clipping). With `clip_mode="norm"` the
    joint gradient norm is clipped to theta (notebook 06's rule); with "value" every
    gradient entry is clamped to [-theta, theta] (per-element clipping, for comparison).
    """

    num_hiddens: int = 320
    lr: float = 0.01
    optimizer: str = "adam"
    batch_size: int = 64
    num_steps: int = 35
    theta: float | None = 1.0
    clip_mode: str = "norm"
    lr_schedule: str = "cosine"
    num_epochs: int = 10
    max_seconds: float | None = None
    sampling: str = "sequential"
    init: str = "xavier"
    seed: int = 0


@dataclass
class History:
    """What `train` measured: one entry per epoch, and one per minibatch (`step_*`).

    `step_grad_norm` is measured before clipping. `step_clip_cosine` (per-element
    clipping only) is the cosine between the gradient before and after clipping.
    """

    epoch: list[float] = field(default_factory=list)
    train_perplexity: list[float] = field(default_factory=list)
    valid_perplexity: list[float] = field(default_factory=list)
    tokens_per_second: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    step_loss: list[float] = field(default_factory=list)
    step_grad_norm: list[float] = field(default_factory=list)
    step_clip_cosine: list[float] = field(default_factory=list)
    step_lr: list[float] = field(default_factory=list)
    clipped_steps: int = 0


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
                 history: "History | None" = None, reason: str | None = None, clipping: bool = False):
        self.step, self.epoch, self.loss, self.lr = step, epoch, loss, lr
        self.grad_norm, self.history = grad_norm, history
        if reason is None:
            reason = (f"the loss became {loss:.4g} nats per token" if math.isfinite(grad_norm)
                      else f"the gradient norm became {grad_norm:.4g}")
        self.reason = reason
        advice = "Try a learning rate ten times smaller" + (
            "." if clipping else ", or turn on gradient clipping (a threshold such as 1).")
        super().__init__(f"Training diverged: {reason} at minibatch {step} of epoch {epoch} "
                         f"(learning rate {lr:g}). {advice}")


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
        if theta <= 0:
            raise ValueError(f"the clipping threshold must be positive (or None for off), not {theta}")
        scale = torch.clamp(theta / (norm + 1e-12), max=1.0)
        for g in grads:
            g.mul_(scale)
    return float(norm)


def clip_gradient_values(params: Iterable[torch.Tensor], limit: float) -> tuple[float, float]:
    """Clamp every gradient entry to [-limit, limit] (per-element clipping).

    Returns the joint norm before clipping and the cosine between the gradient before
    and after, which shows how much per-element clipping turned its direction.
    """
    if not limit > 0:
        raise ValueError(f"the clipping threshold must be positive (or None for off), not {limit}")
    grads = [p.grad for p in params if p.grad is not None]
    before = torch.cat([g.flatten() for g in grads])
    for g in grads:
        g.clamp_(-limit, limit)
    after = torch.cat([g.flatten() for g in grads])
    cosine = F.cosine_similarity(before, after, dim=0)
    return float(torch.linalg.vector_norm(before)), float(cosine)


def make_model(kind: str, vocab_size: int, config: TrainConfig, device: torch.device | str = "cpu"):
    """Return a seeded "scratch" (RNNScratch) or "torch" (TorchRNN) model on `device`."""
    generator = torch.Generator().manual_seed(config.seed)
    if kind == "scratch":
        model = RNNScratch(vocab_size, config.num_hiddens, config.init, generator)
    elif kind == "torch":
        torch.manual_seed(config.seed)
        model = TorchRNN(vocab_size, config.num_hiddens)
    else:
        raise ValueError(f"kind must be 'scratch' or 'torch', not {kind!r}")
    return model.to(device)


def scheduled_lr(lr: float, schedule: str, progress: float) -> float:
    """Return the learning rate at `progress` (0 at the start of training, 1 at the end).

    "constant" keeps `lr`; "cosine" falls along a half cosine from `lr` to 0, so training
    takes big steps early and settles into a minimum at the end.
    """
    if schedule == "constant":
        return lr
    if schedule == "cosine":
        return lr * 0.5 * (1 + math.cos(math.pi * min(max(progress, 0.0), 1.0)))
    raise ValueError(f"lr_schedule must be 'constant' or 'cosine', not {schedule!r}")


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """Return plain SGD (as in the book) or Adam over `params`."""
    if not lr > 0 or not math.isfinite(lr):
        raise ValueError(f"the learning rate must be a positive number, not {lr}")
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise ValueError(f"optimizer must be 'sgd' or 'adam', not {name!r}")


def sequence_loss(outputs: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of step-major `outputs` against labels `Y` of shape (batch, steps)."""
    return F.cross_entropy(outputs, Y.T.reshape(-1))


@torch.no_grad()
def evaluate_perplexity(model: nn.Module, indices: torch.Tensor, batch_size: int = 32,
                        num_steps: int = 35) -> float:
    """Return the perplexity of `model` on `indices`, weighting every predicted token equally.

    The text is split into `batch_size` streams read from start to end with the hidden
    state carried along, so each prediction sees all the text before it in its stream.
    """
    batch_size = max(1, min(batch_size, len(indices) - 1))
    length = (len(indices) - 1) // batch_size
    used = length * batch_size
    xs = indices[:used].reshape(batch_size, length)
    ys = indices[1 : used + 1].reshape(batch_size, length)
    device = model_device(model)
    state = model.begin_state(batch_size)
    total = torch.zeros((), device=device)
    for start in range(0, length, num_steps):
        X, Y = xs[:, start : start + num_steps].to(device), ys[:, start : start + num_steps].to(device)
        outputs, state = model(X, state)
        total += F.cross_entropy(outputs.float(), Y.T.reshape(-1), reduction="sum")
    return safe_exp(float(total) / used)


def clip_step(params: list[torch.Tensor], theta: float | None, mode: str, history: History) -> float:
    """Clip the gradients of one step as `mode` says; record it in `history`; return the norm before."""
    if mode == "value" and theta is not None:
        norm, cosine = clip_gradient_values(params, theta)
        history.step_clip_cosine.append(cosine)
        history.clipped_steps += int(cosine < 1.0 - 1e-7)
        return norm
    if mode not in ("norm", "value"):
        raise ValueError(f"clip_mode must be 'norm' or 'value', not {mode!r}")
    norm = clip_gradients(params, theta)
    history.clipped_steps += int(theta is not None and norm > theta)
    return norm


def train_epoch(model, batches, optimizer, theta: float | None, carry_state: bool, history: History,
                epoch: int, deadline: float | None = None, clip_mode: str = "norm",
                lr_now: Callable[[], float] | None = None, max_loss: float | None = None):
    """Train on every minibatch of `batches` once; return (mean loss, tokens, seconds).

    With `carry_state` (sequential partitioning) the hidden state flows from one
    minibatch to the next but is detached, so gradients stop at the minibatch boundary
    (truncated BPTT); without it every minibatch starts from a fresh state. Gradients
    are clipped at `theta` as `clip_mode` says. `lr_now()`, if given, sets the learning
    rate before every minibatch. Stops early once `time.perf_counter()` passes `deadline`.
    Raises `TrainingDiverged`, before the update, when a minibatch's loss reaches
    `max_loss` (by default `divergence_limit` of the model's vocabulary) or the gradient is
    not finite, and after the update when the optimizer overflows (Adam's state with an
    enormous learning rate).
    """
    if max_loss is None:
        max_loss = divergence_limit(model.vocab_size)
    state, total_loss, tokens, start = None, 0.0, 0, time.perf_counter()
    params = list(model.parameters())
    for X, Y in batches:
        if lr_now is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr_now()
        lr = optimizer.param_groups[0]["lr"]
        if state is None or not carry_state:
            state = model.begin_state(X.shape[0])
        outputs, state = model(X, state.detach())
        loss = sequence_loss(outputs, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        value = float(loss.detach())
        norm = clip_step(params, theta, clip_mode, history)
        if not value < max_loss or not math.isfinite(norm):
            raise TrainingDiverged(len(history.step_loss) + 1, epoch, value, lr, norm, history,
                                   clipping=theta is not None)
        try:
            optimizer.step()
        except RuntimeError as error:  # e.g. "value cannot be converted to type float without overflow"
            raise TrainingDiverged(len(history.step_loss) + 1, epoch, value, lr, norm, history,
                                   "the optimizer's state overflowed", theta is not None) from error
        history.step_loss.append(value)
        history.step_grad_norm.append(norm)
        history.step_lr.append(lr)
        total_loss += value * Y.numel()
        tokens += Y.numel()
        if deadline is not None and time.perf_counter() > deadline:
            break
    return total_loss / max(tokens, 1), tokens, time.perf_counter() - start


def train(model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
          config: TrainConfig, on_epoch: Callable[[History], None] | None = None) -> History:
    """Train `model` as `config` says and return its `History`.

    Runs `config.num_epochs` epochs, or fewer if `config.max_seconds` (wall-clock,
    evaluation included) runs out first. The learning rate follows `config.lr_schedule`
    over the time budget if there is one, else over all the epochs. After each epoch it records train and
    validation perplexity and training tokens per second, then calls `on_epoch(history)`
    (for a live plot). Raises `TrainingDiverged` if the loss stops being finite and
    ValueError for settings that cannot work.
    """
    device = model_device(model)
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = make_optimizer(config.optimizer, model.parameters(), config.lr)
    history, begin = History(), time.perf_counter()
    deadline = begin + config.max_seconds if config.max_seconds else None
    steps_per_epoch = max(1, (len(train_indices) - 1) // (config.batch_size * config.num_steps))

    def lr_now() -> float:
        """The scheduled rate: progress is the share of the time budget, else of all minibatches."""
        if deadline is not None:
            progress = (time.perf_counter() - begin) / config.max_seconds
        else:
            progress = len(history.step_loss) / (steps_per_epoch * config.num_epochs)
        return scheduled_lr(config.lr, config.lr_schedule, progress)

    scheduled_lr(config.lr, config.lr_schedule, 0.0)  # reject an unknown schedule before training
    for epoch in range(1, config.num_epochs + 1):
        batches = make_batches(config.sampling, train_indices, config.batch_size,
                               config.num_steps, generator, device)
        loss, tokens, seconds = train_epoch(model, batches, optimizer, config.theta,
                                            config.sampling == "sequential", history, epoch, deadline,
                                            config.clip_mode, lr_now)
        history.epoch.append(epoch)
        history.train_perplexity.append(safe_exp(loss))
        history.valid_perplexity.append(
            evaluate_perplexity(model, valid_indices, config.batch_size, config.num_steps))
        history.tokens_per_second.append(tokens / seconds)
        history.seconds.append(time.perf_counter() - begin)
        if on_epoch is not None:
            on_epoch(history)
        if deadline is not None and time.perf_counter() > deadline:
            break
    check_final_model(model, history, config.lr)
    return history


def check_final_model(model: nn.Module, history: History, lr: float) -> None:
    """Raise `TrainingDiverged` if the trained model blew up with its last update.

    Every minibatch's loss is checked before its update, so only the last update is judged
    here: by the parameters (finite?) and the last validation perplexity (see `blown_up`).
    """
    epoch = history.epoch[-1] if history.epoch else 0
    valid = history.valid_perplexity[-1] if history.valid_perplexity else 1.0
    nats = math.log(valid) if valid > 0 else math.inf
    if not parameters_finite(model):
        reason = "the parameters stopped being finite after the last update"
    elif blown_up(nats, model.vocab_size):
        reason = f"the validation loss reached {nats:.4g} nats per token after the last update"
    else:
        return
    raise TrainingDiverged(len(history.step_loss), int(epoch), nats, lr, 0.0, history, reason)
