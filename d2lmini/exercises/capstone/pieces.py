"""The pieces of notebook 08's capstone, each checked alone against the package's reference.

The student writes seven pieces of a character RNN and then the loop that uses them
(`d2lmini.exercises.capstone.loop`); `d2lmini.exercises.capstone` checks all of them and
the assembled run. Each `check_*` here runs one piece through `coding.check_function` on
random inputs (more than three gradients for clipping, large logits for the loss and the
perplexity, a d_final for backpropagation through time) and returns a `Verdict`. A `Case`
holds its inputs and the reference *function* (never an expected value), and each piece
refuses torch's built-in version of itself (`refusals.RNN`, `refusals.CROSS_ENTROPY`;
clipping is refused always) and the package's own code under any name. A wrong piece is
told which of its outputs are right and which wrong, the likely cause when its result is one
of the piece's typical mistakes (`d2lmini.exercises.mistakes.capstone`, then the shared ones of
`d2lmini.exercises.mistakes.shared`), else a hint keyed to the pattern of wrong outputs.

`params` is always the list [W_xh, W_hh, b_h, W_hq, b_q]. `forward` returns (outputs,
hiddens); `backward(X, state, hiddens, d_outputs, d_final, params)` returns (the five
gradients, the gradient reaching the initial state); `clip` returns (clipped gradients,
the joint norm before).
"""

from collections.abc import Callable
from dataclasses import replace

import torch
import torch.nn.functional as F

from d2lmini.batching import sequential_batches
from d2lmini.exercises import Verdict
from d2lmini.exercises.clipping import reference_clip
from d2lmini.exercises.coding import (
    NOT_ATTEMPTED,
    Case,
    check_function,
    item_name,
    nested_name,
    never,
    new_tensors,
    python_number,
    sampler,
    take_pairs,
)
from d2lmini.exercises.guard.refusals import CROSS_ENTROPY, RNN
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import N_, _
from d2lmini.metrics import perplexity_from_logits
from d2lmini.rnn import rnn_forward, rnn_step

AUTOGRAD = frozenset({"backward", "grad", "requires_grad_", "enable_grad", "set_grad_enabled"})
BUILT_IN_RNN = frozenset({"rnn_tanh", "rnn_tanh_cell", "rnn_relu", "rnn_relu_cell"})
BUILT_IN_LOSS = frozenset({"cross_entropy", "cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d"})
# The parts of a result that is (list of tensors, extra), and how a verdict names each tensor
# (English, marked with N_; a verdict names them translated).
GRADIENTS, GRADIENT_NAMES = N_("the gradients"), ("dW_xh", "dW_hh", "db_h", "dW_hq", "db_q")
CLIPPED = (N_("the clipped gradients"), N_("the norm"))
RULES = {
    "forward": [never(BUILT_IN_RNN, N_("Write the recurrence yourself, not with torch's built-in RNN."))],
    "loss_and_grad": [
        never(BUILT_IN_LOSS, N_("Write the cross-entropy yourself (log-sum-exp), not with torch's.")),
        never(AUTOGRAD, N_("Compute the gradient by hand (softmax minus one-hot, over the rows); no "
                           "autograd."))],
    "backward": [never(AUTOGRAD, N_("Walk back through time by hand; no autograd.")),
                 never(BUILT_IN_RNN, N_("Write the recurrence yourself, not with torch's built-in RNN."))],
    "perplexity": [never(BUILT_IN_LOSS, N_("Write the cross-entropy yourself (log-sum-exp), not with "
                                           "torch's."))],
}


def _named_items(verdict: Verdict, part: str, names: tuple[str, ...]) -> Verdict:
    """The verdict with "the result, <part>,, item i," (how a nested result is worded) named names[i].

    `part` is English (marked with N_); the wording is matched in the language d2lmini speaks.
    """
    message, problem = verdict.message, verdict.problem
    result = _("the result")
    for i, name in enumerate(names):
        unnamed = nested_name(nested_name(result, _(part)), item_name(i))
        message = message.replace(unnamed, nested_name(result, name))
        problem = problem.replace(unnamed, nested_name(result, name))
    return replace(verdict, message=message, problem=problem)


def _random_params(rand, vocab: int, hiddens: int) -> list[torch.Tensor]:
    return [rand(vocab, hiddens) * 0.5, rand(hiddens, hiddens) * 0.5, rand(hiddens) * 0.1,
            rand(hiddens, vocab) * 0.5, rand(vocab) * 0.1]


def _tokens(seed: int, vocab: int, *shape) -> torch.Tensor:
    return torch.randint(vocab, shape, generator=torch.Generator().manual_seed(seed))


# --- the sequential iterator -------------------------------------------------------------

def reference_minibatches(indices, batch_size: int, num_steps: int) -> list[torch.Tensor]:
    """The package's sequential minibatches from offset 0, as a flat list X0, Y0, X1, Y1, ..."""
    batches = sequential_batches(indices, batch_size, num_steps, offset=0, device=indices.device)
    return [t for pair in batches for t in pair]


def _minibatch_cases(device: torch.device):
    # (tokens, batch, steps): several cuts, one where the last minibatch ends exactly at the
    # end of the streams, one with a single minibatch, one with a remainder that is dropped.
    for length, batch, steps in [(50, 3, 4), (101, 4, 5), (30, 4, 5), (64, 2, 7), (12, 1, 3)]:
        indices = _tokens(length, 30, length).to(device)
        count = len(reference_minibatches(indices, batch, steps)) // 2  # how many, not what they hold
        label = _("a text of {length} tokens, batch {batch}, {steps} steps").format(
            length=length, batch=batch, steps=steps)
        # TRANSLATORS: {name} is X or Y (the inputs or the labels) of minibatch {k}.
        names = [_("{name} of minibatch {k}").format(name=xy, k=k) for k in range(count) for xy in "XY"]
        yield Case(label, (indices, batch, steps), names=names, convert=take_pairs(count + 1),
                   reference=reference_minibatches)


def check_minibatches(minibatches) -> Verdict:
    """Piece 1: `minibatches(indices, batch_size, num_steps)` yields (X, Y) by sequential partitioning.

    The text is cut into `batch_size` streams of equal length (from offset 0, the remainder
    dropped); minibatch k holds steps k*num_steps ... of every stream, and Y is X shifted by one.
    """
    return check_function(minibatches, _minibatch_cases,
                          _("Row i of each minibatch continues row i of the one before, and Y is X shifted "
                            "by one character."),
                          signature="minibatches(indices, batch_size, num_steps)",
                          mistakes=mistakes_of("08:minibatches"))


# --- the forward pass ----------------------------------------------------------------------

def reference_forward(X, state, params) -> tuple[torch.Tensor, torch.Tensor]:
    """(outputs, hiddens) of the package's RNN: `rnn_forward`'s outputs and every `rnn_step` state."""
    W_xh, W_hh, b_h = params[:3]
    outputs, _final = rnn_forward(X, state, *params)
    H, hiddens = state, []
    for X_t in F.one_hot(X.T, W_xh.shape[0]).to(W_xh.dtype):
        H = rnn_step(X_t, H, W_xh, W_hh, b_h)
        hiddens.append(H)
    return outputs, torch.stack(hiddens)


def _forward_cases(device: torch.device):
    rand = sampler(81, device)
    for batch, steps, vocab, hiddens in [(3, 4, 6, 5), (1, 1, 4, 3), (2, 7, 5, 8)]:
        X = _tokens(batch * steps, vocab, batch, steps).to(device)
        state, params = rand(batch, hiddens) * 0.5, _random_params(rand, vocab, hiddens)
        label = _("batch {batch}, {steps} steps, {vocab} tokens, {hiddens} hidden units").format(
            batch=batch, steps=steps, vocab=vocab, hiddens=hiddens)
        yield Case(label, (X, state, params), names=("outputs", "hiddens"), outputs=("outputs", "hiddens"),
                   reference=reference_forward)


def forward_hint(wrong: frozenset[str]) -> str | None:
    """A hint for the pattern of `forward`'s wrong outputs."""
    if wrong == {"outputs"}:
        return _("The hidden states are right, so the output layer is what is wrong: O = H W_hq + b_q on "
                 "the stacked states, step-major (row t * batch + b belongs to step t, sequence b).")
    if "hiddens" in wrong:
        return _("The hidden states are wrong, and the outputs are computed from them: check one step, "
                 "H_t = tanh(x_t W_xh + H_(t-1) W_hh + b_h), starting from `state`, with x_t the tokens "
                 "X[:, t] of step t (a row of W_xh per token), and keep H_1 ... H_T in order.")
    return None


def check_forward(forward) -> Verdict:
    """Piece 2: `forward(X, state, params)` returns (outputs (steps*batch, vocab), step-major; hiddens)."""
    return check_function(forward, _forward_cases,
                          _("Your forward pass gives the package's outputs and hidden states."),
                          RULES["forward"], signature="forward(X, state, params)", bans=(RNN,),
                          diagnose=forward_hint, mistakes=mistakes_of("08:forward"))


# --- the loss and its gradient -------------------------------------------------------------

def reference_loss_and_grad(outputs, Y) -> tuple[float, torch.Tensor]:
    """The mean cross-entropy of step-major `outputs` against Y (batch, steps), and its autograd gradient."""
    logits = outputs.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        loss = F.cross_entropy(logits, Y.T.reshape(-1))
        (d_outputs,) = torch.autograd.grad(loss, [logits])
    return loss.item(), d_outputs


def _loss_cases(device: torch.device):
    rand = sampler(82, device)
    for batch, steps, vocab, scale in [(3, 4, 6, 1.0), (2, 5, 4, 3.0), (1, 3, 5, 0.1), (4, 2, 7, 40.0)]:
        outputs = rand(steps * batch, vocab) * scale
        Y = _tokens(batch + steps, vocab, batch, steps).to(device)
        label = _("batch {batch}, {steps} steps, {vocab} tokens, logits of size about {scale:g}").format(
            batch=batch, steps=steps, vocab=vocab, scale=scale)
        yield Case(label, (outputs, Y), names=("loss", "d_outputs"), outputs=("loss", "d_outputs"),
                   reference=reference_loss_and_grad)


def loss_hint(wrong: frozenset[str]) -> str | None:
    """A hint for the pattern of `loss_and_grad`'s wrong outputs."""
    if wrong == {"d_outputs"}:
        return _("The loss is right and its gradient is not: d_outputs is softmax(outputs) minus the "
                 "one-hot of the targets, divided by the number of rows, because the loss is a mean.")
    if wrong == {"loss"}:
        return _("The gradient is right and the loss is not: the loss is the mean over all rows of -log "
                 "softmax(outputs) at the target, in nats (natural log), as a number.")
    return _("Both are wrong: check first that the targets are in the order of the rows of outputs, "
             "step-major, which is Y.T.reshape(-1), then that the log-softmax subtracts the row's largest "
             "logit before exp.")


def check_loss_and_grad(loss_and_grad) -> Verdict:
    """Piece 3: `loss_and_grad(outputs, Y)` returns (mean cross-entropy in nats, dL/d outputs).

    The rows of `outputs` are step-major; Y is (batch, steps) as a minibatch gives it.
    """
    return check_function(loss_and_grad, _loss_cases,
                          _("Your loss and its gradient match the package's, even for large logits."),
                          RULES["loss_and_grad"], signature="loss_and_grad(outputs, Y)",
                          rtol=1e-4, atol=1e-6, bans=(CROSS_ENTROPY,), diagnose=loss_hint,
                          mistakes=mistakes_of("08:loss_and_grad"))


# --- backpropagation through time ----------------------------------------------------------

def reference_backward(X, state, hiddens, d_outputs, d_final, params) -> list[torch.Tensor]:
    """[dW_xh, dW_hh, db_h, dW_hq, db_q, d_state], by autograd through the package's `rnn_forward`."""
    leaves = [p.detach().clone().requires_grad_(True) for p in (*params, state)]
    with torch.enable_grad():
        outputs, final = rnn_forward(X, leaves[-1], *leaves[:-1])
        total = (outputs * d_outputs).sum() + (final * d_final).sum()
        return list(torch.autograd.grad(total, leaves))


def _backward_reference(X, state, hiddens, d_outputs, d_final, params) -> tuple[list, torch.Tensor]:
    """([dW_xh, dW_hh, db_h, dW_hq, db_q], d_state), as the student's `backward` returns them."""
    *grads, d_state = reference_backward(X, state, hiddens, d_outputs, d_final, params)
    return grads, d_state


def _backward_cases(device: torch.device):
    rand = sampler(83, device)
    for batch, steps, vocab, hiddens, final in [(3, 4, 6, 5, "zero"), (2, 6, 5, 7, "random"),
                                                (1, 1, 4, 3, "random"), (4, 3, 5, 4, "zero")]:
        X = _tokens(batch * steps + 1, vocab, batch, steps).to(device)
        state, params = rand(batch, hiddens) * 0.5, _random_params(rand, vocab, hiddens)
        _outputs, hidden_states = reference_forward(X, state, params)
        d_outputs = rand(steps * batch, vocab)
        d_final = rand(batch, hiddens) if final == "random" else torch.zeros(batch, hiddens, device=device)
        label = (_("batch {batch}, {steps} steps, {vocab} tokens, {hiddens} hidden units, zero d_final")
                 if final == "zero" else
                 _("batch {batch}, {steps} steps, {vocab} tokens, {hiddens} hidden units, random d_final"))
        yield Case(label.format(batch=batch, steps=steps, vocab=vocab, hiddens=hiddens),
                   (X, state, hidden_states, d_outputs, d_final, params), names=(_(GRADIENTS), "d_state"),
                   outputs=(*GRADIENT_NAMES, "d_state"), reference=_backward_reference)


OUTPUT_LAYER = frozenset({"dW_hq", "db_q"})
BEHIND_THE_STATE = frozenset({"dW_xh", "dW_hh", "db_h", "d_state"})
BACKWARD_HINTS = {  # English, marked with N_; `backward_hint` translates them
    frozenset({"dW_hq"}): N_("Only dW_hq is wrong: it is the stacked hidden states, transposed, times "
                             "d_outputs, H^T d_outputs, summed over every step (rows step-major)."),
    frozenset({"db_q"}): N_("Only db_q is wrong: it is d_outputs summed over all its rows."),
    frozenset({"dW_hh"}): N_("Only dW_hh is wrong: at step t it adds H_(t-1)^T dt, the state *before* the "
                             "step (the initial `state` at the first step), not H_t."),
    frozenset({"dW_xh"}): N_("Only dW_xh is wrong: the inputs are one-hot, so step t adds each row of dt "
                             "into the row of W_xh of its token X[:, t] (index_add), repeated tokens added "
                             "up."),
    frozenset({"db_h"}): N_("Only db_h is wrong: it is dt summed over the batch and over every step."),
    frozenset({"d_state"}): N_("Every weight gradient is right and d_state is not: the gradient reaching "
                               "the initial state is dt of the first step times W_hh^T, after that step's "
                               "tanh derivative."),
}


def backward_hint(wrong: frozenset[str]) -> str | None:
    """A hint for the pattern of `backward`'s wrong outputs (the output layer first, then the recurrence)."""
    if wrong in BACKWARD_HINTS:
        return _(BACKWARD_HINTS[wrong])
    if wrong <= OUTPUT_LAYER:
        return _("The output layer's gradients are wrong: dW_hq = H^T d_outputs and db_q = the sum of "
                 "d_outputs over rows, with H the hidden states stacked step-major.")
    if wrong >= BEHIND_THE_STATE and not wrong & OUTPUT_LAYER:
        return _("The output layer is right and everything behind the hidden state is wrong: the gradient "
                 "entering each step is off. At step t it is dh = d_outputs_t W_hq^T plus what comes back "
                 "from step t+1 (d_final at the last step); then dt = dh * (1 - H_t^2), walking the steps "
                 "from last to first.")
    if wrong >= {"dW_xh", "dW_hh", "db_h"} and "d_state" not in wrong:
        return _("All three weight gradients of the recurrence are wrong but d_state is right: they must "
                 "be *summed* over every step, not taken from one step or overwritten in the loop.")
    if wrong & OUTPUT_LAYER and wrong & BEHIND_THE_STATE:
        return _("Both the output layer and the recurrence are wrong: fix the output layer first (dW_hq = "
                 "H^T d_outputs, db_q = the sum of d_outputs), as the rest is computed from the same "
                 "d_outputs, then check that the steps are read step-major.")
    return None


def check_backward(backward) -> Verdict:
    """Piece 4: `backward(X, state, hiddens, d_outputs, d_final, params)` is BPTT by hand.

    It returns ([dW_xh, dW_hh, db_h, dW_hq, db_q], d_state): the gradients of the sum of
    d_outputs * outputs + d_final * final state, and the gradient reaching the initial state.
    """
    verdict = check_function(backward, _backward_cases,
                             _("Your backward pass gives autograd's gradients for all five parameters and "
                               "the initial state."),
                             RULES["backward"],
                             signature="backward(X, state, hiddens, d_outputs, d_final, params)",
                             rtol=1e-4, atol=1e-5, bans=(RNN,), diagnose=backward_hint,
                             mistakes=mistakes_of("08:backward"))
    return _named_items(verdict, GRADIENTS, GRADIENT_NAMES)


# --- clipping ------------------------------------------------------------------------------

def _clip_reference(grads, theta) -> tuple[list[torch.Tensor], float]:
    """(the gradients clipped by the package's `clip_gradients`, their joint norm before)."""
    norm = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads]))
    return reference_clip(grads, theta), float(norm)


def _clip_cases(device: torch.device):
    rand = sampler(84, device)
    five = [(3, 4), (4,), (4, 2), (5, 3), (3,)]
    seven = [*five, (2, 2), (6,)]
    cases = [(five, [1.0] * 5, 1.0, N_("five gradients whose joint norm is above θ")),
             (seven, [0.01, 0.01, 0.01, 3.0, 2.0, 1.0, 4.0], 1.0,
              N_("seven gradients, the largest ones last, joint norm above θ")),
             (five, [0.01] * 5, 1.0, N_("five gradients whose joint norm is below θ")),
             (seven, [2.0] * 7, 0.5, N_("seven gradients far above θ = 0.5"))]
    names = tuple(_(name) for name in CLIPPED)
    for shapes, scales, theta, label in cases:
        grads = [rand(*shape) * scale for shape, scale in zip(shapes, scales, strict=True)]
        yield Case(_(label), (grads, theta), names=names, outputs=_clip_outputs(len(shapes)),
                   reference=_clip_reference)
    zeros = [torch.zeros(shape, device=device) for shape in five]
    yield Case(_("five gradients that are all zero"), (zeros, 1.0), names=names, outputs=_clip_outputs(5),
               reference=_clip_reference)


def _clipped_gradient(i: int) -> str:
    # TRANSLATORS: one of the gradients clip returns, numbered from 0.
    return _("clipped gradient {i}").format(i=i)


def _clip_outputs(count: int) -> tuple[str, ...]:
    return (*(_clipped_gradient(i) for i in range(count)), _(CLIPPED[1]))


def clip_hint(wrong: frozenset[str]) -> str | None:
    """A hint for the pattern of `clip`'s wrong outputs (named as `_clip_outputs` names them)."""
    if _(CLIPPED[1]) in wrong:
        return _("The norm is wrong: it is the square root of the sum of the squares of every entry of "
                 "every gradient together (one number for all of them), before any scaling.")
    return _("The norm is right and the clipped gradients are not: scale every gradient by the same factor "
             "min(1, theta / norm), and only when the norm is above theta.")


def check_clip(clip) -> Verdict:
    """Piece 5: `clip(grads, theta)` returns (new gradients scaled by min(1, θ/‖g‖), ‖g‖ before).

    ‖g‖ is the joint norm of all the gradients, however many: the cases pass five and seven.
    """
    verdict = check_function(clip, _clip_cases,
                             _("Your clipping scales all the gradients together by their joint norm."),
                             [never({"data"}, N_("Your function reads .data; work with the tensors "
                                                 "themselves.")),
                              never({"clip_grad_norm_", "clip_grad_value_"},
                                    N_("Write the clipping yourself, without torch.nn.utils."))],
                             signature="clip(grads, theta)", rtol=1e-5, atol=1e-7, diagnose=clip_hint,
                             mistakes=mistakes_of("08:clip"), form=new_tensors)
    return _named_items(verdict, CLIPPED[0], tuple(_clipped_gradient(i) for i in range(7)))


# --- the update ----------------------------------------------------------------------------

def _sgd_reference(params, grads, lr) -> list[torch.Tensor]:
    """New tensors p - lr * g: one step of plain SGD."""
    return [p - lr * g for p, g in zip(params, grads, strict=True)]


def _sgd_cases(device: torch.device):
    rand = sampler(85, device)
    shapes = [(4, 3), (3, 3), (3,), (3, 4), (4,)]
    for lr in (1.0, 0.1):
        params, grads = [rand(*s) for s in shapes], [rand(*s) for s in shapes]
        # TRANSLATORS: "parameter {i}" names one of the parameters, numbered from 0.
        yield Case(_("five parameters, learning rate {lr:g}").format(lr=lr), (params, grads, lr),
                   names=[_("parameter {i}").format(i=i) for i in range(5)], reference=_sgd_reference)
    # Parameters in float64: the new ones keep the parameters' dtype (#45, the third held-apart set).
    rand64 = sampler(87, device, torch.float64)
    params, grads = [rand64(*s) for s in shapes], [rand64(*s) for s in shapes]
    yield Case(_("five parameters in float64, learning rate {lr:g}").format(lr=0.1), (params, grads, 0.1),
               names=[_("parameter {i}").format(i=i) for i in range(5)], reference=_sgd_reference)


def check_sgd(sgd) -> Verdict:
    """Piece 6: `sgd(params, grads, lr)` returns new tensors p - lr * g (the inputs unchanged)."""
    return check_function(sgd, _sgd_cases, _("Your update takes one SGD step and leaves its inputs alone."),
                          signature="sgd(params, grads, lr)", mistakes=mistakes_of("08:sgd"))


# --- perplexity ----------------------------------------------------------------------------

def _perplexity_cases(device: torch.device):
    rand = sampler(86, device)
    # Every case's perplexity fits in float32 (below 3.4e38), so a correct float32 exp passes; the
    # large logits are "confident and right" (targets at the top logit): exp of a raw logit overflows.
    for rows, vocab, scale in [(12, 5, 1.0), (30, 8, 4.0), (1, 3, 0.5), (9, 6, 200.0)]:
        logits, targets = rand(rows, vocab) * scale, _tokens(rows, vocab, rows).to(device)
        if scale > 10:
            targets = logits.argmax(1)
        label = _("{rows} predictions over {vocab} tokens, logits of size about {scale:g}").format(
            rows=rows, vocab=vocab, scale=scale)
        yield Case(label, (logits, targets), reference=perplexity_from_logits)
    # Confident and wrong once: a logit of 1000 on a wrong token puts log p(target) near -1000 in that
    # row, far below what a probability clamped before the log (log 1e-12 = -28) can give; averaged
    # over 20 rows the perplexity (about e^50) still fits in float32.
    logits, targets = rand(20, 4), _tokens(20, 4, 20).to(device)
    logits[0, (int(targets[0]) + 1) % 4] += 1000.0
    yield Case(_("20 predictions over 4 tokens, one logit of 1000 on a wrong token"), (logits, targets),
               reference=perplexity_from_logits)


def check_perplexity(perplexity) -> Verdict:
    """Piece 7: `perplexity(logits, targets)` returns exp of the mean cross-entropy in nats, a number (the
    notebook's stub says so: a tensor, even of one entry, is not accepted)."""
    return check_function(perplexity, _perplexity_cases,
                          _("Your perplexity is e to the mean cross-entropy in nats, stable for large "
                            "logits."),
                          RULES["perplexity"], signature="perplexity(logits, targets)",
                          rtol=1e-4, bans=(CROSS_ENTROPY,), mistakes=mistakes_of("08:perplexity"),
                          form=python_number)


PIECE_CHECKS: dict[str, tuple[str, Callable[[Callable], Verdict]]] = {
    "minibatches": ("minibatches(indices, batch_size, num_steps)", check_minibatches),
    "forward": ("forward(X, state, params)", check_forward),
    "loss_and_grad": ("loss_and_grad(outputs, Y)", check_loss_and_grad),
    "backward": ("backward(X, state, hiddens, d_outputs, d_final, params)", check_backward),
    "clip": ("clip(grads, theta)", check_clip),
    "sgd": ("sgd(params, grads, lr)", check_sgd),
    "perplexity": ("perplexity(logits, targets)", check_perplexity),
}


def first_failing_piece(pieces: dict[str, Callable]) -> tuple[str | None, bool, str]:
    """(What is wrong with the first piece that fails its check, naming it, or None; whether every
    piece is still a stub returning None; what that piece printed while checked) (notebook 08)."""
    verdicts = [(name, signature, check(pieces.get(name)))
                for name, (signature, check) in PIECE_CHECKS.items()]
    not_attempted = _(NOT_ATTEMPTED)  # as the verdicts word it
    unattempted = all(v.message == not_attempted for _name, _signature, v in verdicts)
    for name, signature, verdict in verdicts:
        if not verdict:
            problem = _("it still returns None.") if verdict.message == not_attempted else verdict.problem
            # TRANSLATORS: {name} is the piece's name in the code ("forward"), {signature} its call.
            return (_("The first piece that is not right yet is {name}, {signature}: {problem}").format(
                name=name, signature=signature, problem=problem), unattempted, verdict.printed)
    return None, unattempted, ""
