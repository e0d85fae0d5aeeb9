"""Notebook 04's typical mistakes in the training loop (one epoch of truncated BPTT).

Each mistake's `gives(model, batches, optimizer)` runs the epoch with that mistake and returns
the mean loss it reports; `rnn_scratch` compares the parameters it leaves and that loss with the
student's (the loop's result is its side effect on the model, not only a value).
"""

from functools import partial

import torch.nn.functional as F

from d2lmini.exercises.coding import Mistake
from d2lmini.i18n import N_

TRAINING_SECTION = N_("notebook 04, section 6 (Training, and truncated backpropagation through time)")
LOSS_SECTION = N_("notebook 04, section 5 (The loss: cross-entropy at every time step)")


def _epoch_with(
    model,
    batches,
    optimizer,
    carry=True,
    zero_grad="before",
    reported="mean",
    targets="step",
    reduction="mean",
):
    """One epoch with the flags' mistakes; returns the loss the loop would report."""
    state, losses = None, []
    for X, Y in batches:
        fresh = state is None or not carry
        state = model.begin_state(X.shape[0]) if fresh else state.detach()
        outputs, state = model(X, state)
        labels = (Y.T if targets == "step" else Y).reshape(-1)
        loss = F.cross_entropy(outputs, labels, reduction=reduction)
        if zero_grad == "before":
            optimizer.zero_grad()
        loss.backward()
        if zero_grad == "after backward":
            optimizer.zero_grad()
        optimizer.step()
        losses.append(loss.item())
    return {"mean": sum(losses) / len(losses), "last": losses[-1], "sum": sum(losses)}[reported]


NOT_CARRIED = Mistake(
    N_(
        "your loop starts every minibatch from a fresh state. Under sequential partitioning the state should "
        "flow on to the next minibatch (detached)."
    ),
    partial(_epoch_with, carry=False),
    TRAINING_SECTION,
)
NOT_DETACHED = Mistake(
    N_(
        "the state still carries the graph of the previous minibatch: detach it before it enters the next "
        "one."
    ),
    section=TRAINING_SECTION,
)

TRAIN_LOOP = (
    NOT_CARRIED,
    Mistake(
        N_(
            "the gradients are never set to zero: backward adds to .grad, so each update also carries "
            "the gradients of every minibatch before it. Zero them once per minibatch."
        ),
        partial(_epoch_with, zero_grad="never"),
        TRAINING_SECTION,
    ),
    Mistake(
        N_(
            "the step moves nothing: when optimizer.step() runs the gradients are zero (zeroed between "
            "backward and the step, or the step taken before backward). Per minibatch: zero_grad, "
            "backward, step."
        ),
        partial(_epoch_with, zero_grad="after backward"),
        TRAINING_SECTION,
    ),
    Mistake(
        N_(
            "the loss is summed over the predictions, not averaged: the cross-entropy of a minibatch is "
            "its mean over every step of every sequence."
        ),
        partial(_epoch_with, reduction="sum"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the targets are in batch-major order: the rows of the outputs are step-major, so the "
            "targets are read step by step (Y transposed before it is flattened)."
        ),
        partial(_epoch_with, targets="batch"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the loss returned is the last minibatch's: return the mean of the minibatch losses of the epoch."
        ),
        partial(_epoch_with, reported="last"),
        TRAINING_SECTION,
    ),
    Mistake(
        N_("the loss returned is the sum of the minibatch losses: return their mean."),
        partial(_epoch_with, reported="sum"),
        TRAINING_SECTION,
    ),
)
