"""The capstone's loop, checked on a small random text against the same loop built from the package's pieces.

The reference loop (`reference_train`) is the loop notebook 08 asks for: for each pass
over the text a zero state; for each minibatch forward, loss and gradient, backward from
d_final = 0, clipping, one SGD step, and the final hidden state carried on (its value,
not its gradient). Flags turn it into the mistakes a loop can make, so that a student's
loop that matches one of them is told which.

The student's loop runs under the guard with torch's built-in RNN and cross-entropy refused
(`LOOP_BANS`; clipping is refused always), as is the package's own code under any name. Its
result is judged against the reference loop computed afterwards from pristine inputs; before
the student's loop runs only a digest of that result is kept, so nothing the student's frames
or `gc` can reach during the call holds it.
"""

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from d2lmini.batching import sequential_batches
from d2lmini.exercises import Verdict, correct_message
from d2lmini.exercises.capstone.convert import CONVERT, as_run
from d2lmini.exercises.capstone.pieces import reference_backward, reference_forward, reference_loss_and_grad
from d2lmini.exercises.clipping import reference_clip
from d2lmini.exercises.coding import (
    NOT_ATTEMPTED,
    RETURNED_NONE,
    Case,
    expected_of,
    first_difference,
    is_stub,
    outcome_problem,
    seal,
)
from d2lmini.exercises.guard import CappedText, run_guarded
from d2lmini.exercises.guard.refusals import CROSS_ENTROPY, RNN
from d2lmini.i18n import N_, _


@dataclass(frozen=True)
class Budget:
    """A training run of the capstone (notebook 08); the default is the run on the course corpus.

    `epochs` passes over the training text, each cut into minibatches of `batch_size`
    streams of `num_steps` characters (sequential partitioning from offset 0), plain SGD
    with learning rate `lr`, gradients clipped at joint norm `theta`; the initial
    parameters are drawn from `seed`.
    """

    num_hiddens: int = 128
    batch_size: int = 32
    num_steps: int = 32
    epochs: int = 18
    lr: float = 1.0
    theta: float = 1.0
    seed: int = 0


# The loop check: a random text of 12 tokens, 2 passes of 15 minibatches, clipping acting often.
LOOP_VOCAB, LOOP_TOKENS = 12, 301
LOOP_BUDGET = Budget(num_hiddens=8, batch_size=4, num_steps=5, epochs=2, lr=0.5, theta=0.5, seed=1)
LOOP_SECONDS = 30.0  # the loop check's whole run (a few hundred small steps)
RTOL = 1e-4  # float32 runs of two correct loops differ by rounding only
# What the student's loop (and the run on the course corpus) may not call, besides the package:
# torch's RNN and cross-entropy (its clipping is refused by every check).
LOOP_BANS = (RNN, CROSS_ENTROPY)


def initial_params(vocab: int, budget: Budget) -> list[torch.Tensor]:
    """[W_xh, W_hh, b_h, W_hq, b_q] drawn from `budget.seed` on the CPU: weights N(0, 1/fan_in), biases 0."""
    generator = torch.Generator().manual_seed(budget.seed)
    hiddens = budget.num_hiddens

    def weight(fan_in, fan_out):
        return torch.randn(fan_in, fan_out, generator=generator) / math.sqrt(fan_in)

    return [weight(vocab, hiddens), weight(hiddens, hiddens), torch.zeros(hiddens),
            weight(hiddens, vocab), torch.zeros(vocab)]


def reference_train(indices, params, budget: Budget, carry_gradient: bool = False,
                    carry_state: bool = True, reset_each_pass: bool = True, clip_update: bool = True,
                    accumulate: bool = False, norm_after_clip: bool = False):
    """The loop from the package's pieces; return (params, losses, norms), as the student's `train` does.

    `carry_gradient` feeds each backward's d_state into the next backward (the state not
    detached); `carry_state=False` starts every minibatch from zeros; `reset_each_pass=False`
    carries the state from the end of one pass into the next; `clip_update=False` updates with
    the gradients before clipping; `accumulate` adds each minibatch's gradients to the (clipped)
    ones before, as `.grad` does when it is never zeroed; `norm_after_clip` records the norm of
    the clipped gradients.
    """
    losses, norms = [], []
    state = d_state = torch.zeros(budget.batch_size, budget.num_hiddens, dtype=params[0].dtype)
    kept = [torch.zeros_like(p) for p in params]
    for _epoch in range(budget.epochs):
        if reset_each_pass:
            state = torch.zeros_like(state)
        for X, Y in sequential_batches(indices, budget.batch_size, budget.num_steps, offset=0):
            if not carry_state:
                state = torch.zeros_like(state)
            outputs, hiddens = reference_forward(X, state, params)
            loss, d_outputs = reference_loss_and_grad(outputs, Y)
            d_final = d_state if carry_gradient else torch.zeros_like(state)
            *grads, d_state = reference_backward(X, state, hiddens, d_outputs, d_final, params)
            grads = [k + g for k, g in zip(kept, grads, strict=True)] if accumulate else grads
            clipped = reference_clip(grads, budget.theta)
            kept = clipped if accumulate else kept
            norms.append(_joint_norm(clipped if norm_after_clip else grads))
            update = clipped if clip_update else grads
            params = [p - budget.lr * g for p, g in zip(params, update, strict=True)]
            state = hiddens[-1]
            losses.append(loss)
    return params, losses, norms


def _joint_norm(grads: list[torch.Tensor]) -> float:
    return float(torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads])))


# Each mistake's flags and what the verdict says, completing "Your loop runs, but ..." (English,
# marked with N_; shown translated).
MISTAKES = (
    ({"carry_gradient": True},
     N_("the state is not detached: the gradient d_state that reaches a minibatch's initial state is fed "
        "into the next minibatch's backward as d_final. Carry the state's value only: start every backward "
        "from d_final = 0 and drop the d_state it returns (the hand-written `state.detach()`).")),
    ({"carry_state": False},
     N_("every minibatch starts from a zero state. With sequential partitioning row i of a minibatch "
        "continues row i of the one before: carry the final hidden state on.")),
    ({"reset_each_pass": False},
     N_("the state is carried from the end of one pass over the text into the start of the next, where the "
        "text starts again: start every pass from a zero state.")),
    ({"clip_update": False},
     N_("the update uses the gradients before clipping (unclipped, or clipped only after the update): clip "
        "first, then take the SGD step with the clipped gradients.")),
    ({"accumulate": True},
     N_("each minibatch's gradients are added to those of the minibatches before (as `.grad` does when it "
        "is never zeroed): every update uses the gradients of its own minibatch only.")),
    ({"norm_after_clip": True},
     N_("the norms it returns are those of the clipped gradients: record the joint norm before clipping "
        "(what `clip` returns), so that the run shows when clipping acted.")),
)


def loop_text() -> torch.Tensor:
    """The loop check's random text: `LOOP_TOKENS` tokens of `LOOP_VOCAB` kinds, seeded."""
    return torch.randint(LOOP_VOCAB, (LOOP_TOKENS,), generator=torch.Generator().manual_seed(7))


def _matches(got, expected) -> bool:
    return first_difference(got, expected, "", rtol=RTOL, atol=1e-6) is None


def loop_problem(train: Callable, output: CappedText | None = None) -> str | None:
    """What is wrong with the student's `train` on the loop check's text (None if nothing).

    Runs the package's loop first (keeping only a digest of its result), then the student's,
    under the guard (what it prints goes to `output`), from the same initial parameters; then
    the package's loop again from pristine inputs (asserting that clipping acts in it);
    compares the losses, norms and final parameters; names a known mistake the student's run
    matches.
    """
    budget = LOOP_BUDGET
    inputs = (loop_text(), initial_params(LOOP_VOCAB, budget), budget)
    case = seal(Case(_("a random text of {count} tokens").format(count=LOOP_TOKENS), inputs,
                     reference=reference_train))
    pristine = copy.deepcopy(case.args)
    outcome = run_guarded(train, case.args, as_run, output, allowed=CONVERT, seconds=LOOP_SECONDS,
                          bans=LOOP_BANS)
    problem = outcome_problem(outcome, case.label)
    if problem or outcome.value is None:
        return problem or (NOT_ATTEMPTED if is_stub(train) else _(RETURNED_NONE))
    expected, problem = expected_of(case, pristine)
    if not max(expected[2]) > budget.theta:  # the check must exercise clipping
        raise RuntimeError("the loop check's run never clips: change LOOP_BUDGET")
    got = outcome.value
    if problem or isinstance(got, str):
        return problem or got
    if len(got[1]) != len(expected[1]):
        return _("On a text with {per_pass} minibatches per pass and budget.epochs = {epochs}, your loop "
                 "returned {got} losses; expected {expected}, one per minibatch of every pass.").format(
                     per_pass=len(expected[1]) // budget.epochs, epochs=budget.epochs, got=len(got[1]),
                     expected=len(expected[1]))
    if _matches(got[1], expected[1]) and _matches(got[2], expected[2]) and _matches(got[0], expected[0]):
        return None
    per_pass = len(expected[1]) // budget.epochs
    indices, params = pristine[:2]
    for flags, mistake in MISTAKES:
        variant = reference_train(indices, params, budget, **flags)
        # Within a pass only, as a loop may reset or keep its mistake from one pass to the next.
        span = len(variant[1]) if "reset_each_pass" in flags else per_pass
        if _matches(got[1][:span], variant[1][:span]) and _matches(got[2][:span], variant[2][:span]):
            # TRANSLATORS: {mistake} is one of the loop's known mistakes ("the state is not detached: ...").
            return _("Your loop runs, but {mistake}").format(mistake=_(mistake))
    return _first_divergence(got, expected)


# What `_first_divergence` says when the loss or the gradient norm of a minibatch is off.
DIVERGENCES = (
    N_("The loss of minibatch {k} ({value:.6g}) differs from that of the same loop built from the "
       "package's pieces. Each piece passed alone, so look at the loop: the order forward, loss, backward "
       "(d_final = 0), clip, update; the learning rate and θ of the budget; the state carried on."),
    N_("The gradient norm of minibatch {k} ({value:.6g}) differs from that of the same loop built from the "
       "package's pieces. Each piece passed alone, so look at the loop: the order forward, loss, backward "
       "(d_final = 0), clip, update; the learning rate and θ of the budget; the state carried on."),
)


def _first_divergence(got, expected) -> str:
    for values, wanted, said in zip(got[1:], expected[1:], DIVERGENCES, strict=True):
        for k, (a, b) in enumerate(zip(values, wanted, strict=True)):
            if not abs(a - b) <= RTOL * abs(b) + 1e-6:
                return _(said).format(k=k, value=a)
    return _("Your losses and norms follow the package's loop, but the parameters you return are not the "
             "trained ones: return the parameters after the last update.")


def check_train(train) -> Verdict:
    """The loop: `train(indices, params, budget)` returns (params, losses, norms), state carried detached.

    Checked on a small random text from the same initial parameters as the package's loop.
    """
    if train is None:
        return Verdict(False, _(NOT_ATTEMPTED))
    if not callable(train):
        return Verdict.not_yet(_("Pass your function itself, {signature}, not a {type_name}.").format(
            signature="train(indices, params, budget)", type_name=type(train).__name__))
    output = CappedText()
    problem = loop_problem(train, output)
    printed = output.shown() if output.kept else ""
    if problem is None:
        success = _("Your loop follows the package's, minibatch by minibatch, in a run where clipping acts.")
        return Verdict(True, correct_message(success), printed)
    if problem == NOT_ATTEMPTED:
        return Verdict(False, _(NOT_ATTEMPTED), printed)
    return Verdict.not_yet(problem, printed)
