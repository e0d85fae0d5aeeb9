"""What a training run will cost before it starts: memory and time (the lab of notebook 08).

`estimate_cost` adds up, for any budget (epochs, minibatches or seconds), the minibatches
trained, every evaluation of the validation text at the checkpoints, and the sample that
`predict` generates, in seconds on a reference machine (README, "Every click is bounded").
`MachineSpeed` learns how much faster or slower this machine is from the runs it finishes, so
the lab can announce how long a run will take here before it starts.
"""

import itertools
import math
from dataclasses import dataclass

from d2lmini.batching import steps_per_epoch
from d2lmini.train import CONTEXT_TOKENS, EVAL_CHUNK, planned_minibatches

# Seconds per unit of work on the reference machine, fitted by least squares (relative error) to
# timings of minibatch shapes (README, "Every click is bounded"; `benchmarks/click_times.py` times
# whole runs). A minibatch costs a fixed
# overhead, a per-time-step cost (the sequential loop, whose h x h matmul does not shrink with the
# batch) and a per-token cost; "mac" terms scale with the multiply-adds of one step.
TRAIN_SECONDS = {"minibatch": 1.0e-3, "step": 1.3e-5, "step_mac": 1.3e-10, "token": 4.5e-7,
                 "token_mac": 8.9e-11}
EVAL_SECONDS = {"call": 2.0e-4, "step": 3.6e-6, "step_mac": 4.1e-11, "token_mac": 3.2e-11}
# Generating a sample: one call per generated character, one step per character read or written.
PREDICT_SECONDS = {"call": 2.5e-4, "step": 8e-6, "step_mac": 1.4e-10}
# How many times an RNN's seconds each part of a run takes with each cell at the same hidden size:
# a training minibatch (32 x 35), the validation text read as one stream and as 32 streams, the
# sample. Measured at these hidden sizes on one thread (CPU time, the cells timed in turn) by
#     OMP_NUM_THREADS=1 python benchmarks/cell_cost.py --repeats 5 --hiddens 32 128 384
# and interpolated in log(hidden size) between them (the nearest outside). A gated step is several
# small operations where the RNN's is one fused one, so reading one stream, one character per step,
# costs the most more, and the ratio falls as the matmuls grow.
CELL_FACTOR_SIZES = (32, 128, 384)
CELL_FACTORS = {
    "rnn": {"train": (1.0, 1.0, 1.0), "stream": (1.0, 1.0, 1.0), "streams": (1.0, 1.0, 1.0),
            "predict": (1.0, 1.0, 1.0)},
    # the GRU's row measured again (2026-11-30) once its backward pass was written by hand
    "gru": {"train": (2.3, 2.6, 3.1), "stream": (11.1, 7.9, 4.9), "streams": (4.6, 3.6, 3.3),
            "predict": (1.3, 1.4, 1.6)},
    "lstm": {"train": (3.2, 4.2, 4.4), "stream": (7.9, 7.2, 5.8), "streams": (5.0, 5.4, 4.7),
             "predict": (1.0, 1.0, 1.0)},
}
# How many hidden-sized blocks of weights a cell's step multiplies by (its gates).
CELL_GATES = {"rnn": 1, "gru": 3, "lstm": 4}


@dataclass
class RunCost:
    """The estimate: minibatches (None: only the clock stops training), evaluations, seconds, bytes."""

    minibatches: int | None
    evaluations: int
    train_seconds: float
    eval_seconds: float
    predict_seconds: float
    bytes: int

    @property
    def seconds(self) -> float:
        """The whole run: training, evaluation and the sample."""
        return self.train_seconds + self.eval_seconds + self.predict_seconds


def cell_factor(cell: str, part: str, num_hiddens: int) -> float:
    """Return how many times the RNN's seconds `part` of a run takes with `cell` (`CELL_FACTORS`).

    `part` is "train", "stream", "streams" or "predict"; between the measured hidden sizes the
    factor is interpolated in log(hidden size), outside them the nearest one is used.
    """
    factors = CELL_FACTORS[cell][part]
    where = math.log(min(max(num_hiddens, CELL_FACTOR_SIZES[0]), CELL_FACTOR_SIZES[-1]))
    for (low, high), (f_low, f_high) in zip(itertools.pairwise(CELL_FACTOR_SIZES),
                                            itertools.pairwise(factors), strict=True):
        if where <= math.log(high):
            share = (where - math.log(low)) / (math.log(high) - math.log(low))
            return f_low + share * (f_high - f_low)
    return factors[-1]


def macs_per_token(num_hiddens: int, vocab_size: int) -> int:
    """Return the multiply-adds of one forward step per token: H W_hh, the output layer and its softmax."""
    return num_hiddens * num_hiddens + 2 * num_hiddens * vocab_size


def planned_evaluations(config, planned: int | None, per_epoch: int) -> int:
    """Return how many times the validation text is read in a run of `planned` minibatches (None:
    only the clock limits it), `per_epoch` to a pass: every checkpoint and the end."""
    if config.checkpoints:
        return (config.checkpoints if planned is None else min(config.checkpoints, planned)) + 1
    if planned is None:
        return 1
    return math.ceil(planned / per_epoch) + 1


def estimate_cost(config, vocab_size: int, train_tokens: int, valid_tokens: int,
                  prefix_length: int = 0, num_chars: int = 0) -> RunCost:
    """Return the `RunCost` of training `config` (a `TrainConfig`) and sampling from the model.

    Each part is the RNN's estimate times the measured factor of `config.cell` (`cell_factor`).
    Training is estimated for the minibatches the budget asks for (`config.max_seconds`
    when only the clock limits it); evaluation, at every checkpoint, reads the end of the
    training text and the `valid_tokens` as one stream (`eval_batch_size` None) or the
    `valid_tokens` as `eval_batch_size` streams, in calls of `eval_num_steps`
    (`d2lmini.train.evaluate`).
    """
    h, v, cell = config.num_hiddens, vocab_size, config.cell
    step_macs = macs_per_token(h, v)
    tokens = config.batch_size * config.num_steps
    per_epoch = steps_per_epoch(train_tokens, config.batch_size, config.num_steps)
    minibatches = planned_minibatches(config, per_epoch)
    t = TRAIN_SECONDS
    one_minibatch = (t["minibatch"] + config.num_steps * (t["step"] + t["step_mac"] * step_macs)
                     + tokens * (t["token"] + t["token_mac"] * step_macs))
    # A budget in minibatches or epochs is estimated as asked, even past the time limit that would
    # stop it: a run cut short by the clock is not the run asked for.
    train_seconds = (config.max_seconds if minibatches is None
                     else minibatches * one_minibatch * cell_factor(cell, "train", h))
    e, evaluations = EVAL_SECONDS, planned_evaluations(config, minibatches, per_epoch)

    def one_evaluation(batch: int, chunk: int, length: int) -> float:
        return (math.ceil(length / chunk) * e["call"] + length * (e["step"] + e["step_mac"] * step_macs)
                + batch * length * e["token_mac"] * step_macs)

    # The last evaluation reads one stream after the end of the training text; with `eval_batch_size`
    # the others are estimates from that many cold-started streams.
    one_stream = cell_factor(cell, "stream", h) * one_evaluation(
        1, (config.eval_batch_size is None and config.eval_num_steps) or EVAL_CHUNK,
        max(0, valid_tokens - 1) + min(CONTEXT_TOKENS, train_tokens))
    if config.eval_batch_size is None:
        eval_batch, eval_steps = 1, config.eval_num_steps or EVAL_CHUNK
        eval_seconds = evaluations * one_stream
    else:
        eval_batch = max(1, min(config.eval_batch_size, valid_tokens - 1))
        eval_steps = config.eval_num_steps or config.num_steps
        estimate = cell_factor(cell, "streams", h) * one_evaluation(eval_batch, eval_steps,
                                                                    max(0, valid_tokens - 1) // eval_batch)
        eval_seconds = (evaluations - 1) * estimate + one_stream
    p = PREDICT_SECONDS
    predict_seconds = cell_factor(cell, "predict", h) * (
        (num_chars + 1) * p["call"] + (prefix_length + num_chars) * (p["step"] + p["step_mac"] * step_macs))
    # A gated cell holds a block of weights, and keeps a block of activations, per gate.
    gated = CELL_GATES[cell] * h
    parameters = gated * (h + v + 1) + h * v + v
    floats = (4 * parameters + 3 * tokens * (gated + v)
              + 2 * max(eval_batch * eval_steps, EVAL_CHUNK, CONTEXT_TOKENS) * (gated + v)
              + 2 * prefix_length * (gated + v))
    return RunCost(minibatches, evaluations, train_seconds, eval_seconds, predict_seconds, 4 * floats)


class MachineSpeed:
    """How this machine's speed compares with the reference machine's, learned from finished runs.

    `record(estimated, measured)` keeps the ratio of a run's measured seconds to its reference
    estimate; `factor` is the median of the last `keep` ratios (1.0 before any run), and
    `seconds(estimated)` turns a reference estimate into an estimate for this machine.
    """

    def __init__(self, keep: int = 5):
        self.keep, self.ratios = keep, []

    @property
    def factor(self) -> float:
        """The median ratio of measured to estimated seconds (1.0 while nothing was measured)."""
        if not self.ratios:
            return 1.0
        ordered = sorted(self.ratios)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

    def record(self, estimated: float, measured: float) -> None:
        """Remember one finished run: its reference estimate and the seconds it really took here."""
        if estimated > 0 and measured > 0 and math.isfinite(estimated) and math.isfinite(measured):
            self.ratios = [*self.ratios, measured / estimated][-self.keep:]

    def seconds(self, estimated: float) -> float:
        """Return the seconds a run estimated at `estimated` reference seconds should take here."""
        return estimated * self.factor
