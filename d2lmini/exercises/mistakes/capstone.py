"""The typical mistakes in the capstone's pieces (notebook 08), each recognised by what it returns.

A student's piece that returns a wrong result is compared, after it ran, with what each known
mistake of that piece returns on the same inputs (`coding.Mistake`); the verdict then names the
first mistake it matches by its cause, instead of only where the first wrong number is. Each
`_..._with` function below is the piece written with the flags' mistakes; `MISTAKES` maps each
piece to its mistakes, in the order they are tried. A result with inf or nan where the right
one is finite is told the overflow (`OVERFLOW`). Like every package function, these are refused
when a student's code calls them. The causes are English, marked with `N_`; a verdict shows them
translated. Each completes the sentence "Likely cause: ...".
"""

import math
from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
from d2lmini.exercises.mistakes.backprop import LOOP_RIGHT, loop_slips
from d2lmini.exercises.mistakes.measures import LARGEST_PICKED
from d2lmini.i18n import N_

OVERFLOW = Mistake(
    N_("your result has inf or nan where the right one is finite: in float32, exp of a number above about "
       "88 is inf (and log of a probability that rounded to 0 is -inf). Subtract each row's largest logit "
       "before exp, and take the log-softmax as shifted - log(sum(exp(shifted))), never log(softmax)."))


# --- the sequential iterator -------------------------------------------------------------

def _minibatches_with(indices, batch_size, num_steps, label_shift=1, stride=None, drop_last=False,
                      interleaved=False, swapped=False, transposed=False, rolled=False):
    """Sequential minibatches with a mistake: labels `label_shift` ahead (0: Y is X) or X rolled, windows
    `stride` apart, the last one dropped, or streams read across the text (every batch_size-th token)."""
    stream = (len(indices) - max(label_shift, 1)) // batch_size
    cut = stream * batch_size

    def rows(start):
        part = indices[start : start + cut]
        return part.reshape(stream, batch_size).T if interleaved else part.reshape(batch_size, stream)

    xs = rows(0)
    ys = xs.roll(-1, dims=1) if rolled else rows(label_shift)
    end = stream - num_steps + (0 if drop_last else 1)
    for start in range(0, max(end, 0), stride or num_steps):
        X, Y = xs[:, start : start + num_steps], ys[:, start : start + num_steps]
        X, Y = (X.T, Y.T) if transposed else (X, Y)
        yield (Y, X) if swapped else (X, Y)


MINIBATCH_MISTAKES = (
    Mistake(N_("Y is X itself, so the model is asked for the character it is reading. The label of each "
               "character is the one after it: Y is the text shifted by one."),
            partial(_minibatches_with, label_shift=0)),
    Mistake(N_("Y starts two characters after X, not one: the label of each character is the very next one."),
            partial(_minibatches_with, label_shift=2)),
    Mistake(N_("the last minibatch is dropped when it ends exactly at the end of the streams: the loop's "
               "bound is one short (the last start is stream length - num_steps, included)."),
            partial(_minibatches_with, drop_last=True)),
    Mistake(N_("the minibatches overlap: minibatch k+1 starts one character after minibatch k, not "
               "num_steps characters after it, so row i no longer continues where it stopped."),
            partial(_minibatches_with, stride=1)),
    Mistake(N_("each row takes every batch_size-th character of the text, so a row is not a stretch of the "
               "text. Cut the text into batch_size contiguous streams (reshape(batch_size, -1)), one per "
               "row."),
            partial(_minibatches_with, interleaved=True)),
    Mistake(N_("X and Y are swapped: each pair is (inputs, labels), the labels one character ahead."),
            partial(_minibatches_with, swapped=True)),
    Mistake(N_("the minibatches are transposed: X and Y are (batch_size, num_steps), one row per stream."),
            partial(_minibatches_with, transposed=True)),
    Mistake(N_("Y is made by rolling X: the last label of each stream wraps around to its first character. "
               "Y is the text shifted by one, so the last label is the character after X's last."),
            partial(_minibatches_with, rolled=True)),
)


# --- the forward pass ----------------------------------------------------------------------

def _forward_with(X, state, params, activation=torch.tanh, b_h_times=1, transpose_W_hh=False,
                  update_state=True, output_from_previous=False, b_q_times=1, batch_major=False,
                  softmax_out=False, from_zeros=False, kept_before=False, b_h_outside=False):
    """(outputs, hiddens) of a forward pass with the flags' mistakes (defaults: none)."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    recurrent = W_hh.T if transpose_W_hh else W_hh
    start = torch.zeros_like(state) if from_zeros else state
    H, hiddens = start, []
    for t in range(X.shape[1]):
        inside, outside = (0, b_h) if b_h_outside else (b_h_times * b_h, 0)
        H = activation(W_xh[X[:, t]] + (H if update_state else start) @ recurrent + inside) + outside
        hiddens.append(H)
    hiddens = torch.stack(hiddens)
    before = torch.cat([start[None], hiddens[:-1]])
    read = before if output_from_previous else hiddens
    read = read.transpose(0, 1) if batch_major else read
    outputs = read.reshape(-1, W_hh.shape[0]) @ W_hq + b_q_times * b_q
    return torch.softmax(outputs, dim=1) if softmax_out else outputs, before if kept_before else hiddens


FORWARD_MISTAKES = (
    Mistake(N_("the step uses sigmoid, not tanh: H_t = tanh(x_t W_xh + H_(t-1) W_hh + b_h)."),
            partial(_forward_with, activation=torch.sigmoid)),
    Mistake(N_("the step uses relu, not tanh: H_t = tanh(x_t W_xh + H_(t-1) W_hh + b_h)."),
            partial(_forward_with, activation=torch.relu)),
    Mistake(N_("b_h is missing from the step: H_t = tanh(x_t W_xh + H_(t-1) W_hh + b_h)."),
            partial(_forward_with, b_h_times=0)),
    Mistake(N_("b_h is added twice in the step (once is right): H_t = tanh(x_t W_xh + H_(t-1) W_hh + b_h)."),
            partial(_forward_with, b_h_times=2)),
    Mistake(N_("W_hh is transposed: the step multiplies H_(t-1) @ W_hh, with W_hh of shape (hidden inputs, "
               "hidden outputs), not W_hh.T."),
            partial(_forward_with, transpose_W_hh=True)),
    Mistake(N_("the hidden state is not carried from step to step: every step starts from `state`, the "
               "initial one, instead of from H_(t-1), the state the step before computed."),
            partial(_forward_with, update_state=False)),
    Mistake(N_("the output of step t is computed from the state before the step, H_(t-1), not from H_t: "
               "O_t = H_t W_hq + b_q, after the step."),
            partial(_forward_with, output_from_previous=True)),
    Mistake(N_("b_q is missing from the output layer: O = H W_hq + "
               "b_q."), partial(_forward_with, b_q_times=0)),
    Mistake(N_("the outputs are in batch-major order: stack them step-major (row t * batch + b belongs to "
               "step t, sequence b), as the states are stacked."),
            partial(_forward_with, batch_major=True)),
    Mistake(N_("the outputs go through a softmax: forward returns the logits, O = H W_hq + b_q; the loss "
               "takes their softmax itself."), partial(_forward_with, softmax_out=True)),
    Mistake(N_("the given state is ignored: the first step starts from `state` (what the minibatch before "
               "left), not from zeros."), partial(_forward_with, from_zeros=True)),
    Mistake(N_("the states kept are those before each step, H_0 ... H_(T-1): hiddens holds H_1 ... H_T, "
               "each kept after its step."), partial(_forward_with, kept_before=True)),
    Mistake(N_("b_h is added outside the tanh: the bias is inside, H_t = tanh(x_t W_xh + H_(t-1) W_hh + "
               "b_h)."), partial(_forward_with, b_h_outside=True)),
)


# --- the loss and its gradient -------------------------------------------------------------

def _loss_with(outputs, Y, dim=1, softmax_first=False, sign=-1.0, divisor="rows", log_base=None,
               batch_major=False, one_hot=True):
    """(loss, d_outputs) of the mean cross-entropy with the flags' mistakes (defaults: none)."""
    targets = (Y if batch_major else Y.T).reshape(-1)
    logits = torch.softmax(outputs, dim=1) if softmax_first else outputs
    log_probs = torch.log_softmax(logits, dim=dim)
    rows = torch.arange(len(targets), device=outputs.device)
    count = {"rows": len(targets), "batch": Y.shape[0], "none": 1}[divisor]
    loss = sign * log_probs[rows, targets].sum() / count
    d_outputs = torch.softmax(logits, dim=dim)
    d_outputs[rows, targets] -= 1 if one_hot else 0
    return float(loss) / (math.log(log_base) if log_base else 1.0), d_outputs / count


LOSS_MISTAKES = (
    Mistake(N_("the softmax runs over the wrong dimension (dim=0, down each column): each row of outputs "
               "is one prediction, normalised over the vocabulary, dim=1."), partial(_loss_with, dim=0)),
    Mistake(N_("softmax is applied twice: the cross-entropy takes the log-softmax of the logits "
               "themselves, not of probabilities."), partial(_loss_with, softmax_first=True)),
    Mistake(N_("the loss has no minus sign: the cross-entropy is the mean of -log p(target), a positive "
               "number."), partial(_loss_with, sign=1.0)),
    Mistake(N_("the loss is summed over the rows, not averaged: it is the mean over all batch * steps "
               "predictions, and its gradient is divided by that count too."),
            partial(_loss_with, divisor="none")),
    Mistake(N_("the loss is divided by the batch size, not by the number of predictions: the mean runs "
               "over all batch * steps rows, and the gradient is divided by that count too."),
            partial(_loss_with, divisor="batch")),
    Mistake(N_("the loss is in bits (log base 2): the cross-entropy is in nats, with the natural log."),
            partial(_loss_with, log_base=2)),
    Mistake(N_("the gradient is the softmax alone: the gradient of the cross-entropy with respect to the "
               "logits is the softmax minus the one-hot vector of the target."),
            partial(_loss_with, one_hot=False)),
    Mistake(N_("the targets are in batch-major order: the rows of outputs are step-major, so the targets "
               "are Y.T.reshape(-1)."), partial(_loss_with, batch_major=True)),
    OVERFLOW,
)


# --- backpropagation through time ----------------------------------------------------------

def _backward_with(X, state, hiddens, d_outputs, d_final, params, transpose_W_hh=True, derivative="H_t",
                   use_d_final=True, backwards=True, previous="H_(t-1)", db_q="sum", loop=LOOP_RIGHT,
                   d_final_each_step=False, db_h_from="dA"):
    """([dW_xh, dW_hh, db_h, dW_hq, db_q], d_state) of BPTT with the flags' mistakes (defaults: none);
    `loop` holds the slips any loop over time can make (`backprop.BpttLoop`)."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    steps, batch, num_hiddens = hiddens.shape
    d_from_outputs = loop.unflatten(d_outputs @ W_hq.T, steps, batch, num_hiddens)
    d_W_xh, d_W_hh, d_b_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
    d_H = d_final if use_d_final and not d_final_each_step else torch.zeros_like(d_final)
    for t in loop.times(steps, backwards):
        H_prev = loop.previous(t, state, hiddens)
        slope = {"H_t": 1 - hiddens[t] ** 2, "H_(t-1)": 1 - H_prev ** 2, "none": 1.0,
                 "(1 - H_t)^2": (1 - hiddens[t]) ** 2, "hiddens[t - 1]": 1 - hiddens[t - 1] ** 2,
                 "tanh(H_t)": 1 - torch.tanh(hiddens[t]) ** 2,
                 "sigmoid": hiddens[t] * (1 - hiddens[t])}[derivative]
        dH = d_from_outputs[t] + d_H + (d_final if d_final_each_step else 0)
        dA = dH * slope
        d_W_hh = d_W_hh + (H_prev if previous == "H_(t-1)" else hiddens[t]).T @ dA
        d_W_xh = loop.add_rows(d_W_xh, X[:, t], dA)
        d_b_h = d_b_h + (dA if db_h_from == "dA" else dH).sum(0)
        d_H = dA @ (W_hh.T if transpose_W_hh else W_hh)
    d_b_q = d_outputs.sum(0) if db_q == "sum" else d_outputs.mean(0)
    d_state = dA if loop.returned == "dA_1" else d_H
    return [d_W_xh, d_W_hh, d_b_h, hiddens.reshape(-1, num_hiddens).T @ d_outputs, d_b_q], d_state


PREVIOUS_STATE_SLOPE = N_("the tanh derivative uses the previous state: dt = dh * (1 - H_t^2), with H_t the "
                          "state the step computed, not H_(t-1).")
BACKWARD_MISTAKES = (
    Mistake(N_("the gradient passed back to the previous state is dt W_hh; it is dt W_hh^T (transposed), "
               "as H_(t-1) was multiplied by W_hh on the way forward."),
            partial(_backward_with, transpose_W_hh=False)),
    Mistake(N_("the tanh derivative is missing: dt = dh * (1 - H_t^2), where dh is the gradient reaching "
               "H_t."),
            partial(_backward_with, derivative="none")),
    Mistake(PREVIOUS_STATE_SLOPE, partial(_backward_with, derivative="H_(t-1)")),
    Mistake(N_("d_final is ignored: the gradient reaching the last state starts as d_final (not zero) and "
               "is added to what the outputs send back at the last step."),
            partial(_backward_with, use_d_final=False)),
    Mistake(N_("the steps are walked from first to last: backpropagation through time starts at the last "
               "step (with d_final) and walks back to the first."), partial(_backward_with, backwards=False)),
    Mistake(N_("the tanh derivative is written (1 - H_t)^2: it is 1 - H_t^2, one minus the square of H_t."),
            partial(_backward_with, derivative="(1 - H_t)^2")),
    Mistake(N_("dW_hh uses H_t: the weight W_hh multiplied the previous state H_(t-1), so its gradient is "
               "H_(t-1)^T dt."), partial(_backward_with, previous="H_t")),
    Mistake(N_("db_q is averaged over the rows: d_outputs is already divided by the number of predictions, "
               "so the bias's gradient is its sum over the rows."), partial(_backward_with, db_q="mean")),
    # The state read one step off is `previous="H_t"` above: here H_(t-1) enters dW_hh alone.
    *(Mistake(cause, partial(_backward_with, loop=loop))
      for cause, loop, _section in loop_slips("", "") if loop.previous_shift),
    # The same slip written with the list of states: H_(t-1) read as hiddens[t - 1].
    Mistake(PREVIOUS_STATE_SLOPE, partial(_backward_with, derivative="hiddens[t - 1]")),
    Mistake(N_("the tanh derivative is computed from tanh(H_t): H_t has already gone through the tanh, so "
               "the derivative is 1 - H_t^2, with no tanh applied again."),
            partial(_backward_with, derivative="tanh(H_t)")),
    Mistake(N_("the derivative is sigmoid's, H_t (1 - H_t): this RNN's step is a tanh, whose derivative is "
               "1 - H_t^2."), partial(_backward_with, derivative="sigmoid")),
    Mistake(N_("d_final is added at every step: it is the gradient reaching the last state only, so it "
               "starts the walk back and is not added again."),
            partial(_backward_with, d_final_each_step=True)),
    Mistake(N_("db_h sums the gradient reaching H_t, before the tanh derivative: the bias is inside the "
               "tanh, so its gradient is dt = dh * (1 - H_t^2), summed."),
            partial(_backward_with, db_h_from="dH")),
)


# --- clipping ------------------------------------------------------------------------------

def _clip_with(grads, theta, norm_of="all", scale="joint", squared=False, norm_after=False):
    """(clipped gradients, norm) with the flags' mistakes: the norm of some gradients or the largest
    one's, squared, or from each gradient's mean square; each gradient scaled by its own norm,
    clamped entry by entry, or always scaled; the norm returned after clipping."""
    # In float64 on the CPU: MPS has no float64.
    norms = torch.stack([torch.linalg.vector_norm(g.detach().cpu().double()) for g in grads])
    counted = norms[:3] if norm_of == "first three" else norms
    if norm_of == "largest":
        norm = float(norms.max())
    elif norm_of == "sum":
        norm = float(norms.sum())
    elif norm_of == "means":
        norm = math.sqrt(sum(float(g.detach().cpu().double().square().mean()) for g in grads))
    else:
        norm = float(counted.square().sum() if squared else torch.linalg.vector_norm(counted))
    if scale == "per value":
        return [g.clamp(-theta, theta) for g in grads], norm
    if scale == "each":
        return [g * min(1.0, theta / max(float(n), 1e-12)) for g, n in zip(grads, norms, strict=True)], norm
    factor = theta / max(norm, 1e-12) if scale == "always" else min(1.0, theta / max(norm, 1e-12))
    return [g * factor for g in grads], norm * factor if norm_after else norm


CLIP_MISTAKES = (
    Mistake(N_("the gradients are clamped entry by entry (clipping by value): clipping by the norm scales "
               "every gradient by the same factor min(1, theta / norm), keeping the direction."),
            partial(_clip_with, scale="per value")),
    Mistake(N_("each gradient is clipped by its own norm: all of them are scaled by one factor, min(1, "
               "theta / norm) with the joint norm of every gradient together."),
            partial(_clip_with, scale="each")),
    Mistake(N_("the norm counts only the first three gradients: it runs over every gradient passed, "
               "however many (the cases pass five and seven)."), partial(_clip_with, norm_of="first three")),
    Mistake(N_("the norm is the largest gradient's norm: it is the square root of the sum of the squares "
               "of every entry of every gradient together."), partial(_clip_with, norm_of="largest")),
    Mistake(N_("the norm is not square-rooted: it is the square root of the sum of the squares of every "
               "entry of every gradient."), partial(_clip_with, squared=True)),
    Mistake(N_("the gradients are scaled even when their norm is below theta: the factor is min(1, theta / "
               "norm), so gradients already short enough are left as they are."),
            partial(_clip_with, scale="always")),
    Mistake(N_("the norms of the gradients are added: the joint norm is the square root of the sum of their "
               "squares, not their sum."), partial(_clip_with, norm_of="sum")),
    Mistake(N_("each gradient's squares are averaged where they are summed: the joint norm is the square "
               "root of the sum of the squares of every entry of every gradient."),
            partial(_clip_with, norm_of="means")),
    Mistake(N_("the norm returned is the one after clipping: the piece returns the joint norm of the "
               "gradients it was given, before they are scaled."), partial(_clip_with, norm_after=True)),
)


# --- the update and the perplexity -----------------------------------------------------------

SGD_MISTAKES = (
    Mistake(N_("the update adds the gradient: SGD steps against it, p - lr * g."),
            lambda params, grads, lr: [p + lr * g for p, g in zip(params, grads, strict=True)]),
    Mistake(N_("the learning rate is left out: the step is p - lr * g."),
            lambda params, grads, lr: [p - g for p, g in zip(params, grads, strict=True)]),
    Mistake(N_("the gradient is divided by the learning rate: the step is p - lr * g."),
            lambda params, grads, lr: [p - g / lr for p, g in zip(params, grads, strict=True)]),
    Mistake(N_("each parameter steps by the mean of its gradient, one number for the whole tensor: each "
               "entry steps by its own gradient, p - lr * g."),
            lambda params, grads, lr: [p - lr * g.mean() for p, g in zip(params, grads, strict=True)]),
    # Named where some parameters are right and the others are the inputs as they were.
    Mistake(N_("some parameters are returned as they were, not updated: every parameter, the biases too, "
               "steps by its own gradient."),
            lambda params, grads, lr: [p.clone() for p in params]),
)


def _perplexity_with(logits, targets, base=math.e, bits=False, reduce="mean", sign=-1.0, inverse_mean=False,
                     exponent=True, largest=False, mean_probability=False):
    """The perplexity with the flags' mistakes: another base, the loss in bits, summed, without the
    minus, the arithmetic mean of 1/p, the most likely token's p for the target's, or 1 / mean p."""
    # In float64 on the CPU (MPS has no float64), where e to a large sum is inf rather than an error.
    log_probs = torch.log_softmax(logits.detach().cpu().double(), dim=1)
    log_p = log_probs.max(dim=1).values if largest else log_probs[torch.arange(len(targets)), targets.cpu()]
    if inverse_mean:
        return float(torch.exp(-log_p).mean())
    if mean_probability:
        return float(1 / log_p.exp().mean())
    nats = sign * (log_p.sum() if reduce == "sum" else log_p.mean())
    value = nats / math.log(2) if bits else nats
    return float(base**value) if exponent else float(value)


PERPLEXITY_MISTAKES = (
    Mistake(N_("it is 2 to the mean cross-entropy in nats: perplexity is e to the mean in nats (2 to it "
               "only when the mean is in bits)."), partial(_perplexity_with, base=2.0)),
    Mistake(N_("it is e to the mean cross-entropy in bits: perplexity is e to the mean in nats, or 2 to "
               "the mean in bits; the base of the exp and of the log must be the same."),
            partial(_perplexity_with, bits=True)),
    Mistake(N_("it is e to the summed cross-entropy: perplexity is e to the *mean* over the predictions, "
               "so texts of any length compare."), partial(_perplexity_with, reduce="sum")),
    Mistake(N_("the minus sign is missing: exp of the mean of log p is 1 / perplexity; perplexity is exp "
               "of the mean of -log p."), partial(_perplexity_with, sign=1.0)),
    Mistake(N_("it is the arithmetic mean of 1/p: perplexity is the geometric mean of 1/p, exp of the mean "
               "of -log p."), partial(_perplexity_with, inverse_mean=True)),
    Mistake(N_("the result is the mean cross-entropy itself: perplexity is the exponential of it, e to the "
               "mean in nats."), partial(_perplexity_with, exponent=False)),
    OVERFLOW,
    Mistake(LARGEST_PICKED, partial(_perplexity_with, largest=True)),
    Mistake(N_("it is the perplexity of the mean probability (1 over the mean of p): perplexity is exp of "
               "the mean of -log p, not of the log of the mean."),
            partial(_perplexity_with, mean_probability=True)),
)

MISTAKES = {"minibatches": MINIBATCH_MISTAKES, "forward": FORWARD_MISTAKES, "loss_and_grad": LOSS_MISTAKES,
            "backward": BACKWARD_MISTAKES, "clip": CLIP_MISTAKES, "sgd": SGD_MISTAKES,
            "perplexity": PERPLEXITY_MISTAKES}
