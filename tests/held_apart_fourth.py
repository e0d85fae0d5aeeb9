"""A fourth held-apart set of student answers to the coding exercises of notebooks 01-09 (issue #45).

How and when it was written: in one sitting, by a helper session started for #45's "Done when"
measurement, after the third set (`tests/held_apart_third.py`) had been used to extend the mistake
catalogue and so no longer counted as held apart. It was written WITHOUT opening the mistake
catalogue (`d2lmini/exercises/mistakes/`), the check modules under `d2lmini/exercises/`, the first
set (`tests/held_apart_wrong_answers.py`), the second set (`tests/held_apart_fresh.py`), the answers
of the third set (only its module docstring, its `_edit` helper and its `ENTRY_POINTS` were read,
for the data format), the tests built on the sets (`tests/test_exercises_*.py`),
`tools/mistake_rates.py` or the other engineers' diffs, and without looking at the catalogue work
another helper was doing at the same time. The sources were what a student sees: the English
notebooks (`notebooks/NN_*.ipynb`: the exercise cells and the prose before them, read as markdown
and code sources without outputs), the signatures in `d2lmini/grading/assignment/exercises.json`, and the
instructors' solutions (`solutions/notebook_NN.py`, `solutions/capstone.py`) to know what right
looks like. Every answer was written here, in a student's own style, not copied from a book.

Before the commit, a sanity pass of the helper's own (a scratch script outside the repository,
never committed, and not the self-checks) ran every answer beside the instructors' solutions on
random CPU inputs of the notebooks' shapes: every wrong answer differed there or raised, except
those whose label says they take a route the exercise forbids (right numbers by design) or edit an
input in place (right values, the caller's tensor changed). Every correct answer agreed with the
solution. The set was committed before any answer ran through a self-check (`ex.check_*`), and it
must never be edited after: a mistake in an answer is recorded, not fixed.

One slip to record: after every answer here had been written and had passed the sanity pass, a
`ruff format --check` run on `tests/held_apart_third.py` (to see whether the third set is kept in
ruff's format) printed a diff that showed many of the third set's answers. Nothing in this set
was changed after that except the wrapping of long lines for `ruff check` (two answers had a code
line split in two, with the same meaning).

Covered: every coding exercise of notebooks 01-09 in exercises.json that has a single function slot
(05b has none), except the two 08 checks that train for minutes ("08:train", "08:capstone").

Data:

- `ENTRY_POINTS`: for each exercise id, the name of the function that an answer's source defines
  and that is passed to the self-check's single slot.
- `WRONG`: (exercise id, label, source) for answers with a real mistake; each must be refused and
  its label says what is wrong.
- `CORRECT`: (exercise id, label, source) for right answers written differently from the
  solutions (loops instead of vectorised code, einsum, another order, fused products, ...); each
  must be accepted.

Most wrong answers are one-mistake edits (`_edit`) of a right answer written in a student's own
style, as most real mistakes are; the others are written out whole.
"""


def _edit(base, *changes):
    """`base` with each (old, new) or (old, new, count) change made; `old` must occur `count` times."""
    text = base
    for change in changes:
        old, new = change[0], change[1]
        expected = change[2] if len(change) > 2 else 1
        seen = text.count(old)
        if seen != expected:
            raise ValueError(f"{old!r} occurs {seen} times, not {expected}, in:\n{text}")
        text = text.replace(old, new)
    return text


ENTRY_POINTS = {
    "01:all_states": "all_states",
    "02:fused_step": "fused_step",
    "03:lookup": "lookup",
    "03:one_hot": "one_hot",
    "03:sequential_batches": "batches_with_tail",
    "04:train_loop": "train_loop",
    "05:masked_loss_and_grad": "masked_loss_and_grad",
    "05:leaky_bptt": "leaky_bptt",
    "06:clip_function": "my_clip",
    "07:perplexity_function": "perplexity",
    "07:kn_bigram": "kn_bigram",
    "08:minibatches": "minibatches",
    "08:forward": "forward",
    "08:loss_and_grad": "loss_and_grad",
    "08:backward": "backward",
    "08:clip": "clip",
    "08:sgd": "sgd",
    "08:perplexity": "perplexity",
    "09:gru_cell": "gru_cell",
    "09:lstm_cell": "lstm_cell",
    "09:lstm_step_backward": "lstm_step_backward",
}

WRONG = []
CORRECT = []


# ---------------------------------------------------------------- 01: all_states

_ALL_STATES = """import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    H = torch.zeros(batch, W_hh.shape[1], dtype=W_xh.dtype, device=W_xh.device)
    out = []
    for t in range(steps):
        x = W_xh[tokens[:, t]]
        H = torch.tanh(x + H @ W_hh + b_h)
        out.append(H)
    return torch.stack(out)
"""

WRONG += [
    ("01:all_states", "W_hh transposed in the recurrence",
     _edit(_ALL_STATES, ("H @ W_hh", "H @ W_hh.T"))),
    ("01:all_states", "time and batch axes swapped: reads tokens[t] (a row) as step t",
     _edit(_ALL_STATES, ("tokens[:, t]", "tokens[t]"))),
    ("01:all_states", "states stacked on axis 1: (batch, steps, hiddens) instead of (steps, batch, hiddens)",
     _edit(_ALL_STATES, ("torch.stack(out)", "torch.stack(out, dim=1)"))),
    ("01:all_states", "off by one in time: returns H_0 ... H_{T-1} (H_0 kept, H_T dropped)",
     _edit(_ALL_STATES, ("out = []", "out = [H]"), ("torch.stack(out)", "torch.stack(out[:-1])"))),
    ("01:all_states", "bias b_h left out",
     _edit(_ALL_STATES, (" + b_h)", ")"))),
    ("01:all_states", "ReLU instead of tanh",
     _edit(_ALL_STATES, ("torch.tanh(", "torch.relu("))),
    ("01:all_states", "sigmoid instead of tanh",
     _edit(_ALL_STATES, ("torch.tanh(", "torch.sigmoid("))),
    ("01:all_states", "returns only the last state H_T, not every state",
     _edit(_ALL_STATES, ("return torch.stack(out)", "return H"))),
    ("01:all_states", "state not carried: every step starts again from H_0 = 0",
     _edit(_ALL_STATES, ("        H = torch.tanh(x + H @ W_hh + b_h)\n        out.append(H)",
                         "        new = torch.tanh(x + H @ W_hh + b_h)\n        out.append(new)"))),
    ("01:all_states", "bias added after tanh",
     _edit(_ALL_STATES, ("torch.tanh(x + H @ W_hh + b_h)", "torch.tanh(x + H @ W_hh) + b_h"))),
    ("01:all_states", "picks columns of W_xh instead of rows",
     _edit(_ALL_STATES, ("x = W_xh[tokens[:, t]]", "x = W_xh[:, tokens[:, t]].T"))),
    ("01:all_states", "reads the sequence backwards (last step first)",
     _edit(_ALL_STATES, ("for t in range(steps):", "for t in reversed(range(steps)):"))),
    ("01:all_states", "zero state made in float32 whatever the weights' dtype",
     _edit(_ALL_STATES, ("torch.zeros(batch, W_hh.shape[1], dtype=W_xh.dtype, device=W_xh.device)",
                         "torch.zeros(batch, W_hh.shape[1])"))),
    ("01:all_states", "state appended before it is updated (returns H_0 ... H_{T-1})",
     _edit(_ALL_STATES, ("        H = torch.tanh(x + H @ W_hh + b_h)\n        out.append(H)",
                         "        out.append(H)\n        H = torch.tanh(x + H @ W_hh + b_h)"))),
]

CORRECT += [
    ("01:all_states", "one-hot matrix product per step, states written into a preallocated tensor",
     """import torch
import torch.nn.functional as F


def all_states(tokens, W_xh, W_hh, b_h):
    n, T = tokens.shape
    V, h = W_xh.shape
    states = torch.empty(T, n, h, dtype=W_xh.dtype, device=W_xh.device)
    H = torch.zeros(n, h, dtype=W_xh.dtype, device=W_xh.device)
    for t in range(T):
        X_t = F.one_hot(tokens[:, t], V).to(W_xh.dtype)
        H = torch.tanh(X_t @ W_xh + b_h + H @ W_hh)
        states[t] = H
    return states
"""),
    ("01:all_states", "every step's input term looked up before the loop, time-major", """import torch


def all_states(tokens, W_xh, W_hh, b_h):
    inputs = W_xh[tokens.T] + b_h  # (steps, batch, hiddens)
    H = inputs.new_zeros(inputs.shape[1:])
    result = []
    for term in inputs:
        H = (term + torch.mm(H, W_hh)).tanh()
        result += [H]
    return torch.stack(result, 0)
"""),
]


# ---------------------------------------------------------------- 02: fused_step

_FUSED = """import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    XH = torch.cat([X, H], dim=1)
    W = torch.cat([W_xh, W_hh], dim=0)
    return torch.tanh(XH @ W + b_h)
"""

WRONG += [
    ("02:fused_step", "inputs concatenated as [H, X] but weights as [W_xh; W_hh]",
     _edit(_FUSED, ("torch.cat([X, H], dim=1)", "torch.cat([H, X], dim=1)"))),
    ("02:fused_step", "weights stacked side by side (dim=1) instead of on top of each other",
     _edit(_FUSED, ("torch.cat([W_xh, W_hh], dim=0)", "torch.cat([W_xh, W_hh], dim=1)"))),
    ("02:fused_step", "X and H concatenated along the batch axis (dim=0)",
     _edit(_FUSED, ("torch.cat([X, H], dim=1)", "torch.cat([X, H], dim=0)"))),
    ("02:fused_step", "bias b_h left out",
     _edit(_FUSED, (" + b_h)", ")"))),
    ("02:fused_step", "tanh forgotten: returns the pre-activation",
     _edit(_FUSED, ("return torch.tanh(XH @ W + b_h)", "return XH @ W + b_h"))),
    ("02:fused_step", "W_hh transposed inside the stacked weight",
     _edit(_FUSED, ("torch.cat([W_xh, W_hh], dim=0)", "torch.cat([W_xh, W_hh.T], dim=0)"))),
    ("02:fused_step", "two matrix products, no fusing (the route the exercise forbids; right numbers)",
     _edit(_FUSED, ("return torch.tanh(XH @ W + b_h)", "return torch.tanh(X @ W_xh + H @ W_hh + b_h)"))),
    ("02:fused_step", "bias added twice: stacked as a row under a column of ones, and added again",
     _edit(_FUSED, ("torch.cat([X, H], dim=1)",
                    "torch.cat([X, H, torch.ones(X.shape[0], 1, dtype=X.dtype)], dim=1)"),
           ("torch.cat([W_xh, W_hh], dim=0)", "torch.cat([W_xh, W_hh, b_h.reshape(1, -1)], dim=0)"))),
    ("02:fused_step", "sigmoid instead of tanh",
     _edit(_FUSED, ("torch.tanh(", "torch.sigmoid("))),
    ("02:fused_step", "bias added after tanh",
     _edit(_FUSED, ("torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W) + b_h"))),
    ("02:fused_step", "product taken as W^T [X H]^T and not transposed back: (hiddens, batch)",
     _edit(_FUSED, ("torch.tanh(XH @ W + b_h)", "torch.tanh(W.T @ XH.T + b_h[:, None])"))),
]

CORRECT += [
    ("02:fused_step", "hstack/vstack with addmm", """import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.addmm(b_h, torch.hstack((X, H)), torch.vstack((W_xh, W_hh))).tanh()
"""),
    ("02:fused_step", "weights transposed and stacked side by side, one product with the transpose",
     """import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    W_t = torch.cat([W_xh.T, W_hh.T], dim=1)  # (hiddens, vocab + hiddens)
    return torch.tanh(torch.cat([X, H], 1) @ W_t.T + b_h)
"""),
]


# ---------------------------------------------------------------- 03: lookup

_LOOKUP = """def lookup(W, X):
    return W[X]
"""

WRONG += [
    ("03:lookup", "picks columns of W instead of rows",
     _edit(_LOOKUP, ("W[X]", "W[:, X]"))),
    ("03:lookup", "indexes the transpose of W",
     _edit(_LOOKUP, ("W[X]", "W.T[X]"))),
    ("03:lookup", "flattens X: (N, d) instead of X.shape + (d,)",
     _edit(_LOOKUP, ("W[X]", "W[X.reshape(-1)]"))),
    ("03:lookup", "indices taken as 1-based (off by one)",
     _edit(_LOOKUP, ("W[X]", "W[X - 1]"))),
    ("03:lookup", "one-hot times W (the route the exercise forbids; right numbers)",
     """import torch.nn.functional as F


def lookup(W, X):
    return F.one_hot(X, W.shape[0]).to(W.dtype) @ W
"""),
    ("03:lookup", "returns the transpose of the picked rows",
     _edit(_LOOKUP, ("W[X]", "W[X].T"))),
    ("03:lookup", "squeezes the result: axes of size 1 in X are lost",
     _edit(_LOOKUP, ("W[X]", "W[X].squeeze()"))),
    ("03:lookup", "result cast to float32 whatever W's dtype",
     _edit(_LOOKUP, ("W[X]", "W[X].float()"))),
    ("03:lookup", "gather along the wrong axis: W.gather(0, X) picks single entries, not rows",
     """import torch


def lookup(W, X):
    return torch.gather(W, 0, X.reshape(-1, 1).expand(-1, W.shape[1])).reshape(X.shape[0], -1)
"""),
]

CORRECT += [
    ("03:lookup", "index_select on the flattened indices, reshaped back", """import torch


def lookup(W, X):
    rows = torch.index_select(W, 0, X.reshape(-1))
    return rows.reshape(*X.shape, W.shape[1])
"""),
    ("03:lookup", "F.embedding", """import torch.nn.functional as F


def lookup(W, X):
    return F.embedding(X, W)
"""),
]


# ---------------------------------------------------------------- 03: one_hot

_ONE_HOT = """import torch


def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, device=X.device)
    out.scatter_(-1, X.unsqueeze(-1), 1.0)
    return out
"""

WRONG += [
    ("03:one_hot", "vocabulary axis first: shape (vocab_size,) + X.shape",
     _edit(_ONE_HOT, ("torch.zeros(*X.shape, vocab_size, device=X.device)",
                      "torch.zeros(vocab_size, *X.shape, device=X.device)"),
           ("out.scatter_(-1, X.unsqueeze(-1), 1.0)", "out.scatter_(0, X.unsqueeze(0), 1.0)"))),
    ("03:one_hot", "int64 result instead of float32",
     _edit(_ONE_HOT, ("device=X.device)", "dtype=torch.long, device=X.device)"), ("1.0)", "1)"))),
    ("03:one_hot", "rows of an identity picked with X.T (time-major habit): axes swapped", """import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size)[X.T]
"""),
    ("03:one_hot", "float64 result (identity made in double)", """import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size, dtype=torch.float64)[X]
"""),
    ("03:one_hot", "X flattened: (N, vocab_size) instead of X.shape + (vocab_size,)", """import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size)[X.reshape(-1)]
"""),
    ("03:one_hot", "vocab_size + 1 columns (an extra slot kept for padding)",
     _edit(_ONE_HOT, ("torch.zeros(*X.shape, vocab_size, device=X.device)",
                      "torch.zeros(*X.shape, vocab_size + 1, device=X.device)"))),
    ("03:one_hot", "scatter along axis 1 instead of the last axis",
     _edit(_ONE_HOT, ("out.scatter_(-1, X.unsqueeze(-1), 1.0)", "out.scatter_(1, X.unsqueeze(-1), 1.0)"))),
    ("03:one_hot", "returns the bool comparison without casting to float", """import torch


def one_hot(X, vocab_size):
    return X[..., None] == torch.arange(vocab_size)
"""),
    ("03:one_hot", "unsqueeze_ edits the caller's X in place (right values, X gains an axis)", """import torch


def one_hot(X, vocab_size):
    X.unsqueeze_(-1)
    out = torch.zeros(*X.shape[:-1], vocab_size)
    return out.scatter_(-1, X, 1.0)
"""),
    ("03:one_hot", "comparison against arange(1, vocab_size + 1): indices taken as 1-based", """import torch


def one_hot(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(1, vocab_size + 1)).float()
"""),
]

CORRECT += [
    ("03:one_hot", "rows of a float32 identity", """import torch


def one_hot(X, vocab_size):
    eye = torch.eye(vocab_size, dtype=torch.float32, device=X.device)
    return eye[X]
"""),
    ("03:one_hot", "flat index_put_ into a zero matrix, reshaped back", """import torch


def one_hot(X, vocab_size):
    flat = X.reshape(-1)
    out = torch.zeros(flat.numel(), vocab_size, dtype=torch.float32, device=X.device)
    out[torch.arange(flat.numel(), device=X.device), flat] = 1
    return out.reshape(*X.shape, vocab_size)
"""),
]


# ---------------------------------------------------------------- 03: sequential_batches

_TAIL = """def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - offset - 1) // batch_size
    X = indices[offset:offset + n * batch_size].reshape(batch_size, n)
    Y = indices[offset + 1:offset + 1 + n * batch_size].reshape(batch_size, n)
    t = 0
    while t < n:
        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]
        t += num_steps
"""

WRONG += [
    ("03:sequential_batches", "offset ignored: the streams start at token 0",
     _edit(_TAIL, ("indices[offset:offset + n * batch_size]", "indices[:n * batch_size]"),
           ("indices[offset + 1:offset + 1 + n * batch_size]", "indices[1:1 + n * batch_size]"))),
    ("03:sequential_batches", "stream length without the - 1 for the last target (Y runs off the end)",
     _edit(_TAIL, ("n = (len(indices) - offset - 1) // batch_size",
                   "n = (len(indices) - offset) // batch_size"))),
    ("03:sequential_batches", "targets not shifted: Y equals X",
     _edit(_TAIL, ("indices[offset + 1:offset + 1 + n * batch_size]",
                   "indices[offset:offset + n * batch_size]"))),
    ("03:sequential_batches", "streams interleaved: reshape(n, batch_size).T (column-major)",
     _edit(_TAIL, (".reshape(batch_size, n)", ".reshape(n, batch_size).T", 2))),
    ("03:sequential_batches", "tail dropped: only full minibatches, like sequential_batches",
     _edit(_TAIL, ("while t < n:", "while t + num_steps <= n:"))),
    ("03:sequential_batches",
     "last minibatch taken as the last num_steps steps (overlaps the one before) instead of the short tail",
     _edit(_TAIL, ("        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]",
                   "        s = min(t, max(n - num_steps, 0))\n"
                   "        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]"))),
    ("03:sequential_batches", "stream length one short",
     _edit(_TAIL, ("n = (len(indices) - offset - 1) // batch_size",
                   "n = (len(indices) - offset) // batch_size - 1"))),
    ("03:sequential_batches", "yields (Y, X): inputs and targets swapped",
     _edit(_TAIL, ("yield X[:, t:t + num_steps], Y[:, t:t + num_steps]",
                   "yield Y[:, t:t + num_steps], X[:, t:t + num_steps]"))),
    ("03:sequential_batches", "minibatches transposed to (steps, batch)",
     _edit(_TAIL, ("yield X[:, t:t + num_steps], Y[:, t:t + num_steps]",
                   "yield X[:, t:t + num_steps].T, Y[:, t:t + num_steps].T"))),
    ("03:sequential_batches", "windows move one step at a time (overlapping minibatches)",
     _edit(_TAIL, ("t += num_steps", "t += 1"))),
    ("03:sequential_batches", "an empty (batch, 0) minibatch when nothing is left over",
     _edit(_TAIL, ("while t < n:", "while t <= n:"))),
    ("03:sequential_batches",
     "Y made by rolling X within each row: the last target of every stream is wrong", """import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - offset - 1) // batch_size
    X = indices[offset:offset + n * batch_size].reshape(batch_size, n)
    Y = torch.roll(X, -1, dims=1)
    for t in range(0, n, num_steps):
        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]
"""),
    ("03:sequential_batches",
     "leftover steps merged into the last full minibatch (a longer one) instead of a shorter one after it",
     """def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - offset - 1) // batch_size
    X = indices[offset:offset + n * batch_size].reshape(batch_size, n)
    Y = indices[offset + 1:offset + 1 + n * batch_size].reshape(batch_size, n)
    starts = list(range(0, n - num_steps + 1, num_steps))
    for k, t in enumerate(starts):
        end = n if k == len(starts) - 1 else t + num_steps
        yield X[:, t:end], Y[:, t:end]
"""),
    ("03:sequential_batches", "num_steps used where batch_size belongs in the stream length",
     _edit(_TAIL, ("n = (len(indices) - offset - 1) // batch_size",
                   "n = (len(indices) - offset - 1) // num_steps"))),
    ("03:sequential_batches", "random partitioning layout: rows are consecutive chunks, not streams",
     """def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - offset - 1) // num_steps
    X = indices[offset:offset + n * num_steps].reshape(n, num_steps)
    Y = indices[offset + 1:offset + 1 + n * num_steps].reshape(n, num_steps)
    for i in range(0, n, batch_size):
        yield X[i:i + batch_size], Y[i:i + batch_size]
"""),
    ("03:sequential_batches", "offset applied to the targets only",
     _edit(_TAIL, ("indices[offset:offset + n * batch_size]", "indices[:n * batch_size]"))),
    ("03:sequential_batches", "a tail of one step is dropped (tail only when more than one step is left)",
     """def batches_with_tail(indices, batch_size, num_steps, offset):
    n = (len(indices) - offset - 1) // batch_size
    X = indices[offset:offset + n * batch_size].reshape(batch_size, n)
    Y = indices[offset + 1:offset + 1 + n * batch_size].reshape(batch_size, n)
    t = 0
    while t + num_steps <= n:
        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]
        t += num_steps
    if n - t > 1:
        yield X[:, t:], Y[:, t:]
"""),
    ("03:sequential_batches",
     "no trimming to a multiple of batch_size: reshape(batch_size, -1) of everything after the offset",
     """def batches_with_tail(indices, batch_size, num_steps, offset):
    X = indices[offset:-1].reshape(batch_size, -1)
    Y = indices[offset + 1:].reshape(batch_size, -1)
    for t in range(0, X.shape[1], num_steps):
        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]
"""),
    ("03:sequential_batches", "the offset drawn at random instead of the one given", """import random


def batches_with_tail(indices, batch_size, num_steps, offset):
    offset = random.randint(0, num_steps - 1)
    n = (len(indices) - offset - 1) // batch_size
    X = indices[offset:offset + n * batch_size].reshape(batch_size, n)
    Y = indices[offset + 1:offset + 1 + n * batch_size].reshape(batch_size, n)
    for t in range(0, n, num_steps):
        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]
"""),
    ("03:sequential_batches", "tail cut from the first stream's leftovers only: a (1, r) minibatch",
     _edit(_TAIL, ("        yield X[:, t:t + num_steps], Y[:, t:t + num_steps]",
                   "        if t + num_steps <= n:\n"
                   "            yield X[:, t:t + num_steps], Y[:, t:t + num_steps]\n"
                   "        else:\n            yield X[:1, t:], Y[:1, t:]"))),
]

CORRECT += [
    ("03:sequential_batches", "full minibatches in a for loop, then the tail on its own",
     """def batches_with_tail(indices, batch_size, num_steps, offset):
    length = (len(indices) - 1 - offset) // batch_size
    data = indices[offset:offset + batch_size * length + 1]
    X = data[:-1].view(batch_size, length)
    Y = data[1:].view(batch_size, length)
    full = length // num_steps
    for k in range(full):
        yield X[:, k * num_steps:(k + 1) * num_steps], Y[:, k * num_steps:(k + 1) * num_steps]
    if length % num_steps:
        yield X[:, full * num_steps:], Y[:, full * num_steps:]
"""),
    ("03:sequential_batches", "torch.split along the time axis", """import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    length = (len(indices) - offset - 1) // batch_size
    X = indices[offset:][:batch_size * length].reshape(batch_size, length)
    Y = indices[offset + 1:][:batch_size * length].reshape(batch_size, length)
    yield from zip(torch.split(X, num_steps, dim=1), torch.split(Y, num_steps, dim=1))
"""),
]


# ---------------------------------------------------------------- 04: train_loop

_TRAIN_LOOP = """import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    total, count = 0.0, 0
    state = None
    for X, Y in batches:
        if state is None:
            state = model.begin_state(X.shape[0])
        else:
            state = state.detach()
        logits, state = model(X, state)
        loss = F.cross_entropy(logits, Y.T.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        count += 1
    return total / count
"""

WRONG += [
    ("04:train_loop", "targets flattened batch-major (Y.reshape(-1)) against step-major logits",
     _edit(_TRAIN_LOOP, ("Y.T.reshape(-1)", "Y.reshape(-1)"))),
    ("04:train_loop", "gradients never zeroed: they accumulate over the minibatches",
     _edit(_TRAIN_LOOP, ("        optimizer.zero_grad()\n", ""))),
    ("04:train_loop", "state reset to zero every minibatch",
     _edit(_TRAIN_LOOP,
           ("        if state is None:\n"
            "            state = model.begin_state(X.shape[0])\n"
            "        else:\n"
            "            state = state.detach()\n",
                         "        state = model.begin_state(X.shape[0])\n"))),
    ("04:train_loop", "state carried without detaching (backward through the previous minibatch's graph)",
     _edit(_TRAIN_LOOP, ("        else:\n            state = state.detach()\n", ""))),
    ("04:train_loop", "zero_grad called between backward and step: every update uses zero gradients",
     _edit(_TRAIN_LOOP, ("        optimizer.zero_grad()\n        loss.backward()\n",
                         "        loss.backward()\n        optimizer.zero_grad()\n"))),
    ("04:train_loop", "returns the sum of the minibatch losses, not their mean",
     _edit(_TRAIN_LOOP, ("return total / count", "return total"))),
    ("04:train_loop", "returns the last minibatch's loss",
     _edit(_TRAIN_LOOP, ("return total / count", "return loss.item()"))),
    ("04:train_loop", "loss summed over the tokens (reduction='sum') instead of the mean",
     _edit(_TRAIN_LOOP, ("F.cross_entropy(logits, Y.T.reshape(-1))",
                         "F.cross_entropy(logits, Y.T.reshape(-1), reduction='sum')"))),
    ("04:train_loop", "clips the gradients (joint norm 0.1) though the exercise asks for no clipping",
     _edit(_TRAIN_LOOP, ("        loss.backward()\n",
                         "        loss.backward()\n"
                         "        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)\n"),
           ("import torch.nn.functional as F\n", "import torch\nimport torch.nn.functional as F\n"))),
    ("04:train_loop", "targets are the inputs X (predicts the current character, not the next)",
     _edit(_TRAIN_LOOP, ("Y.T.reshape(-1)", "X.T.reshape(-1)"))),
    ("04:train_loop", "nll_loss on raw logits (log_softmax forgotten)",
     _edit(_TRAIN_LOOP, ("F.cross_entropy(logits, Y.T.reshape(-1))", "F.nll_loss(logits, Y.T.reshape(-1))"))),
    ("04:train_loop", "softmax applied before cross_entropy (softmax twice)",
     _edit(_TRAIN_LOOP, ("F.cross_entropy(logits, Y.T.reshape(-1))",
                         "F.cross_entropy(logits.softmax(dim=1), Y.T.reshape(-1))"))),
    ("04:train_loop", "begin_state given the number of steps instead of the batch size",
     _edit(_TRAIN_LOOP, ("model.begin_state(X.shape[0])", "model.begin_state(X.shape[1])"))),
    ("04:train_loop",
     "optimizer.step() before loss.backward(): each update uses the previous minibatch's gradient",
     _edit(_TRAIN_LOOP, ("        loss.backward()\n        optimizer.step()\n",
                         "        optimizer.step()\n        loss.backward()\n"))),
    ("04:train_loop",
     "the first minibatch's state carried as the initial state of every minibatch (state never updated)",
     _edit(_TRAIN_LOOP, ("        logits, state = model(X, state)", "        logits, _ = model(X, state)"))),
]

CORRECT += [
    ("04:train_loop", "losses kept in a list, state detached right after the forward pass",
     """import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    losses = []
    H = None
    for X, Y in batches:
        if H is None:
            H = model.begin_state(X.shape[0])
        out, H_next = model(X, H)
        H = H_next.detach()
        targets = Y.t().flatten()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(out, targets)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return sum(losses) / len(losses)
"""),
    ("04:train_loop", "log_softmax and a picked mean written out, logits reordered batch-major to match Y",
     """import torch


def train_loop(model, batches, optimizer):
    state, seen, running = None, 0, 0.0
    for X, Y in batches:
        n, T = X.shape
        state = model.begin_state(n) if state is None else state.detach()
        logits, state = model(X, state)
        by_sequence = logits.reshape(T, n, -1).transpose(0, 1).reshape(n * T, -1)
        log_p = torch.log_softmax(by_sequence, dim=-1)
        loss = -log_p.gather(1, Y.reshape(-1, 1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
        seen += 1
    return running / seen
"""),
]


# ---------------------------------------------------------------- 05: masked_loss_and_grad

_MASKED = """import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    t = torch.arange(steps).repeat_interleave(batch)  # the step of each row (step-major)
    b = torch.arange(batch).repeat(steps)  # the sequence of each row
    keep = (t < lengths[b]).to(outputs.dtype)
    target = Y[b, t]
    rows = torch.arange(len(target))
    logp = outputs.log_softmax(dim=1)
    n = keep.sum()
    loss = -(logp[rows, target] * keep).sum() / n
    grad = logp.exp()
    grad[rows, target] -= 1
    grad = grad * keep[:, None] / n
    return loss, grad
"""

WRONG += [
    ("05:masked_loss_and_grad", "normalised by every row (steps * batch), not by the real steps",
     _edit(_MASKED, ("n = keep.sum()", "n = len(target)"))),
    ("05:masked_loss_and_grad", "rows taken batch-major: mask and targets in the wrong order",
     _edit(_MASKED, ("torch.arange(steps).repeat_interleave(batch)", "torch.arange(steps).repeat(batch)"),
           ("torch.arange(batch).repeat(steps)", "torch.arange(batch).repeat_interleave(steps)"))),
    ("05:masked_loss_and_grad", "off by one in the mask: t <= lengths keeps one padded step",
     _edit(_MASKED, ("t < lengths[b]", "t <= lengths[b]"))),
    ("05:masked_loss_and_grad", "gradient not masked: padded rows get a gradient",
     _edit(_MASKED, ("grad = grad * keep[:, None] / n", "grad = grad / n"))),
    ("05:masked_loss_and_grad", "gradient not divided by N (the gradient of the sum)",
     _edit(_MASKED, ("grad = grad * keep[:, None] / n", "grad = grad * keep[:, None]"))),
    ("05:masked_loss_and_grad", "loss not masked (padded steps counted in the sum) though the gradient is",
     _edit(_MASKED, ("(logp[rows, target] * keep).sum()", "logp[rows, target].sum()"))),
    ("05:masked_loss_and_grad", "gradient sign flipped (one-hot minus softmax)",
     _edit(_MASKED, ("grad = grad * keep[:, None] / n", "grad = -grad * keep[:, None] / n"))),
    ("05:masked_loss_and_grad", "logits used in place of the softmax in the gradient",
     _edit(_MASKED, ("grad = logp.exp()", "grad = outputs.clone()"))),
    ("05:masked_loss_and_grad", "mean of the per-sequence means instead of the mean over all real steps",
     """import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    logp = outputs.log_softmax(dim=1).reshape(steps, batch, -1)
    probs = logp.exp()
    loss = 0.0
    grad = torch.zeros_like(probs)
    for i in range(batch):
        L = int(lengths[i])
        for t in range(L):
            loss = loss - logp[t, i, Y[i, t]] / (L * batch)
            grad[t, i] = probs[t, i] / (L * batch)
            grad[t, i, Y[i, t]] -= 1 / (L * batch)
    return loss, grad.reshape(steps * batch, -1)
"""),
    ("05:masked_loss_and_grad", "targets read batch-major with Y.reshape(-1)",
     _edit(_MASKED, ("target = Y[b, t]", "target = Y.reshape(-1)"))),
    ("05:masked_loss_and_grad", "lengths taken as the last real index: one real step too few",
     _edit(_MASKED, ("t < lengths[b]", "t < lengths[b] - 1"))),
    ("05:masked_loss_and_grad", "N counted as the longest length times the batch",
     _edit(_MASKED, ("n = keep.sum()", "n = lengths.max() * batch"))),
    ("05:masked_loss_and_grad", "gradient divided by the batch size instead of N",
     _edit(_MASKED, ("grad = grad * keep[:, None] / n", "grad = grad * keep[:, None] / batch"))),
    ("05:masked_loss_and_grad", "returns (d_outputs, loss): the pair in the wrong order",
     _edit(_MASKED, ("return loss, grad", "return grad, loss"))),
    ("05:masked_loss_and_grad",
     "subtracts the row max from outputs in place (right values, the caller's logits changed)",
     _edit(_MASKED, ("    logp = outputs.log_softmax(dim=1)\n",
                     "    outputs -= outputs.max(dim=1, keepdim=True).values\n"
                     "    logp = outputs.log_softmax(dim=1)\n"))),
    ("05:masked_loss_and_grad", "padding found from the token 0 in Y instead of from lengths",
     _edit(_MASKED, ("keep = (t < lengths[b]).to(outputs.dtype)",
                     "keep = (Y[b, t] != 0).to(outputs.dtype)"))),
    ("05:masked_loss_and_grad", "padded logits zeroed, then the mean over every row", """import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    real = (torch.arange(steps)[:, None] < lengths[None, :]).reshape(-1, 1).to(outputs.dtype)
    z = outputs * real
    target = Y.T.reshape(-1)
    rows = torch.arange(len(target))
    logp = z.log_softmax(dim=1)
    loss = -logp[rows, target].mean()
    grad = logp.exp()
    grad[rows, target] -= 1
    return loss, grad * real / len(target)
"""),
    ("05:masked_loss_and_grad", "log_softmax over the rows (dim=0) instead of the vocabulary",
     _edit(_MASKED, ("outputs.log_softmax(dim=1)", "outputs.log_softmax(dim=0)"))),
    ("05:masked_loss_and_grad", "loss converted to bits (divided by log 2), the gradient left in nats",
     _edit(_MASKED, ("loss = -(logp[rows, target] * keep).sum() / n",
                     "loss = -(logp[rows, target] * keep).sum() / n / 0.6931471805599453"))),
    ("05:masked_loss_and_grad", "mask built as (steps, batch) but flattened batch-major with .T",
     _edit(_MASKED, ("    keep = (t < lengths[b]).to(outputs.dtype)\n",
                     "    real = torch.arange(steps)[:, None] < lengths[None, :]\n"
                     "    keep = real.T.reshape(-1).to(outputs.dtype)\n"))),
    ("05:masked_loss_and_grad", "softmax masked before the one-hot is subtracted: padded rows keep the -1/N",
     _edit(_MASKED,
           ("    grad = logp.exp()\n    grad[rows, target] -= 1\n    grad = grad * keep[:, None] / n\n",
                     "    grad = logp.exp() * keep[:, None] / n\n    grad[rows, target] -= 1 / n\n"))),
]

CORRECT += [
    ("05:masked_loss_and_grad", "step-major mask from a (steps, batch) comparison, one-hot gradient",
     """import torch
import torch.nn.functional as F


def masked_loss_and_grad(outputs, Y, lengths):
    n_seq, T = Y.shape
    mask = (torch.arange(T, device=Y.device).unsqueeze(1) < lengths.unsqueeze(0)).reshape(-1)
    targets = Y.transpose(0, 1).reshape(-1)
    lse = torch.logsumexp(outputs, dim=1)
    nll = lse - outputs.gather(1, targets[:, None]).squeeze(1)
    count = mask.sum()
    loss = nll[mask].sum() / count
    probs = torch.exp(outputs - lse[:, None])
    d = (probs - F.one_hot(targets, outputs.shape[1]).to(outputs.dtype)) * mask[:, None].to(outputs.dtype)
    return loss, d / count
"""),
    ("05:masked_loss_and_grad", "a loop over steps and sequences with plain sums", """import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    N = int(lengths.sum())
    probs = torch.softmax(outputs, dim=1)
    d_outputs = torch.zeros_like(outputs)
    total = 0.0
    for t in range(steps):
        for i in range(batch):
            if t < lengths[i]:
                row = t * batch + i
                total = total - torch.log_softmax(outputs[row], dim=0)[Y[i, t]]
                d_outputs[row] = probs[row]
                d_outputs[row, Y[i, t]] -= 1
    return total / N, d_outputs / N
"""),
]


# ---------------------------------------------------------------- 05: leaky_bptt

_LEAKY = """import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    T, n, h = hiddens.shape
    dO = d_outputs.reshape(T, n, -1)
    prev = torch.cat([state.unsqueeze(0), hiddens[:-1]])  # H_0 ... H_{T-1}
    dW_xh = torch.zeros_like(W_xh)
    dW_hh = torch.zeros_like(W_hh)
    db_h = torch.zeros_like(b_h)
    carry = torch.zeros_like(state)
    for t in range(T - 1, -1, -1):
        A = W_xh[X[:, t]] + prev[t] @ W_hh + b_h
        dH = dO[t] @ W_hq.T + carry
        dA = alpha * dH * (A > 0).to(dH.dtype)
        dW_xh.index_add_(0, X[:, t], dA)
        dW_hh += prev[t].T @ dA
        db_h += dA.sum(0)
        carry = (1 - alpha) * dH + dA @ W_hh.T
    return dW_xh, dW_hh, db_h, carry
"""

WRONG += [
    ("05:leaky_bptt", "ReLU's slope read from H_t > 0 instead of A_t > 0",
     _edit(_LEAKY, ("(A > 0)", "(hiddens[t] > 0)"))),
    ("05:leaky_bptt", "the direct path (1 - alpha) H_{t-1} -> H_t left out of the carried gradient",
     _edit(_LEAKY, ("carry = (1 - alpha) * dH + dA @ W_hh.T", "carry = dA @ W_hh.T"))),
    ("05:leaky_bptt", "the factor alpha forgotten in dA",
     _edit(_LEAKY, ("dA = alpha * dH *", "dA = dH *"))),
    ("05:leaky_bptt", "direct path weighted by alpha instead of 1 - alpha",
     _edit(_LEAKY, ("carry = (1 - alpha) * dH", "carry = alpha * dH"))),
    ("05:leaky_bptt", "W_hh not transposed when the gradient goes back to H_{t-1}",
     _edit(_LEAKY, ("dA @ W_hh.T", "dA @ W_hh"))),
    ("05:leaky_bptt", "off by one in time: H_t used where H_{t-1} belongs",
     _edit(_LEAKY, ("prev = torch.cat([state.unsqueeze(0), hiddens[:-1]])", "prev = hiddens"))),
    ("05:leaky_bptt", "dW_hh transposed: dA^T H_{t-1}",
     _edit(_LEAKY, ("dW_hh += prev[t].T @ dA", "dW_hh += dA.T @ prev[t]"))),
    ("05:leaky_bptt", "dW_xh by indexed += (repeated tokens in a step add only once)",
     _edit(_LEAKY, ("dW_xh.index_add_(0, X[:, t], dA)", "dW_xh[X[:, t]] += dA"))),
    ("05:leaky_bptt", "d_outputs read batch-major",
     _edit(_LEAKY, ("dO = d_outputs.reshape(T, n, -1)", "dO = d_outputs.reshape(n, T, -1).transpose(0, 1)"))),
    ("05:leaky_bptt", "W_hq not transposed on the way back from the outputs",
     _edit(_LEAKY, ("dO[t] @ W_hq.T", "dO[t] @ W_hq"))),
    ("05:leaky_bptt", "loop runs forward in time",
     _edit(_LEAKY, ("for t in range(T - 1, -1, -1):", "for t in range(T):"))),
    ("05:leaky_bptt", "tanh's slope 1 - H^2 kept from the plain RNN instead of ReLU's",
     _edit(_LEAKY, ("dA = alpha * dH * (A > 0).to(dH.dtype)", "dA = alpha * dH * (1 - hiddens[t] ** 2)"))),
    ("05:leaky_bptt", "returns dL/dH_1 (the last dH) as d_state instead of dL/dH_0",
     _edit(_LEAKY, ("return dW_xh, dW_hh, db_h, carry", "return dW_xh, dW_hh, db_h, dH"))),
    ("05:leaky_bptt", "db_h summed over the hidden axis instead of the batch",
     _edit(_LEAKY, ("db_h += dA.sum(0)", "db_h += dA.sum(1)"))),
    ("05:leaky_bptt", "ReLU itself used in place of its derivative",
     _edit(_LEAKY, ("(A > 0).to(dH.dtype)", "A.clamp(min=0)"))),
    ("05:leaky_bptt", "b_h left out of the recomputed A_t",
     _edit(_LEAKY, ("A = W_xh[X[:, t]] + prev[t] @ W_hh + b_h", "A = W_xh[X[:, t]] + prev[t] @ W_hh"))),
    ("05:leaky_bptt", "direct path carries the old carry, not dH (the output's gradient skips it)",
     _edit(_LEAKY, ("carry = (1 - alpha) * dH", "carry = (1 - alpha) * carry"))),
    ("05:leaky_bptt", "gradient from later steps dropped (truncated to one step)",
     _edit(_LEAKY, ("dH = dO[t] @ W_hq.T + carry", "dH = dO[t] @ W_hq.T"))),
    ("05:leaky_bptt", "X indexed X[t] (time axis taken as the first)",
     _edit(_LEAKY, ("X[:, t]", "X[t]", 2))),
    ("05:leaky_bptt", "tanh's slope of A_t (1 - tanh(A)^2) instead of ReLU's",
     _edit(_LEAKY, ("dA = alpha * dH * (A > 0).to(dH.dtype)", "dA = alpha * dH * (1 - torch.tanh(A) ** 2)"))),
    ("05:leaky_bptt",
     "loop stops before the first step (range(T - 1, 0, -1)): step 1's gradients and the last product "
     "into d_state are missing",
     _edit(_LEAKY, ("    for t in range(T - 1, -1, -1):", "    for t in range(T - 1, 0, -1):"))),
]

CORRECT += [
    ("05:leaky_bptt", "one-hot matrix for dW_xh, relu mask from sign of A, gradients summed after the loop",
     """import torch
import torch.nn.functional as F


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    steps, batch, hid = hiddens.shape
    H_prev_all = torch.cat((state[None], hiddens[:-1]), dim=0)
    from_out = torch.einsum("sbv,hv->sbh", d_outputs.view(steps, batch, -1), W_hq)
    dAs = [None] * steps
    g = torch.zeros(batch, hid, dtype=hiddens.dtype)
    for s in reversed(range(steps)):
        pre = W_xh[X[:, s]] + H_prev_all[s] @ W_hh + b_h
        total = from_out[s] + g
        dA = total * torch.where(pre > 0, alpha, 0.0)
        dAs[s] = dA
        g = total * (1 - alpha) + dA @ W_hh.t()
    dA_all = torch.stack(dAs)
    onehots = F.one_hot(X.T, W_xh.shape[0]).to(hiddens.dtype)
    dW_xh = torch.einsum("sbv,sbh->vh", onehots, dA_all)
    dW_hh = torch.einsum("sbi,sbj->ij", H_prev_all, dA_all)
    return dW_xh, dW_hh, dA_all.sum((0, 1)), g
"""),
]


# ---------------------------------------------------------------- 06: my_clip

_MY_CLIP = """def my_clip(grads, theta):
    total = sum(float(g.pow(2).sum()) for g in grads) ** 0.5
    factor = min(1.0, theta / total) if total > 0 else 1.0
    return [g * factor for g in grads]
"""

WRONG += [
    ("06:clip_function", "each tensor clipped by its own norm instead of the joint norm",
     """def my_clip(grads, theta):
    out = []
    for g in grads:
        norm = float(g.norm())
        out.append(g * min(1.0, theta / norm) if norm > 0 else g.clone())
    return out
"""),
    ("06:clip_function", "joint norm taken as the sum of the tensors' norms",
     _edit(_MY_CLIP, ("total = sum(float(g.pow(2).sum()) for g in grads) ** 0.5",
                      "total = sum(float(g.norm()) for g in grads)"))),
    ("06:clip_function", "square root forgotten: the squared norm compared with theta",
     _edit(_MY_CLIP, (" ** 0.5", ""))),
    ("06:clip_function", "always scales by theta / norm (small gradients are scaled up)",
     _edit(_MY_CLIP, ("min(1.0, theta / total)", "theta / total"))),
    ("06:clip_function", "no guard for all-zero gradients: divides by a zero norm",
     _edit(_MY_CLIP, ("factor = min(1.0, theta / total) if total > 0 else 1.0",
                      "factor = min(1.0, theta / total)"))),
    ("06:clip_function", "scales the caller's tensors in place with mul_ (right values, inputs changed)",
     _edit(_MY_CLIP, ("return [g * factor for g in grads]", "return [g.mul_(factor) for g in grads]"))),
    ("06:clip_function",
     "returns the caller's own tensors when below theta (the exercise asks for new tensors)",
     """def my_clip(grads, theta):
    total = sum(float((g * g).sum()) for g in grads) ** 0.5
    if total <= theta:
        return grads
    return [g * (theta / total) for g in grads]
"""),
    ("06:clip_function", "max instead of min: gradients below theta are stretched to theta",
     _edit(_MY_CLIP, ("min(1.0, theta / total)", "max(1.0, theta / total)"))),
    ("06:clip_function",
     "torch's clip_grad_norm_ on copies (the route the exercise forbids; right numbers)", """import torch


def my_clip(grads, theta):
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_norm_(params, theta)
    return [p.grad for p in params]
"""),
    ("06:clip_function", "clips every entry to [-theta, theta] (value clipping)", """import torch


def my_clip(grads, theta):
    return [torch.clamp(g, -theta, theta) for g in grads]
"""),
    ("06:clip_function", "L1 norm (sum of absolute values) instead of the Euclidean norm",
     _edit(_MY_CLIP, ("total = sum(float(g.pow(2).sum()) for g in grads) ** 0.5",
                      "total = sum(float(g.abs().sum()) for g in grads)"))),
    ("06:clip_function", "factor inverted: multiplies by norm / theta when the norm is too large",
     _edit(_MY_CLIP, ("min(1.0, theta / total)", "(total / theta if total > theta else 1.0)"))),
    ("06:clip_function", "returns (clipped, norm) as the capstone's clip does, not the list",
     _edit(_MY_CLIP, ("return [g * factor for g in grads]", "return [g * factor for g in grads], total"))),
]

CORRECT += [
    ("06:clip_function", "linalg.vector_norm of the flattened gradients, torch.clamp on the factor",
     """import torch


def my_clip(grads, theta):
    flat = torch.cat([g.reshape(-1) for g in grads])
    norm = torch.linalg.vector_norm(flat)
    scale = torch.clamp(theta / (norm + 1e-12), max=1.0)
    return [g * scale for g in grads]
"""),
]


# ---------------------------------------------------------------- 07: perplexity_function

_PPL7 = """import math


def perplexity(logits, targets):
    m = logits.max(dim=1, keepdim=True).values
    lse = (logits - m).exp().sum(dim=1).log() + m.squeeze(1)
    picked = logits.gather(1, targets[:, None]).squeeze(1)
    return math.exp((lse - picked).mean().item())
"""

WRONG += [
    ("07:perplexity_function", "log-sum-exp without subtracting the max: overflows for logits near 1000",
     _edit(_PPL7,
           ("    m = logits.max(dim=1, keepdim=True).values\n"
            "    lse = (logits - m).exp().sum(dim=1).log() + m.squeeze(1)\n",
                   "    lse = logits.exp().sum(dim=1).log()\n"))),
    ("07:perplexity_function", "exp of the summed cross-entropy, not the mean",
     _edit(_PPL7, ("(lse - picked).mean()", "(lse - picked).sum()"))),
    ("07:perplexity_function", "mean of the per-token perplexities instead of exp of the mean",
     _edit(_PPL7, ("return math.exp((lse - picked).mean().item())",
                   "return (lse - picked).exp().mean().item()"))),
    ("07:perplexity_function", "2 to the power of a cross-entropy in nats",
     _edit(_PPL7, ("return math.exp((lse - picked).mean().item())",
                   "return 2 ** (lse - picked).mean().item()"))),
    ("07:perplexity_function", "sign flipped: exp of the mean log-probability (1 / perplexity)",
     _edit(_PPL7, ("(lse - picked)", "(picked - lse)"))),
    ("07:perplexity_function", "the max subtracted but not added back to the log-sum-exp",
     _edit(_PPL7, (".log() + m.squeeze(1)", ".log()"))),
    ("07:perplexity_function", "softmax normalised over the rows (dim=0)",
     _edit(_PPL7, ("logits.max(dim=1, keepdim=True)", "logits.max(dim=0, keepdim=True)"), (".sum(dim=1)",
                                                                                           ".sum(dim=0)"),
           ("m.squeeze(1)", "m.squeeze(0)"))),
    ("07:perplexity_function", "returns the cross-entropy (nats), not its exp",
     _edit(_PPL7, ("return math.exp((lse - picked).mean().item())", "return (lse - picked).mean().item()"))),
    ("07:perplexity_function", "F.cross_entropy (the route the exercise forbids; right numbers)",
     """import math

import torch.nn.functional as F


def perplexity(logits, targets):
    return math.exp(F.cross_entropy(logits, targets).item())
"""),
    ("07:perplexity_function", "1 / mean probability of the targets instead of exp of the mean -log p",
     """import torch


def perplexity(logits, targets):
    p = torch.softmax(logits, dim=1)
    return 1.0 / p[torch.arange(len(targets)), targets].mean().item()
"""),
    ("07:perplexity_function", "returns a 0-d tensor, not a Python number", """import torch


def perplexity(logits, targets):
    log_p = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    return torch.exp(-log_p[torch.arange(len(targets)), targets].mean())
"""),
    ("07:perplexity_function", "averages -log softmax over every class, not only the target's",
     _edit(_PPL7, ("return math.exp((lse - picked).mean().item())",
                   "return math.exp((lse[:, None] - logits).mean().item())"))),
    ("07:perplexity_function", "targets shifted by one more step: row i scored against targets[i + 1]",
     _edit(_PPL7, ("picked = logits.gather(1, targets[:, None]).squeeze(1)",
                   "picked = logits[:-1].gather(1, targets[1:, None]).squeeze(1)"),
           ("(lse - picked)", "(lse[:-1] - picked)"))),
    ("07:perplexity_function", "exp of the entropy of the predictions (targets never used)", """import math

import torch


def perplexity(logits, targets):
    log_p = torch.log_softmax(logits, dim=1)
    entropy = -(log_p.exp() * log_p).sum(dim=1)
    return math.exp(entropy.mean().item())
"""),
    ("07:perplexity_function",
     "log of softmax computed as log(exp(z) / sum exp(z)): nan/inf for large logits", """import math

import torch


def perplexity(logits, targets):
    e = torch.exp(logits)
    p = e / e.sum(dim=1, keepdim=True)
    return math.exp(-torch.log(p[torch.arange(len(targets)), targets]).mean().item())
"""),
    ("07:perplexity_function",
     "picks the target logit with targets as the row index (logits[targets, arange])", """import math

import torch


def perplexity(logits, targets):
    lse = torch.logsumexp(logits, dim=1)
    picked = logits[targets, torch.arange(len(targets))]
    return math.exp((lse - picked).mean().item())
"""),
    ("07:perplexity_function", "logits divided by their max as 'stabilisation' (changes the softmax)",
     _edit(_PPL7,
           ("    m = logits.max(dim=1, keepdim=True).values\n"
            "    lse = (logits - m).exp().sum(dim=1).log() + m.squeeze(1)\n"
            "    picked = logits.gather(1, targets[:, None]).squeeze(1)\n",
                   "    z = logits / logits.abs().max()\n"
                   "    lse = z.exp().sum(dim=1).log()\n"
                   "    picked = z.gather(1, targets[:, None]).squeeze(1)\n"))),
]

CORRECT += [
    ("07:perplexity_function", "torch.logsumexp and a one-hot mask, float of a 0-d tensor", """import math

import torch


def perplexity(logits, targets):
    mask = torch.zeros_like(logits, dtype=torch.bool)
    mask[torch.arange(logits.shape[0]), targets] = True
    nll = torch.logsumexp(logits, dim=-1) - logits[mask]
    return math.exp(float(nll.sum()) / logits.shape[0])
"""),
    ("07:perplexity_function", "a loop over the rows with a max-shifted log-sum-exp", """import math


def perplexity(logits, targets):
    total = 0.0
    for row, y in zip(logits.tolist(), targets.tolist()):
        top = max(row)
        total += top + math.log(sum(math.exp(v - top) for v in row)) - row[y]
    return math.exp(total / len(targets))
"""),
]


# ---------------------------------------------------------------- 07: kn_bigram

_KN = """def kn_bigram(text, context, char, discount=0.75):
    bigrams = {}
    for a, b in zip(text[:-1], text[1:]):
        bigrams[(a, b)] = bigrams.get((a, b), 0) + 1
    p_cont = len([1 for (a, b) in bigrams if b == char]) / len(bigrams)
    c_a = sum(n for (a, b), n in bigrams.items() if a == context)
    if c_a == 0:
        return p_cont
    T_a = len([1 for (a, b) in bigrams if a == context])
    c_ab = bigrams.get((context, char), 0)
    return max(c_ab - discount, 0) / c_a + discount * T_a / c_a * p_cont
"""

WRONG += [
    ("07:kn_bigram", "plain unigram frequency instead of the continuation probability",
     _edit(_KN, ("p_cont = len([1 for (a, b) in bigrams if b == char]) / len(bigrams)",
                 "p_cont = text.count(char) / len(text)"))),
    ("07:kn_bigram", "continuation counts pair tokens, not distinct preceding characters",
     _edit(_KN, ("p_cont = len([1 for (a, b) in bigrams if b == char]) / len(bigrams)",
                 "p_cont = sum(n for (a, b), n in bigrams.items() if b == char) / sum(bigrams.values())"))),
    ("07:kn_bigram", "N1+(..) taken as the number of distinct characters, not of distinct pairs",
     _edit(_KN, ("/ len(bigrams)", "/ len(set(text))"))),
    ("07:kn_bigram", "T(a) counts the pairs starting with a (tokens), not the distinct followers",
     _edit(_KN, ("T_a = len([1 for (a, b) in bigrams if a == context])", "T_a = c_a"))),
    ("07:kn_bigram", "max(., 0) forgotten: an unseen pair gets a negative discounted count",
     _edit(_KN, ("max(c_ab - discount, 0)", "(c_ab - discount)"))),
    ("07:kn_bigram", "discount missing from the interpolation weight",
     _edit(_KN, ("+ discount * T_a / c_a * p_cont", "+ T_a / c_a * p_cont"))),
    ("07:kn_bigram", "a context never followed by anything gets 0",
     _edit(_KN, ("    if c_a == 0:\n        return p_cont\n", "    if c_a == 0:\n        return 0.0\n"))),
    ("07:kn_bigram", "a context never followed by anything gets the uniform 1/|V|",
     _edit(_KN, ("    if c_a == 0:\n        return p_cont\n",
                 "    if c_a == 0:\n        return 1 / len(set(text))\n"))),
    ("07:kn_bigram", "pairs made with zip(text, text): every character paired with itself",
     _edit(_KN, ("zip(text[:-1], text[1:])", "zip(text, text)"))),
    ("07:kn_bigram", "pairs wrap around the end of the text (last character followed by the first)",
     _edit(_KN, ("zip(text[:-1], text[1:])", "zip(text, text[1:] + text[0])"))),
    ("07:kn_bigram", "c(a.) counted as the occurrences of a in the text (the last character has no follower)",
     _edit(_KN, ("c_a = sum(n for (a, b), n in bigrams.items() if a == context)",
                 "c_a = text.count(context)"))),
    ("07:kn_bigram", "continuation probability of the context instead of the predicted character",
     _edit(_KN, ("if b == char]) / len(bigrams)", "if b == context]) / len(bigrams)"))),
    ("07:kn_bigram", "T(a) counts the distinct characters before a instead of after it",
     _edit(_KN, ("T_a = len([1 for (a, b) in bigrams if a == context])",
                 "T_a = len([1 for (a, b) in bigrams if b == context])"))),
    ("07:kn_bigram", "the discount also taken off the denominator c(a.)",
     _edit(_KN, ("return max(c_ab - discount, 0) / c_a + discount * T_a / c_a * p_cont",
                 "return max(c_ab - discount, 0) / (c_a - discount)"
                 " + discount * T_a / (c_a - discount) * p_cont"))),
    ("07:kn_bigram", "backs off instead of interpolating: the lower order only for unseen pairs",
     _edit(_KN, ("return max(c_ab - discount, 0) / c_a + discount * T_a / c_a * p_cont",
                 "if c_ab > 0:\n"
                 "        return (c_ab - discount) / c_a\n"
                 "    return discount * T_a / c_a * p_cont"))),
    ("07:kn_bigram", "the discount argument ignored: 0.75 written in the body",
     _edit(_KN, ("return max(c_ab - discount, 0) / c_a + discount * T_a / c_a * p_cont",
                 "return max(c_ab - 0.75, 0) / c_a + 0.75 * T_a / c_a * p_cont"))),
    ("07:kn_bigram", "pair looked up the other way round: c(char, context)",
     _edit(_KN, ("bigrams.get((context, char), 0)", "bigrams.get((char, context), 0)"))),
    ("07:kn_bigram", "N1+(..) taken as the number of pair tokens len(text) - 1",
     _edit(_KN, ("/ len(bigrams)", "/ (len(text) - 1)"))),
    ("07:kn_bigram", "no guard for a context never followed: divides by zero",
     _edit(_KN, ("    if c_a == 0:\n        return p_cont\n", ""))),
    ("07:kn_bigram",
     "interpolation weight uses the number of distinct characters in the text instead of T(a)",
     _edit(_KN, ("discount * T_a / c_a", "discount * len(set(text)) / c_a"))),
]

CORRECT += [
    ("07:kn_bigram", "Counter of pairs, sets of followers and preceders", """from collections import Counter


def kn_bigram(text, context, char, discount=0.75):
    pair_counts = Counter(text[i:i + 2] for i in range(len(text) - 1))
    preceders = {pair[0] for pair in pair_counts if pair[1] == char}
    lower = len(preceders) / len(pair_counts)
    followers = {pair[1]: n for pair, n in pair_counts.items() if pair[0] == context}
    seen = sum(followers.values())
    if not seen:
        return lower
    gamma = discount * len(followers) / seen
    return max(followers.get(char, 0) - discount, 0) / seen + gamma * lower
"""),
    ("07:kn_bigram", "explicit loops and a missing-mass variable",
     """def kn_bigram(text, context, char, discount=0.75):
    pairs = set()
    count_ab = 0
    count_a = 0
    for i in range(1, len(text)):
        pairs.add((text[i - 1], text[i]))
        if text[i - 1] == context:
            count_a += 1
            if text[i] == char:
                count_ab += 1
    continuation = sum(1 for p in pairs if p[1] == char) / len(pairs)
    if count_a == 0:
        return continuation
    kinds = sum(1 for p in pairs if p[0] == context)
    left_over = discount * kinds / count_a
    return max(count_ab - discount, 0.0) / count_a + left_over * continuation
"""),
]


# ---------------------------------------------------------------- 08: minibatches

_MINI = """def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X = indices[:L * batch_size].view(batch_size, L)
    Y = indices[1:L * batch_size + 1].view(batch_size, L)
    for k in range(L // num_steps):
        s = k * num_steps
        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]
"""

WRONG += [
    ("08:minibatches", "a last, shorter minibatch with the leftover steps (remainder not dropped)",
     _edit(_MINI, ("range(L // num_steps)", "range(-(-L // num_steps))"))),
    ("08:minibatches", "targets not shifted: Y equals X",
     _edit(_MINI, ("indices[1:L * batch_size + 1]", "indices[:L * batch_size]"))),
    ("08:minibatches", "streams interleaved: view(L, batch_size).T (column-major)",
     _edit(_MINI, (".view(batch_size, L)", ".view(L, batch_size).T", 2))),
    ("08:minibatches", "stream length without the - 1 (Y runs off the end when the text divides evenly)",
     _edit(_MINI, ("L = (len(indices) - 1) // batch_size", "L = len(indices) // batch_size"))),
    ("08:minibatches", "one minibatch too few (range(L // num_steps - 1))",
     _edit(_MINI, ("range(L // num_steps)", "range(L // num_steps - 1)"))),
    ("08:minibatches", "random-partitioning layout: rows are consecutive chunks of the text",
     """def minibatches(indices, batch_size, num_steps):
    n = (len(indices) - 1) // num_steps
    X = indices[:n * num_steps].reshape(n, num_steps)
    Y = indices[1:n * num_steps + 1].reshape(n, num_steps)
    for i in range(0, n - batch_size + 1, batch_size):
        yield X[i:i + batch_size], Y[i:i + batch_size]
"""),
    ("08:minibatches", "windows move one step at a time (overlapping minibatches)",
     _edit(_MINI, ("    for k in range(L // num_steps):\n        s = k * num_steps\n",
                   "    for s in range(L - num_steps + 1):\n"))),
    ("08:minibatches",
     "Y made by rolling X within each row: each stream's last target is its own first token", """import torch


def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X = indices[:L * batch_size].view(batch_size, L)
    Y = torch.roll(X, shifts=-1, dims=1)
    for s in range(0, L - num_steps + 1, num_steps):
        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]
"""),
    ("08:minibatches", "yields (Y, X): inputs and targets swapped",
     _edit(_MINI, ("yield X[:, s:s + num_steps], Y[:, s:s + num_steps]",
                   "yield Y[:, s:s + num_steps], X[:, s:s + num_steps]"))),
    ("08:minibatches", "minibatches transposed to (steps, batch)",
     _edit(_MINI, ("yield X[:, s:s + num_steps], Y[:, s:s + num_steps]",
                   "yield X[:, s:s + num_steps].T, Y[:, s:s + num_steps].T"))),
    ("08:minibatches", "a random offset as in notebook 03 (the capstone starts at offset 0)", """import random


def minibatches(indices, batch_size, num_steps):
    offset = random.randrange(num_steps)
    L = (len(indices) - offset - 1) // batch_size
    X = indices[offset:offset + L * batch_size].view(batch_size, L)
    Y = indices[offset + 1:offset + 1 + L * batch_size].view(batch_size, L)
    for k in range(L // num_steps):
        yield X[:, k * num_steps:(k + 1) * num_steps], Y[:, k * num_steps:(k + 1) * num_steps]
"""),
    ("08:minibatches", "the remainder dropped from the start of the text instead of the end",
     """def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    start = len(indices) - 1 - L * batch_size
    X = indices[start:start + L * batch_size].view(batch_size, L)
    Y = indices[start + 1:].view(batch_size, L)
    for k in range(L // num_steps):
        s = k * num_steps
        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]
"""),
    ("08:minibatches", "return instead of yield in the loop: a single (X, Y) pair, not a generator",
     _edit(_MINI, ("        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]",
                   "        return X[:, s:s + num_steps], Y[:, s:s + num_steps]"))),
    ("08:minibatches", "num_steps streams instead of batch_size (the two sizes confused)",
     _edit(_MINI,
           ("    L = (len(indices) - 1) // batch_size\n"
            "    X = indices[:L * batch_size].view(batch_size, L)\n"
            "    Y = indices[1:L * batch_size + 1].view(batch_size, L)\n"
            "    for k in range(L // num_steps):\n"
            "        s = k * num_steps\n"
            "        yield X[:, s:s + num_steps], Y[:, s:s + num_steps]",
                   "    L = (len(indices) - 1) // num_steps\n"
                   "    X = indices[:L * num_steps].view(num_steps, L)\n"
                   "    Y = indices[1:L * num_steps + 1].view(num_steps, L)\n"
                   "    for k in range(L // batch_size):\n"
                   "        s = k * batch_size\n"
                   "        yield X[:, s:s + batch_size], Y[:, s:s + batch_size]"))),
    ("08:minibatches", "tokens converted to float",
     _edit(_MINI, ("yield X[:, s:s + num_steps], Y[:, s:s + num_steps]",
                   "yield X[:, s:s + num_steps].float(), Y[:, s:s + num_steps].float()"))),
    ("08:minibatches",
     "stream length len // batch_size - 1 (one too short when the text does not divide evenly)",
     _edit(_MINI, ("L = (len(indices) - 1) // batch_size", "L = len(indices) // batch_size - 1"))),
]

CORRECT += [
    ("08:minibatches", "torch.split of the streams, the short last piece skipped", """import torch


def minibatches(indices, batch_size, num_steps):
    per_row = (indices.numel() - 1) // batch_size
    xs = indices.narrow(0, 0, per_row * batch_size).reshape(batch_size, -1)
    ys = indices.narrow(0, 1, per_row * batch_size).reshape(batch_size, -1)
    for x, y in zip(torch.split(xs, num_steps, 1), torch.split(ys, num_steps, 1)):
        if x.shape[1] == num_steps:
            yield x, y
"""),
]


# ---------------------------------------------------------------- 08: forward

_FWD = """import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state
    hs = []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)
        hs.append(H)
    hiddens = torch.stack(hs)
    outputs = torch.cat([h @ W_hq + b_q for h in hs])
    return outputs, hiddens
"""

WRONG += [
    ("08:forward", "outputs batch-major (the steps of sequence 1 first)",
     _edit(_FWD, ("outputs = torch.cat([h @ W_hq + b_q for h in hs])",
                  "outputs = torch.stack([h @ W_hq + b_q for h in hs], dim=1).reshape(-1, W_hq.shape[1])"))),
    ("08:forward", "W_hh transposed",
     _edit(_FWD, ("H @ W_hh", "H @ W_hh.T"))),
    ("08:forward", "output bias b_q left out",
     _edit(_FWD, ("h @ W_hq + b_q", "h @ W_hq"))),
    ("08:forward", "hidden bias b_h left out",
     _edit(_FWD, (" + b_h)", ")"))),
    ("08:forward", "hiddens hold H_0 ... H_{T-1} (state kept, H_T dropped)",
     _edit(_FWD, ("hiddens = torch.stack(hs)", "hiddens = torch.stack([state] + hs[:-1])"))),
    ("08:forward", "returns the last state instead of every state",
     _edit(_FWD, ("return outputs, hiddens", "return outputs, H"))),
    ("08:forward", "state ignored: starts from zeros",
     _edit(_FWD, ("H = state", "H = torch.zeros_like(state)"))),
    ("08:forward", "softmax applied to the outputs (probabilities instead of logits)",
     _edit(_FWD, ("return outputs, hiddens", "return torch.softmax(outputs, dim=1), hiddens"))),
    ("08:forward", "hiddens stacked on axis 1: (batch, steps, hiddens)",
     _edit(_FWD, ("hiddens = torch.stack(hs)", "hiddens = torch.stack(hs, dim=1)"))),
    ("08:forward", "params unpacked in another order (W_xh, W_hh, W_hq, b_h, b_q)",
     _edit(_FWD, ("W_xh, W_hh, b_h, W_hq, b_q = params", "W_xh, W_hh, W_hq, b_h, b_q = params"))),
    ("08:forward", "X indexed X[t]: batch axis taken as time",
     _edit(_FWD, ("W_xh[X[:, t]]", "W_xh[X[t]]"))),
    ("08:forward", "ReLU instead of tanh",
     _edit(_FWD, ("torch.tanh(", "torch.relu("))),
    ("08:forward", "returns (hiddens, outputs): the pair in the wrong order",
     _edit(_FWD, ("return outputs, hiddens", "return hiddens, outputs"))),
    ("08:forward", "outputs computed from the pre-activations (before tanh)", """import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state
    hs, pre = [], []
    for t in range(X.shape[1]):
        A = W_xh[X[:, t]] + H @ W_hh + b_h
        H = torch.tanh(A)
        hs.append(H)
        pre.append(A)
    return torch.cat([a @ W_hq + b_q for a in pre]), torch.stack(hs)
"""),
    ("08:forward", "columns of W_xh picked instead of rows",
     _edit(_FWD, ("W_xh[X[:, t]]", "W_xh[:, X[:, t]].T"))),
    ("08:forward", "tanh applied to the outputs too",
     _edit(_FWD, ("h @ W_hq + b_q", "torch.tanh(h @ W_hq + b_q)"))),
]

CORRECT += [
    ("08:forward", "inputs looked up before the loop, outputs by einsum after it", """import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    terms = W_xh[X.t()] + b_h
    states = []
    H = state
    for x in terms:
        H = torch.tanh(x + H @ W_hh)
        states.append(H)
    hiddens = torch.stack(states)
    logits = torch.einsum("tbh,hv->tbv", hiddens, W_hq) + b_q
    return logits.reshape(-1, W_hq.shape[1]), hiddens
"""),
    ("08:forward", "one-hot product per step, states written into a preallocated tensor", """import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    n, T = X.shape
    V, h = W_xh.shape
    hiddens = state.new_empty(T, n, h)
    H = state
    for t in range(T):
        onehot = torch.zeros(n, V, dtype=W_xh.dtype)
        onehot[torch.arange(n), X[:, t]] = 1.0
        H = torch.tanh(onehot @ W_xh + H @ W_hh + b_h)
        hiddens[t] = H
    outputs = torch.addmm(b_q, hiddens.reshape(T * n, h), W_hq)
    return outputs, hiddens
"""),
]


# ---------------------------------------------------------------- 08: loss_and_grad

_LOSS = """import torch


def loss_and_grad(outputs, Y):
    y = Y.t().flatten()
    z = outputs - outputs.max(1, keepdim=True)[0]
    logp = z - z.exp().sum(1, keepdim=True).log()
    idx = torch.arange(y.numel())
    loss = -logp[idx, y].mean()
    g = logp.exp()
    g[idx, y] = g[idx, y] - 1
    return loss, g / y.numel()
"""

WRONG += [
    ("08:loss_and_grad", "targets flattened batch-major (Y.flatten()) against step-major rows",
     _edit(_LOSS, ("y = Y.t().flatten()", "y = Y.flatten()"))),
    ("08:loss_and_grad", "no max shift: overflows for large logits",
     _edit(_LOSS, ("z = outputs - outputs.max(1, keepdim=True)[0]", "z = outputs"))),
    ("08:loss_and_grad", "gradient not divided by the number of predictions",
     _edit(_LOSS, ("return loss, g / y.numel()", "return loss, g"))),
    ("08:loss_and_grad", "gradient divided by the batch size instead of steps * batch",
     _edit(_LOSS, ("return loss, g / y.numel()", "return loss, g / Y.shape[0]"))),
    ("08:loss_and_grad", "gradient sign flipped (one-hot minus softmax)",
     _edit(_LOSS, ("return loss, g / y.numel()", "return loss, -g / y.numel()"))),
    ("08:loss_and_grad", "gradient is the softmax alone (the one-hot never subtracted)",
     _edit(_LOSS, ("    g[idx, y] = g[idx, y] - 1\n", ""))),
    ("08:loss_and_grad", "loss summed over the predictions, not averaged",
     _edit(_LOSS, ("loss = -logp[idx, y].mean()", "loss = -logp[idx, y].sum()"))),
    ("08:loss_and_grad", "loss in bits (log base 2)",
     _edit(_LOSS, ("loss = -logp[idx, y].mean()",
                   "loss = -logp[idx, y].mean() / torch.log(torch.tensor(2.0))"))),
    ("08:loss_and_grad", "returns (d_outputs, loss): the pair in the wrong order",
     _edit(_LOSS, ("return loss, g / y.numel()", "return g / y.numel(), loss"))),
    ("08:loss_and_grad", "logits used in place of the softmax in the gradient",
     _edit(_LOSS, ("g = logp.exp()", "g = outputs.clone()"))),
    ("08:loss_and_grad", "softmax normalised over the rows (dim 0)",
     _edit(_LOSS, ("outputs.max(1, keepdim=True)", "outputs.max(0, keepdim=True)"),
           ("z.exp().sum(1, keepdim=True)", "z.exp().sum(0, keepdim=True)"))),
    ("08:loss_and_grad", "gradient from the unnormalised exp(z) instead of the softmax",
     _edit(_LOSS, ("g = logp.exp()", "g = z.exp()"))),
    ("08:loss_and_grad", "max subtracted from the caller's outputs in place (right values, outputs changed)",
     _edit(_LOSS, ("    z = outputs - outputs.max(1, keepdim=True)[0]\n",
                   "    outputs -= outputs.max(1, keepdim=True)[0]\n    z = outputs\n"))),
    ("08:loss_and_grad", "gradient divided by every entry of outputs (N * |V|) instead of N",
     _edit(_LOSS, ("return loss, g / y.numel()", "return loss, g / outputs.numel()"))),
    ("08:loss_and_grad", "gradient's one-hot from batch-major targets (the loss uses the right ones)",
     _edit(_LOSS, ("g[idx, y] = g[idx, y] - 1", "g[idx, Y.flatten()] = g[idx, Y.flatten()] - 1"))),
    ("08:loss_and_grad", "gradient built from the log-softmax instead of the softmax",
     _edit(_LOSS, ("g = logp.exp()", "g = logp.clone()"))),
]

CORRECT += [
    ("08:loss_and_grad", "logsumexp and a one-hot built with scatter", """import torch


def loss_and_grad(outputs, Y):
    targets = Y.transpose(0, 1).reshape(-1, 1)
    log_z = torch.logsumexp(outputs, dim=1, keepdim=True)
    log_p = outputs - log_z
    N = targets.shape[0]
    loss = -log_p.gather(1, targets).sum() / N
    onehot = torch.zeros_like(outputs).scatter_(1, targets, 1.0)
    return loss, (torch.exp(log_p) - onehot) / N
"""),
]


# ---------------------------------------------------------------- 08: backward

_BWD = """import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T, n, h = hiddens.shape
    flat = hiddens.reshape(T * n, h)
    dW_hq = flat.T @ d_outputs
    db_q = d_outputs.sum(dim=0)
    dH_out = (d_outputs @ W_hq.T).view(T, n, h)
    dW_xh = torch.zeros_like(W_xh)
    dW_hh = torch.zeros_like(W_hh)
    db_h = torch.zeros_like(b_h)
    dH = d_final
    for t in reversed(range(T)):
        H_prev = hiddens[t - 1] if t > 0 else state
        dA = (dH + dH_out[t]) * (1 - hiddens[t] * hiddens[t])
        dW_xh.index_add_(0, X[:, t], dA)
        dW_hh += H_prev.T @ dA
        db_h += dA.sum(dim=0)
        dH = dA @ W_hh.T
    return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH
"""

WRONG += [
    ("08:backward", "d_final ignored: the walk back starts from zero",
     _edit(_BWD, ("dH = d_final", "dH = torch.zeros_like(state)"))),
    ("08:backward", "tanh's slope taken as 1 - tanh(H)^2 (tanh applied to H again)",
     _edit(_BWD, ("(1 - hiddens[t] * hiddens[t])", "(1 - torch.tanh(hiddens[t]) ** 2)"))),
    ("08:backward", "off by one in time: H_t used as the previous state",
     _edit(_BWD, ("H_prev = hiddens[t - 1] if t > 0 else state", "H_prev = hiddens[t]"))),
    ("08:backward", "H_prev = hiddens[t - 1] also at t = 0 (Python wraps to H_T instead of using state)",
     _edit(_BWD, ("H_prev = hiddens[t - 1] if t > 0 else state", "H_prev = hiddens[t - 1]"))),
    ("08:backward", "dW_hh transposed: dA^T H_{t-1}",
     _edit(_BWD, ("dW_hh += H_prev.T @ dA", "dW_hh += dA.T @ H_prev"))),
    ("08:backward", "W_hh not transposed when passing the gradient back",
     _edit(_BWD, ("dH = dA @ W_hh.T", "dH = dA @ W_hh"))),
    ("08:backward", "dW_xh by indexed += (repeated tokens in a step add only once)",
     _edit(_BWD, ("dW_xh.index_add_(0, X[:, t], dA)", "dW_xh[X[:, t]] += dA"))),
    ("08:backward", "dW_hq transposed: d_outputs^T H",
     _edit(_BWD, ("dW_hq = flat.T @ d_outputs", "dW_hq = d_outputs.T @ flat"))),
    ("08:backward", "db_q averaged over the rows instead of summed",
     _edit(_BWD, ("db_q = d_outputs.sum(dim=0)", "db_q = d_outputs.mean(dim=0)"))),
    ("08:backward", "the outputs' gradient reshaped batch-major",
     _edit(_BWD, ("dH_out = (d_outputs @ W_hq.T).view(T, n, h)",
                  "dH_out = (d_outputs @ W_hq.T).view(n, T, h).transpose(0, 1)"))),
    ("08:backward", "returns the first step's dA (before the product with W_hh) as d_state",
     _edit(_BWD, ("return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH",
                  "return [dW_xh, dW_hh, db_h, dW_hq, db_q], dA"))),
    ("08:backward", "gradients returned in another order (dW_hq before db_h)",
     _edit(_BWD, ("return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH",
                  "return [dW_xh, dW_hh, dW_hq, db_h, db_q], dH"))),
    ("08:backward", "many-to-one habit: only the last step's output gradient enters the walk back",
     _edit(_BWD, ("    dH = d_final\n", "    dH = d_final + dH_out[-1]\n"), ("dA = (dH + dH_out[t])",
                                                                             "dA = dH"))),
    ("08:backward", "the product with W_hh^T forgotten: dA passed back as dH_{t-1}",
     _edit(_BWD, ("dH = dA @ W_hh.T", "dH = dA"))),
    ("08:backward", "the gradient passed back before tanh's slope: (dH + dH_out) W_hh^T",
     _edit(_BWD, ("dH = dA @ W_hh.T", "dH = (dH + dH_out[t]) @ W_hh.T"))),
    ("08:backward", "loop runs forward in time",
     _edit(_BWD, ("for t in reversed(range(T)):", "for t in range(T):"))),
    ("08:backward", "db_h sums the gradient before tanh's slope",
     _edit(_BWD, ("db_h += dA.sum(dim=0)", "db_h += (dH + dH_out[t]).sum(dim=0)"))),
    ("08:backward", "returns d_final unchanged as d_state",
     _edit(_BWD, ("return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH",
                  "return [dW_xh, dW_hh, db_h, dW_hq, db_q], d_final"))),
    ("08:backward", "X indexed X[t] in dW_xh (time axis taken as the first)",
     _edit(_BWD, ("index_add_(0, X[:, t], dA)", "index_add_(0, X[t], dA)"))),
    ("08:backward", "output weights paired with H_{t-1} instead of H_t in dW_hq",
     _edit(_BWD, ("flat = hiddens.reshape(T * n, h)",
                  "flat = torch.cat([state[None], hiddens[:-1]]).reshape(T * n, h)"))),
    ("08:backward", "db_q summed over the steps only: shape (batch, vocab)",
     _edit(_BWD, ("db_q = d_outputs.sum(dim=0)", "db_q = d_outputs.view(T, n, -1).sum(dim=0)"))),
    ("08:backward", "tanh's slope from the previous state: 1 - H_{t-1}^2",
     _edit(_BWD, ("(1 - hiddens[t] * hiddens[t])", "(1 - H_prev * H_prev)"))),
    ("08:backward", "dH accumulated across steps instead of replaced",
     _edit(_BWD, ("dH = dA @ W_hh.T", "dH = dH + dA @ W_hh.T"))),
]

CORRECT += [
    ("08:backward", "einsum for the weight gradients, one-hot product for dW_xh, all after the loop",
     """import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T, n, h = hiddens.shape
    V = W_xh.shape[0]
    d_out = d_outputs.view(T, n, -1)
    dW_hq = torch.einsum("tbh,tbv->hv", hiddens, d_out)
    db_q = d_out.sum(dim=(0, 1))
    prevs = torch.cat([state.unsqueeze(0), hiddens[:-1]], dim=0)
    dAs = torch.empty_like(hiddens)
    carry = d_final
    for t in range(T - 1, -1, -1):
        dA = (carry + d_out[t] @ W_hq.t()) * (1 - hiddens[t].pow(2))
        dAs[t] = dA
        carry = torch.mm(dA, W_hh.t())
    onehots = torch.zeros(T, n, V, dtype=hiddens.dtype)
    onehots.scatter_(2, X.t().unsqueeze(2), 1.0)
    dW_xh = torch.einsum("tbv,tbh->vh", onehots, dAs)
    dW_hh = torch.einsum("tbi,tbj->ij", prevs, dAs)
    return [dW_xh, dW_hh, dAs.sum(dim=(0, 1)), dW_hq, db_q], carry
"""),
]


# ---------------------------------------------------------------- 08: clip

_CLIP8 = """import torch


def clip(grads, theta):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()
    if norm > theta:
        return [g * (theta / norm) for g in grads], norm
    return [g.clone() for g in grads], norm
"""

WRONG += [
    ("08:clip", "returns the norm after clipping instead of the norm before", """import torch


def clip(grads, theta):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()
    if norm > theta:
        grads = [g * (theta / norm) for g in grads]
        norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()
    return [g.clone() for g in grads], norm
"""),
    ("08:clip", "each tensor clipped by its own norm", """def clip(grads, theta):
    norms = [float(g.norm()) for g in grads]
    total = sum(n * n for n in norms) ** 0.5
    return [g * min(1.0, theta / n) if n > 0 else g.clone() for g, n in zip(grads, norms)], total
"""),
    ("08:clip", "square root forgotten: the squared norm",
     _edit(_CLIP8, ("torch.sqrt(sum((g ** 2).sum() for g in grads)).item()",
                    "sum((g ** 2).sum() for g in grads).item()"))),
    ("08:clip", "joint norm taken as the sum of the tensors' norms",
     _edit(_CLIP8, ("torch.sqrt(sum((g ** 2).sum() for g in grads)).item()",
                    "sum(g.norm() for g in grads).item()"))),
    ("08:clip", "scales the caller's tensors in place with mul_ (right values, inputs changed)",
     _edit(_CLIP8, ("[g * (theta / norm) for g in grads]", "[g.mul_(theta / norm) for g in grads]"))),
    ("08:clip", "returns only the clipped list, not (clipped, norm)",
     _edit(_CLIP8, ("return [g * (theta / norm) for g in grads], norm",
                    "return [g * (theta / norm) for g in grads]"),
           ("return [g.clone() for g in grads], norm", "return [g.clone() for g in grads]"))),
    ("08:clip", "returns (norm, clipped): the pair in the wrong order",
     _edit(_CLIP8, ("return [g * (theta / norm) for g in grads], norm",
                    "return norm, [g * (theta / norm) for g in grads]"),
           ("return [g.clone() for g in grads], norm", "return norm, [g.clone() for g in grads]"))),
    ("08:clip", "always scales by theta / norm (small gradients scaled up)",
     _edit(_CLIP8,
           ("    if norm > theta:\n"
            "        return [g * (theta / norm) for g in grads], norm\n"
            "    return [g.clone() for g in grads], norm\n",
                    "    return [g * (theta / norm) for g in grads], norm\n"))),
    ("08:clip", "returns min(norm, theta) as the norm",
     _edit(_CLIP8, ("return [g * (theta / norm) for g in grads], norm",
                    "return [g * (theta / norm) for g in grads], theta"))),
    ("08:clip", "clips every entry to [-theta, theta] (value clipping)", """import torch


def clip(grads, theta):
    norm = float(torch.sqrt(sum(torch.sum(g * g) for g in grads)))
    return [g.clamp(-theta, theta) for g in grads], norm
"""),
    ("08:clip", "norm taken as the largest tensor norm instead of the joint norm",
     _edit(_CLIP8, ("torch.sqrt(sum((g ** 2).sum() for g in grads)).item()",
                    "max(float(g.norm()) for g in grads)"))),
    ("08:clip", "factor inverted: multiplies by norm / theta",
     _edit(_CLIP8, ("g * (theta / norm)", "g * (norm / theta)"))),
    ("08:clip", "root of the mean of squares instead of the sum",
     _edit(_CLIP8, ("torch.sqrt(sum((g ** 2).sum() for g in grads)).item()",
                    "torch.sqrt(sum((g ** 2).mean() for g in grads)).item()"))),
]

CORRECT += [
    ("08:clip", "linalg.vector_norm of the concatenated gradients, a factor clamped at 1", """import torch


def clip(grads, theta):
    total = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads])).item()
    factor = 1.0 if total <= theta else theta / total
    return [factor * g for g in grads], total
"""),
]


# ---------------------------------------------------------------- 08: sgd

_SGD = """def sgd(params, grads, lr):
    return [p - lr * g for p, g in zip(params, grads)]
"""

WRONG += [
    ("08:sgd", "gradient ascent: p + lr * g",
     _edit(_SGD, ("p - lr * g", "p + lr * g"))),
    ("08:sgd", "updates the caller's tensors in place and returns them (right values, inputs changed)",
     """def sgd(params, grads, lr):
    for p, g in zip(params, grads):
        p -= lr * g
    return params
"""),
    ("08:sgd", "learning rate forgotten: p - g",
     _edit(_SGD, ("p - lr * g", "p - g"))),
    ("08:sgd", "divides by the learning rate instead of multiplying",
     _edit(_SGD, ("p - lr * g", "p - g / lr"))),
    ("08:sgd", "returns the steps lr * g, not the new parameters",
     _edit(_SGD, ("p - lr * g", "lr * g"))),
    ("08:sgd", "biases never updated (only the matrices)",
     _edit(_SGD, ("[p - lr * g for p, g in zip(params, grads)]",
                  "[p - lr * g if p.dim() > 1 else p for p, g in zip(params, grads)]"))),
    ("08:sgd", "learning rate divided by the number of parameter tensors",
     _edit(_SGD, ("p - lr * g", "p - lr / len(params) * g"))),
    ("08:sgd", "adds an L2 weight decay nobody asked for",
     _edit(_SGD, ("p - lr * g", "p - lr * (g + 0.01 * p)"))),
    ("08:sgd", "returns (params, grads) instead of the new list",
     _edit(_SGD, ("return [p - lr * g for p, g in zip(params, grads)]",
                  "return [p - lr * g for p, g in zip(params, grads)], grads"))),
]

CORRECT += [
    ("08:sgd", "torch.sub with alpha in an index loop", """import torch


def sgd(params, grads, lr):
    updated = []
    for i in range(len(params)):
        updated.append(torch.sub(params[i], grads[i], alpha=lr))
    return updated
"""),
]


# ---------------------------------------------------------------- 08: perplexity

_PPL8 = """import torch


def perplexity(logits, targets):
    logp = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    nll = -logp[torch.arange(targets.shape[0]), targets]
    return float(torch.exp(nll.mean()))
"""

WRONG += [
    ("08:perplexity", "log-sum-exp over the rows (dim 0)",
     _edit(_PPL8, ("torch.logsumexp(logits, dim=1, keepdim=True)",
                   "torch.logsumexp(logits, dim=0, keepdim=True)"))),
    ("08:perplexity", "exp of the summed cross-entropy, not the mean",
     _edit(_PPL8, ("nll.mean()", "nll.sum()"))),
    ("08:perplexity", "log of the softmax: -inf for large logits",
     _edit(_PPL8, ("logp = logits - torch.logsumexp(logits, dim=1, keepdim=True)",
                   "logp = torch.log(torch.softmax(logits, dim=1))"))),
    ("08:perplexity", "one normaliser for the whole tensor (no dim: sum over every entry)",
     _edit(_PPL8, ("logp = logits - torch.logsumexp(logits, dim=1, keepdim=True)",
                   "logp = logits - logits.exp().sum().log()"))),
    ("08:perplexity", "returns the cross-entropy, not its exp",
     _edit(_PPL8, ("float(torch.exp(nll.mean()))", "float(nll.mean())"))),
    ("08:perplexity", "2 to the power of a cross-entropy in nats",
     _edit(_PPL8, ("float(torch.exp(nll.mean()))", "float(2 ** nll.mean())"))),
    ("08:perplexity", "mean of the per-token perplexities",
     _edit(_PPL8, ("float(torch.exp(nll.mean()))", "float(torch.exp(nll).mean())"))),
    ("08:perplexity", "logp[:, targets] picks an n x n block and averages all of it",
     _edit(_PPL8, ("-logp[torch.arange(targets.shape[0]), targets]", "-logp[:, targets]"))),
    ("08:perplexity", "1 / mean probability of the targets",
     _edit(_PPL8, ("float(torch.exp(nll.mean()))", "float(1 / torch.exp(-nll).mean())"))),
    ("08:perplexity", "returns a 0-d tensor, not a number",
     _edit(_PPL8, ("float(torch.exp(nll.mean()))", "torch.exp(nll.mean())"))),
    ("08:perplexity", "sign flipped: exp of the mean log-probability (1 / perplexity)",
     _edit(_PPL8, ("float(torch.exp(nll.mean()))", "float(torch.exp(-nll.mean()))"))),
    ("08:perplexity", "plain log-sum-exp without the max shift: inf for large logits",
     _edit(_PPL8, ("torch.logsumexp(logits, dim=1, keepdim=True)",
                   "torch.log(torch.exp(logits).sum(dim=1, keepdim=True))"))),
]

CORRECT += [
    ("08:perplexity", "max-shifted log-sum-exp by hand, gather, math.exp", """import math

import torch


def perplexity(logits, targets):
    shift = logits.amax(dim=1, keepdim=True)
    log_norm = (logits - shift).exp().sum(dim=1, keepdim=True).log() + shift
    true_logit = torch.gather(logits, 1, targets.view(-1, 1))
    return math.exp((log_norm - true_logit).mean().item())
"""),
]


# ---------------------------------------------------------------- 09: gru_cell

_GRU = """import torch


def gru_cell(X, H, params):
    p = params
    reset = torch.sigmoid(X @ p["W_xr"] + H @ p["W_hr"] + p["b_r"])
    update = torch.sigmoid(X @ p["W_xz"] + H @ p["W_hz"] + p["b_z"])
    hn = H @ p["W_hn"] + p["b_hn"]
    cand = torch.tanh(X @ p["W_xn"] + p["b_n"] + reset * hn)
    return update * H + (1 - update) * cand
"""

WRONG += [
    ("09:gru_cell", "update gate used the other way round (Z takes the candidate: Chung et al.'s convention)",
     _edit(_GRU, ("return update * H + (1 - update) * cand", "return (1 - update) * H + update * cand"))),
    ("09:gru_cell", "reset gate applied before the product: (R * H) W_hn (d2l's placement)",
     _edit(_GRU, ("hn = H @ p[\"W_hn\"] + p[\"b_hn\"]", "hn = (reset * H) @ p[\"W_hn\"] + p[\"b_hn\"]"),
           ("reset * hn)", "hn)"))),
    ("09:gru_cell", "b_hn added outside the reset gate",
     _edit(_GRU, ("hn = H @ p[\"W_hn\"] + p[\"b_hn\"]", "hn = H @ p[\"W_hn\"]"),
           ("p[\"b_n\"] + reset * hn", "p[\"b_n\"] + p[\"b_hn\"] + reset * hn"))),
    ("09:gru_cell", "b_hn left out",
     _edit(_GRU, ("hn = H @ p[\"W_hn\"] + p[\"b_hn\"]", "hn = H @ p[\"W_hn\"]"))),
    ("09:gru_cell", "reset and update gates swapped in their roles",
     _edit(_GRU, ("reset * hn", "update * hn"), ("return update * H + (1 - update) * cand",
                                                 "return reset * H + (1 - reset) * cand"))),
    ("09:gru_cell", "tanh instead of sigmoid for the update gate",
     _edit(_GRU, ("update = torch.sigmoid(", "update = torch.tanh("))),
    ("09:gru_cell", "sigmoid instead of tanh for the candidate",
     _edit(_GRU, ("cand = torch.tanh(", "cand = torch.sigmoid("))),
    ("09:gru_cell", "W_hr transposed",
     _edit(_GRU, ("H @ p[\"W_hr\"]", "H @ p[\"W_hr\"].T"))),
    ("09:gru_cell", "candidate uses W_hz (copy-paste) instead of W_hn",
     _edit(_GRU, ("H @ p[\"W_hn\"]", "H @ p[\"W_hz\"]"))),
    ("09:gru_cell", "returns the candidate alone (no interpolation with H)",
     _edit(_GRU, ("return update * H + (1 - update) * cand", "return cand"))),
    ("09:gru_cell", "returns (H_t, H_t) as if it were an LSTM",
     _edit(_GRU, ("    return update * H + (1 - update) * cand",
                  "    H_new = update * H + (1 - update) * cand\n    return H_new, H_new"))),
    ("09:gru_cell", "reset gate scales the whole pre-activation of the candidate",
     _edit(_GRU, ("cand = torch.tanh(X @ p[\"W_xn\"] + p[\"b_n\"] + reset * hn)",
                  "cand = torch.tanh(reset * (X @ p[\"W_xn\"] + p[\"b_n\"] + hn))"))),
    ("09:gru_cell", "interpolates with the candidate's pre-activation (tanh forgotten in the mix)",
     _edit(_GRU, ("    cand = torch.tanh(X @ p[\"W_xn\"] + p[\"b_n\"] + reset * hn)\n",
                  "    pre = X @ p[\"W_xn\"] + p[\"b_n\"] + reset * hn\n    cand = torch.tanh(pre)\n"),
           ("(1 - update) * cand", "(1 - update) * pre"))),
    ("09:gru_cell", "b_n left out",
     _edit(_GRU, (" + p[\"b_n\"]", ""))),
    ("09:gru_cell", "b_r used in the update gate (copy-paste)",
     _edit(_GRU, ("p[\"b_z\"]", "p[\"b_r\"]"))),
    ("09:gru_cell", "update gate computed from the reset-scaled state",
     _edit(_GRU, ("H @ p[\"W_hz\"]", "(reset * H) @ p[\"W_hz\"]"))),
    ("09:gru_cell", "new state added to the kept part instead of interpolated: Z H + N",
     _edit(_GRU, ("update * H + (1 - update) * cand", "update * H + cand"))),
    ("09:gru_cell", "weights multiplied from the left (W^T X^T) for the input terms, not transposed back",
     _edit(_GRU, ("X @ p[\"W_xr\"]", "(p[\"W_xr\"].T @ X.T)"))),
]

CORRECT += [
    ("09:gru_cell", "the three gates' weights fused side by side, one product each for X and H",
     """import torch


def gru_cell(X, H, params):
    Wx = torch.cat([params["W_xr"], params["W_xz"], params["W_xn"]], dim=1)
    Wh = torch.cat([params["W_hr"], params["W_hz"], params["W_hn"]], dim=1)
    b = torch.cat([params["b_r"], params["b_z"], params["b_n"]])
    xr, xz, xn = (X @ Wx + b).chunk(3, dim=1)
    hr, hz, hn = (H @ Wh).chunk(3, dim=1)
    R = torch.sigmoid(xr + hr)
    Z = torch.sigmoid(xz + hz)
    N = torch.tanh(xn + R * (hn + params["b_hn"]))
    return N + Z * (H - N)
"""),
    ("09:gru_cell", "sigmoid written as 1 / (1 + exp(-a)), einsum products", """import torch


def gru_cell(X, H, params):
    def sig(a):
        return 1 / (1 + torch.exp(-a))

    def lin(gate):
        x_part = torch.einsum("nv,vh->nh", X, params["W_x" + gate])
        return x_part + torch.einsum("nk,kh->nh", H, params["W_h" + gate])

    r = sig(lin("r") + params["b_r"])
    z = sig(lin("z") + params["b_z"])
    n = torch.tanh(X @ params["W_xn"] + params["b_n"] + r * (H @ params["W_hn"] + params["b_hn"]))
    return (1 - z) * n + z * H
"""),
]


# ---------------------------------------------------------------- 09: lstm_cell

_LSTM = """import torch


def lstm_cell(X, H, C, params):
    p = params
    i = torch.sigmoid(X @ p["W_xi"] + H @ p["W_hi"] + p["b_i"])
    f = torch.sigmoid(X @ p["W_xf"] + H @ p["W_hf"] + p["b_f"])
    o = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"] + p["b_o"])
    g = torch.tanh(X @ p["W_xg"] + H @ p["W_hg"] + p["b_g"])
    c_new = f * C + i * g
    h_new = o * torch.tanh(c_new)
    return h_new, c_new
"""

WRONG += [
    ("09:lstm_cell", "returns (C_t, H_t): the pair in the wrong order",
     _edit(_LSTM, ("return h_new, c_new", "return c_new, h_new"))),
    ("09:lstm_cell", "H_t from the old cell C_{t-1}",
     _edit(_LSTM, ("o * torch.tanh(c_new)", "o * torch.tanh(C)"))),
    ("09:lstm_cell", "tanh of the cell forgotten: H_t = O * C_t",
     _edit(_LSTM, ("o * torch.tanh(c_new)", "o * c_new"))),
    ("09:lstm_cell", "forget and input gates swapped in the cell update",
     _edit(_LSTM, ("c_new = f * C + i * g", "c_new = i * C + f * g"))),
    ("09:lstm_cell", "sigmoid instead of tanh for the cell candidate",
     _edit(_LSTM, ("g = torch.tanh(", "g = torch.sigmoid("))),
    ("09:lstm_cell", "tanh instead of sigmoid for the forget gate",
     _edit(_LSTM, ("f = torch.sigmoid(", "f = torch.tanh("))),
    ("09:lstm_cell", "input gate left out of the cell update",
     _edit(_LSTM, ("c_new = f * C + i * g", "c_new = f * C + g"))),
    ("09:lstm_cell", "forget gate read as 'how much to forget': (1 - F) * C",
     _edit(_LSTM, ("c_new = f * C + i * g", "c_new = (1 - f) * C + i * g"))),
    ("09:lstm_cell", "a forget bias of 1 added on top of b_f",
     _edit(_LSTM, ("p[\"b_f\"])", "p[\"b_f\"] + 1.0)"))),
    ("09:lstm_cell", "input gate used as the output gate in H_t",
     _edit(_LSTM, ("h_new = o * torch.tanh(c_new)", "h_new = i * torch.tanh(c_new)"))),
    ("09:lstm_cell", "W_hf transposed",
     _edit(_LSTM, ("H @ p[\"W_hf\"]", "H @ p[\"W_hf\"].T"))),
    ("09:lstm_cell", "tanh applied after the output gate: tanh(O * C_t)",
     _edit(_LSTM, ("o * torch.tanh(c_new)", "torch.tanh(o * c_new)"))),
    ("09:lstm_cell", "returns H_t only",
     _edit(_LSTM, ("return h_new, c_new", "return h_new"))),
    ("09:lstm_cell", "cell candidate uses W_xo (copy-paste) instead of W_xg",
     _edit(_LSTM, ("X @ p[\"W_xg\"]", "X @ p[\"W_xo\"]"))),
    ("09:lstm_cell", "b_f left out",
     _edit(_LSTM, (" + p[\"b_f\"]", ""))),
    ("09:lstm_cell", "the new cell squashed with tanh too",
     _edit(_LSTM, ("c_new = f * C + i * g", "c_new = torch.tanh(f * C + i * g)"))),
    ("09:lstm_cell", "GRU-style coupled gates: (1 - F) weights the candidate, the input gate unused",
     _edit(_LSTM, ("c_new = f * C + i * g", "c_new = f * C + (1 - f) * g"))),
]

CORRECT += [
    ("09:lstm_cell", "fused weights in the order I, F, G, O, one product, chunk", """import torch


def lstm_cell(X, H, C, params):
    names = "ifgo"
    Wx = torch.cat([params["W_x" + k] for k in names], dim=1)
    Wh = torch.cat([params["W_h" + k] for k in names], dim=1)
    b = torch.cat([params["b_" + k] for k in names])
    a_i, a_f, a_g, a_o = (torch.cat([X, H], dim=1) @ torch.cat([Wx, Wh], dim=0) + b).chunk(4, dim=1)
    C_t = torch.sigmoid(a_f) * C + torch.sigmoid(a_i) * torch.tanh(a_g)
    return torch.sigmoid(a_o) * torch.tanh(C_t), C_t
"""),
]


# ---------------------------------------------------------------- 09: lstm_step_backward

_LSTM_BWD = """import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    h = dH.shape[1]
    I, F, G, O = gates[:, :h], gates[:, h:2 * h], gates[:, 2 * h:3 * h], gates[:, 3 * h:]
    tc = torch.tanh(C)
    dC_total = dC + dH * O * (1 - tc * tc)
    dI = dC_total * G * I * (1 - I)
    dF = dC_total * C_prev * F * (1 - F)
    dG = dC_total * I * (1 - G * G)
    dO = dH * tc * O * (1 - O)
    dA = torch.cat([dI, dF, dG, dO], dim=1)
    dX = dA @ W_x.T
    dH_prev = dA @ W_h.T
    dC_prev = dC_total * F
    dW_x = X.T @ dA
    dW_h = H_prev.T @ dA
    db = dA.sum(dim=0)
    return dX, dH_prev, dC_prev, dW_x, dW_h, db
"""

WRONG += [
    ("09:lstm_step_backward", "the dC arriving along the cell forgotten (only H_t's share)",
     _edit(_LSTM_BWD, ("dC_total = dC + dH * O", "dC_total = dH * O"))),
    ("09:lstm_step_backward", "H_t's share of dC_t forgotten (only the cell path)",
     _edit(_LSTM_BWD, ("dC_total = dC + dH * O * (1 - tc * tc)", "dC_total = dC"))),
    ("09:lstm_step_backward", "tanh's slope taken as 1 - C^2 instead of 1 - tanh(C)^2",
     _edit(_LSTM_BWD, ("dH * O * (1 - tc * tc)", "dH * O * (1 - C * C)"))),
    ("09:lstm_step_backward", "tanh applied twice in the slope: 1 - tanh(tanh C)^2",
     _edit(_LSTM_BWD, ("dH * O * (1 - tc * tc)", "dH * O * (1 - torch.tanh(tc) ** 2)"))),
    ("09:lstm_step_backward", "the input gate's sigmoid slope I (1 - I) forgotten",
     _edit(_LSTM_BWD, ("dI = dC_total * G * I * (1 - I)", "dI = dC_total * G"))),
    ("09:lstm_step_backward", "forget gate's gradient uses C_t instead of C_{t-1}",
     _edit(_LSTM_BWD, ("dF = dC_total * C_prev", "dF = dC_total * C"))),
    ("09:lstm_step_backward", "candidate's tanh slope written 1 - G instead of 1 - G^2",
     _edit(_LSTM_BWD, ("(1 - G * G)", "(1 - G)"))),
    ("09:lstm_step_backward", "output gate's gradient uses C_t instead of tanh(C_t)",
     _edit(_LSTM_BWD, ("dO = dH * tc * O", "dO = dH * C * O"))),
    ("09:lstm_step_backward", "gates read in the order I, F, O, G",
     _edit(_LSTM_BWD, ("I, F, G, O = gates", "I, F, O, G = gates"))),
    ("09:lstm_step_backward", "dA assembled in the order I, F, O, G",
     _edit(_LSTM_BWD, ("torch.cat([dI, dF, dG, dO], dim=1)", "torch.cat([dI, dF, dO, dG], dim=1)"))),
    ("09:lstm_step_backward", "dC_prev from the incoming dC only (H_t's share not passed on)",
     _edit(_LSTM_BWD, ("dC_prev = dC_total * F", "dC_prev = dC * F"))),
    ("09:lstm_step_backward", "dC_prev without the forget gate",
     _edit(_LSTM_BWD, ("dC_prev = dC_total * F", "dC_prev = dC_total"))),
    ("09:lstm_step_backward", "W_x not transposed in dX",
     _edit(_LSTM_BWD, ("dX = dA @ W_x.T", "dX = dA @ W_x"))),
    ("09:lstm_step_backward", "dW_x transposed: dA^T X",
     _edit(_LSTM_BWD, ("dW_x = X.T @ dA", "dW_x = dA.T @ X"))),
    ("09:lstm_step_backward", "db averaged over the batch instead of summed",
     _edit(_LSTM_BWD, ("db = dA.sum(dim=0)", "db = dA.mean(dim=0)"))),
    ("09:lstm_step_backward", "dH added straight to dH_prev (a skip path that does not exist)",
     _edit(_LSTM_BWD, ("dH_prev = dA @ W_h.T", "dH_prev = dA @ W_h.T + dH"))),
    ("09:lstm_step_backward", "output gate's gradient uses tanh's slope of C_t instead of tanh(C_t)",
     _edit(_LSTM_BWD, ("dO = dH * tc * O", "dO = dH * (1 - tc * tc) * O"))),
    ("09:lstm_step_backward", "input gate's gradient uses the incoming dC, not the total",
     _edit(_LSTM_BWD, ("dI = dC_total * G", "dI = dC * G"))),
    ("09:lstm_step_backward", "gates split along the batch axis (chunk on dim 0)",
     _edit(_LSTM_BWD,
           ("I, F, G, O = gates[:, :h], gates[:, h:2 * h], gates[:, 2 * h:3 * h], gates[:, 3 * h:]",
                       "I, F, G, O = gates.chunk(4, dim=0)"))),
    ("09:lstm_step_backward", "dX and dH_prev swapped in the return",
     _edit(_LSTM_BWD, ("return dX, dH_prev, dC_prev", "return dH_prev, dX, dC_prev"))),
    ("09:lstm_step_backward", "tanh(C) taken from the previous cell C_{t-1}",
     _edit(_LSTM_BWD, ("tc = torch.tanh(C)", "tc = torch.tanh(C_prev)"))),
    ("09:lstm_step_backward", "forget gate's gradient without its sigmoid slope",
     _edit(_LSTM_BWD, ("dF = dC_total * C_prev * F * (1 - F)", "dF = dC_total * C_prev"))),
    ("09:lstm_step_backward", "gradient of the candidate uses the forget gate instead of the input gate",
     _edit(_LSTM_BWD, ("dG = dC_total * I", "dG = dC_total * F"))),
]

CORRECT += [
    ("09:lstm_step_backward", "chunk, a sigmoid-slope helper, einsum for the weight gradients",
     """import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    i, f, g, o = torch.chunk(gates, 4, dim=1)

    def sig_slope(s):
        return s - s * s

    squashed = C.tanh()
    d_cell = dH * o * (1 - squashed.pow(2)) + dC
    d_pre = torch.cat(
        (d_cell * g * sig_slope(i), d_cell * C_prev * sig_slope(f), d_cell * i * (1 - g.pow(2)),
         dH * squashed * sig_slope(o)),
        dim=1,
    )
    return (
        torch.einsum("nk,vk->nv", d_pre, W_x),
        torch.einsum("nk,hk->nh", d_pre, W_h),
        f * d_cell,
        torch.einsum("nv,nk->vk", X, d_pre),
        torch.einsum("nh,nk->hk", H_prev, d_pre),
        d_pre.sum(0),
    )
"""),
]
