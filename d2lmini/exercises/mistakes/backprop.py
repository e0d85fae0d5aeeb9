"""Notebook 05's typical mistakes: the masked loss of padded sequences and the leaky ReLU RNN's BPTT."""

import math
from dataclasses import dataclass
from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
from d2lmini.i18n import N_

LOSS_SECTION = N_(
    "notebook 04, section 5 (The loss: cross-entropy at every time step), and exercise 4's text"
)
STEP_SECTION = N_("notebook 05, section 3 (The backward pass of one step, by hand)")
BRANCH_SECTION = N_("notebook 05, section 4 (Gradients that branch are added)")
LOOP_SECTION = N_("notebook 05, section 5 (The loop over time)")


def _masked_with(
    outputs,
    Y,
    lengths,
    mask_loss=True,
    mask_grad=True,
    divisor="real",
    mask_order="step",
    target_order="step",
    inclusive=False,
    sign=-1.0,
    log_base=None,
    one_hot=True,
    dim=1,
    grad_sign=1.0,
    short=False,
    one_hot_sign=-1,
    padded_first=False,
    mean_of_means=False,
):
    """(loss, d_outputs) of the masked mean cross-entropy with the flags' mistakes (defaults: none)."""
    batch, steps = Y.shape
    positions = torch.arange(steps, device=Y.device)
    ends = lengths[:, None] - (1 if short else 0)
    grid = positions <= ends if inclusive else positions < ends
    grid = positions >= steps - lengths[:, None] if padded_first else grid
    real = (grid.T if mask_order == "step" else grid).reshape(-1)
    labels = (Y.T if target_order == "step" else Y).reshape(-1)
    rows = torch.arange(len(labels), device=Y.device)
    count = {"real": int(real.sum()), "all": len(labels), "batch": batch, "none": 1}[divisor]
    picked = torch.log_softmax(outputs, dim=dim)[rows, labels]
    if mean_of_means:  # each sequence's mean, then their mean: a step weighs 1 / (length * batch)
        weight = (grid.T.to(outputs.dtype) / lengths[None, :].to(outputs.dtype) / batch).reshape(-1)
        d_outputs = torch.softmax(outputs, dim=dim)
        d_outputs[rows, labels] -= 1
        return float(-(picked * weight).sum()), d_outputs * weight[:, None]
    loss = sign * (picked[real] if mask_loss else picked).sum() / count
    d_outputs = torch.softmax(outputs, dim=dim)
    if one_hot:
        d_outputs[rows, labels] += one_hot_sign
    d_outputs = grad_sign * d_outputs
    if mask_grad:
        d_outputs = d_outputs * real[:, None]
    return float(loss) / (math.log(log_base) if log_base else 1.0), d_outputs / count


MASKED_LOSS = (
    Mistake(
        N_(
            "the padded steps are counted in the mean, as if every row were real: only the real steps "
            "belong to it, in the loss and in its gradient (a padded row gets no gradient)."
        ),
        partial(_masked_with, mask_loss=False, mask_grad=False, divisor="all"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the padded steps are left out of the sum but counted in the divisor: the mean divides by the "
            "number of real steps, not by all the rows."
        ),
        partial(_masked_with, divisor="all"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the loss is masked but the gradient is not: a padded row is not in the loss, so its gradient "
            "is zero."
        ),
        partial(_masked_with, mask_grad=False),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the gradient is masked but the loss is not: the padded steps must leave the loss too."),
        partial(_masked_with, mask_loss=False),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the mask is in batch-major order: the rows of outputs are step-major (row t * batch + b is "
            "step t of sequence b), so the mask is built per step, then per sequence."
        ),
        partial(_masked_with, mask_order="batch"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the targets are in batch-major order: the rows of outputs are step-major, so the targets are "
            "read step by step (Y transposed before it is flattened)."
        ),
        partial(_masked_with, target_order="batch"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the mask keeps one step too many: sequence i has lengths[i] real steps, at positions 0 to "
            "lengths[i] - 1."
        ),
        partial(_masked_with, inclusive=True),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the mask keeps one step too few: sequence i has lengths[i] real steps, at positions 0 to "
            "lengths[i] - 1."
        ),
        partial(_masked_with, short=True),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the gradient's sign is flipped: it is the softmax minus the one-hot vector of the target, "
            "the direction in which the loss grows."
        ),
        partial(_masked_with, grad_sign=-1.0),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the one-hot vector is added to the softmax: the gradient is the softmax minus it."),
        partial(_masked_with, one_hot_sign=1),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the loss and the gradient are summed, not averaged: divide both by the number of real steps."),
        partial(_masked_with, divisor="none"),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the loss and the gradient are divided by the batch size: the mean runs over the real steps "
            "of every sequence."
        ),
        partial(_masked_with, divisor="batch"),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the loss has no minus sign: the cross-entropy is the mean of -log p(target), a positive number."),
        partial(_masked_with, sign=1.0),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the loss is in bits (log base 2): the cross-entropy is in nats, with the natural log."),
        partial(_masked_with, log_base=2),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the gradient is the softmax alone: the gradient of the cross-entropy with respect to the "
            "logits is the softmax minus the one-hot vector of the target."
        ),
        partial(_masked_with, one_hot=False),
        LOSS_SECTION,
    ),
    Mistake(
        N_(
            "the softmax runs over the wrong dimension (dim=0, down each column): each row of outputs "
            "is one prediction, normalised over the vocabulary."
        ),
        partial(_masked_with, dim=0),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the real steps are taken at the end of each sequence: the padding comes after them, so the "
           "first lengths[i] steps of sequence i are real."),
        partial(_masked_with, padded_first=True),
        LOSS_SECTION,
    ),
    Mistake(
        N_("the loss is the mean over the sequences of each sequence's own mean: it is the mean over every "
           "real step together, each step weighing the same."),
        partial(_masked_with, mean_of_means=True),
        LOSS_SECTION,
    ),
)


@dataclass(frozen=True)
class BpttLoop:
    """The slips any hand-written loop of backpropagation through time can make, shared by notebook 05's
    leaky RNN and the capstone's tanh RNN (defaults: none): the gradient from the outputs unflattened
    batch-major, the loop stopping before the first step, the state before a step read one step off
    or as zeros at the first step, dW_xh's rows written with an indexed `+=` (a token repeated in a
    step added once), and d_state returned as the first step's dA (`returned`)."""

    batch_major: bool = False
    stops_early: bool = False
    previous_shift: int = 1
    zero_first: bool = False
    rows_assigned: bool = False
    returned: str = ""

    def unflatten(self, rows: torch.Tensor, steps: int, batch: int, width: int) -> torch.Tensor:
        """Rows in step-major order (row t * batch + b) as (steps, batch, width)."""
        if self.batch_major:
            return rows.reshape(batch, steps, width).transpose(0, 1)
        return rows.reshape(steps, batch, width)

    def times(self, steps: int, backwards: bool = True):
        """The steps the loop walks, last to first."""
        if not backwards:
            return range(steps)
        return range(steps - 1, 0 if self.stops_early else -1, -1)

    def previous(self, t: int, state: torch.Tensor, hiddens: torch.Tensor) -> torch.Tensor:
        """The state before step t: `state` at the first step, else hiddens[t - 1]."""
        if self.previous_shift == 0:
            return hiddens[t]
        if t == 0:
            return torch.zeros_like(state) if self.zero_first else state
        return hiddens[t - 1]

    def add_rows(self, dW: torch.Tensor, tokens: torch.Tensor, dA: torch.Tensor) -> torch.Tensor:
        """dW with each row of dA added into the row of its token."""
        if not self.rows_assigned:
            return dW.index_add(0, tokens, dA)
        written = dW.clone()
        written[tokens] += dA
        return written


LOOP_RIGHT = BpttLoop()
# Each slip of `BpttLoop`, its cause (English, marked with N_) and the section to re-read.
BATCH_MAJOR = N_(
    "the gradient from the outputs is unflattened batch-major: the rows of d_outputs are step-major (row "
    "t * batch + b belongs to step t, sequence b), so it reshapes to (steps, batch, hiddens)."
)
STOPS_EARLY = N_(
    "the loop over time stops before the first step (a range that ends at 1): walking back goes down to "
    "step 0 included."
)
PREVIOUS_SHIFTED = N_(
    "the state before step t is read one step off: hiddens[t] is the state step t computed; the one before "
    "it is hiddens[t - 1] (and `state` at the first step)."
)
ZERO_FIRST = N_(
    "the first step reads zeros as the state before it: that state is the `state` given, and dW_hh's first "
    "term needs it."
)
ROWS_ASSIGNED = N_(
    "dW_xh's rows are written with an indexed `+=` (`dW_xh[X[:, t]] += dA`): where a token appears twice "
    "in a step, only one of its rows is added. Add them all with `index_add`."
)
RETURNS_DA = N_(
    "d_state is the gradient reaching the first step's A_1: the one reaching the initial state H_0 goes "
    "one product further back, through W_hh^T (and, in the leaky RNN, along the direct path too)."
)


def loop_slips(section_loop: str, section_step: str) -> tuple[tuple[str, BpttLoop, str], ...]:
    """(cause, the loop with that slip, section to re-read) for each slip of `BpttLoop`."""
    return (
        (BATCH_MAJOR, BpttLoop(batch_major=True), section_loop),
        (STOPS_EARLY, BpttLoop(stops_early=True), section_loop),
        (PREVIOUS_SHIFTED, BpttLoop(previous_shift=0), section_step),
        (ZERO_FIRST, BpttLoop(zero_first=True), section_loop),
        (ROWS_ASSIGNED, BpttLoop(rows_assigned=True), section_step),
        (RETURNS_DA, BpttLoop(returned="dA_1"), section_loop),
    )


def _leaky_with(
    X,
    state,
    hiddens,
    d_outputs,
    W_xh,
    W_hh,
    b_h,
    W_hq,
    alpha,
    slope="A",
    direct=True,
    alpha_on_dA=True,
    transpose=True,
    recurrent=True,
    backwards=True,
    previous="H_(t-1)",
    direct_factor="1 - alpha",
    dW_hh_order="H^T dA",
    db_h_reduce="sum",
    returned="d_state",
    loop=LOOP_RIGHT,
    A_bias=True,
    output_first=True,
):
    """(dW_xh, dW_hh, db_h, d_state) of the leaky ReLU RNN's BPTT with the flags' mistakes; `loop` holds
    the slips any loop over time can make (`BpttLoop`)."""
    steps, batch, num_hiddens = hiddens.shape
    d_from_outputs = loop.unflatten(d_outputs @ W_hq.T, steps, batch, num_hiddens)
    dW_xh, dW_hh, db_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
    d_next = torch.zeros_like(state)
    for t in loop.times(steps, backwards):
        H_prev = loop.previous(t, state, hiddens)
        A = W_xh[X[:, t]] + H_prev @ W_hh + (b_h if A_bias else 0)
        dH = d_from_outputs[t] + (d_next if recurrent else 0)
        derivative = {"A": A > 0, "H": hiddens[t] > 0, "none": 1.0, "tanh": 1 - hiddens[t] ** 2,
                      "relu(A)": torch.relu(A)}[slope]
        dA = (alpha if alpha_on_dA else 1.0) * (dH if output_first else d_next) * derivative
        dW_xh = loop.add_rows(dW_xh, X[:, t], dA)
        H_read = H_prev if previous == "H_(t-1)" else hiddens[t]
        dW_hh = dW_hh + (H_read.T @ dA if dW_hh_order == "H^T dA" else dA.T @ H_read)
        db_h = db_h + (dA.sum(0) if db_h_reduce == "sum" else dA.mean(0))
        factor = 1 - alpha if direct_factor == "1 - alpha" else alpha
        last_dH = dH
        d_next = (factor * dH if direct else 0) + dA @ (W_hh.T if transpose else W_hh)
    return dW_xh, dW_hh, db_h, {"d_state": d_next, "dH_1": last_dH, "dA_1": dA}[loop.returned or returned]


LEAKY_BPTT = (
    # With a state that is never negative, H_t > 0 holds almost everywhere: the same numbers as no derivative.
    Mistake(
        N_(
            "ReLU's derivative is missing, or read from a state > 0 (H_t or H_(t-1): true almost everywhere "
            "here, as a state mixes A_t with the old state): it is 1 where A_t > 0 and 0 elsewhere, so "
            "recompute A_t."
        ),
        partial(_leaky_with, slope="H"),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "the derivative is tanh's, 1 - H_t^2: this RNN uses ReLU, whose derivative is 1 where A_t > 0 "
            "and 0 elsewhere."
        ),
        partial(_leaky_with, slope="tanh"),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "the direct path from H_(t-1) to H_t is missing: H_(t-1) reaches H_t both through A_t and "
            "through the (1 - alpha) H_(t-1) term, and gradients that branch are added."
        ),
        partial(_leaky_with, direct=False),
        BRANCH_SECTION,
    ),
    Mistake(
        N_(
            "the factor alpha is missing from the gradient reaching A_t: H_t = (1 - alpha) H_(t-1) + alpha "
            "relu(A_t)."
        ),
        partial(_leaky_with, alpha_on_dA=False),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "the gradient passed back through A_t uses W_hh, not W_hh^T (transposed): H_(t-1) was "
            "multiplied by W_hh on the way forward."
        ),
        partial(_leaky_with, transpose=False),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "the gradient from later steps is not carried back: dH_t adds what comes from its output and "
            "what comes from step t+1."
        ),
        partial(_leaky_with, recurrent=False),
        LOOP_SECTION,
    ),
    Mistake(
        N_(
            "the steps are walked from first to last: backpropagation through time starts at the last "
            "step and walks back to the first."
        ),
        partial(_leaky_with, backwards=False),
        LOOP_SECTION,
    ),
    Mistake(
        N_(
            "dW_hh uses H_t: the weight W_hh multiplied the previous state H_(t-1), so its gradient is "
            "H_(t-1)^T dA_t."
        ),
        partial(_leaky_with, previous="H_t"),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "the direct path is scaled by alpha: H_(t-1) reaches H_t directly with the factor 1 - alpha "
            "(and through relu(A_t) with alpha)."
        ),
        partial(_leaky_with, direct_factor="alpha"),
        BRANCH_SECTION,
    ),
    Mistake(
        N_(
            "dW_hh is transposed: its gradient is H_(t-1)^T dA_t, of W_hh's shape (hidden inputs, hidden "
            "outputs)."
        ),
        partial(_leaky_with, dW_hh_order="dA^T H"),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "db_h is averaged over the batch: the bias's gradient is the sum of dA_t over the batch and "
            "the steps."
        ),
        partial(_leaky_with, db_h_reduce="mean"),
        STEP_SECTION,
    ),
    Mistake(
        N_(
            "d_state is the gradient reaching H_1: it is the one reaching H_0, the initial state, after "
            "the first step's backward."
        ),
        partial(_leaky_with, returned="dH_1"),
        LOOP_SECTION,
    ),
    *(Mistake(cause, partial(_leaky_with, loop=loop), section)
      for cause, loop, section in loop_slips(LOOP_SECTION, STEP_SECTION)),
    Mistake(
        N_("ReLU's derivative is replaced by relu(A_t) itself: the derivative is 1 where A_t > 0 and 0 "
           "elsewhere."),
        partial(_leaky_with, slope="relu(A)"),
        STEP_SECTION,
    ),
    Mistake(
        N_("A_t is recomputed without b_h: A_t = x_t W_xh + H_(t-1) W_hh + b_h, and ReLU's derivative "
           "depends on its sign."),
        partial(_leaky_with, A_bias=False),
        STEP_SECTION,
    ),
    Mistake(
        N_("dA_t is computed before the gradient from step t's output is added: dA_t needs all of dH_t, what "
           "comes from the output at step t and from step t+1."),
        partial(_leaky_with, output_first=False),
        BRANCH_SECTION,
    ),
)
