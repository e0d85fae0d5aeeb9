"""The capstone of notebook 08: a character RNN the student owns, pieces and loop.

The student writes the sequential minibatch iterator, the forward pass over time, the
softmax cross-entropy and its gradient, backpropagation through time, clipping by the
joint norm of all gradients, the SGD update, the perplexity, and the training loop that
carries the state (detached) from one minibatch to the next. The harness supplies only
the data, a `Budget` and the checks:

- each piece alone (`check_minibatches` ... `check_perplexity`, in
  `d2lmini.exercises.capstone.pieces`), on random inputs against the package's references;
- the loop (`check_train`, in `d2lmini.exercises.capstone.loop`), on a small random text
  against the same loop built from the package's pieces, in a run where clipping acts;
- the assembled run (`check_capstone`): every piece and the loop in that order, naming the
  first that fails; then the student's loop trains on the course corpus and the model is
  scored on the validation text read as one stream with the student's forward and
  perplexity (`d2lmini.exercises.capstone.run`). It passes when the model beats the
  Kneser-Ney trigram in a run where clipping acted; the verdict shows the loss curve, a
  sample from the student's weights and the baseline ladder.

Every check runs the student's code under the guard (`d2lmini.exercises.guard`): torch's
built-in RNN, cross-entropy and clipping, the package's own code (or a copy of it) and the
instructors' solutions are refused; expected values are not held where the student's code
could reach them. A verdict shows itself when a cell ends with the check (nothing is printed).
"""

import math
import time
from dataclasses import replace

from d2lmini.corpus import load_corpus
from d2lmini.exercises import Verdict, correct_message
from d2lmini.exercises.capstone import loop as loop_module
from d2lmini.exercises.capstone import pieces as pieces_module
from d2lmini.exercises.capstone.loop import Budget, initial_params, loop_problem, reference_train
from d2lmini.exercises.capstone.pieces import first_failing_piece
from d2lmini.exercises.capstone.run import (
    CORPUS,
    TEMPERATURE,
    TRIGRAM,
    CapstoneRun,
    CapstoneVerdict,
    StudentCodeFailed,
    ladder_lines,
    minibatches_per_pass,
    run_capstone,
)
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.exercises.guard import CappedText
from d2lmini.i18n import _
from d2lmini.metrics import perplexity_from_bits
from d2lmini.ngram import kneser_ney_bits
from d2lmini.settings import TRAIN_SETTINGS, validate_value

__all__ = ["Budget", "check_backward", "check_capstone", "check_clip", "check_forward",
           "check_loss_and_grad", "check_minibatches", "check_perplexity", "check_sgd", "check_train",
           "estimated_seconds", "run_minibatches", "trigram_perplexity"]

LOOP_SIGNATURE = "train(indices, params, budget)"


def check_minibatches(minibatches) -> Verdict:
    """Capstone piece 1 (notebook 08): `minibatches(indices, batch_size, num_steps)`, sequential."""
    return pieces_module.check_minibatches(minibatches)


def check_forward(forward) -> Verdict:
    """Capstone piece 2 (notebook 08): `forward(X, state, params)` returns (outputs, hiddens)."""
    return pieces_module.check_forward(forward)


def check_loss_and_grad(loss_and_grad) -> Verdict:
    """Capstone piece 3 (notebook 08): `loss_and_grad(outputs, Y)`: the loss and its gradient."""
    return pieces_module.check_loss_and_grad(loss_and_grad)


def check_backward(backward) -> Verdict:
    """Capstone piece 4 (notebook 08): `backward(X, state, hiddens, d_outputs, d_final, params)`, BPTT."""
    return pieces_module.check_backward(backward)


def check_clip(clip) -> Verdict:
    """Capstone piece 5 (notebook 08): `clip(grads, theta)` returns (clipped gradients, joint norm before)."""
    return pieces_module.check_clip(clip)


def check_sgd(sgd) -> Verdict:
    """Capstone piece 6 (notebook 08): `sgd(params, grads, lr)` returns the updated parameters."""
    return pieces_module.check_sgd(sgd)


def check_perplexity(perplexity) -> Verdict:
    """Capstone piece 7 (notebook 08): `perplexity(logits, targets)` returns exp of the mean cross-entropy."""
    return pieces_module.check_perplexity(perplexity)


def check_train(train) -> Verdict:
    """The capstone's loop (notebook 08): `train(indices, params, budget)`, checked on a small random text."""
    return loop_module.check_train(train)


def trigram_perplexity() -> float:
    """The Kneser-Ney trigram's perplexity on the course corpus's validation text: the capstone's target."""
    train_text, valid_text = load_corpus(CORPUS).split_text()
    return perplexity_from_bits(kneser_ney_bits(train_text, valid_text, 3))


# A budget's fields, as the settings' one schema declares them ("epochs" is TrainConfig's num_epochs).
BUDGET_FIELDS = {"num_hiddens": "num_hiddens", "batch_size": "batch_size", "num_steps": "num_steps",
                 "epochs": "num_epochs", "lr": "lr", "theta": "theta", "seed": "seed"}


def validate_budget(budget: Budget | None) -> None:
    """Raise TypeError/ValueError, naming the field, for a `check_capstone` budget that cannot run."""
    if budget is None:
        return
    if not isinstance(budget, Budget):
        raise TypeError(_("check_capstone's budget (set by whoever calls the check, not by the "
                          "student's code) must be a d2lmini.exercises.capstone.loop.Budget or None, "
                          "not {type_name}.").format(type_name=type(budget).__name__))
    for field, setting in BUDGET_FIELDS.items():
        value = getattr(budget, field)
        try:
            if value is None:
                # TRANSLATORS: {field} is the name of a field of the budget in the code ("num_steps").
                raise ValueError(_("The {field} must be given, not None.").format(field=field))
            validate_value(TRAIN_SETTINGS[setting], value)
        except (TypeError, ValueError) as error:
            # TRANSLATORS: {value} is Python's repr of the value; {error} says why it cannot run.
            raise type(error)(_("check_capstone's budget (set by whoever calls the check, not by the "
                                "student's code): budget.{field} = {value} cannot run. {error}").format(
                                    field=field, value=repr(value), error=error)) from None


def run_minibatches(budget: Budget | None = None) -> int:
    """How many minibatches the run on the course corpus trains for with `budget` (default `Budget()`)."""
    budget = budget or Budget()
    train_indices, _valid = load_corpus(CORPUS).split()
    return budget.epochs * minibatches_per_pass(len(train_indices), budget)


def estimated_seconds(budget: Budget | None = None, probe: int = 20) -> float:
    """Seconds the run on the course corpus takes on this machine with the package's own pieces:
    `probe` minibatches of the reference loop timed, scaled to `run_minibatches(budget)` (notebook 08).

    A student's loop written like the pieces of the notebooks runs at a similar speed; scoring
    and sampling after the training add a few seconds.
    """
    budget = budget or Budget()
    if probe < 1:
        raise ValueError(_("probe must be at least 1 minibatch, got {probe}").format(probe=probe))
    corpus = load_corpus(CORPUS)
    train_indices, _valid = corpus.split()
    sample = replace(budget, epochs=1)
    indices = train_indices[: probe * budget.batch_size * budget.num_steps + 1]
    params = initial_params(len(corpus.vocab), sample)
    start = time.perf_counter()
    reference_train(indices, params, sample)
    seconds_each = (time.perf_counter() - start) / minibatches_per_pass(len(indices), sample)
    return seconds_each * run_minibatches(budget)


def check_capstone(minibatches=None, forward=None, loss_and_grad=None, backward=None, clip=None, sgd=None,
                   perplexity=None, train=None, budget: Budget | None = None) -> Verdict:
    """The capstone of notebook 08: check every piece and the loop, then train on the course corpus.

    Returns a `CapstoneVerdict`: "Not attempted yet" while every function is a stub; the
    first piece (or the loop) that is not right, named; a run on the course corpus that
    fails, naming the piece; or the run's result, correct when the validation perplexity
    (one stream) is below the Kneser-Ney trigram's and clipping acted at some minibatch.
    Raises TypeError/ValueError naming the field for a `budget` that cannot run: the caller's
    mistake, not the student's.
    """
    validate_budget(budget)
    pieces = {"minibatches": minibatches, "forward": forward, "loss_and_grad": loss_and_grad,
              "backward": backward, "clip": clip, "sgd": sgd, "perplexity": perplexity, "train": train}
    problem, unattempted, printed = first_failing_piece(pieces)
    if problem is None or unattempted:
        output = CappedText()
        loop = loop_problem(train, output) if callable(train) else NOT_ATTEMPTED if train is None else (
            _("pass the function itself, not a {type_name}.").format(type_name=type(train).__name__))
        if unattempted and loop == NOT_ATTEMPTED:
            return CapstoneVerdict(False, _(NOT_ATTEMPTED))
        if problem is None and loop:
            loop = _("it still returns None.") if loop == NOT_ATTEMPTED else loop
            # TRANSLATORS: {signature} is the loop's call in the code; {problem} says what is wrong with it.
            problem = _("The first piece that is not right yet is the loop, {signature}: {problem}").format(
                signature=LOOP_SIGNATURE, problem=loop)
            printed = _printed(output)
    if problem:
        return CapstoneVerdict.not_yet(problem, printed)
    output = CappedText()
    try:
        run = run_capstone(forward, perplexity, train, budget or Budget(), output)
    except StudentCodeFailed as error:
        # TRANSLATORS: {failure} names the piece that failed and how ("train: it returned None.").
        failure = _("Every piece and the loop passed their checks, but in the run on the course corpus "
                    "{failure}").format(failure=error)
        return CapstoneVerdict.not_yet(failure, _printed(output))
    return _judge(run, _printed(output))


def _printed(output: CappedText) -> str:
    return output.shown() if output.kept else ""


def _judge(run: CapstoneRun, printed: str) -> CapstoneVerdict:
    """The verdict on the run on the course corpus: right when below the trigram with clipping acting."""
    trigram = run.ladder[TRIGRAM]
    tail = run.losses[-20:] or [math.nan]
    first, last = (run.losses or [math.nan])[0], sum(tail) / len(tail)
    summary = _("Your RNN trained for {minibatches} minibatches in {seconds:.0f} s (training loss "
                "{first:.2f} nats at the first, {last:.2f} over the last 20) and reads the validation "
                "text, as one stream, at perplexity {perplexity:.3f}; the Kneser-Ney trigram gives "
                "{trigram:.3f}. Clipping acted at {clipped} of {minibatches} minibatches (largest joint "
                "norm {largest:.3g}, θ = {theta:g}).").format(
                    minibatches=len(run.losses), seconds=run.seconds, first=first, last=last,
                    perplexity=run.perplexity, trigram=trigram, clipped=run.clipped,
                    largest=max(run.norms, default=0.0), theta=run.theta)
    # TRANSLATORS: {sample} is text the model wrote; {ladder} a table, one baseline a line.
    shown = _("\n\nA sample from your weights (temperature {temperature:g}):\n{sample}\n\nThe ladder "
              "(validation perplexity, the same text read the same way):\n{ladder}").format(
                  temperature=TEMPERATURE, sample=run.sample, ladder="\n".join(ladder_lines(run)))
    if not run.perplexity < trigram:
        # TRANSLATORS: {summary} says how the run went; {shown} adds a sample and the ladder.
        problem = _("Every piece and the loop passed their checks, but the model is not below the trigram. "
                    "{summary}{shown}").format(summary=summary, shown=shown)
        return CapstoneVerdict.not_yet(problem, printed, run=run)
    if run.clipped == 0:
        return CapstoneVerdict.not_yet(_("The model beats the trigram, but clipping never acted in this "
                                         "run, so it was not tested: {summary}").format(summary=summary),
                                       printed, run=run)
    return CapstoneVerdict(True, correct_message(summary + shown), printed, run=run)
