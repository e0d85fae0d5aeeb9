"""Training a character-level RNN: clipping, epochs, perplexity (notebooks 04, 06 and 07)."""

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from d2lmini.batching import make_batches, validate_fits
from d2lmini.cost import planned_minibatches
from d2lmini.interrupt import interrupts_held
from d2lmini.rnn import RNNScratch, TorchRNN, model_device
from d2lmini.settings import LR_SCHEDULES, OPTIMIZERS, TRAIN_SETTINGS, validate_settings, validate_value


@dataclass
class TrainConfig:
    """Hyperparameters of one training run; the defaults are the course's defaults.

    The defaults are what `benchmarks/quality.py` found best for a vanilla RNN trained for
    about a minute (README, "Why these defaults"): 320 hidden units, Adam at 0.01 decaying
    along a half cosine to 0 by the end of training (`lr_schedule="cosine"`; "constant" keeps
    it fixed, as the book does with plain SGD), minibatches of 64 x 35 characters.

    `theta` is the clipping threshold (None: no clipping). With `clip_mode="norm"` the
    joint gradient norm is clipped to theta (notebook 06's rule); with "value" every
    gradient entry is clamped to [-theta, theta] (per-element clipping, for comparison).

    The budget: training stops at whichever comes first of `num_epochs` passes over the
    text (None: no limit), `max_minibatches` and `max_seconds` of wall clock (evaluation
    included unless `count_eval_time` is False). The learning-rate schedule's progress is
    the share of that budget used so far. Checkpoints (a validation measurement, a
    `History` entry and a callback) come about `checkpoints` times per run (None: after every
    epoch), and always at the end. Validation reads the text as `eval_batch_size` streams
    (None: `batch_size`) in chunks of `eval_num_steps` (None: `num_steps`).

    What each field may hold, its label and help are declared once, in
    `d2lmini.settings.TRAIN_SETTINGS`; `validate_config` checks a config against them.
    """

    num_hiddens: int = 320
    lr: float = 0.01
    optimizer: str = "adam"
    batch_size: int = 64
    num_steps: int = 35
    theta: float | None = 1.0
    clip_mode: str = "norm"
    lr_schedule: str = "cosine"
    num_epochs: int | None = 10
    max_minibatches: int | None = None
    max_seconds: float | None = None
    count_eval_time: bool = True
    checkpoints: int | None = None
    eval_batch_size: int | None = None
    eval_num_steps: int | None = None
    sampling: str = "sequential"
    init: str = "lecun"
    seed: int = 0


@dataclass
class History:
    """What `train` measured: one entry per checkpoint, and one per minibatch (`step_*`).

    `epoch` is the position of each checkpoint in passes over the training text (whole
    numbers for end-of-epoch checkpoints), `minibatches` the minibatches trained by then;
    `train_perplexity` is that of the minibatches since the previous checkpoint; `seconds` is the
    budget's clock at the checkpoint.

    `step_grad_norm` is measured before clipping. `step_clip_cosine` (per-element
    clipping only) is the cosine between the gradient before and after clipping.
    `stopped` is None for a run that used its budget, else why it stopped early (an
    interrupt, a callback or an error that raised), in words; `interrupted` is True when an
    interrupt (KeyboardInterrupt) stopped it.
    """

    epoch: list[float] = field(default_factory=list)
    minibatches: list[int] = field(default_factory=list)
    train_perplexity: list[float] = field(default_factory=list)
    valid_perplexity: list[float] = field(default_factory=list)
    tokens_per_second: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    step_loss: list[float] = field(default_factory=list)
    step_grad_norm: list[float] = field(default_factory=list)
    step_clip_cosine: list[float] = field(default_factory=list)
    step_lr: list[float] = field(default_factory=list)
    clipped_steps: int = 0
    stopped: str | None = None
    interrupted: bool = False


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
        super().__init__(f"Training diverged: {reason} at minibatch {step} of the run (epoch {epoch}) "
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


def make_model(kind: str, vocab_size: int, config: TrainConfig, device: torch.device | str = "cpu",
               *, hand_written_bptt: bool = True):
    """Return a seeded "scratch" (RNNScratch) or "torch" (TorchRNN) model on `device`.

    `hand_written_bptt` chooses the scratch model's backward pass: the hand-written one of
    `d2lmini.bptt` (default, faster) or autograd through `rnn_forward` (notebook 04).
    """
    num_hiddens, init, seed = (validate_value(TRAIN_SETTINGS[name], getattr(config, name))
                               for name in ("num_hiddens", "init", "seed"))
    generator = torch.Generator().manual_seed(seed)
    if kind == "scratch":
        model = RNNScratch(vocab_size, num_hiddens, init, generator, hand_written_bptt=hand_written_bptt)
    elif kind == "torch":
        torch.manual_seed(seed)
        model = TorchRNN(vocab_size, num_hiddens)
    else:
        raise ValueError(f"kind must be 'scratch' or 'torch', not {kind!r}")
    return model.to(device)


def scheduled_lr(lr: float, schedule: str, progress: float) -> float:
    """Return the learning rate at `progress` (0 at the start of training, 1 at the end).

    The schedules are those of `d2lmini.settings.LR_SCHEDULES`: "constant" keeps `lr`;
    "cosine" falls along a half cosine from `lr` to 0, so training takes big steps early
    and settles into a minimum at the end.
    """
    validate_value(TRAIN_SETTINGS["lr_schedule"], schedule)
    _, share = LR_SCHEDULES[schedule]
    return lr * share(min(max(progress, 0.0), 1.0))


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """Return the optimizer `name` of `d2lmini.settings.OPTIMIZERS` (plain SGD as in the book, or Adam)."""
    lr = validate_value(TRAIN_SETTINGS["lr"], lr)
    name = validate_value(TRAIN_SETTINGS["optimizer"], name)
    _, optimizer = OPTIMIZERS[name]
    with interrupts_held():  # the first optimizer of a process imports torch._dynamo: never cut it in half
        return optimizer(params, lr=lr)


def sequence_loss(outputs: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of step-major `outputs` against labels `Y` of shape (batch, steps)."""
    return F.cross_entropy(outputs, Y.T.reshape(-1))


@torch.no_grad()
def evaluate_perplexity(model: nn.Module, indices: torch.Tensor, batch_size: int = 32,
                        num_steps: int = 35) -> float:
    """Return the perplexity of `model` on `indices`, weighting every predicted token equally.

    The text is split into `batch_size` streams read from start to end with the hidden
    state carried along, so each prediction sees all the text before it in its stream.
    Raises ValueError when `indices` holds fewer than two tokens (nothing to predict).
    """
    batch_size = validate_value(TRAIN_SETTINGS["eval_batch_size"], batch_size)
    num_steps = validate_value(TRAIN_SETTINGS["eval_num_steps"], num_steps)
    validate_indices(indices, "validation text", model.vocab_size)
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
    validate_value(TRAIN_SETTINGS["clip_mode"], mode)
    norm = clip_gradients(params, theta)
    history.clipped_steps += int(theta is not None and norm > theta)
    return norm


def train_epoch(model, batches, optimizer, theta: float | None, carry_state: bool, history: History,
                epoch: int, clip_mode: str = "norm", lr_now: Callable[[], float] | None = None,
                max_loss: float | None = None, after_step: Callable[[], bool] | None = None):
    """Train on the minibatches of `batches` once; return (mean loss, tokens, seconds).

    Every training update in d2lmini happens here (dynamic evaluation, `d2lmini.dynamic`, and the
    book-style baseline of `benchmarks/throughput.py` update weights by hand). With `carry_state`
    (sequential partitioning) the hidden state flows from one minibatch to the next but is
    detached, so gradients stop at the minibatch boundary (truncated BPTT); without it
    every minibatch starts from a fresh state. Gradients are clipped at `theta` as
    `clip_mode` says. `lr_now()`, if given, sets the learning rate before every minibatch;
    `after_step()`, if given, runs after every update and ends the epoch by returning True.
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
        if after_step is not None and after_step():
            break
    return total_loss / max(tokens, 1), tokens, time.perf_counter() - start


class Budget:
    """The budget of one run (`TrainConfig`'s epochs, minibatches, seconds) and its clocks.

    `seconds()` is the budget's clock: wall-clock time since the start, less the time spent
    evaluating unless `count_eval_time`; `train_seconds()` always leaves evaluation out.
    `progress()` is the share of the budget used: counted in minibatches whenever minibatches
    or epochs are limited, by the clock only when time is the sole limit. `spent(epochs_done)`
    says whether training must stop.
    """

    def __init__(self, config: TrainConfig, steps_per_epoch: int):
        self.config, self.steps_per_epoch = config, steps_per_epoch
        self.begin, self.eval_seconds, self.steps = time.perf_counter(), 0.0, 0

    def train_seconds(self) -> float:
        return time.perf_counter() - self.begin - self.eval_seconds

    def seconds(self) -> float:
        return time.perf_counter() - self.begin - (0.0 if self.config.count_eval_time else self.eval_seconds)

    @contextlib.contextmanager
    def evaluating(self):
        """Book the time spent inside the block as evaluation."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.eval_seconds += time.perf_counter() - start

    def progress(self) -> float:
        """Return the share of the budget used (see the class); 0 at the start, 1 at the end.

        A safety time limit beside a counted budget must not steer the learning-rate schedule,
        or a slow start (a cold process, a busy machine) would change the run.
        """
        c, counted = self.config, []
        if c.max_minibatches:
            counted.append(self.steps / c.max_minibatches)
        if c.num_epochs:
            counted.append(self.steps / (self.steps_per_epoch * c.num_epochs))
        if counted:
            return max(counted)
        return self.seconds() / c.max_seconds if c.max_seconds else 0.0

    def spent(self, epoch_done: int) -> bool:
        c = self.config
        return ((c.max_minibatches is not None and self.steps >= c.max_minibatches)
                or (c.max_seconds is not None and self.seconds() >= c.max_seconds)
                or (c.num_epochs is not None and epoch_done >= c.num_epochs))


def checkpoint_interval(config: TrainConfig, steps_per_epoch: int) -> tuple[int | None, float | None]:
    """Return (minibatches, seconds) between mid-epoch checkpoints; (None, None): once per epoch."""
    if not config.checkpoints:
        return None, None
    planned = planned_minibatches(config, steps_per_epoch)
    if planned is not None:
        return max(1, planned // config.checkpoints), None
    return None, config.max_seconds / config.checkpoints


def validate_indices(indices, what: str, vocab_size: int | None = None) -> None:
    """Raise TypeError/ValueError unless `indices` is a 1-D integer tensor of at least 2 token indices.

    `what` names the text in the message; with `vocab_size` every index must be below it.
    """
    if not isinstance(indices, torch.Tensor) or indices.dim() != 1 or indices.dtype not in (
            torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"The {what} must be a 1-D tensor of token indices, not {type(indices).__name__}"
                        + (f" of shape {tuple(indices.shape)} and dtype {indices.dtype}"
                           if isinstance(indices, torch.Tensor) else "") + ".")
    if len(indices) < 2:
        raise ValueError(f"The {what} holds {len(indices)} token{'s' if len(indices) != 1 else ''}: at "
                         "least 2 are needed to measure anything (one to read, one to predict).")
    if vocab_size is not None and (int(indices.min()) < 0 or int(indices.max()) >= vocab_size):
        raise ValueError(f"The {what} holds token indices outside 0 ... {vocab_size - 1}, the model's "
                         "vocabulary: was it made for another corpus?")


# The most bytes one minibatch's activations (or one evaluation chunk's) may take in train().
MAX_ACTIVATION_BYTES = 4 * 1024**3


def validate_config(config: TrainConfig, vocab_size: int | None = None) -> None:
    """Raise TypeError/ValueError, naming the setting, for a config that cannot run or never ends.

    Every field is checked against `d2lmini.settings.TRAIN_SETTINGS`; then the budget must
    be able to end and (with `vocab_size`) a minibatch must fit in memory.
    """
    validate_settings(config, TRAIN_SETTINGS)
    if config.num_epochs is None and config.max_minibatches is None and config.max_seconds is None:
        raise ValueError("Give a budget: epochs (num_epochs), minibatches (max_minibatches) or a time "
                         "limit (max_seconds).")
    if vocab_size is not None:
        eval_tokens = ((config.eval_batch_size or config.batch_size)
                       * (config.eval_num_steps or config.num_steps))
        tokens = max(config.batch_size * config.num_steps, eval_tokens)
        need = 4 * 3 * tokens * (config.num_hiddens + vocab_size)
        if need > MAX_ACTIVATION_BYTES:
            raise ValueError(f"A minibatch of {tokens:,} tokens with hidden size {config.num_hiddens} needs "
                             f"about {need / 1024**3:.1f} GB; make the batch size, the steps per minibatch "
                             "or the hidden size smaller.")


class TrainingRun:
    """The state of one `train` call: the model, its optimizer, history, budget and last checkpoint."""

    def __init__(self, model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
                 config: TrainConfig, on_checkpoint: Callable[[History], None] | None,
                 should_stop: Callable[[], bool] | None = None):
        self.model, self.config, self.on_checkpoint = model, config, on_checkpoint
        self.should_stop = should_stop
        self.train_indices, self.valid_indices = train_indices, valid_indices
        self.history = History()
        self.steps_per_epoch = max(1, (len(train_indices) - 1) // (config.batch_size * config.num_steps))
        self.budget = Budget(config, self.steps_per_epoch)
        self.every_steps, self.every_seconds = checkpoint_interval(config, self.steps_per_epoch)
        self.last_steps, self.last_train_seconds, self.epoch = 0, 0.0, 0
        self.optimizer = make_optimizer(config.optimizer, model.parameters(), config.lr)

    def lr_now(self) -> float:
        return scheduled_lr(self.config.lr, self.config.lr_schedule, self.budget.progress())

    def checkpoint(self) -> None:
        """Measure and record a checkpoint if anything was trained since the last one; call back."""
        history, config, budget = self.history, self.config, self.budget
        steps = len(history.step_loss)
        if steps == self.last_steps:
            return
        losses = history.step_loss[self.last_steps:]
        tokens = (steps - self.last_steps) * config.batch_size * config.num_steps
        trained, clock = budget.train_seconds(), budget.seconds()
        with budget.evaluating():
            valid = evaluate_perplexity(self.model, self.valid_indices,
                                        config.eval_batch_size or config.batch_size,
                                        config.eval_num_steps or config.num_steps)
            history.epoch.append(steps / self.steps_per_epoch)
            history.minibatches.append(steps)
            history.train_perplexity.append(safe_exp(math.fsum(losses) / len(losses)))
            history.valid_perplexity.append(valid)
            history.tokens_per_second.append(tokens / max(trained - self.last_train_seconds, 1e-9))
            history.seconds.append(clock)
            self.last_steps, self.last_train_seconds = steps, trained
            if self.on_checkpoint is not None:
                self.call_back()

    def call_back(self) -> None:
        try:
            self.on_checkpoint(self.history)
        except Exception as error:
            raise CallbackError(error) from error

    def after_step(self) -> bool:
        """Checkpoint when one is due; return True when the budget is spent (ends the epoch).

        Raises KeyboardInterrupt when `should_stop()` says so: a stop request is an interrupt.
        """
        if self.should_stop is not None and self.should_stop():
            raise KeyboardInterrupt
        self.budget.steps = len(self.history.step_loss)
        steps_since = self.budget.steps - self.last_steps
        seconds_since = self.budget.train_seconds() - self.last_train_seconds
        if ((self.every_steps and steps_since >= self.every_steps)
                or (self.every_seconds and seconds_since >= self.every_seconds)):
            self.checkpoint()
        return self.budget.spent(self.epoch - 1)

    def run(self) -> None:
        """Train until the budget is spent, checkpointing as `config` says and at the end."""
        config, generator = self.config, torch.Generator().manual_seed(self.config.seed)
        device = model_device(self.model)
        while not self.budget.spent(self.epoch):
            self.epoch += 1
            batches = make_batches(config.sampling, self.train_indices, config.batch_size, config.num_steps,
                                   generator, device)
            train_epoch(self.model, batches, self.optimizer, config.theta, config.sampling == "sequential",
                        self.history, self.epoch, config.clip_mode, self.lr_now, after_step=self.after_step)
            self.budget.steps = len(self.history.step_loss)
            if not self.budget.spent(self.epoch - 1) and not (self.every_steps or self.every_seconds):
                self.checkpoint()  # a whole epoch, checkpointed once per epoch
        self.checkpoint()  # the end of the run, if anything is new


class CallbackError(RuntimeError):
    """The `on_checkpoint` callback raised; `__cause__` is what it raised."""

    def __init__(self, error: Exception):
        super().__init__(f"the on_checkpoint callback raised {type(error).__name__}: {error}")


def stopped_message(error: BaseException, history: History) -> str:
    """Return, in words, why training stopped early at the current minibatch (see `History.stopped`)."""
    where = f"after {len(history.step_loss)} minibatches"
    if isinstance(error, KeyboardInterrupt):
        return f"Training was stopped by an interrupt {where}; the model and its history so far are kept."
    if isinstance(error, CallbackError):
        return f"Training stopped {where}: {error}. The model and its history so far are kept."
    return (f"Training stopped {where} by an error ({type(error).__name__}: {error}); the model and its "
            "history so far are kept.")


def train(model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
          config: TrainConfig, on_checkpoint: Callable[[History], None] | None = None,
          should_stop: Callable[[], bool] | None = None) -> History:
    """Train `model` as `config` says and return its `History` (the one training loop).

    Notebooks 04 and 06, the perplexity lab of notebook 07 and both benchmarks train
    through here. The budget, the checkpoint schedule and the learning-rate schedule are
    `config`'s (see `TrainConfig`). At each checkpoint it records train and validation
    perplexity, training tokens per second and the clock, then calls
    `on_checkpoint(history)` (for a live plot; its time counts as evaluation).
    `should_stop()`, if given, is asked after every minibatch: True stops training as an
    interrupt does (a stop request from another thread, see `d2lmini.interrupt`).

    Raises TypeError/ValueError naming the setting for settings or texts that cannot work
    (checked before training), ValueError when the budget ended before one minibatch was
    trained (nothing measured), and `TrainingDiverged` if the run blows up (also after the
    last update). Anything else that stops training part way (an interrupt, a callback
    that raises, an error) is caught: the history so far is returned with `stopped` saying
    why, and the model keeps its trained weights.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a d2lmini.train.TrainConfig, not {type(config).__name__}")
    if not isinstance(model, nn.Module) or not hasattr(model, "vocab_size"):
        raise TypeError(f"model must be a d2lmini model (RNNScratch or TorchRNN), not {type(model).__name__}")
    validate_config(config, model.vocab_size)
    validate_indices(train_indices, "training text", model.vocab_size)
    validate_indices(valid_indices, "validation text", model.vocab_size)
    validate_fits(len(train_indices), config.batch_size, config.num_steps)
    run = TrainingRun(model, train_indices, valid_indices, config, on_checkpoint, should_stop)
    try:
        run.run()
    except TrainingDiverged:
        raise
    except (Exception, KeyboardInterrupt) as error:
        run.history.stopped = stopped_message(error, run.history)
        run.history.interrupted = isinstance(error, KeyboardInterrupt)
        if run.history.interrupted:
            measure_at_stop(run)
        warnings.warn(run.history.stopped, RuntimeWarning, stacklevel=2)
        return run.history
    if not run.history.step_loss:
        raise ValueError(f"The budget ended before one minibatch was trained (time limit (max_seconds) "
                         f"{config.max_seconds!r}): nothing was measured. Give a larger budget.")
    validate_final_model(model, run.history, config.lr)
    return run.history


def measure_at_stop(run: TrainingRun) -> None:
    """Checkpoint an interrupted run where it stopped, so what was trained is measured; a second
    interrupt (or any error) while measuring leaves the history as it was."""
    try:
        run.checkpoint()
    except (Exception, KeyboardInterrupt):
        pass


def validate_final_model(model: nn.Module, history: History, lr: float) -> None:
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
