"""What a training run will cost before it starts: memory and time (the lab of notebook 07).

`estimate_cost` adds up, for any budget (epochs, minibatches or seconds), the minibatches
trained, every evaluation of the validation text at the checkpoints, and the sample that
`predict` generates. The perplexity lab refuses settings whose estimate is far above its
default run's, so that no accepted setting runs much past what the lab announces.
"""

import math
from dataclasses import dataclass

# Seconds per unit of work, fitted to timings of `run_lab` on one thread of a busy 2-core CPU
# (rounded towards caution for large hidden sizes); only ratios to the default run's estimate are used.
MACS_PER_SECOND = 7e9
SECONDS_PER_MINIBATCH = 2e-3
SECONDS_PER_TOKEN_TRAINED = 18e-6
SECONDS_PER_CALL = 250e-6
SECONDS_PER_STEP = 8e-6


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


def macs_per_token(num_hiddens: int, vocab_size: int) -> int:
    """Return the multiply-adds of one forward step per token: H W_hh, the output layer and its softmax."""
    return num_hiddens * num_hiddens + 2 * num_hiddens * vocab_size


def planned_minibatches(config, steps_per_epoch: int) -> int | None:
    """Return how many minibatches the budget of `config` allows (None: only the clock limits it)."""
    limits = [config.max_minibatches, config.num_epochs and config.num_epochs * steps_per_epoch]
    limits = [n for n in limits if n is not None]
    return min(limits) if limits else None


def planned_evaluations(config, steps_per_epoch: int) -> int:
    """Return how many times the validation text is read: every checkpoint and the end."""
    planned = planned_minibatches(config, steps_per_epoch)
    if config.checkpoints:
        return (config.checkpoints if planned is None else min(config.checkpoints, planned)) + 1
    if planned is None:
        return 1
    return math.ceil(planned / steps_per_epoch) + 1


def estimate_cost(config, vocab_size: int, train_tokens: int, valid_tokens: int,
                  prefix_length: int = 0, num_chars: int = 0) -> RunCost:
    """Return the `RunCost` of training `config` (a `TrainConfig`) and sampling from the model.

    Training is estimated for the minibatches the budget asks for (`config.max_seconds`
    when only the clock limits it); evaluation reads the `valid_tokens` as
    `eval_batch_size` streams in calls of `eval_num_steps`, at every checkpoint.
    """
    h, v = config.num_hiddens, vocab_size
    step_macs = macs_per_token(h, v)
    tokens = config.batch_size * config.num_steps
    steps_per_epoch = max(1, (train_tokens - 1) // tokens)
    minibatches = planned_minibatches(config, steps_per_epoch)
    one_minibatch = (SECONDS_PER_MINIBATCH + tokens * SECONDS_PER_TOKEN_TRAINED
                     + 3 * tokens * step_macs / MACS_PER_SECOND)
    # A budget in minibatches or epochs is estimated as asked, even past the time limit that would
    # stop it: a run cut short by the clock is not the run asked for.
    train_seconds = config.max_seconds if minibatches is None else minibatches * one_minibatch
    eval_batch = max(1, min(config.eval_batch_size or config.batch_size, valid_tokens - 1))
    eval_steps = config.eval_num_steps or config.num_steps
    length = max(0, valid_tokens - 1) // eval_batch
    one_evaluation = (math.ceil(length / eval_steps) * SECONDS_PER_CALL + length * SECONDS_PER_STEP
                      + valid_tokens * step_macs / MACS_PER_SECOND)
    evaluations = planned_evaluations(config, steps_per_epoch)
    predict_seconds = ((num_chars + 1) * SECONDS_PER_CALL + (prefix_length + num_chars) * SECONDS_PER_STEP
                       + (prefix_length + num_chars) * step_macs / MACS_PER_SECOND)
    parameters = h * h + 2 * h * v + h + v
    floats = (4 * parameters + 3 * tokens * (h + v)
              + 2 * eval_batch * eval_steps * (h + v) + 2 * prefix_length * (h + v))
    return RunCost(minibatches, evaluations, train_seconds, evaluations * one_evaluation, predict_seconds,
                   4 * floats)
