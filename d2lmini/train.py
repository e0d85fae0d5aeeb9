"""Training a character-level RNN: the training loop, its budget and perplexity (notebooks 04 and 07).

Clipping, which the loop applies at every step, is notebook 06's `d2lmini.clipping`.
"""

import contextlib
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from d2lmini.batching import make_batches, steps_per_epoch, validate_fits
from d2lmini.clipping import Clipped, clipping_rule
from d2lmini.divergence import (
    StepDiverged,
    TrainingDiverged,
    diverged,
    overflow_is_divergence,
    safe_exp,
    stop_if_diverged,
    validate_final_model,
)
from d2lmini.gates import GRUScratch, LSTMScratch, TorchGated
from d2lmini.held import interrupts_held
from d2lmini.history import History, Step
from d2lmini.i18n import N_, _, ngettext
from d2lmini.kernel_settings import put_back_after
from d2lmini.rnn import RNNScratch, TorchRNN, model_device
from d2lmini.settings import (
    CELLS,
    DECOUPLED_DECAY,
    LR_SCHEDULES,
    OPTIMIZERS,
    TRAIN_SETTINGS,
    validate_settings,
    validate_value,
)


@dataclass
class TrainConfig:
    """Hyperparameters of one training run; the defaults are the course's defaults.

    The defaults are what `benchmarks/quality.py` found best for a vanilla RNN trained for
    about a minute (README, "Why these defaults"): 320 hidden units, Adam at 0.01 decaying
    along a half cosine to 0 by the end of training (`lr_schedule="cosine"`; "constant" keeps
    it fixed, as the book does with plain SGD), minibatches of 64 x 35 characters.

    `cell` is the recurrent cell `make_model` builds: "rnn" (the course's tanh RNN), "gru" or
    "lstm" (`d2lmini.gates`, notebook 09).

    `theta` is the clipping threshold (None: no clipping). With `clip_mode="norm"` the
    joint gradient norm is clipped to theta (notebook 06's rule); with "value" every
    gradient entry is clamped to [-theta, theta] (per-element clipping, for comparison).

    The budget: training stops at whichever comes first of `num_epochs` passes over the
    text (None: no limit), `max_minibatches` and `max_seconds` of wall clock (evaluation
    included unless `count_eval_time` is False). The learning-rate schedule's progress is
    the share of that budget used so far. Checkpoints (a validation measurement, a
    `History` entry and a callback) come about `checkpoints` times per run (None: after every
    epoch), and always at the end. Validation reads the text as one stream continuing the
    training text (`evaluate_perplexity`, the protocol of every baseline), `eval_num_steps`
    tokens per call (None: `EVAL_CHUNK`). An `eval_batch_size` of n asks, at every checkpoint
    but the last, for a cheaper estimate instead: n cold-started streams (`estimate_perplexity`,
    `eval_num_steps` per call, None: `num_steps`); `History.valid_estimated` marks them.

    What each field may hold, its label and help are declared once, in
    `d2lmini.settings.TRAIN_SETTINGS`; `validate_config` checks a config against them.
    """

    num_hiddens: int = 320
    lr: float = 0.01
    optimizer: str = "adam"
    weight_decay: float = 0.0
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
    cell: str = "rnn"


def validate_cell_init(cell: str, init: str) -> None:
    """Raise ValueError unless a scratch `cell` can start from the initialisation `init`.

    The gated scratch cells (`d2lmini.gates`) start from LeCun's rule only; "normal" is the
    book's initialisation of the RNN.
    """
    if cell != "rnn" and init != "lecun":
        label, name = TRAIN_SETTINGS["init"].label, CELLS[cell]
        # TRANSLATORS: {setting} is the setting's name ("initialisation"), {init} its value ('normal'), {cell}
        # the recurrent cell ("GRU", "LSTM"); init='lecun' is code, kept as it is.
        raise ValueError(_("The {setting} (init) {init} is the book's for the RNN; the scratch {cell} starts "
                           "from LeCun's rule: use init='lecun'.").format(
            setting=_(label), init=repr(init), cell=_(name)))


def make_model(kind: str, vocab_size: int, config: TrainConfig, device: torch.device | str = "cpu",
               *, hand_written_bptt: bool = True):
    """Return a seeded "scratch" or "torch" model of `config.cell` on `device`.

    Scratch: `RNNScratch`, `d2lmini.gates.GRUScratch` or `d2lmini.gates.LSTMScratch`; torch:
    `TorchRNN` or `d2lmini.gates.TorchGated` (torch's own initialisation). `hand_written_bptt`
    chooses the scratch cells' backward pass: the hand-written one (`d2lmini.bptt`,
    `d2lmini.gru_bptt`, `d2lmini.lstm_bptt`; default, faster) or autograd (notebook 04).
    The gated scratch cells start from LeCun's rule only: `init="normal"` (the book's RNN
    initialisation) is refused for them.
    """
    num_hiddens, init, seed, cell = (validate_value(TRAIN_SETTINGS[name], getattr(config, name))
                                     for name in ("num_hiddens", "init", "seed", "cell"))
    if kind not in ("scratch", "torch"):
        raise ValueError(_("kind must be 'scratch' or 'torch', not {kind}").format(kind=repr(kind)))
    generator = torch.Generator().manual_seed(seed)
    if kind == "torch":
        torch.manual_seed(seed)
        model = (TorchRNN(vocab_size, num_hiddens) if cell == "rnn"
                 else TorchGated(cell, vocab_size, num_hiddens))
    elif cell == "rnn":
        model = RNNScratch(vocab_size, num_hiddens, init, generator, hand_written_bptt=hand_written_bptt)
    elif cell == "gru":
        validate_cell_init(cell, init)
        model = GRUScratch(vocab_size, num_hiddens, generator, hand_written_bptt=hand_written_bptt)
    else:
        validate_cell_init(cell, init)
        model = LSTMScratch(vocab_size, num_hiddens, generator, hand_written_bptt=hand_written_bptt)
    return model.to(device)


def scheduled_lr(lr: float, schedule: str, progress: float) -> float:
    """Return the learning rate at `progress` (0 at the start of training, 1 at the end).

    The schedules are those of `d2lmini.settings.LR_SCHEDULES`: "constant" keeps `lr`;
    "cosine" falls along a half cosine from `lr` to 0, so training takes big steps early
    and settles into a minimum at the end.
    """
    validate_value(TRAIN_SETTINGS["lr_schedule"], schedule)
    _label, share = LR_SCHEDULES[schedule]
    return lr * share(min(max(progress, 0.0), 1.0))


def make_optimizer(name: str, params, lr: float, weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """Return the optimizer `name` of `d2lmini.settings.OPTIMIZERS` (plain SGD as in the book, or Adam).

    With `weight_decay`, Adam becomes AdamW (the decay decoupled from the gradient's scaling) and
    SGD takes its own; at 0, the optimizer is exactly the one without it.
    """
    if name not in OPTIMIZERS:
        raise ValueError(_("optimizer must be one of {choices}, not {name}").format(
            choices=", ".join(map(repr, OPTIMIZERS)), name=repr(name)))
    _label, optimizer = OPTIMIZERS[name]
    if weight_decay:
        optimizer = DECOUPLED_DECAY.get(name, optimizer)
    with interrupts_held():  # the first optimizer of a process imports torch._dynamo: never cut it in half
        return optimizer(params, lr=lr, **({"weight_decay": weight_decay} if weight_decay else {}))


def sequence_loss(outputs: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of step-major `outputs` against labels `Y` of shape (batch, steps)."""
    return F.cross_entropy(outputs, Y.T.reshape(-1))


# How many tokens of the text before the validation text `evaluate_perplexity` reads first: far
# more than an RNN of this course remembers, so its first predictions have the context that the
# n-gram and compressor baselines have. How many tokens it reads per call.
CONTEXT_TOKENS = 2000
EVAL_CHUNK = 2048
# How the evaluation functions' messages name their text (and its argument): see `validate_indices`,
# which translates them. Written as plain text where they are passed (evaluate_perplexity is on
# notebook 04's page), so they are marked for translation here.
VALIDATION_INDICES = N_("validation text (indices)")
TEXT_BEFORE = N_("text before the validation text (before)")


@torch.no_grad()
def evaluate_perplexity(model: nn.Module, indices: torch.Tensor, before: torch.Tensor | None = None,
                        num_steps: int = EVAL_CHUNK) -> float:
    """Return the perplexity of `model` on `indices` read as one stream, as baselines read it (notebook 04).

    The model first reads the end of `before` (the text just before `indices`, e.g. the
    training text; at most `CONTEXT_TOKENS` tokens, unscored), then `indices` from start to
    end, `num_steps` tokens per call, the hidden state carried throughout, so every
    prediction sees the text before it. Every predicted token weighs the same: all of
    `indices` with `before`, all but the first without. Raises ValueError when there is
    nothing to predict, or `num_steps` is not a whole number ≥ 1 (None: `EVAL_CHUNK`).
    """
    validate_indices(indices, "validation text (indices)", model.vocab_size)
    if before is not None:
        validate_indices(before, "text before the validation text (before)", model.vocab_size)
    num_steps = validate_value(TRAIN_SETTINGS["eval_num_steps"], num_steps) or EVAL_CHUNK
    context = indices[:0] if before is None else before[-CONTEXT_TOKENS:]
    device = model_device(model)
    stream = torch.cat([context.to(device), indices.to(device)])
    first = max(len(context), 1)              # stream[first] is the first token scored
    state = model.begin_state(1)
    if first > 1:
        _outputs, state = model(stream[None, : first - 1], state)   # warm-up: only the state is kept
    total = torch.zeros((), device=stream.device)
    for start in range(first - 1, len(stream) - 1, num_steps):
        X = stream[None, start : min(start + num_steps, len(stream) - 1)]
        Y = stream[None, start + 1 : start + 1 + X.shape[1]]
        outputs, state = model(X, state)
        total += F.cross_entropy(outputs.float(), Y.reshape(-1), reduction="sum")
    return safe_exp(float(total) / (len(stream) - first))


ESTIMATE_BATCH_SIZE, ESTIMATE_NUM_STEPS = 32, 35  # `estimate_perplexity`'s streams and steps per call


@torch.no_grad()
def estimate_perplexity(model: nn.Module, indices: torch.Tensor, batch_size: int | None = 32,
                        num_steps: int | None = 35) -> float:
    """Return a quick estimate of `model`'s perplexity on `indices`: `batch_size` cold-started streams.

    The text is cut into `batch_size` streams, each read from a zero state, so the first
    predictions of every stream have no context: an estimate, higher than
    `evaluate_perplexity`'s one-stream number after stateful training (notebook 04 measures
    the gap). None for `batch_size` or `num_steps` (as `TrainConfig` allows, meaning the
    training run's own) means this function's defaults, 32 streams and 35 steps. Raises
    ValueError when `indices` holds fewer than two tokens.
    """
    batch_size = validate_value(TRAIN_SETTINGS["eval_batch_size"], batch_size)
    num_steps = validate_value(TRAIN_SETTINGS["eval_num_steps"], num_steps)
    batch_size, num_steps = batch_size or ESTIMATE_BATCH_SIZE, num_steps or ESTIMATE_NUM_STEPS
    validate_indices(indices, VALIDATION_INDICES, model.vocab_size)
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


def train_step(model: nn.Module, X: torch.Tensor, Y: torch.Tensor, state: torch.Tensor,
               optimizer: torch.optim.Optimizer, clip: Callable[[list[torch.Tensor]], Clipped]) -> Step:
    """Take one training step on the minibatch (X, Y) from `state` and return the `Step` (notebook 04).

    The state is detached first (truncated BPTT: gradients stop at the minibatch's start);
    then forward, loss, backward, `clip` (a `d2lmini.clipping.clipping_rule`) and the update.
    Raises `StepDiverged` (`d2lmini.divergence`) instead of updating when the run has blown up.
    """
    outputs, state = model(X, state.detach())
    loss = sequence_loss(outputs, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    value = float(loss.detach())
    clipped = clip(list(model.parameters()))
    stop_if_diverged(model, value, clipped)
    with overflow_is_divergence(value, clipped):
        optimizer.step()
    return Step(state, value, clipped)


def train_epoch(model, batches, optimizer, theta: float | None, carry_state: bool, history: History,
                epoch: int, clip_mode: str = "norm"):
    """Train on the minibatches of `batches` once with `train_step`; return (mean loss, tokens, seconds).

    The short loop of notebook 04 (`train` runs the same `train_step` under a budget). With
    `carry_state` (sequential partitioning) the hidden state flows from one minibatch to the
    next, detached (truncated BPTT); without it every minibatch starts from a fresh state.
    Gradients are clipped at `theta` as `clip_mode` says; every step is recorded in
    `history`. Raises `TrainingDiverged` when a step blows up (see `train_step`).
    """
    clip, lr = clipping_rule(theta, clip_mode), optimizer.param_groups[0]["lr"]
    state, total_loss, tokens, start = None, 0.0, 0, time.perf_counter()
    for X, Y in batches:
        if state is None or not carry_state:
            state = model.begin_state(X.shape[0])
        try:
            step = train_step(model, X, Y, state, optimizer, clip)
        except StepDiverged as error:
            number = len(history.step_loss) + 1
            raise diverged(error, number, epoch, lr, history, theta is not None) from error
        state = step.state
        history.record(step, lr)
        total_loss += step.loss * Y.numel()
        tokens += Y.numel()
    return total_loss / max(tokens, 1), tokens, time.perf_counter() - start


def planned_minibatches(config: TrainConfig, steps_per_epoch: int) -> int | None:
    """Return how many minibatches the budget of `config` allows (None: only the clock limits it)."""
    limits = [config.max_minibatches, config.num_epochs and config.num_epochs * steps_per_epoch]
    limits = [n for n in limits if n is not None]
    return min(limits) if limits else None


class Budget:
    """The budget of one run (`TrainConfig`'s epochs, minibatches, seconds) and its clocks.

    `seconds()` is the budget's clock: wall-clock time since the start, less the time spent
    evaluating unless `count_eval_time`; `train_seconds()` always leaves evaluation out.
    `progress(steps)` is the share of the budget used after `steps` minibatches: counted in
    minibatches whenever minibatches or epochs are limited, by the clock only when time is
    the sole limit. `spent(steps, epochs)` says whether training must stop.
    """

    def __init__(self, config: TrainConfig, steps_per_epoch: int):
        self.config, self.steps_per_epoch = config, steps_per_epoch
        self.planned = planned_minibatches(config, steps_per_epoch)
        self.begin, self.eval_seconds = time.perf_counter(), 0.0

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

    def progress(self, steps: int) -> float:
        """Return the share of the budget used (see the class); 0 at the start, 1 at the end.

        A safety time limit beside a counted budget must not steer the learning-rate schedule,
        or a slow start (a cold process, a busy machine) would change the run.
        """
        if self.planned:
            return steps / self.planned
        return self.seconds() / self.config.max_seconds if self.config.max_seconds else 0.0

    def spent(self, steps: int, epochs: int) -> bool:
        """Return True when `steps` minibatches and `epochs` whole passes use up the budget."""
        c = self.config
        return ((self.planned is not None and steps >= self.planned)
                or (c.max_seconds is not None and self.seconds() >= c.max_seconds)
                or (c.num_epochs is not None and epochs >= c.num_epochs))


def checkpoint_interval(config: TrainConfig, steps_per_epoch: int) -> tuple[int | None, float | None]:
    """Return (minibatches, seconds) between mid-epoch checkpoints; (None, None): once per epoch."""
    if not config.checkpoints:
        return None, None
    planned = planned_minibatches(config, steps_per_epoch)
    if planned is not None:
        return max(1, planned // config.checkpoints), None
    return None, config.max_seconds / config.checkpoints


def validate_indices(indices, what: str, vocab_size: int | None = None) -> None:
    """Raise TypeError/ValueError unless `indices` is a 1-D int64 tensor of at least 2 token indices.

    `what` names the text (and its argument) in the message, in English marked with `N_` (it is
    translated here); with `vocab_size` every index must be below it. Other integer dtypes are
    refused, not converted: cross-entropy takes int64 labels only, and a uint8 tensor used as an
    index reads as a mask.
    """
    what = _(what) if what else what
    if not isinstance(indices, torch.Tensor) or indices.dim() != 1 or indices.is_floating_point() or \
            indices.is_complex() or indices.dtype == torch.bool:
        if isinstance(indices, torch.Tensor):
            # TRANSLATORS: {what} names the text ("training text"); {kind} is Python's type (Tensor).
            raise TypeError(_("The {what} must be a 1-D tensor of token indices, not {kind} of shape {shape} "
                              "and dtype {dtype}.").format(what=what, kind=type(indices).__name__,
                                                           shape=tuple(indices.shape), dtype=indices.dtype))
        raise TypeError(_("The {what} must be a 1-D tensor of token indices, not {kind}.").format(
            what=what, kind=type(indices).__name__))
    if indices.dtype != torch.int64:
        raise TypeError(_("The {what} must hold its token indices as int64 (torch.long), not {dtype}: "
                          "convert it with `.long()`.").format(what=what, dtype=indices.dtype))
    if len(indices) < 2:
        raise ValueError(ngettext(
            "The {what} holds {n} token: at least 2 are needed to measure anything (one to read, one to "
            "predict).",
            "The {what} holds {n} tokens: at least 2 are needed to measure anything (one to read, one to "
            "predict).", len(indices)).format(what=what, n=len(indices)))
    if vocab_size is not None and (int(indices.min()) < 0 or int(indices.max()) >= vocab_size):
        raise ValueError(_("The {what} holds token indices outside 0 ... {last}, the model's vocabulary: was "
                           "it made for another corpus?").format(what=what, last=vocab_size - 1))


# The most bytes one minibatch's activations (or one evaluation chunk's) may take in train().
MAX_ACTIVATION_BYTES = 4 * 1024**3


def eval_tokens_per_call(config: TrainConfig) -> int:
    """Return the most tokens one evaluation call of `config` reads (see `evaluate`)."""
    if config.eval_batch_size is None:
        return max(config.eval_num_steps or EVAL_CHUNK, CONTEXT_TOKENS)
    streams = config.eval_batch_size * (config.eval_num_steps or config.num_steps)
    return max(EVAL_CHUNK, CONTEXT_TOKENS, streams)


def validate_config(config: TrainConfig, vocab_size: int | None = None) -> None:
    """Raise TypeError/ValueError, naming the setting, for a config that cannot run or never ends.

    Every field is checked against `d2lmini.settings.TRAIN_SETTINGS`; then the budget must
    be able to end and (with `vocab_size`) a minibatch must fit in memory.
    """
    validate_settings(config, TRAIN_SETTINGS)
    if config.num_epochs is None and config.max_minibatches is None and config.max_seconds is None:
        raise ValueError(_("Give a budget: epochs (num_epochs), minibatches (max_minibatches) or a time "
                           "limit (max_seconds)."))
    if vocab_size is not None:
        tokens = max(config.batch_size * config.num_steps, eval_tokens_per_call(config))
        need = 4 * 3 * tokens * (config.num_hiddens + vocab_size)
        if need > MAX_ACTIVATION_BYTES:
            raise ValueError(_("A minibatch of {tokens:,} tokens with hidden size {num_hiddens} needs "
                               "about {gigabytes:.1f} GB; make the batch size, the steps per minibatch or "
                               "the hidden size smaller.").format(
                tokens=tokens, num_hiddens=config.num_hiddens, gigabytes=need / 1024**3))


def evaluate(model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
             config: TrainConfig, estimate: bool = False) -> float:
    """Return the validation perplexity: one stream after the training text (`evaluate_perplexity`),
    or with `estimate` `config.eval_batch_size` cold-started streams (`estimate_perplexity`)."""
    if not estimate:
        return evaluate_perplexity(model, valid_indices, train_indices,
                                   (config.eval_num_steps if config.eval_batch_size is None else None)
                                   or EVAL_CHUNK)
    return estimate_perplexity(model, valid_indices, config.eval_batch_size,
                               config.eval_num_steps or config.num_steps)


class TrainingRun:
    """One `train` call: the model, its optimizer, the budget, the history and the loop (`run`)."""

    def __init__(self, model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
                 config: TrainConfig, on_checkpoint: Callable[[History], None] | None = None,
                 should_stop: Callable[[], bool] | None = None):
        self.model, self.config, self.on_checkpoint = model, config, on_checkpoint
        self.should_stop = should_stop
        self.train_indices, self.valid_indices = train_indices, valid_indices
        self.history = History()
        self.steps_per_epoch = steps_per_epoch(len(train_indices), config.batch_size, config.num_steps)
        self.budget = Budget(config, self.steps_per_epoch)
        self.every_steps, self.every_seconds = checkpoint_interval(config, self.steps_per_epoch)
        self.steps, self.last_steps, self.last_train_seconds = 0, 0, 0.0
        _label, self.share = LR_SCHEDULES[config.lr_schedule]  # the schedule, resolved once
        self.clip = clipping_rule(config.theta, config.clip_mode)
        self.optimizer: torch.optim.Optimizer | None = None  # made by `run`, where ■ is caught

    def lr_at(self, steps: int) -> float:
        """The learning rate after `steps` minibatches: the schedule at the budget's progress."""
        return self.config.lr * self.share(min(max(self.budget.progress(steps), 0.0), 1.0))

    def run(self) -> None:
        """Train until the budget is spent; the learning rate, the checkpoints and the stop are decided here.

        Raises KeyboardInterrupt when `should_stop()` says so: a stop request is an interrupt.
        """
        config, model, generator = self.config, self.model, torch.Generator().manual_seed(self.config.seed)
        if self.optimizer is None:
            self.optimizer = make_optimizer(config.optimizer, model.parameters(), self.lr_at(0),
                                            config.weight_decay)
        carry = config.sampling == "sequential"
        epoch = 0
        while not self.budget.spent(self.steps, epoch):
            epoch += 1
            state = None
            for X, Y in make_batches(config.sampling, self.train_indices, config.batch_size, config.num_steps,
                                     generator, model_device(model)):
                if state is None or not carry:
                    state = model.begin_state(X.shape[0])
                lr = self.optimizer.param_groups[0]["lr"]
                try:
                    step = train_step(model, X, Y, state, self.optimizer, self.clip)
                except StepDiverged as error:
                    raise diverged(error, self.steps + 1, epoch, lr, self.history,
                                   config.theta is not None) from error
                state, self.steps = step.state, self.steps + 1
                self.history.record(step, lr)
                for group in self.optimizer.param_groups:       # the next minibatch's learning rate
                    group["lr"] = self.lr_at(self.steps)
                if self.should_stop is not None and self.should_stop():
                    raise KeyboardInterrupt
                if self.budget.spent(self.steps, epoch - 1):
                    break
                if self.checkpoint_due():
                    self.checkpoint()
            else:
                if not (self.every_steps or self.every_seconds or self.budget.spent(self.steps, epoch)):
                    self.checkpoint()                           # checkpointed once per epoch
        self.checkpoint(final=True)                             # the end of the run

    def checkpoint_due(self) -> bool:
        """Return True when a mid-epoch checkpoint is due (`TrainConfig.checkpoints`)."""
        if self.every_steps:
            return self.steps - self.last_steps >= self.every_steps
        if self.every_seconds:
            return self.budget.train_seconds() - self.last_train_seconds >= self.every_seconds
        return False

    def checkpoint(self, final: bool = False) -> None:
        """Measure and record a checkpoint if anything was trained since the last one; call back.

        The `final` checkpoint (the end of the run) always reads the validation text as one
        stream (`evaluate_perplexity`), whatever `eval_batch_size` asks of the others.
        """
        history, config, budget, steps = self.history, self.config, self.budget, self.steps
        if steps == self.last_steps:
            return
        losses = history.step_loss[self.last_steps:]
        tokens = (steps - self.last_steps) * config.batch_size * config.num_steps
        trained, clock = budget.train_seconds(), budget.seconds()
        estimate = not final and config.eval_batch_size is not None
        with budget.evaluating():
            valid = evaluate(self.model, self.train_indices, self.valid_indices, config, estimate)
            history.valid_estimated.append(estimate)
            history.epoch.append(steps / self.steps_per_epoch)
            history.minibatches.append(steps)
            history.train_perplexity.append(safe_exp(math.fsum(losses) / len(losses)))
            history.valid_perplexity.append(valid)
            history.tokens_per_second.append(tokens / max(trained - self.last_train_seconds, 1e-9))
            history.seconds.append(clock)
            self.last_steps, self.last_train_seconds = steps, trained
            if self.on_checkpoint is not None:
                try:
                    self.on_checkpoint(history)
                except Exception as error:
                    raise CallbackError(error) from error


class CallbackError(RuntimeError):
    """The `on_checkpoint` callback raised; `__cause__` is what it raised."""

    def __init__(self, error: Exception):
        # TRANSLATORS: {kind} is the error's type (ValueError), {error} its message.
        super().__init__(_("the on_checkpoint callback raised {kind}: {error}").format(
            kind=type(error).__name__, error=error))


def stopped_message(error: BaseException, history: History) -> str:
    """Return, in words, why training stopped early at the current minibatch (see `History.stopped`)."""
    done = len(history.step_loss)
    if isinstance(error, KeyboardInterrupt):
        return _("Training was stopped by an interrupt after {n} minibatches; the model and its history so "
                 "far are kept.").format(n=done)
    if isinstance(error, CallbackError):
        # TRANSLATORS: {error} says what the callback raised ("the on_checkpoint callback raised ...").
        return _("Training stopped after {n} minibatches: {error}. The model and its history so far are "
                 "kept.").format(n=done, error=error)
    # TRANSLATORS: {kind} is the error's type (RuntimeError), {error} its message.
    return _("Training stopped after {n} minibatches by an error ({kind}: {error}); the model and its "
             "history so far are kept.").format(n=done, kind=type(error).__name__, error=error)


def validate_training(model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
                      config: TrainConfig) -> None:
    """Raise TypeError/ValueError, naming the setting or the text, for a `train` call that cannot work."""
    if not isinstance(config, TrainConfig):
        raise TypeError(_("config must be a d2lmini.train.TrainConfig, not {kind}").format(
            kind=type(config).__name__))
    if not isinstance(model, nn.Module) or not hasattr(model, "vocab_size"):
        raise TypeError(_("model must be a d2lmini model (RNNScratch or TorchRNN), not {kind}").format(
            kind=type(model).__name__))
    validate_config(config, model.vocab_size)
    validate_indices(train_indices, N_("training text"), model.vocab_size)
    validate_indices(valid_indices, N_("validation text"), model.vocab_size)
    validate_fits(len(train_indices), config.batch_size, config.num_steps)


def train(model: nn.Module, train_indices: torch.Tensor, valid_indices: torch.Tensor,
          config: TrainConfig, on_checkpoint: Callable[[History], None] | None = None,
          should_stop: Callable[[], bool] | None = None) -> History:
    """Train `model` as `config` says and return its `History` (the one training loop).

    Notebooks 04 to 08 and the benchmarks train through here. The budget, the checkpoint
    schedule and the learning-rate schedule are `config`'s (see `TrainConfig`). At each
    checkpoint it records train and validation perplexity (one stream read after the
    training text, `evaluate_perplexity`, unless `config.eval_batch_size` asks for the
    cold-started estimate), training tokens per second and the clock, then calls
    `on_checkpoint(history)` (for a live plot; its time counts as evaluation).
    `should_stop()`, if given, is asked after every minibatch: True stops training as an
    interrupt does (a stop request from another thread, see `d2lmini.interrupt`).

    Raises TypeError/ValueError naming the setting for settings or texts that cannot work
    (`validate_training`, once, before training), ValueError when the budget ended before one
    minibatch was trained (nothing measured), and `TrainingDiverged` if the run blows up (also
    after the last update). Anything else that stops training part way (an interrupt, a
    callback that raises, an error) is caught: the history so far is returned with `stopped`
    saying why, and the model keeps its trained weights.
    """
    validate_training(model, train_indices, valid_indices, config)
    return run_training(TrainingRun(model, train_indices, valid_indices, config, on_checkpoint, should_stop))


def run_training(run: TrainingRun) -> History:
    """Run `run` (settings already validated, as `train` and the lab's plan do) and return its history.

    What `train` says about stopping early, diverging and an empty budget holds here. The
    process-wide settings (`d2lmini.kernel_settings`) are put back on every exit, with a
    warning naming any that the run (a callback, or ■ inside `torch.no_grad()`) changed.
    """
    # TRANSLATORS: when an interrupt (■) arrived: "■ arrived as the run ended, after its last minibatch".
    ended = _("the run ended, after its last minibatch")
    # TRANSLATORS: who changed a process-wide setting, the subject of "... switched gradients off".
    with put_back_after(_("Training (its callback, or an interrupt)"), ended):
        return _run_and_judge(run)


def _run_and_judge(run: TrainingRun) -> History:
    try:
        run.run()
    except TrainingDiverged:
        raise
    except (Exception, KeyboardInterrupt) as error:
        run.history.stopped = stopped_message(error, run.history)
        run.history.interrupted = isinstance(error, KeyboardInterrupt)
        if run.history.interrupted:
            measure_at_stop(run)
        warnings.warn(run.history.stopped, RuntimeWarning, stacklevel=3)
        return run.history
    if not run.history.step_loss:
        label = TRAIN_SETTINGS["max_seconds"].label
        # TRANSLATORS: {setting} is the setting's name ("time limit"), {value} its value (0.01).
        raise ValueError(_("The budget ended before one minibatch was trained ({setting} (max_seconds) "
                           "{value}): nothing was measured. Give a larger budget.").format(
            setting=_(label), value=repr(run.config.max_seconds)))
    validate_final_model(run.model, run.history, run.config.lr)
    return run.history


def measure_at_stop(run: TrainingRun) -> None:
    """Checkpoint an interrupted run where it stopped, so what was trained is measured; a second
    interrupt (or any error) while measuring leaves the history as it was."""
    try:
        run.checkpoint(final=True)
    except (Exception, KeyboardInterrupt):
        pass
