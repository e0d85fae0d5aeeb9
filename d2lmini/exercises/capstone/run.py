"""The capstone's assembled run on the course corpus (notebook 08).

`run_capstone` trains the student's model with the student's loop, from seeded initial
parameters, on the training part of the bundled corpus; reads the validation text as one
stream with the student's forward, the state carried from the training text before it
(the protocol of the n-gram and compressor baselines); scores it with the student's
perplexity; draws a sample from the trained weights; and places the model on the
baseline ladder (`d2lmini.metrics.ladder_bits`). Every call into the student's code runs
under the guard, with torch's built-in RNN, cross-entropy and clipping refused, as is the
package's own code under any name. `CapstoneVerdict` shows itself as every `Verdict` does,
and with a run also the loss curve and the ladder.
"""

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from d2lmini.corpus import load_corpus
from d2lmini.exercises import Verdict
from d2lmini.exercises.capstone.convert import CONVERT, as_run
from d2lmini.exercises.capstone.loop import LOOP_BANS, Budget, initial_params
from d2lmini.exercises.coding import outcome_problem
from d2lmini.exercises.guard import CappedText, run_guarded
from d2lmini.i18n import N_, _
from d2lmini.metrics import ladder_bits, perplexity_from_bits, perplexity_from_logits

CORPUS = "bundled"
TRIGRAM = "KN n=3"  # the ladder row the capstone must beat
YOUR_RNN = N_("your RNN")  # the student's row of the ladder, as the verdict and the figure name it
CONTEXT = 1000  # characters of training text read before the validation text: the state is warm
CHUNK = 1000  # characters per forward call while reading the validation text
TRAIN_SECONDS = 300.0  # the student's loop may run this long before the check stops it
FORWARD_SECONDS = 30.0  # one forward call while scoring or sampling
SAMPLE_PREFIX, SAMPLE_CHARS, TEMPERATURE, SAMPLE_SEED = "the river ", 200, 0.5, 0


@dataclass(frozen=True)
class CapstoneRun:
    """What the assembled run measured: the loss and gradient norm of every minibatch, the
    validation perplexity read as one stream, a sample, the ladder (name -> perplexity) and
    the training time in seconds."""

    losses: list[float]
    norms: list[float]
    perplexity: float
    sample: str
    ladder: dict[str, float]
    seconds: float
    theta: float

    @property
    def clipped(self) -> int:
        """How many minibatches had a joint gradient norm above θ (so clipping acted)."""
        return sum(norm > self.theta for norm in self.norms)


class StudentCodeFailed(Exception):
    """A call into the student's code failed; the message says how, naming the piece (in the language
    d2lmini speaks)."""


def _failed(piece: str, problem: str) -> StudentCodeFailed:
    """The failure of the student's `piece` (its name in the code, "train"), `problem` saying how."""
    # TRANSLATORS: {piece} is a function's name in the code ("train"); {problem} says what went wrong.
    return StudentCodeFailed(_("{piece}: {problem}").format(piece=piece, problem=problem))


@functools.cache
def corpus_ladder(name: str = CORPUS) -> dict[str, float]:
    """The baseline ladder of corpus `name` as perplexities on its validation text (computed once)."""
    bits = ladder_bits(*load_corpus(name).split_text())
    return {row: perplexity_from_bits(value) for row, value in bits.items()}


def minibatches_per_pass(num_tokens: int, budget: Budget) -> int:
    """How many minibatches sequential partitioning from offset 0 cuts from `num_tokens` tokens."""
    stream = (num_tokens - 1) // budget.batch_size
    return max(0, (stream - budget.num_steps) // budget.num_steps + 1)


def _call(fn: Callable, args: tuple, piece: str, label: str, seconds: float, output: CappedText | None,
          convert: Callable | None = None):
    outcome = run_guarded(fn, args, convert, output, allowed=CONVERT, seconds=seconds, bans=LOOP_BANS)
    problem = outcome_problem(outcome, label)
    if problem is None and outcome.value is None:
        problem = _("it returned None.")
    if problem:
        raise _failed(piece, problem)
    return outcome.value


def _forward_stream(forward: Callable, params, tokens: torch.Tensor, state: torch.Tensor,
                    output: CappedText | None = None):
    """Step-major outputs for every input of `tokens` (one stream), and the state after it."""
    outputs = []
    for start in range(0, len(tokens), CHUNK):
        X = tokens[start : start + CHUNK][None]
        result = _call(forward, (X, state, params), "forward",
                       _("the validation text read as one stream"), FORWARD_SECONDS, output)
        if type(result) not in (tuple, list) or len(result) != 2 or any(
                type(t) not in (torch.Tensor, torch.nn.Parameter) for t in result):
            raise _failed("forward", _("it should return (outputs, hiddens), two plain tensors."))
        outputs.append(result[0])
        state = result[1][-1]
    return torch.cat(outputs), state


def one_stream_perplexity(forward: Callable, perplexity: Callable, params, context: torch.Tensor,
                          valid: torch.Tensor, output: CappedText | None = None) -> float:
    """The student's perplexity on `valid` read as one stream, after reading `context` (notebook 08).

    Each validation token is predicted from every token before it (the first from the end
    of `context`), as the n-gram and compressor baselines predict it. The student's number
    must agree with the package's `perplexity_from_logits` on the same outputs.
    """
    stream = torch.cat([context, valid])
    state = torch.zeros(1, params[1].shape[0], dtype=params[1].dtype)
    outputs, _state = _forward_stream(forward, params, stream[:-1], state, output)
    logits, targets = outputs[len(context) - 1 :], stream[len(context) :]
    mine = _call(perplexity, (logits.detach(), targets), "perplexity", _("the validation text"),
                 FORWARD_SECONDS, output, float)
    reference = perplexity_from_logits(logits.detach(), targets)
    if not abs(mine - reference) <= 1e-3 * reference:
        raise _failed("perplexity", _("on the validation text it gives {value:.6g}, which is not exp of the "
                                      "mean cross-entropy of your outputs there. Does it work for long "
                                      "texts?").format(value=mine))
    return mine


def draw_sample(forward: Callable, params, vocab, prefix: str = SAMPLE_PREFIX, num_chars: int = SAMPLE_CHARS,
                temperature: float = TEMPERATURE, seed: int = SAMPLE_SEED,
                output: CappedText | None = None) -> str:
    """`prefix` and `num_chars` characters drawn from the student's model at `temperature` (notebook 08).

    Each character is drawn from softmax(logits / temperature) with a seeded CPU generator;
    `<unk>` is never drawn.
    """
    generator = torch.Generator().manual_seed(seed)
    state = torch.zeros(1, params[1].shape[0], dtype=params[1].dtype)
    outputs, state = _forward_stream(forward, params, torch.tensor(vocab.indices(prefix)), state, output)
    drawn = []
    for _drawn in range(num_chars):
        logits = outputs[-1].detach().double().cpu() / temperature
        logits[vocab.unk] = -math.inf
        token = int(torch.multinomial(torch.softmax(logits, 0), 1, generator=generator))
        drawn.append(token)
        outputs, state = _forward_stream(forward, params, torch.tensor([token]), state, output)
    return prefix + vocab.decode(drawn)


def _trained_params(value, initial: list[torch.Tensor]) -> list[torch.Tensor]:
    params = list(value)
    if len(params) != len(initial) or any(p.shape != q.shape for p, q in zip(params, initial, strict=False)):
        raise _failed("train", _("the parameters it returns should be [W_xh, W_hh, b_h, W_hq, b_q], with the "
                                 "shapes of those it was given."))
    return [p.detach() for p in params]


def run_capstone(forward: Callable, perplexity: Callable, train: Callable, budget: Budget,
                 output: CappedText | None = None) -> CapstoneRun:
    """Train with the student's `train` on the course corpus and score the model; return a `CapstoneRun`.

    Raises `StudentCodeFailed` (naming the piece) when the student's code fails on the way.
    What the student's functions print goes to `output`. Runs torch on one thread (many small
    steps are slower on two busy cores), restored after.
    """
    corpus = load_corpus(CORPUS)
    train_indices, valid_indices = corpus.split()
    params = initial_params(len(corpus.vocab), budget)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start = time.perf_counter()
        run = _call(train, (train_indices, params, budget), "train", _("the course corpus"), TRAIN_SECONDS,
                    output, as_run)
        seconds = time.perf_counter() - start
        if isinstance(run, str):
            raise _failed("train", run)
        expected = budget.epochs * minibatches_per_pass(len(train_indices), budget)
        if len(run[1]) != expected:
            raise _failed("train", _("it returned {count} losses; the budget gives {expected} "
                                     "minibatches.").format(count=len(run[1]), expected=expected))
        trained = _trained_params(run[0], params)
        score = one_stream_perplexity(forward, perplexity, trained, train_indices[-CONTEXT:], valid_indices,
                                      output)
        sample = draw_sample(forward, trained, corpus.vocab, output=output)
    finally:
        torch.set_num_threads(threads)
    ladder = dict(corpus_ladder())
    return CapstoneRun(run[1], run[2], score, sample, ladder, seconds, budget.theta)


def ladder_lines(run: CapstoneRun) -> list[str]:
    """The ladder from worst to best perplexity, with the student's RNN in its place and marked.

    The baselines keep the ladder's names ("KN n=3"); the student's row is named in the language
    d2lmini speaks.
    """
    rows = sorted([*run.ladder.items(), (YOUR_RNN, run.perplexity)], key=lambda row: -row[1])
    return [f"{'→' if name == YOUR_RNN else ' '} {_(name) if name == YOUR_RNN else name:<24} {value:7.3f}"
            for name, value in rows]


# repr=False: IPython's pretty printer would take a __repr__ generated here over Verdict's _repr_pretty_.
@dataclass(frozen=True, repr=False)
class CapstoneVerdict(Verdict):
    """The capstone's verdict (notebook 08): shown as every `Verdict` is (`_repr_pretty_`: what the
    student's code printed, then the message); with a `run`, followed by the loss curve and the ladder."""

    run: CapstoneRun | None = field(default=None, compare=False)

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        # IPython calls this only when it is callable: without a run, the verdict is shown like any other.
        return None if self.run is None else self._show_with_run

    def _show_with_run(self) -> None:
        from IPython.display import display  # noqa: PLC0415 (only a notebook displays; the grader does not)

        display(Verdict(self.correct, self.message, self.printed))
        show_run(self.run)


def show_run(run: CapstoneRun) -> None:
    """Draw the loss of every minibatch and the ladder with the student's RNN marked (notebook 08)."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 (only a notebook draws; the grader does not)

    fig, (curve, ladder) = plt.subplots(1, 2, figsize=(11, 3.6))
    curve.plot(run.losses, lw=0.6, color="tab:blue", label=_("training loss of each minibatch"))
    curve.axhline(math.log(run.perplexity), color="tab:green", ls="--",
                  label=_("validation, one stream: ln {perplexity:.2f}").format(perplexity=run.perplexity))
    curve.axhline(math.log(run.ladder[TRIGRAM]), color="grey", ls=":",
                  label=_("Kneser-Ney trigram: ln {perplexity:.2f}").format(perplexity=run.ladder[TRIGRAM]))
    curve.set(xlabel=_("minibatch"), ylabel=_("cross-entropy (nats)"), title=_("Your RNN learning"))
    curve.legend(fontsize=8)
    rows = sorted([*run.ladder.items(), (YOUR_RNN, run.perplexity)], key=lambda row: row[1])
    names = [_(name) if name == YOUR_RNN else name for name, _value in rows]
    values = [value for _name, value in rows]
    colours = ["tab:green" if name == YOUR_RNN else "lightgrey" for name, _value in rows]
    ladder.barh(names, values, color=colours)
    ladder.invert_yaxis()
    ladder.set(xscale="log", xlabel=_("validation perplexity (log scale, lower is better)"),
               title=_("Where it lands on the ladder"))
    ladder.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    plt.show()
