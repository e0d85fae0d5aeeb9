"""A fresh held-apart set of student answers to the coding exercises of notebooks 01-09 (issue #45).

How and when it was written: in one sitting, by a helper session started for #45's "Done when"
measurement, before anything was run against the self-checks. It was written WITHOUT opening the
mistake catalogue (`d2lmini/exercises/mistakes/`), the older held-apart set
(`tests/held_apart_wrong_answers.py`) or the tests built on them (`test_exercises_held_apart.py`,
`test_exercises_mistakes.py`), and without reading the check modules. The only sources were what a
student sees: the English notebooks (the exercise cells and the prose before them), the exercise
signatures in `d2lmini/grading/assignment/exercises.json`, and the instructors' solutions
(`solutions/notebook_NN.py`, `solutions/capstone.py`) to know what right looks like. The set was
committed before any answer was run against a self-check. Before the commit, a sanity pass of the
helper's own (outside the repository) ran every answer beside the instructors' solutions on random
inputs, not through the checks: every wrong answer differed there or raised, except the routes the
exercises forbid (which compute the right numbers by design) and 04's "clips the gradients" (its
effect is invisible while the gradient norm stays under 1); no answer was changed after that pass.
The answers are not to be edited after seeing the checks' results (a mistake in an answer is
recorded, not fixed).

Data:

- `ENTRY_POINTS`: for each exercise id (as in exercises.json), the name of the function that an
  answer's source defines and that is passed to the self-check's single slot.
- `WRONG`: (exercise id, label, source) for answers with a real mistake (a misread formula, swapped
  axes, a missing bias, the wrong nonlinearity, mean vs sum, an off-by-one, a forgotten detach, the
  wrong log base, in-place edits, the wrong form of result, a route the exercise forbids, ...). Each
  must be refused; the label says what is wrong.
- `CORRECT`: (exercise id, label, source) for right answers written differently from the
  solutions (another order, einsum instead of matmul, a loop instead of vectorised code, ...). Each
  must be accepted.

Many wrong answers are one-mistake edits of a student's right answer (`_edit` replaces text that
must occur exactly as often as stated), as most real mistakes are; others are written out whole.

No longer held apart: from the commit that added this paragraph on (#45), the catalogue of mistakes
was extended using this set's unnamed answers as evidence of the kinds of mistakes it lacked (and
its wrongly named ones to make detectors more specific), so the named-cause rate this set gives
measures catalogue work that has seen it, not held-apart work; a set written after that is needed
for that.
"""

# ---------------------------------------------------------------------------------------------------------
# helpers


def _edit(base, *changes):
    """`base` with each (old, new) or (old, new, count) change applied; `old` must occur `count` times."""
    source = base
    for change in changes:
        old, new = change[0], change[1]
        count = change[2] if len(change) > 2 else 1
        if source.count(old) != count:
            raise ValueError(f"{old!r} occurs {source.count(old)} times, not {count}, in:\n{source}")
        source = source.replace(old, new)
    return source


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
}

WRONG = []
CORRECT = []


def _wrong(exercise, label, source):
    WRONG.append((exercise, label, source))


def _right(exercise, label, source):
    CORRECT.append((exercise, label, source))


# ---------------------------------------------------------------------------------------------------------
# 01 · all_states(tokens, W_xh, W_hh, b_h) -> (steps, batch, hiddens)

E = "01:all_states"
ALL_STATES = """\
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    H = torch.zeros(batch, W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for t in range(steps):
        H = torch.tanh(W_xh[tokens[:, t]] + H @ W_hh + b_h)
        states.append(H)
    return torch.stack(states)
"""
STEP = "torch.tanh(W_xh[tokens[:, t]] + H @ W_hh + b_h)"
_right(E, "loop over steps, row lookup, stack", ALL_STATES)
_wrong(E, "stacked along dim 1: (batch, steps, hiddens)",
       _edit(ALL_STATES, ("torch.stack(states)", "torch.stack(states, dim=1)")))
_wrong(E, "H_0 included in the stack", _edit(ALL_STATES, ("states = []", "states = [H]")))
_wrong(E, "returns only the last state", _edit(ALL_STATES, ("return torch.stack(states)", "return H")))
_wrong(E, "no tanh", _edit(ALL_STATES, (STEP, "W_xh[tokens[:, t]] + H @ W_hh + b_h")))
_wrong(E, "sigmoid instead of tanh", _edit(ALL_STATES, ("torch.tanh(", "torch.sigmoid(")))
_wrong(E, "relu instead of tanh", _edit(ALL_STATES, ("torch.tanh(", "torch.relu(")))
_wrong(E, "bias forgotten", _edit(ALL_STATES, (" + b_h)", ")")))
_wrong(E, "bias added to both terms",
       _edit(ALL_STATES, (STEP, "torch.tanh((W_xh[tokens[:, t]] + b_h) + (H @ W_hh + b_h))")))
_wrong(E, "W_hh transposed", _edit(ALL_STATES, ("H @ W_hh", "H @ W_hh.T")))
_wrong(E, "state not carried: every step from H_0",
       _edit(ALL_STATES, ("H = torch.zeros(", "H = H0 = torch.zeros("), ("H @ W_hh", "H0 @ W_hh")))
_wrong(E, "H_0 of ones", _edit(ALL_STATES, ("torch.zeros(batch", "torch.ones(batch")))
_wrong(E, "torch.cat instead of torch.stack", _edit(ALL_STATES, ("torch.stack(states)", "torch.cat(states)")))
_wrong(E, "reads the steps backwards", _edit(ALL_STATES, ("range(steps)", "reversed(range(steps))")))
_wrong(E, "returns a list of states", _edit(ALL_STATES, ("return torch.stack(states)", "return states")))
_wrong(E, "loops over the batch size instead of the steps",
       _edit(ALL_STATES, ("range(steps)", "range(batch)")))
_wrong(E, "indexes a sequence (row t) instead of a time step",
       _edit(ALL_STATES, ("tokens[:, t]", "tokens[t]")))
_wrong(E, "tanh on the hidden term only",
       _edit(ALL_STATES, (STEP, "W_xh[tokens[:, t]] + torch.tanh(H @ W_hh) + b_h")))
_wrong(E, "carries the pre-activation, stores its tanh", """\
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    A = torch.zeros(batch, W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for t in range(steps):
        A = W_xh[tokens[:, t]] + A @ W_hh + b_h
        states.append(torch.tanh(A))
    return torch.stack(states)
""")
_wrong(E, "stores the state before updating it (H_0 ... H_{T-1})", """\
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    H = torch.zeros(batch, W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for t in range(steps):
        states.append(H)
        H = torch.tanh(W_xh[tokens[:, t]] + H @ W_hh + b_h)
    return torch.stack(states)
""")
_wrong(E, "updates one tensor in place: every stored state is the last", """\
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    H = torch.zeros(batch, W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for t in range(steps):
        H[:] = torch.tanh(W_xh[tokens[:, t]] + H @ W_hh + b_h)
        states.append(H)
    return torch.stack(states)
""")
_right(E, "one-hot matmul, loop over tokens.T", """\
import torch
import torch.nn.functional as F


def all_states(tokens, W_xh, W_hh, b_h):
    vocab, hiddens = W_xh.shape
    h = torch.zeros(tokens.shape[0], hiddens, dtype=W_xh.dtype, device=W_xh.device)
    out = []
    for x in tokens.T:
        onehot = F.one_hot(x, vocab).to(W_xh.dtype)
        h = torch.tanh(onehot @ W_xh + h @ W_hh + b_h)
        out.append(h)
    return torch.stack(out, 0)
""")
_right(E, "input terms looked up first, addmm, preallocated result", """\
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    B, T = tokens.shape
    n = W_hh.shape[1]
    result = W_hh.new_empty((T, B, n))
    prev = W_hh.new_zeros((B, n))
    inputs = W_xh[tokens.T]
    for t in range(T):
        prev = torch.tanh(torch.addmm(inputs[t] + b_h, prev, W_hh))
        result[t] = prev
    return result
""")

# ---------------------------------------------------------------------------------------------------------
# 02 · fused_step(X, H, W_xh, W_hh, b_h): tanh(X W_xh + H W_hh + b_h) with one product

E = "02:fused_step"
FUSED = """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    XH = torch.cat([X, H], dim=1)
    W = torch.cat([W_xh, W_hh], dim=0)
    return torch.tanh(XH @ W + b_h)
"""
_right(E, "cat inputs, cat weights, one product", FUSED)
_wrong(E, "weights stacked in the other order", _edit(FUSED, ("[W_xh, W_hh]", "[W_hh, W_xh]")))
_wrong(E, "inputs side by side in the other order", _edit(FUSED, ("[X, H]", "[H, X]")))
_wrong(E, "weights concatenated along columns", _edit(FUSED, ("[W_xh, W_hh], dim=0", "[W_xh, W_hh], dim=1")))
_wrong(E, "no tanh", _edit(FUSED, ("torch.tanh(XH @ W + b_h)", "XH @ W + b_h")))
_wrong(E, "sigmoid instead of tanh", _edit(FUSED, ("torch.tanh(", "torch.sigmoid(")))
_wrong(E, "relu instead of tanh", _edit(FUSED, ("torch.tanh(", "torch.relu(")))
_wrong(E, "bias forgotten", _edit(FUSED, ("XH @ W + b_h", "XH @ W")))
_wrong(E, "bias added after the tanh", _edit(FUSED, ("torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W) + b_h")))
_wrong(E, "W_hh transposed in the stack", _edit(FUSED, ("[W_xh, W_hh]", "[W_xh, W_hh.T]")))
_wrong(E, "torch.stack instead of torch.cat for the inputs",
       _edit(FUSED, ("torch.cat([X, H], dim=1)", "torch.stack([X, H], dim=1)")))
_wrong(E, "bias reshaped to a column", _edit(FUSED, ("XH @ W + b_h", "XH @ W + b_h[:, None]")))
_wrong(E, "two products (not fused)", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)
""")
_wrong(E, "the state left out", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + b_h)
""")
_wrong(E, "the state added without its weight", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H + b_h)
""")
_wrong(E, "result left transposed (hiddens, batch)", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    W = torch.cat((W_xh, W_hh), 0)
    XH = torch.cat((X, H), 1)
    return torch.tanh(W.T @ XH.T + b_h[:, None])
""")
_wrong(E, "the two terms averaged", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    XH = torch.cat([X, H], dim=1)
    W = torch.cat([W_xh, W_hh], dim=0)
    return torch.tanh((XH @ W) / 2 + b_h)
""")
_right(E, "addmm with the bias", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    return torch.addmm(b_h, torch.cat((X, H), 1), torch.cat((W_xh, W_hh), 0)).tanh()
""")
_right(E, "einsum", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    inputs = torch.cat((X, H), dim=-1)
    weights = torch.cat((W_xh, W_hh), dim=0)
    return torch.tanh(torch.einsum("ni,ih->nh", inputs, weights) + b_h)
""")
_right(E, "bias as one more block: a column of ones", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    ones = torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)
    big_in = torch.cat((X, H, ones), 1)
    big_w = torch.cat((W_xh, W_hh, b_h.reshape(1, -1)), 0)
    return (big_in @ big_w).tanh()
""")
_right(E, "the product written transposed and transposed back", """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    stacked = torch.cat([W_xh, W_hh])
    both = torch.cat([X, H], 1)
    return torch.tanh((stacked.T @ both.T).T + b_h)
""")

# ---------------------------------------------------------------------------------------------------------
# 03 · lookup(W, X) == one_hot(X) @ W, without one-hot vectors or a product

E = "03:lookup"
_right(E, "plain indexing", """\
def lookup(W, X):
    return W[X]
""")
_right(E, "F.embedding", """\
import torch.nn.functional as F


def lookup(W, X):
    return F.embedding(X, W)
""")
_right(E, "index_select then reshape", """\
def lookup(W, X):
    rows = W.index_select(0, X.reshape(-1))
    return rows.reshape(*X.shape, W.shape[1])
""")
_wrong(E, "columns instead of rows", """\
def lookup(W, X):
    return W[:, X]
""")
_wrong(E, "rows of the transpose", """\
def lookup(W, X):
    return W.T[X]
""")
_wrong(E, "indices flattened, shape lost", """\
def lookup(W, X):
    return W[X.reshape(-1)]
""")
_wrong(E, "indices taken as 1-based", """\
def lookup(W, X):
    return W[X - 1]
""")
_wrong(E, "indices transposed first (steps, batch)", """\
def lookup(W, X):
    return W[X.T]
""")
_wrong(E, "torch.gather along dim 0", """\
import torch


def lookup(W, X):
    return torch.gather(W, 0, X)
""")
_wrong(E, "returns a list of rows", """\
def lookup(W, X):
    return [W[i] for i in X]
""")
_wrong(E, "one-hot times W (forbidden)", """\
import torch.nn.functional as F


def lookup(W, X):
    return F.one_hot(X, W.shape[0]).to(W.dtype) @ W
""")
_wrong(E, "rows of the identity times W (a product)", """\
import torch


def lookup(W, X):
    eye = torch.eye(W.shape[0], dtype=W.dtype, device=W.device)
    return eye[X] @ W
""")
_wrong(E, "the <unk> row zeroed", """\
def lookup(W, X):
    return W[X] * (X != 0).unsqueeze(-1)
""")
_wrong(E, "stacked from the flattened indices, not reshaped", """\
import torch


def lookup(W, X):
    return torch.stack([W[i] for i in X.flatten()])
""")
_wrong(E, "torch.take: single entries, not rows", """\
import torch


def lookup(W, X):
    return torch.take(W, X)
""")
_wrong(E, "squeezed: size-1 axes dropped", """\
def lookup(W, X):
    return W[X].squeeze()
""")
_wrong(E, "rows summed over the first axis (a bag)", """\
def lookup(W, X):
    return W[X].sum(dim=0)
""")

# ---------------------------------------------------------------------------------------------------------
# 03 · one_hot(X, vocab_size): float32, shape X.shape + (vocab_size,), no F.one_hot

E = "03:one_hot"
ONE_HOT = """\
import torch


def one_hot(X, vocab_size):
    classes = torch.arange(vocab_size, device=X.device)
    return (X[..., None] == classes).to(torch.float32)
"""
_right(E, "compare with arange, cast to float32", ONE_HOT)
_wrong(E, "left as bool",
       _edit(ONE_HOT, ("(X[..., None] == classes).to(torch.float32)", "X[..., None] == classes")))
_wrong(E, "int64 (long) instead of float32", _edit(ONE_HOT, (".to(torch.float32)", ".long()")))
_wrong(E, "float64 instead of float32", _edit(ONE_HOT, (".to(torch.float32)", ".double()")))
_wrong(E, "classes on the first axis", _edit(ONE_HOT, ("X[..., None] == classes", "classes[:, None] == X")))
_wrong(E, "classes counted from 1",
       _edit(ONE_HOT, ("torch.arange(vocab_size,", "torch.arange(1, vocab_size + 1,")))
_wrong(E, "one class short", _edit(ONE_HOT, ("torch.arange(vocab_size,", "torch.arange(vocab_size - 1,")))
_wrong(E, "flattened: (N, vocab) for any X", _edit(ONE_HOT, ("X[..., None]", "X.reshape(-1, 1)")))
_wrong(E, "inverted: 0 at the index, 1 elsewhere",
       _edit(ONE_HOT, ("X[..., None] == classes", "X[..., None] != classes")))
_wrong(E, "width from X.max() + 1",
       _edit(ONE_HOT, ("torch.arange(vocab_size,", "torch.arange(int(X.max()) + 1,")))
_wrong(E, "returns nested lists", _edit(ONE_HOT, (".to(torch.float32)", ".to(torch.float32).tolist()")))
_wrong(E, "F.one_hot (forbidden)", """\
import torch.nn.functional as F


def one_hot(X, vocab_size):
    return F.one_hot(X, vocab_size).float()
""")
_wrong(E, "scatter without unsqueeze", """\
import torch


def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, device=X.device)
    return out.scatter_(-1, X, 1.0)
""")
_wrong(E, "identity rows, transposed", """\
import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size, device=X.device)[X].T
""")
_wrong(E, "int32 zeros filled by scatter", """\
import torch


def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, dtype=torch.int32, device=X.device)
    out.scatter_(-1, X.long().unsqueeze(-1), 1)
    return out
""")
_wrong(E, "scatter along dim 0", """\
import torch


def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, device=X.device)
    out.scatter_(0, X.long().unsqueeze(-1).expand(*X.shape, vocab_size), 1.0)
    return out
""")
_right(E, "rows of the identity", """\
import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size, dtype=torch.float32, device=X.device)[X]
""")
_right(E, "zeros and scatter_", """\
import torch


def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, dtype=torch.float32, device=X.device)
    out.scatter_(-1, X.long().unsqueeze(-1), 1.0)
    return out
""")

# ---------------------------------------------------------------------------------------------------------
# 03 · batches_with_tail(indices, batch_size, num_steps, offset): sequential partitioning + a short tail

E = "03:sequential_batches"
TAIL = """\
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X_all = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    start = 0
    while start < L:
        stop = min(start + num_steps, L)
        yield X_all[:, start:stop], Y_all[:, start:stop]
        start = stop
"""
_right(E, "while loop over the streams", TAIL)
_wrong(E, "no tail (as sequential_batches)",
       _edit(TAIL, ("while start < L:", "while start + num_steps <= L:")))
_wrong(E, "offset ignored in the slices",
       _edit(TAIL, ("indices[offset : offset + batch_size * L]", "indices[: batch_size * L]"),
             ("indices[offset + 1 : offset + 1 + batch_size * L]", "indices[1 : 1 + batch_size * L]")))
_wrong(E, "offset ignored for Y only",
       _edit(TAIL, ("indices[offset + 1 : offset + 1 + batch_size * L]", "indices[1 : 1 + batch_size * L]")))
_wrong(E, "Y not shifted",
       _edit(TAIL, ("indices[offset + 1 : offset + 1 + batch_size * L]",
                    "indices[offset : offset + batch_size * L]")))
_wrong(E, "stream length without the -1",
       _edit(TAIL, ("- offset - 1) // batch_size", "- offset) // batch_size")))
_wrong(E, "streams interleaved (column-major reshape)",
       _edit(TAIL, (".reshape(batch_size, L)", ".reshape(L, batch_size).T", 2)))
_wrong(E, "yields (Y, X)", _edit(TAIL, ("yield X_all[:, start:stop], Y_all[:, start:stop]",
                                        "yield Y_all[:, start:stop], X_all[:, start:stop]")))
_wrong(E, "both X and Y start one token late",
       _edit(TAIL, ("indices[offset + 1 : offset + 1 + batch_size * L]",
                    "indices[offset + 2 : offset + 2 + batch_size * L]"),
             ("indices[offset : offset + batch_size * L]",
              "indices[offset + 1 : offset + 1 + batch_size * L]")))
_wrong(E, "minibatches transposed to (steps, batch)",
       _edit(TAIL, ("yield X_all[:, start:stop], Y_all[:, start:stop]",
                    "yield X_all[:, start:stop].T, Y_all[:, start:stop].T")))
_wrong(E, "skips a column between minibatches", _edit(TAIL, ("start = stop\n", "start = stop + 1\n")))
_wrong(E, "an empty minibatch when nothing is left over", """\
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X_all = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    for start in range(0, L + 1, num_steps):
        yield X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
""")
_wrong(E, "tail padded with zeros to num_steps", """\
import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X_all = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    for start in range(0, L, num_steps):
        X, Y = X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
        if X.shape[1] < num_steps:
            pad = torch.zeros(batch_size, num_steps - X.shape[1], dtype=X.dtype, device=X.device)
            X, Y = torch.cat([X, pad], 1), torch.cat([Y, pad], 1)
        yield X, Y
""")
_wrong(E, "tail taken from the text after the streams", """\
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    full = L // num_steps * num_steps
    X_all = indices[offset : offset + batch_size * full].reshape(batch_size, full)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * full].reshape(batch_size, full)
    for start in range(0, full, num_steps):
        yield X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
    r = L - full
    if r:
        begin = offset + batch_size * full
        X = indices[begin : begin + batch_size * r].reshape(batch_size, r)
        Y = indices[begin + 1 : begin + 1 + batch_size * r].reshape(batch_size, r)
        yield X, Y
""")
_wrong(E, "rows are consecutive pieces (random-sampling layout)", """\
import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    for start in range(0, L, num_steps):
        width = min(num_steps, L - start)
        rows = offset + start * batch_size + width * torch.arange(batch_size)[:, None]
        pos = rows + torch.arange(width)
        yield indices[pos], indices[pos + 1]
""")
_wrong(E, "last minibatch overlaps the one before, full width", """\
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X_all = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    start = 0
    while start + num_steps <= L:
        yield X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
        start += num_steps
    if start < L:
        yield X_all[:, -num_steps:], Y_all[:, -num_steps:]
""")
_wrong(E, "short minibatch first instead of last", """\
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X_all = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    r = L % num_steps
    if r:
        yield X_all[:, :r], Y_all[:, :r]
    for start in range(r, L, num_steps):
        yield X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
""")
_right(E, "positions o + iL + k computed with arange", """\
import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    stream = (len(indices) - offset - 1) // batch_size
    row_starts = offset + stream * torch.arange(batch_size)
    for k in range(0, stream, num_steps):
        width = min(num_steps, stream - k)
        pos = row_starts[:, None] + k + torch.arange(width)
        yield indices[pos], indices[pos + 1]
""")

# ---------------------------------------------------------------------------------------------------------
# 04 · train_loop(model, batches, optimizer): one epoch, state carried detached, mean minibatch loss

E = "04:train_loop"
TRAIN = """\
import math

import torch
import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    state = None
    total, count = 0.0, 0
    for X, Y in batches:
        if state is None:
            state = model.begin_state(X.shape[0])
        else:
            state = state.detach()
        outputs, state = model(X, state)
        loss = F.cross_entropy(outputs, Y.T.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        count += 1
    return total / count
"""
_right(E, "detach before the forward, F.cross_entropy", TRAIN)
_wrong(E, "state not detached", _edit(TRAIN, ("state = state.detach()", "state = state")))
_wrong(E, "state reset every minibatch (stateless)",
       _edit(TRAIN, ("if state is None:", "if True:")))
_wrong(E, "labels not transposed (batch-major)", _edit(TRAIN, ("Y.T.reshape(-1)", "Y.reshape(-1)")))
_wrong(E, "zero_grad forgotten", _edit(TRAIN, ("        optimizer.zero_grad()\n", "")))
_wrong(E, "zero_grad between backward and step",
       _edit(TRAIN, ("optimizer.zero_grad()\n        loss.backward()",
                     "loss.backward()\n        optimizer.zero_grad()")))
_wrong(E, "step before backward",
       _edit(TRAIN, ("loss.backward()\n        optimizer.step()",
                     "optimizer.step()\n        loss.backward()")))
_wrong(E, "returns the sum of the losses", _edit(TRAIN, ("return total / count", "return total")))
_wrong(E, "returns the last loss", _edit(TRAIN, ("return total / count", "return loss.item()")))
_wrong(E, "returns the perplexity", _edit(TRAIN, ("return total / count", "return math.exp(total / count)")))
_wrong(E, "summed cross-entropy", _edit(TRAIN, ("Y.T.reshape(-1))", "Y.T.reshape(-1), reduction=\"sum\")")))
_wrong(E, "clips the gradients (the exercise says no clipping)",
       _edit(TRAIN, ("loss.backward()\n",
                     "loss.backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n")))
_wrong(E, "targets are the inputs", _edit(TRAIN, ("Y.T.reshape(-1)", "X.T.reshape(-1)")))
_wrong(E, "softmax before cross_entropy",
       _edit(TRAIN, ("F.cross_entropy(outputs,", "F.cross_entropy(torch.softmax(outputs, dim=1),")))
_wrong(E, "nll_loss on the logits", _edit(TRAIN, ("F.cross_entropy(", "F.nll_loss(")))
_wrong(E, "two optimizer steps per minibatch",
       _edit(TRAIN, ("optimizer.step()\n", "optimizer.step()\n        optimizer.step()\n")))
_wrong(E, "loss divided by the batch size again",
       _edit(TRAIN, ("Y.T.reshape(-1))\n", "Y.T.reshape(-1)) / X.shape[0]\n")))
_wrong(E, "loss on detached outputs",
       _edit(TRAIN, ("F.cross_entropy(outputs,", "F.cross_entropy(outputs.detach(),")))
_wrong(E, "forward under torch.no_grad", _edit(TRAIN, ("        outputs, state = model(X, state)\n",
                                                      "        with torch.no_grad():\n"
                                                      "            outputs, state = model(X, state)\n")))
_wrong(E, "returns the list of losses", """\
import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    state, losses = None, []
    for X, Y in batches:
        state = model.begin_state(X.shape[0]) if state is None else state.detach()
        outputs, state = model(X, state)
        loss = F.cross_entropy(outputs, Y.T.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
""")
_right(E, "detach after the step, for the next minibatch", """\
import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    state = None
    losses = []
    for X, Y in batches:
        if state is None:
            state = model.begin_state(X.shape[0])
        logits, state = model(X, state)
        loss = F.cross_entropy(logits, Y.t().flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        state = state.detach()
        losses.append(float(loss))
    return sum(losses) / len(losses)
""")
_right(E, "cross-entropy by hand with log_softmax", """\
import torch


def train_loop(model, batches, optimizer):
    H = None
    seen = []
    for X, Y in batches:
        H = model.begin_state(X.shape[0]) if H is None else H.detach()
        out, H = model(X, H)
        targets = Y.transpose(0, 1).reshape(-1)
        log_p = torch.log_softmax(out, dim=1)
        loss = -log_p[torch.arange(len(targets), device=out.device), targets].mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen.append(loss.item())
    return sum(seen) / len(seen)
""")

# ---------------------------------------------------------------------------------------------------------
# 05 · masked_loss_and_grad(outputs, Y, lengths): mean CE over the real steps, and dL/doutputs

E = "05:masked_loss_and_grad"
MASKED = """\
import math

import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    mask = torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]
    mask = mask.T.reshape(-1).to(outputs.dtype)
    labels = Y.T.reshape(-1)
    rows = torch.arange(labels.numel(), device=Y.device)
    log_p = torch.log_softmax(outputs, dim=1)
    n_real = mask.sum()
    loss = -(log_p[rows, labels] * mask).sum() / n_real
    grad = torch.softmax(outputs, dim=1)
    grad[rows, labels] -= 1
    grad = grad * mask[:, None] / n_real
    return loss, grad
"""
_right(E, "mask in step-major order, log_softmax", MASKED)
_wrong(E, "mean over all n*T steps", _edit(MASKED, ("n_real = mask.sum()", "n_real = batch * steps")))
_wrong(E, "mask left batch-major", _edit(MASKED, ("mask = mask.T.reshape(-1)", "mask = mask.reshape(-1)")))
_wrong(E, "labels batch-major", _edit(MASKED, ("labels = Y.T.reshape(-1)", "labels = Y.reshape(-1)")))
_wrong(E, "gradient not divided by N",
       _edit(MASKED, ("grad = grad * mask[:, None] / n_real", "grad = grad * mask[:, None]")))
_wrong(E, "gradient divided by n*T, loss by N",
       _edit(MASKED, ("grad = grad * mask[:, None] / n_real",
                      "grad = grad * mask[:, None] / (batch * steps)")))
_wrong(E, "gradient of padded rows not zeroed",
       _edit(MASKED, ("grad = grad * mask[:, None] / n_real", "grad = grad / n_real")))
_wrong(E, "gradient sign flipped", _edit(MASKED, ("return loss, grad", "return loss, -grad")))
_wrong(E, "loss in bits",
       _edit(MASKED, ("torch.log_softmax(outputs, dim=1)",
                      "torch.log_softmax(outputs, dim=1) / math.log(2)")))
_wrong(E, "mask one step too long (<=)", _edit(MASKED, ("< lengths[:, None]", "<= lengths[:, None]")))
_wrong(E, "mask one step too short", _edit(MASKED, ("< lengths[:, None]", "< lengths[:, None] - 1")))
_wrong(E, "one-hot not subtracted in the gradient", _edit(MASKED, ("    grad[rows, labels] -= 1\n", "")))
_wrong(E, "log forgotten (probabilities in the loss)",
       _edit(MASKED, ("log_p = torch.log_softmax(outputs, dim=1)", "log_p = torch.softmax(outputs, dim=1)")))
_wrong(E, "log_softmax over dim 0",
       _edit(MASKED, ("torch.log_softmax(outputs, dim=1)", "torch.log_softmax(outputs, dim=0)")))
_wrong(E, "divided by the number of sequences", _edit(MASKED, ("n_real = mask.sum()", "n_real = batch")))
_wrong(E, "returns (d_outputs, loss)", _edit(MASKED, ("return loss, grad", "return grad, loss")))
_wrong(E, "padding taken to be at the start",
       _edit(MASKED, ("torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]",
                      "torch.arange(steps, device=Y.device)[None, :] >= steps - lengths[:, None]")))
_wrong(E, "no mask at all (plain sequence loss)", """\
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    labels = Y.T.reshape(-1)
    rows = torch.arange(len(labels), device=Y.device)
    log_p = torch.log_softmax(outputs, dim=1)
    loss = -log_p[rows, labels].mean()
    grad = torch.softmax(outputs, dim=1)
    grad[rows, labels] -= 1
    return loss, grad / len(labels)
""")
_wrong(E, "mean of the per-sequence means", """\
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    real = (torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]).to(outputs.dtype)
    labels = Y.T.reshape(-1)
    rows = torch.arange(labels.numel(), device=Y.device)
    nll = -torch.log_softmax(outputs, dim=1)[rows, labels].reshape(steps, batch).T  # (batch, steps)
    weight = real / lengths[:, None].to(outputs.dtype) / batch
    loss = (nll * weight).sum()
    grad = torch.softmax(outputs, dim=1)
    grad[rows, labels] -= 1
    return loss, grad * weight.T.reshape(-1, 1)
""")
_wrong(E, "mask applied to the logits instead of the loss", """\
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    real = (torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]).T.reshape(-1)
    logits = outputs * real[:, None].to(outputs.dtype)
    labels = Y.T.reshape(-1)
    rows = torch.arange(len(labels), device=Y.device)
    n = real.sum()
    loss = -torch.log_softmax(logits, dim=1)[rows, labels].sum() / n
    grad = torch.softmax(logits, dim=1)
    grad[rows, labels] -= 1
    return loss, grad / n
""")
_wrong(E, "padded labels set to 0 and counted", """\
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    real = (torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]).T.reshape(-1)
    labels = Y.T.reshape(-1).clone()
    labels[~real] = 0
    rows = torch.arange(len(labels), device=Y.device)
    n = real.sum()
    loss = -torch.log_softmax(outputs, dim=1)[rows, labels].sum() / n
    grad = torch.softmax(outputs, dim=1)
    grad[rows, labels] -= 1
    return loss, grad / n
""")
_right(E, "a loop over the real (sequence, step) pairs", """\
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    B, T = Y.shape
    d = torch.zeros_like(outputs)
    total = outputs.new_zeros(())
    count = int(lengths.sum())
    for t in range(T):
        for i in range(B):
            if t < int(lengths[i]):
                r = t * B + i
                row = outputs[r]
                lse = torch.logsumexp(row, 0)
                total = total + lse - row[Y[i, t]]
                p = torch.exp(row - lse)
                p[Y[i, t]] -= 1
                d[r] = p / count
    return total / count, d
""")
_right(E, "logsumexp and a boolean row selection", """\
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    B, T = Y.shape
    keep = (torch.arange(T, device=Y.device).unsqueeze(1) < lengths.unsqueeze(0)).reshape(-1)  # (T, B) rows
    y = Y.t().reshape(-1)
    picked = outputs.gather(1, y.unsqueeze(1)).squeeze(1)
    nll = torch.logsumexp(outputs, dim=1) - picked
    N = keep.sum()
    loss = nll[keep].sum() / N
    soft = torch.softmax(outputs, dim=1)
    onehot = torch.zeros_like(soft).scatter_(1, y.unsqueeze(1), 1.0)
    d = torch.where(keep.unsqueeze(1), (soft - onehot) / N, torch.zeros_like(soft))
    return loss, d
""")

# ---------------------------------------------------------------------------------------------------------
# 05 · leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)

E = "05:leaky_bptt"
LEAKY = """\
import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    steps, batch, hid = hiddens.shape
    dO = d_outputs.reshape(steps, batch, -1)
    dW_xh = torch.zeros_like(W_xh)
    dW_hh = torch.zeros_like(W_hh)
    db_h = torch.zeros_like(b_h)
    carry = torch.zeros_like(state)
    for t in range(steps - 1, -1, -1):
        H_prev = state if t == 0 else hiddens[t - 1]
        A = W_xh[X[:, t]] + H_prev @ W_hh + b_h
        dH = dO[t] @ W_hq.T + carry
        dA = dH * alpha * (A > 0).to(dH.dtype)
        dW_xh.index_add_(0, X[:, t], dA)
        dW_hh += H_prev.T @ dA
        db_h += dA.sum(dim=0)
        carry = dH * (1 - alpha) + dA @ W_hh.T
    return dW_xh, dW_hh, db_h, carry
"""
_right(E, "reverse loop, A recomputed, two paths", LEAKY)
_wrong(E, "tanh derivative instead of ReLU's",
       _edit(LEAKY, ("(A > 0).to(dH.dtype)", "(1 - hiddens[t] ** 2)")))
_wrong(E, "ReLU mask from H_t > 0", _edit(LEAKY, ("(A > 0)", "(hiddens[t] > 0)")))
_wrong(E, "ReLU mask from H_{t-1} > 0", _edit(LEAKY, ("(A > 0)", "(H_prev > 0)")))
_wrong(E, "direct path (1 - alpha) forgotten",
       _edit(LEAKY, ("carry = dH * (1 - alpha) + dA @ W_hh.T", "carry = dA @ W_hh.T")))
_wrong(E, "alpha missing in dA", _edit(LEAKY, ("dA = dH * alpha * (A > 0)", "dA = dH * (A > 0)")))
_wrong(E, "direct path without the factor 1 - alpha",
       _edit(LEAKY, ("carry = dH * (1 - alpha) + ", "carry = dH + ")))
_wrong(E, "direct path weighted by alpha",
       _edit(LEAKY, ("carry = dH * (1 - alpha) + ", "carry = dH * alpha + ")))
_wrong(E, "W_hh not transposed going back", _edit(LEAKY, ("dA @ W_hh.T", "dA @ W_hh")))
_wrong(E, "dW_hh from H_t instead of H_{t-1}",
       _edit(LEAKY, ("dW_hh += H_prev.T @ dA", "dW_hh += hiddens[t].T @ dA")))
_wrong(E, "H_0 taken as zeros instead of state",
       _edit(LEAKY, ("H_prev = state if t == 0", "H_prev = torch.zeros_like(state) if t == 0")))
_wrong(E, "dW_xh[X] += dA drops repeated tokens",
       _edit(LEAKY, ("dW_xh.index_add_(0, X[:, t], dA)", "dW_xh[X[:, t]] += dA")))
_wrong(E, "d_outputs read batch-major",
       _edit(LEAKY, ("dO = d_outputs.reshape(steps, batch, -1)",
                     "dO = d_outputs.reshape(batch, steps, -1).transpose(0, 1)")))
_wrong(E, "d_state is dL/dH_1",
       _edit(LEAKY, ("return dW_xh, dW_hh, db_h, carry", "return dW_xh, dW_hh, db_h, dH")))
_wrong(E, "d_state without the direct path",
       _edit(LEAKY, ("return dW_xh, dW_hh, db_h, carry", "return dW_xh, dW_hh, db_h, dA @ W_hh.T")))
_wrong(E, "loop runs forward in time", _edit(LEAKY, ("range(steps - 1, -1, -1)", "range(steps)")))
_wrong(E, "db_h averaged over the batch", _edit(LEAKY, ("dA.sum(dim=0)", "dA.mean(dim=0)")))
_wrong(E, "b_h forgotten when recomputing A", _edit(LEAKY, ("H_prev @ W_hh + b_h", "H_prev @ W_hh")))
_wrong(E, "hiddens[t - 1] at t = 0 (wraps to the last state)",
       _edit(LEAKY, ("H_prev = state if t == 0 else hiddens[t - 1]", "H_prev = hiddens[t - 1]")))
_wrong(E, "alpha applied to dH as well",
       _edit(LEAKY, ("dH = dO[t] @ W_hq.T + carry", "dH = alpha * (dO[t] @ W_hq.T + carry)"),
             ("dA = dH * alpha * (A > 0)", "dA = dH * (A > 0)")))
_wrong(E, "dW_xh and dW_hh returned in the other order",
       _edit(LEAKY, ("return dW_xh, dW_hh, db_h, carry", "return dW_hh, dW_xh, db_h, carry")))
_wrong(E, "d_state not returned",
       _edit(LEAKY, ("return dW_xh, dW_hh, db_h, carry", "return dW_xh, dW_hh, db_h")))
_wrong(E, "direct path carries only the gradient from later steps",
       _edit(LEAKY, ("carry = dH * (1 - alpha) + ", "carry = carry * (1 - alpha) + ")))
_wrong(E, "W_hq not transposed", _edit(LEAKY, ("dO[t] @ W_hq.T", "dO[t] @ W_hq")))
_right(E, "all pre-activations first, einsum for dW_hh", """\
import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    T, B, h = hiddens.shape
    prev = torch.cat([state.unsqueeze(0), hiddens[:-1]], dim=0)
    A_all = W_xh[X.T] + prev @ W_hh + b_h
    relu_on = (A_all > 0).to(hiddens.dtype)
    g_out = (d_outputs @ W_hq.T).view(T, B, h)
    grads_A = []
    g_next = torch.zeros_like(state)
    for t in reversed(range(T)):
        g_H = g_out[t] + g_next
        g_A = alpha * g_H * relu_on[t]
        grads_A.append(g_A)
        g_next = (1 - alpha) * g_H + g_A @ W_hh.T
    grads_A = torch.stack(grads_A[::-1])
    dW_hh = torch.einsum("tbi,tbj->ij", prev, grads_A)
    dW_xh = torch.zeros_like(W_xh).index_add(0, X.T.reshape(-1), grads_A.reshape(-1, h))
    return dW_xh, dW_hh, grads_A.sum(dim=(0, 1)), g_next
""")

# ---------------------------------------------------------------------------------------------------------
# 06 · my_clip(grads, theta): new tensors scaled by min(1, theta / joint norm)

E = "06:clip_function"
MY_CLIP = """\
import torch


def my_clip(grads, theta):
    total = 0.0
    for g in grads:
        total = total + (g ** 2).sum()
    norm = total ** 0.5
    if norm > theta:
        factor = theta / norm
        return [g * factor for g in grads]
    return [g.clone() for g in grads]
"""
_right(E, "joint norm by a loop, clone below theta", MY_CLIP)
_wrong(E, "modifies the gradients in place",
       _edit(MY_CLIP, ("[g * factor for g in grads]", "[g.mul_(factor) for g in grads]")))
_wrong(E, "returns the input tensors themselves below theta",
       _edit(MY_CLIP, ("return [g.clone() for g in grads]", "return list(grads)")))
_wrong(E, "squared norm (no square root)", _edit(MY_CLIP, ("norm = total ** 0.5", "norm = total")))
_wrong(E, "unit norm: divides by the norm without theta",
       _edit(MY_CLIP, ("factor = theta / norm", "factor = 1 / norm")))
_wrong(E, "factor inverted (norm / theta)",
       _edit(MY_CLIP, ("factor = theta / norm", "factor = norm / theta")))
_wrong(E, "returns (clipped, norm) as in the capstone",
       _edit(MY_CLIP, ("return [g * factor for g in grads]",
                       "return [g * factor for g in grads], float(norm)"),
             ("return [g.clone() for g in grads]", "return [g.clone() for g in grads], float(norm)")))
_wrong(E, "clips each tensor by its own norm", """\
def my_clip(grads, theta):
    out = []
    for g in grads:
        n = g.norm()
        out.append(g * (theta / n) if n > theta else g.clone())
    return out
""")
_wrong(E, "always rescales to norm theta", """\
import torch


def my_clip(grads, theta):
    norm = torch.sqrt(sum((g * g).sum() for g in grads))
    return [g * (theta / norm) for g in grads]
""")
_wrong(E, "norm as the sum of the tensors' norms", """\
def my_clip(grads, theta):
    norm = sum(g.norm() for g in grads)
    scale = min(1.0, float(theta / norm)) if norm > 0 else 1.0
    return [g * scale for g in grads]
""")
_wrong(E, "root mean square instead of the norm", """\
import torch


def my_clip(grads, theta):
    flat = torch.cat([g.flatten() for g in grads])
    norm = torch.sqrt((flat ** 2).mean())
    if norm > theta:
        return [g * (theta / norm) for g in grads]
    return [g.clone() for g in grads]
""")
_wrong(E, "clips every entry to [-theta, theta]", """\
def my_clip(grads, theta):
    return [g.clamp(-theta, theta) for g in grads]
""")
_wrong(E, "divides by zero when all gradients are zero", """\
import math


def my_clip(grads, theta):
    norm = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    scale = min(1.0, theta / norm)
    return [g * scale for g in grads]
""")
_wrong(E, "norm of the first tensor only", """\
def my_clip(grads, theta):
    norm = grads[0].norm()
    if norm > theta:
        return [g * (theta / norm) for g in grads]
    return [g.clone() for g in grads]
""")
_wrong(E, "largest absolute entry as the norm", """\
def my_clip(grads, theta):
    norm = max(float(g.abs().max()) for g in grads)
    if norm > theta:
        return [g * (theta / norm) for g in grads]
    return [g.clone() for g in grads]
""")
_wrong(E, "max(1, theta / norm) instead of min", """\
import math


def my_clip(grads, theta):
    norm = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    scale = max(1.0, theta / (norm + 1e-12))
    return [g * scale for g in grads]
""")
_wrong(E, "returns one flat tensor", """\
import torch


def my_clip(grads, theta):
    flat = torch.cat([g.reshape(-1) for g in grads])
    norm = flat.norm()
    return flat * min(1.0, float(theta / norm)) if norm > 0 else flat.clone()
""")
_wrong(E, "clip_grad_norm_ on parameter copies (forbidden)", """\
import torch


def my_clip(grads, theta):
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g.clone()
        params.append(p)
    torch.nn.utils.clip_grad_norm_(params, theta)
    return [p.grad for p in params]
""")
_right(E, "vector_norm of the concatenation, clamp", """\
import torch


def my_clip(grads, theta):
    flat = torch.cat([g.reshape(-1) for g in grads])
    norm = torch.linalg.vector_norm(flat)
    scale = torch.clamp(theta / norm, max=1.0)
    return [g * scale for g in grads]
""")
_right(E, "Python float norm, scale 1.0 below theta", """\
import math


def my_clip(grads, theta):
    sq = sum(float(g.pow(2).sum()) for g in grads)
    n = math.sqrt(sq)
    s = 1.0 if n <= theta else theta / n
    return [s * g for g in grads]
""")

# ---------------------------------------------------------------------------------------------------------
# 07 · perplexity(logits, targets): a Python number, stable for logits as large as 1000

E = "07:perplexity_function"
PPL7 = """\
import math

import torch


def perplexity(logits, targets):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    log_z = torch.log(torch.exp(shifted).sum(dim=1))
    rows = torch.arange(len(targets), device=logits.device)
    nll = log_z - shifted[rows, targets]
    return math.exp(nll.mean().item())
"""
_right(E, "max-shifted log-sum-exp by hand", PPL7)
_wrong(E, "no max shift (overflows at 1000)",
       _edit(PPL7, ("shifted = logits - logits.max(dim=1, keepdim=True).values", "shifted = logits")))
_wrong(E, "returns a tensor",
       _edit(PPL7, ("return math.exp(nll.mean().item())", "return torch.exp(nll.mean())")))
_wrong(E, "exp of the sum, not the mean", _edit(PPL7, ("nll.mean()", "nll.sum()")))
_wrong(E, "mean of per-token perplexities",
       _edit(PPL7, ("math.exp(nll.mean().item())", "torch.exp(nll).mean().item()")))
_wrong(E, "returns the cross-entropy (no exp)",
       _edit(PPL7, ("math.exp(nll.mean().item())", "nll.mean().item()")))
_wrong(E, "2 ** nats (mixed bases)", _edit(PPL7, ("math.exp(nll.mean().item())", "2 ** nll.mean().item()")))
_wrong(E, "sign flipped: 1 / perplexity",
       _edit(PPL7, ("nll = log_z - shifted[rows, targets]", "nll = shifted[rows, targets] - log_z")))
_wrong(E, "shifted logits used as log-probabilities (no log-sum-exp)",
       _edit(PPL7, ("nll = log_z - shifted[rows, targets]", "nll = -shifted[rows, targets]")))
_wrong(E, "row and target indices swapped", _edit(PPL7, ("shifted[rows, targets]", "shifted[targets, rows]")))
_wrong(E, "gather along dim 0", """\
import math

import torch


def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=1)
    picked = log_probs.gather(0, targets.unsqueeze(1))
    return math.exp(-picked.mean().item())
""")
_wrong(E, "log_softmax over dim 0", """\
import math

import torch


def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=0)
    picked = log_probs[torch.arange(len(targets), device=logits.device), targets]
    return math.exp(-picked.mean().item())
""")
_wrong(E, "probability of the predicted token, not the target", """\
import math

import torch


def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=1)
    best = log_probs.max(dim=1).values
    return math.exp(-best.mean().item())
""")
_wrong(E, "1 / mean probability", """\
import torch


def perplexity(logits, targets):
    probs = torch.softmax(logits, dim=1)
    p = probs[torch.arange(len(targets), device=logits.device), targets]
    return 1.0 / p.mean().item()
""")
_wrong(E, "F.cross_entropy (forbidden)", """\
import math

import torch.nn.functional as F


def perplexity(logits, targets):
    return math.exp(F.cross_entropy(logits, targets).item())
""")
_wrong(E, "product of the probabilities (underflows)", """\
import torch


def perplexity(logits, targets):
    p = torch.softmax(logits, dim=1)[torch.arange(len(targets), device=logits.device), targets]
    return float(torch.prod(p) ** (-1.0 / len(p)))
""")
_wrong(E, "mean over the whole vocabulary, targets ignored", """\
import math

import torch


def perplexity(logits, targets):
    return math.exp(-torch.log_softmax(logits, dim=1).mean().item())
""")
_right(E, "bits with log2, then 2 ** bits", """\
import math

import torch


def perplexity(logits, targets):
    lp = logits.log_softmax(-1)
    bits = -lp[torch.arange(logits.shape[0], device=logits.device), targets] / math.log(2)
    return float(2 ** bits.mean())
""")
_right(E, "torch.logsumexp and gather", """\
import math

import torch


def perplexity(logits, targets):
    nll = torch.logsumexp(logits, dim=1) - logits.gather(1, targets.view(-1, 1)).squeeze(1)
    return math.exp(float(nll.mean()))
""")

# ---------------------------------------------------------------------------------------------------------
# 07 · kn_bigram(text, context, char, discount=0.75): interpolated Kneser-Ney bigram

E = "07:kn_bigram"
KN = """\
from collections import Counter


def kn_bigram(text, context, char, discount=0.75):
    pair_counts = Counter(text[i:i + 2] for i in range(len(text) - 1))
    preceded_by = len({p for p in pair_counts if p[1] == char})
    p_cont = preceded_by / len(pair_counts)
    after_context = {p: c for p, c in pair_counts.items() if p[0] == context}
    total = sum(after_context.values())
    if total == 0:
        return p_cont
    count = pair_counts.get(context + char, 0)
    first = max(count - discount, 0) / total
    weight = discount * len(after_context) / total
    return first + weight * p_cont
"""
_right(E, "Counter of two-character strings", KN)
_wrong(E, "continuation replaced by the unigram frequency",
       _edit(KN, ("p_cont = preceded_by / len(pair_counts)", "p_cont = text.count(char) / len(text)")))
_wrong(E, "N1+(..) as the number of pairs, not of different pairs",
       _edit(KN, ("p_cont = preceded_by / len(pair_counts)", "p_cont = preceded_by / (len(text) - 1)")))
_wrong(E, "continuation counts followers of char, not characters before it",
       _edit(KN, ("if p[1] == char}", "if p[0] == char}")))
_wrong(E, "T(a) taken as c(a.)",
       _edit(KN, ("discount * len(after_context) / total", "discount * total / total")))
_wrong(E, "no max(., 0) on the discounted count",
       _edit(KN, ("max(count - discount, 0)", "(count - discount)")))
_wrong(E, "count not discounted", _edit(KN, ("max(count - discount, 0) / total", "count / total")))
_wrong(E, "unseen context gets 0",
       _edit(KN, ("    if total == 0:\n        return p_cont", "    if total == 0:\n        return 0.0")))
_wrong(E, "unseen context gets the uniform 1 / |symbols|",
       _edit(KN, ("    if total == 0:\n        return p_cont",
                  "    if total == 0:\n        return 1 / len(set(text))")))
_wrong(E, "interpolation weight without T(a)",
       _edit(KN, ("discount * len(after_context) / total", "discount / total")))
_wrong(E, "c(a.) from text.count(context)",
       _edit(KN, ("total = sum(after_context.values())", "total = text.count(context)")))
_wrong(E, "discount hard-coded to 0.75",
       _edit(KN, ("max(count - discount, 0)", "max(count - 0.75, 0)"), ("weight = discount *",
                                                                        "weight = 0.75 *")))
_wrong(E, "c(ab) from str.count (misses overlapping pairs)",
       _edit(KN, ("count = pair_counts.get(context + char, 0)", "count = text.count(context + char)")))
_wrong(E, "pairs read backwards", _edit(KN, ("text[i:i + 2] for i", "text[i + 1] + text[i] for i")))
_wrong(E, "continuation divided by the number of different characters",
       _edit(KN, ("p_cont = preceded_by / len(pair_counts)", "p_cont = preceded_by / len(set(text))")))
_wrong(E, "unseen context tested by membership (context only at the end divides by 0)",
       _edit(KN, ("if total == 0:", "if context not in text:")))
_wrong(E, "lower order is the uniform floor",
       _edit(KN, ("p_cont = preceded_by / len(pair_counts)", "p_cont = 1 / len(set(text))")))
_wrong(E, "weight uses N1+(.b) instead of T(a)",
       _edit(KN, ("discount * len(after_context) / total", "discount * preceded_by / total")))
_wrong(E, "bigrams of words, not characters", """\
from collections import Counter


def kn_bigram(text, context, char, discount=0.75):
    words = text.split()
    pairs = Counter(zip(words, words[1:]))
    p_cont = len({a for a, b in pairs if b == char}) / len(pairs)
    followers = {b: c for (a, b), c in pairs.items() if a == context}
    total = sum(followers.values())
    if total == 0:
        return p_cont
    return max(followers.get(char, 0) - discount, 0) / total + discount * len(followers) / total * p_cont
""")
_right(E, "one pass with sets and counters", """\
def kn_bigram(text, context, char, discount=0.75):
    seen_pairs = set()
    c_ab = 0
    c_a = 0
    followers = set()
    for a, b in zip(text, text[1:]):
        seen_pairs.add((a, b))
        if a == context:
            c_a += 1
            followers.add(b)
            if b == char:
                c_ab += 1
    n_before = sum(1 for (_, b) in seen_pairs if b == char)
    cont = n_before / len(seen_pairs)
    if not c_a:
        return cont
    return (max(c_ab - discount, 0) + discount * len(followers) * cont) / c_a
""")

# ---------------------------------------------------------------------------------------------------------
# 08 · capstone pieces

E = "08:minibatches"
MINI = """\
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X_all = indices[: batch_size * L].reshape(batch_size, L)
    Y_all = indices[1 : batch_size * L + 1].reshape(batch_size, L)
    for k in range(L // num_steps):
        cols = slice(k * num_steps, (k + 1) * num_steps)
        yield X_all[:, cols], Y_all[:, cols]
"""
_right(E, "reshape into streams, whole minibatches only", MINI)
_wrong(E, "a short last minibatch kept", _edit(MINI, ("range(L // num_steps)", "range(-(-L // num_steps))")))
_wrong(E, "Y not shifted", _edit(MINI, ("indices[1 : batch_size * L + 1]", "indices[: batch_size * L]")))
_wrong(E, "streams interleaved", _edit(MINI, (".reshape(batch_size, L)", ".reshape(L, batch_size).T", 2)))
_wrong(E, "stream length without the -1",
       _edit(MINI, ("(len(indices) - 1) // batch_size", "len(indices) // batch_size")))
_wrong(E, "last whole minibatch dropped", _edit(MINI, ("range(L // num_steps)", "range(L // num_steps - 1)")))
_wrong(E, "minibatches transposed",
       _edit(MINI, ("yield X_all[:, cols], Y_all[:, cols]", "yield X_all[:, cols].T, Y_all[:, cols].T")))
_wrong(E, "yields X only", _edit(MINI, ("yield X_all[:, cols], Y_all[:, cols]", "yield X_all[:, cols]")))
_wrong(E, "starts at index 1",
       _edit(MINI, ("indices[1 : batch_size * L + 1].reshape", "indices[2 : batch_size * L + 2].reshape"),
             ("indices[: batch_size * L]", "indices[1 : batch_size * L + 1]")))
_wrong(E, "a random offset as in notebook 03", """\
import torch


def minibatches(indices, batch_size, num_steps):
    offset = int(torch.randint(num_steps, ()))
    L = (len(indices) - offset - 1) // batch_size
    X_all = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y_all = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    for start in range(0, L - num_steps + 1, num_steps):
        yield X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
""")
_wrong(E, "rows are consecutive pieces (random-sampling layout, in order)", """\
import torch


def minibatches(indices, batch_size, num_steps):
    pieces = (len(indices) - 1) // num_steps
    for first in range(0, pieces - batch_size + 1, batch_size):
        starts = (first + torch.arange(batch_size)) * num_steps
        pos = starts[:, None] + torch.arange(num_steps)
        yield indices[pos], indices[pos + 1]
""")
_wrong(E, "Y is the next minibatch's X", """\
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X_all = indices[: batch_size * L].reshape(batch_size, L)
    for start in range(0, L - 2 * num_steps + 1, num_steps):
        yield X_all[:, start : start + num_steps], X_all[:, start + num_steps : start + 2 * num_steps]
""")
_wrong(E, "overlapping windows (stride 1)", """\
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X_all = indices[: batch_size * L].reshape(batch_size, L)
    Y_all = indices[1 : batch_size * L + 1].reshape(batch_size, L)
    for start in range(L - num_steps + 1):
        yield X_all[:, start : start + num_steps], Y_all[:, start : start + num_steps]
""")
_wrong(E, "Y cut from the same stream matrix, one column on", """\
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X_all = indices[: batch_size * L].reshape(batch_size, L)
    for start in range(0, L - num_steps + 1, num_steps):
        yield X_all[:, start : start + num_steps], X_all[:, start + 1 : start + num_steps + 1]
""")
_right(E, "positions i*L + k*T + j with arange", """\
import torch


def minibatches(indices, batch_size, num_steps):
    stream = (len(indices) - 1) // batch_size
    base = torch.arange(batch_size)[:, None] * stream + torch.arange(num_steps)
    for k in range(stream // num_steps):
        pos = base + k * num_steps
        yield indices[pos], indices[pos + 1]
""")

E = "08:forward"
FWD = """\
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state
    hs = []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)
        hs.append(H)
    hiddens = torch.stack(hs)
    outputs = torch.cat(hs) @ W_hq + b_q
    return outputs, hiddens
"""
FSTEP = "torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)"
_right(E, "loop, stack the states, one output product", FWD)
_wrong(E, "outputs batch-major",
       _edit(FWD, ("outputs = torch.cat(hs) @ W_hq + b_q",
                   "outputs = hiddens.transpose(0, 1).reshape(-1, W_hh.shape[0]) @ W_hq + b_q")))
_wrong(E, "hiddens stacked batch-first", _edit(FWD, ("torch.stack(hs)", "torch.stack(hs, dim=1)")))
_wrong(E, "H_0 included", _edit(FWD, ("hs = []", "hs = [state]")))
_wrong(E, "b_q forgotten", _edit(FWD, ("@ W_hq + b_q", "@ W_hq")))
_wrong(E, "b_h forgotten", _edit(FWD, (" + b_h)", ")")))
_wrong(E, "no tanh", _edit(FWD, (FSTEP, "W_xh[X[:, t]] + H @ W_hh + b_h")))
_wrong(E, "sigmoid instead of tanh", _edit(FWD, ("torch.tanh(", "torch.sigmoid(")))
_wrong(E, "W_hh transposed", _edit(FWD, ("H @ W_hh", "H @ W_hh.T")))
_wrong(E, "state not carried", _edit(FWD, ("H @ W_hh", "state @ W_hh")))
_wrong(E, "outputs are softmax probabilities",
       _edit(FWD, ("outputs = torch.cat(hs) @ W_hq + b_q",
                   "outputs = torch.softmax(torch.cat(hs) @ W_hq + b_q, dim=1)")))
_wrong(E, "iterates over the batch (rows of X)",
       _edit(FWD, ("range(X.shape[1])", "range(X.shape[0])"), ("W_xh[X[:, t]]", "W_xh[X[t]]")))
_wrong(E, "returns (hiddens, outputs)", _edit(FWD, ("return outputs, hiddens", "return hiddens, outputs")))
_wrong(E, "outputs of the last step only",
       _edit(FWD, ("outputs = torch.cat(hs) @ W_hq + b_q", "outputs = H @ W_hq + b_q")))
_wrong(E, "reads the steps backwards", _edit(FWD, ("range(X.shape[1])", "reversed(range(X.shape[1]))")))
_wrong(E, "tanh on the outputs too",
       _edit(FWD, ("outputs = torch.cat(hs) @ W_hq + b_q",
                   "outputs = torch.tanh(torch.cat(hs) @ W_hq + b_q)")))
_wrong(E, "outputs from the pre-activations", """\
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state
    pre, hs = [], []
    for t in range(X.shape[1]):
        A = W_xh[X[:, t]] + H @ W_hh + b_h
        H = torch.tanh(A)
        pre.append(A)
        hs.append(H)
    return torch.cat(pre) @ W_hq + b_q, torch.stack(hs)
""")
_wrong(E, "one state tensor updated in place", """\
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state.clone()
    hs = []
    for t in range(X.shape[1]):
        H.copy_(torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h))
        hs.append(H)
    return torch.cat(hs) @ W_hq + b_q, torch.stack(hs)
""")
_right(E, "input terms first, einsum for the outputs", """\
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    inputs = W_xh[X.T] + b_h
    states = []
    h = state
    for x_t in inputs:
        h = torch.tanh(x_t + h @ W_hh)
        states.append(h)
    H_all = torch.stack(states)
    O = torch.einsum("tbh,hv->tbv", H_all, W_hq) + b_q
    return O.reshape(-1, W_hq.shape[1]), H_all
""")

E = "08:loss_and_grad"
LOSS = """\
import math

import torch


def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    n = y.shape[0]
    idx = torch.arange(n, device=outputs.device)
    m = outputs.max(dim=1, keepdim=True).values
    z = outputs - m
    log_sum = torch.log(torch.exp(z).sum(dim=1, keepdim=True))
    log_p = z - log_sum
    loss = -log_p[idx, y].sum() / n
    grad = torch.exp(log_p)
    grad[idx, y] = grad[idx, y] - 1
    return loss, grad / n
"""
_right(E, "max shift, log-probabilities, softmax minus one-hot", LOSS)
_wrong(E, "labels batch-major", _edit(LOSS, ("y = Y.T.reshape(-1)", "y = Y.reshape(-1)")))
_wrong(E, "gradient not divided by N", _edit(LOSS, ("return loss, grad / n", "return loss, grad")))
_wrong(E, "summed loss and gradient",
       _edit(LOSS, ("loss = -log_p[idx, y].sum() / n",
                    "loss = -log_p[idx, y].sum()"), ("return loss, grad / n", "return loss, grad")))
_wrong(E, "gradient sign flipped", _edit(LOSS, ("return loss, grad / n", "return loss, -grad / n")))
_wrong(E, "one-hot not subtracted", _edit(LOSS, ("    grad[idx, y] = grad[idx, y] - 1\n", "")))
_wrong(E, "no max shift (overflows)", _edit(LOSS, ("z = outputs - m", "z = outputs")))
_wrong(E, "loss in bits",
       _edit(LOSS, ("loss = -log_p[idx, y].sum() / n", "loss = -log_p[idx, y].sum() / n / math.log(2)")))
_wrong(E, "divided by the batch size, not by N",
       _edit(LOSS, ("loss = -log_p[idx, y].sum() / n", "loss = -log_p[idx, y].sum() / Y.shape[0]"),
             ("return loss, grad / n", "return loss, grad / Y.shape[0]")))
_wrong(E, "gradient divided by the number of steps",
       _edit(LOSS, ("return loss, grad / n", "return loss, grad / Y.shape[1]")))
_wrong(E, "probabilities instead of log-probabilities in the loss",
       _edit(LOSS, ("loss = -log_p[idx, y].sum() / n", "loss = -torch.exp(log_p)[idx, y].sum() / n")))
_wrong(E, "softmax over dim 0",
       _edit(LOSS, ("outputs.max(dim=1, keepdim=True)", "outputs.max(dim=0, keepdim=True)"),
             ("sum(dim=1, keepdim=True)", "sum(dim=0, keepdim=True)")))
_wrong(E, "one-hot subtracted at batch-major labels",
       _edit(LOSS, ("grad[idx, y] = grad[idx, y] - 1",
                    "grad[idx, Y.reshape(-1)] = grad[idx, Y.reshape(-1)] - 1")))
_wrong(E, "returns (d_outputs, loss)", _edit(LOSS, ("return loss, grad / n", "return grad / n, loss")))
_wrong(E, "shift not undone: log_p from the raw outputs",
       _edit(LOSS, ("log_p = z - log_sum", "log_p = outputs - log_sum")))
_wrong(E, "gradient with respect to the log-probabilities", """\
import torch


def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    n = len(y)
    log_p = outputs - torch.logsumexp(outputs, dim=1, keepdim=True)
    rows = torch.arange(n, device=outputs.device)
    grad = torch.zeros_like(outputs)
    grad[rows, y] = -1.0 / n
    return -log_p[rows, y].mean(), grad
""")
_right(E, "logsumexp, gather, scatter", """\
import torch


def loss_and_grad(outputs, Y):
    targets = Y.t().flatten()
    N = targets.numel()
    lse = torch.logsumexp(outputs, dim=1)
    picked = outputs.gather(1, targets[:, None]).squeeze(1)
    loss = (lse - picked).mean()
    d = torch.softmax(outputs, dim=1)
    d = d - torch.zeros_like(d).scatter_(1, targets[:, None], 1.0)
    return loss, d / N
""")

E = "08:backward"
BACK = """\
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T, B, h = hiddens.shape
    dW_hq = hiddens.reshape(T * B, h).T @ d_outputs
    db_q = d_outputs.sum(dim=0)
    dH_out = (d_outputs @ W_hq.T).reshape(T, B, h)
    dW_xh = torch.zeros_like(W_xh)
    dW_hh = torch.zeros_like(W_hh)
    db_h = torch.zeros_like(b_h)
    dH_next = d_final
    for t in range(T - 1, -1, -1):
        dH = dH_out[t] + dH_next
        dA = dH * (1 - hiddens[t] ** 2)
        H_prev = hiddens[t - 1] if t > 0 else state
        dW_hh = dW_hh + H_prev.T @ dA
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        db_h = db_h + dA.sum(dim=0)
        dH_next = dA @ W_hh.T
    return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH_next
"""
_right(E, "reverse loop, index_add for W_xh", BACK)
_wrong(E, "d_final ignored", _edit(BACK, ("dH_next = d_final", "dH_next = torch.zeros_like(d_final)")))
_wrong(E, "d_final added at every step",
       _edit(BACK, ("dH_next = d_final", "dH_next = torch.zeros_like(d_final)"),
             ("dH = dH_out[t] + dH_next", "dH = dH_out[t] + dH_next + d_final")))
_wrong(E, "tanh derivative as (1 - H)^2", _edit(BACK, ("(1 - hiddens[t] ** 2)", "(1 - hiddens[t]) ** 2")))
_wrong(E, "tanh applied again in the derivative",
       _edit(BACK, ("(1 - hiddens[t] ** 2)", "(1 - torch.tanh(hiddens[t]) ** 2)")))
_wrong(E, "tanh derivative missing", _edit(BACK, ("dA = dH * (1 - hiddens[t] ** 2)", "dA = dH")))
_wrong(E, "dW_hh from H_t", _edit(BACK, ("dW_hh + H_prev.T @ dA", "dW_hh + hiddens[t].T @ dA")))
_wrong(E, "dW_hh transposed", _edit(BACK, ("dW_hh + H_prev.T @ dA", "dW_hh + dA.T @ H_prev")))
_wrong(E, "W_hh not transposed going back", _edit(BACK, ("dA @ W_hh.T", "dA @ W_hh")))
_wrong(E, "dW_hq transposed",
       _edit(BACK, ("hiddens.reshape(T * B, h).T @ d_outputs", "d_outputs.T @ hiddens.reshape(T * B, h)")))
_wrong(E, "db_q averaged", _edit(BACK, ("d_outputs.sum(dim=0)", "d_outputs.mean(dim=0)")))
_wrong(E, "db_h of the first step only (not accumulated)",
       _edit(BACK, ("db_h = db_h + dA.sum(dim=0)", "db_h = dA.sum(dim=0)")))
_wrong(E, "d_state is dL/dH_1", _edit(BACK, ("return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH_next",
                                             "return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH")))
_wrong(E, "hiddens[t - 1] at t = 0 (wraps)",
       _edit(BACK, ("H_prev = hiddens[t - 1] if t > 0 else state", "H_prev = hiddens[t - 1]")))
_wrong(E, "dW_xh[X] += dA drops repeated tokens",
       _edit(BACK, ("dW_xh = dW_xh.index_add(0, X[:, t], dA)", "dW_xh[X[:, t]] += dA")))
_wrong(E, "loop runs forward in time", _edit(BACK, ("range(T - 1, -1, -1)", "range(T)")))
_wrong(E, "output-layer gradients first in the list",
       _edit(BACK, ("[dW_xh, dW_hh, db_h, dW_hq, db_q]", "[dW_hq, db_q, dW_xh, dW_hh, db_h]")))
_wrong(E, "returns a dict of gradients",
       _edit(BACK, ("[dW_xh, dW_hh, db_h, dW_hq, db_q]",
                    "{\"W_xh\": dW_xh, \"W_hh\": dW_hh, \"b_h\": db_h, \"W_hq\": dW_hq, \"b_q\": db_q}")))
_wrong(E, "dW_hq from batch-major hiddens",
       _edit(BACK, ("hiddens.reshape(T * B, h).T @ d_outputs",
                    "hiddens.transpose(0, 1).reshape(T * B, h).T @ d_outputs")))
_wrong(E, "d_outputs read batch-major",
       _edit(BACK, ("(d_outputs @ W_hq.T).reshape(T, B, h)",
                    "(d_outputs @ W_hq.T).reshape(B, T, h).transpose(0, 1)")))
_right(E, "one-hot rows of the identity, gradients in a list", """\
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    steps = hiddens.shape[0]
    eye = torch.eye(W_xh.shape[0], dtype=W_xh.dtype, device=W_xh.device)
    per_step = d_outputs.split(hiddens.shape[1])
    grads = [torch.zeros_like(p) for p in params]
    g = d_final
    for t in reversed(range(steps)):
        H_t = hiddens[t]
        grads[3] = grads[3] + H_t.T @ per_step[t]
        grads[4] = grads[4] + per_step[t].sum(0)
        g = g + per_step[t] @ W_hq.T
        dA = g * (1 - H_t * H_t)
        prev = state if t == 0 else hiddens[t - 1]
        grads[0] = grads[0] + eye[X[:, t]].T @ dA
        grads[1] = grads[1] + prev.T @ dA
        grads[2] = grads[2] + dA.sum(0)
        g = dA @ W_hh.T
    return grads, g
""")

E = "08:clip"
CLIP8 = """\
import math


def clip(grads, theta):
    squares = sum(float((g ** 2).sum()) for g in grads)
    norm = math.sqrt(squares)
    if norm <= theta:
        return [g.clone() for g in grads], norm
    return [g * (theta / norm) for g in grads], norm
"""
_right(E, "Python norm, clone below theta", CLIP8)
_wrong(E, "returns the norm after clipping",
       _edit(CLIP8, ("return [g * (theta / norm) for g in grads], norm",
                     "return [g * (theta / norm) for g in grads], theta")))
_wrong(E, "returns the list only", _edit(CLIP8, (", norm\n", "\n", 2)))
_wrong(E, "squared norm", _edit(CLIP8, ("norm = math.sqrt(squares)", "norm = squares")))
_wrong(E, "scales in place",
       _edit(CLIP8, ("[g * (theta / norm) for g in grads]", "[g.mul_(theta / norm) for g in grads]")))
_wrong(E, "returns (norm, clipped)",
       _edit(CLIP8, ("return [g.clone() for g in grads], norm", "return norm, [g.clone() for g in grads]"),
             ("return [g * (theta / norm) for g in grads], norm",
              "return norm, [g * (theta / norm) for g in grads]")))
_wrong(E, "mean of squares instead of sum", _edit(CLIP8, ("float((g ** 2).sum())", "float((g ** 2).mean())")))
_wrong(E, "clips each tensor by its own norm", """\
def clip(grads, theta):
    out, norms = [], []
    for g in grads:
        n = float(g.norm())
        norms.append(n)
        out.append(g * min(1.0, theta / n) if n > 0 else g.clone())
    return out, sum(x * x for x in norms) ** 0.5
""")
_wrong(E, "always rescales to theta", """\
import math


def clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    return [g * (theta / norm) for g in grads], norm
""")
_wrong(E, "clips every entry", """\
import math


def clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    return [g.clamp(-theta, theta) for g in grads], norm
""")
_wrong(E, "sum of the tensors' norms", """\
def clip(grads, theta):
    norm = sum(float(g.norm()) for g in grads)
    scale = min(1.0, theta / norm) if norm > 0 else 1.0
    return [g * scale for g in grads], norm
""")
_wrong(E, "divides by zero for zero gradients", """\
import math


def clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = min(1.0, theta / norm)
    return [g * scale for g in grads], norm
""")
_wrong(E, "max(1, theta / norm)", """\
import math


def clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = max(1.0, theta / (norm + 1e-12))
    return [g * scale for g in grads], norm
""")
_right(E, "torch.linalg norms, factor with a floor", """\
import torch


def clip(grads, theta):
    n = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    factor = min(1.0, theta / max(float(n), 1e-30))
    return [g * factor for g in grads], float(n)
""")

E = "08:sgd"
_right(E, "list comprehension", """\
def sgd(params, grads, lr):
    return [p - lr * g for p, g in zip(params, grads)]
""")
_right(E, "torch.sub with alpha, in a loop", """\
import torch


def sgd(params, grads, lr):
    new = []
    for i in range(len(params)):
        new.append(torch.sub(params[i], grads[i], alpha=lr))
    return new
""")
_right(E, "add with alpha = -lr", """\
def sgd(params, grads, lr):
    return [w.add(dw, alpha=-lr) for w, dw in zip(params, grads)]
""")
_wrong(E, "gradient ascent (+)", """\
def sgd(params, grads, lr):
    return [p + lr * g for p, g in zip(params, grads)]
""")
_wrong(E, "updates the parameters in place", """\
def sgd(params, grads, lr):
    for p, g in zip(params, grads):
        p.sub_(lr * g)
    return params
""")
_wrong(E, "learning rate forgotten", """\
def sgd(params, grads, lr):
    return [p - g for p, g in zip(params, grads)]
""")
_wrong(E, "divides by the learning rate", """\
def sgd(params, grads, lr):
    return [p - g / lr for p, g in zip(params, grads)]
""")
_wrong(E, "returns the steps, not the new parameters", """\
def sgd(params, grads, lr):
    return [lr * g for g in grads]
""")
_wrong(E, "weight decay added", """\
def sgd(params, grads, lr):
    return [p - lr * (g + 0.01 * p) for p, g in zip(params, grads)]
""")
_wrong(E, "mean gradient per tensor", """\
def sgd(params, grads, lr):
    return [p - lr * g.mean() for p, g in zip(params, grads)]
""")
_wrong(E, "sign of the gradient", """\
import torch


def sgd(params, grads, lr):
    return [p - lr * torch.sign(g) for p, g in zip(params, grads)]
""")

E = "08:perplexity"
PPL8 = """\
import math

import torch


def perplexity(logits, targets):
    lse = torch.logsumexp(logits, dim=1)
    true = logits[torch.arange(logits.shape[0], device=logits.device), targets]
    return math.exp((lse - true).mean().item())
"""
_right(E, "logsumexp minus the true logit", PPL8)
_wrong(E, "returns a tensor",
       _edit(PPL8, ("return math.exp((lse - true).mean().item())", "return torch.exp((lse - true).mean())")))
_wrong(E, "exp of the sum", _edit(PPL8, ("(lse - true).mean()", "(lse - true).sum()")))
_wrong(E, "mean of exps",
       _edit(PPL8, ("math.exp((lse - true).mean().item())", "torch.exp(lse - true).mean().item()")))
_wrong(E, "returns nats", _edit(PPL8, ("math.exp((lse - true).mean().item())", "(lse - true).mean().item()")))
_wrong(E, "2 ** nats",
       _edit(PPL8, ("math.exp((lse - true).mean().item())", "2 ** (lse - true).mean().item()")))
_wrong(E, "sign flipped", _edit(PPL8, ("(lse - true)", "(true - lse)")))
_wrong(E, "max logit instead of log-sum-exp",
       _edit(PPL8, ("lse = torch.logsumexp(logits, dim=1)", "lse = logits.max(dim=1).values")))
_wrong(E, "indices swapped",
       _edit(PPL8, ("logits[torch.arange(logits.shape[0], device=logits.device), targets]",
                    "logits[targets, torch.arange(logits.shape[0], device=logits.device)]")))
_wrong(E, "logit of the predicted token",
       _edit(PPL8, ("true = logits[torch.arange(logits.shape[0], device=logits.device), targets]",
                                                       "true = logits.max(dim=1).values")))
_wrong(E, "naive log of summed exps (overflows)", """\
import math

import torch


def perplexity(logits, targets):
    log_z = torch.log(torch.exp(logits).sum(dim=1))
    true = logits[torch.arange(len(targets), device=logits.device), targets]
    return math.exp((log_z - true).mean().item())
""")
_wrong(E, "log_softmax over dim 0", """\
import math

import torch


def perplexity(logits, targets):
    lp = torch.log_softmax(logits, dim=0)
    return math.exp(-lp[torch.arange(len(targets), device=logits.device), targets].mean().item())
""")
_wrong(E, "mean over all log-probabilities", """\
import math

import torch


def perplexity(logits, targets):
    return math.exp(-torch.log_softmax(logits, dim=1).mean().item())
""")
_right(E, "max shift written out", """\
import math


def perplexity(logits, targets):
    top, _ = logits.max(dim=1)
    shifted = logits - top[:, None]
    log_norm = shifted.exp().sum(dim=1).log()
    picked = shifted.gather(1, targets[:, None])[:, 0]
    return math.exp((log_norm - picked).mean().item())
""")

# ---------------------------------------------------------------------------------------------------------
# 09 · gru_cell(X, H, params): torch's convention, the reset gate scaling H W_hn + b_hn

E = "09:gru_cell"
GRU = """\
import torch


def gru_cell(X, H, params):
    R = torch.sigmoid(X @ params["W_xr"] + H @ params["W_hr"] + params["b_r"])
    Z = torch.sigmoid(X @ params["W_xz"] + H @ params["W_hz"] + params["b_z"])
    N = torch.tanh(X @ params["W_xn"] + params["b_n"] + R * (H @ params["W_hn"] + params["b_hn"]))
    return Z * H + (1 - Z) * N
"""
_right(E, "the equations as written", GRU)
_wrong(E, "Chung's convention: Z takes the candidate",
       _edit(GRU, ("return Z * H + (1 - Z) * N", "return Z * N + (1 - Z) * H")))
_wrong(E, "d2l: reset before the product",
       _edit(GRU, ("R * (H @ params[\"W_hn\"] + params[\"b_hn\"])",
                   "(R * H) @ params[\"W_hn\"] + params[\"b_hn\"]")))
_wrong(E, "reset and update gates swapped",
       _edit(GRU, ("return Z * H + (1 - Z) * N", "return R * H + (1 - R) * N"), ("R * (H @", "Z * (H @")))
_wrong(E, "tanh and sigmoid swapped",
       _edit(GRU, ("torch.sigmoid(", "torch.TANH(", 2), ("torch.tanh(", "torch.sigmoid("),
             ("torch.TANH(", "torch.tanh(", 2)))
_wrong(E, "recurrent weights transposed",
       _edit(GRU, ("params[\"W_hr\"]", "params[\"W_hr\"].T"), ("params[\"W_hz\"]", "params[\"W_hz\"].T"),
             ("params[\"W_hn\"]", "params[\"W_hn\"].T")))
_wrong(E, "b_hn forgotten", _edit(GRU, (" + params[\"b_hn\"])", ")")))
_wrong(E, "b_n forgotten", _edit(GRU, ("params[\"b_n\"] + ", "")))
_wrong(E, "b_hn outside the reset gate",
       _edit(GRU, ("params[\"b_n\"] + R * (H @ params[\"W_hn\"] + params[\"b_hn\"])",
                   "params[\"b_n\"] + params[\"b_hn\"] + R * (H @ params[\"W_hn\"])")))
_wrong(E, "reset gate scales the whole pre-activation",
       _edit(GRU, ("N = torch.tanh(X @ params[\"W_xn\"] + params[\"b_n\"] + R * (H @ params[\"W_hn\"] + ",
                   "N = torch.tanh(R * (X @ params[\"W_xn\"] + params[\"b_n\"] + (H @ params[\"W_hn\"] + "),
             ("params[\"b_hn\"]))", "params[\"b_hn\"])))")))
_wrong(E, "candidate with sigmoid", _edit(GRU, ("N = torch.tanh(", "N = torch.sigmoid(")))
_wrong(E, "candidate with relu", _edit(GRU, ("N = torch.tanh(", "N = torch.relu(")))
_wrong(E, "update gate with tanh", _edit(GRU, ("Z = torch.sigmoid(", "Z = torch.tanh(")))
_wrong(E, "old state not kept: (1 - Z) * N only",
       _edit(GRU, ("return Z * H + (1 - Z) * N", "return (1 - Z) * N")))
_wrong(E, "candidate added whole: Z * H + N", _edit(GRU, ("return Z * H + (1 - Z) * N", "return Z * H + N")))
_wrong(E, "reset gate not used", _edit(GRU, ("R * (H @", "(H @")))
_wrong(E, "1 - R in the candidate", _edit(GRU, ("R * (H @", "(1 - R) * (H @")))
_wrong(E, "R used in the update instead of Z",
       _edit(GRU, ("return Z * H + (1 - Z) * N", "return R * H + (1 - R) * N")))
_wrong(E, "returns the new state and the update gate",
       _edit(GRU, ("return Z * H + (1 - Z) * N", "return Z * H + (1 - Z) * N, Z")))
_wrong(E, "copy-paste: W_hr in the update gate", _edit(GRU, ("H @ params[\"W_hz\"]", "H @ params[\"W_hr\"]")))
_wrong(E, "b_r forgotten", _edit(GRU, (" + params[\"b_r\"])", ")")))
_wrong(E, "hand-written sigmoid with the sign wrong", """\
import torch


def gru_cell(X, H, params):
    def sig(a):
        return 1 / (1 + torch.exp(a))

    R = sig(X @ params["W_xr"] + H @ params["W_hr"] + params["b_r"])
    Z = sig(X @ params["W_xz"] + H @ params["W_hz"] + params["b_z"])
    N = torch.tanh(X @ params["W_xn"] + params["b_n"] + R * (H @ params["W_hn"] + params["b_hn"]))
    return Z * H + (1 - Z) * N
""")
_wrong(E, "torch.ops.aten.gru_cell (forbidden)", """\
import torch


def gru_cell(X, H, params):
    p = params
    w_ih = torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], dim=1).T.contiguous()
    w_hh = torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], dim=1).T.contiguous()
    b_ih = torch.cat([p["b_r"], p["b_z"], p["b_n"]])
    b_hh = torch.cat([torch.zeros_like(p["b_r"]), torch.zeros_like(p["b_z"]), p["b_hn"]])
    return torch.ops.aten.gru_cell(X, H, w_ih, w_hh, b_ih, b_hh)
""")
_wrong(E, "torch._VF.gru_cell (forbidden)", """\
import torch


def gru_cell(X, H, params):
    p = params
    w_ih = torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], dim=1).T.contiguous()
    w_hh = torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], dim=1).T.contiguous()
    b_ih = torch.cat([p["b_r"], p["b_z"], p["b_n"]])
    b_hh = torch.cat([torch.zeros_like(p["b_r"]), torch.zeros_like(p["b_z"]), p["b_hn"]])
    return torch._VF.gru_cell(X, H, w_ih, w_hh, b_ih, b_hh)
""")
_wrong(E, "nn.GRUCell with the weights copied in (forbidden)", """\
import torch


def gru_cell(X, H, params):
    p = params
    cell = torch.nn.GRUCell(X.shape[1], H.shape[1]).to(dtype=X.dtype, device=X.device)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], dim=1).T)
        cell.weight_hh.copy_(torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], dim=1).T)
        cell.bias_ih.copy_(torch.cat([p["b_r"], p["b_z"], p["b_n"]]))
        cell.bias_hh.copy_(torch.cat([torch.zeros_like(p["b_r"]), torch.zeros_like(p["b_z"]), p["b_hn"]]))
        return cell(X, H)
""")
_right(E, "torch.lerp for the update", """\
import torch


def gru_cell(X, H, params):
    def gate(x_name, h_name, b_name):
        return torch.sigmoid(X @ params[x_name] + H @ params[h_name] + params[b_name])

    reset = gate("W_xr", "W_hr", "b_r")
    update = gate("W_xz", "W_hz", "b_z")
    hidden_part = H @ params["W_hn"] + params["b_hn"]
    cand = torch.tanh(X @ params["W_xn"] + params["b_n"] + reset * hidden_part)
    return torch.lerp(cand, H, update)
""")
_right(E, "addmm, candidate first mixed by H + (1 - Z)(N - H)", """\
import torch


def gru_cell(X, H, params):
    z = torch.sigmoid(torch.addmm(params["b_z"], X, params["W_xz"]) + H @ params["W_hz"])
    r = torch.sigmoid(torch.addmm(params["b_r"], X, params["W_xr"]) + H @ params["W_hr"])
    hidden_term = torch.addmm(params["b_hn"], H, params["W_hn"])
    n = torch.tanh(torch.addmm(params["b_n"], X, params["W_xn"]) + r * hidden_term)
    return H + (1 - z) * (n - H)
""")

# ---------------------------------------------------------------------------------------------------------
# 09 · lstm_cell(X, H, C, params) -> (H_t, C_t)

E = "09:lstm_cell"
LSTM = """\
import torch


def lstm_cell(X, H, C, params):
    p = params
    I = torch.sigmoid(X @ p["W_xi"] + H @ p["W_hi"] + p["b_i"])
    F = torch.sigmoid(X @ p["W_xf"] + H @ p["W_hf"] + p["b_f"])
    G = torch.tanh(X @ p["W_xg"] + H @ p["W_hg"] + p["b_g"])
    O = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"] + p["b_o"])
    C_new = F * C + I * G
    H_new = O * torch.tanh(C_new)
    return H_new, C_new
"""
_right(E, "the equations as written", LSTM)
_wrong(E, "returns (C, H)", _edit(LSTM, ("return H_new, C_new", "return C_new, H_new")))
_wrong(E, "no tanh on the cell", _edit(LSTM, ("H_new = O * torch.tanh(C_new)", "H_new = O * C_new")))
_wrong(E, "tanh outside the output gate",
       _edit(LSTM, ("H_new = O * torch.tanh(C_new)", "H_new = torch.tanh(O * C_new)")))
_wrong(E, "candidate with sigmoid", _edit(LSTM, ("G = torch.tanh(", "G = torch.sigmoid(")))
_wrong(E, "gates with tanh", _edit(LSTM, ("torch.sigmoid(", "torch.tanh(", 3)))
_wrong(E, "forget and input gates swapped", _edit(LSTM, ("C_new = F * C + I * G", "C_new = I * C + F * G")))
_wrong(E, "no forget gate", _edit(LSTM, ("C_new = F * C + I * G", "C_new = C + I * G")))
_wrong(E, "1 - F keeps the old cell", _edit(LSTM, ("C_new = F * C + I * G", "C_new = (1 - F) * C + I * G")))
_wrong(E, "coupled gates: (1 - F) instead of I",
       _edit(LSTM, ("C_new = F * C + I * G", "C_new = F * C + (1 - F) * G")))
_wrong(E, "H from the old cell", _edit(LSTM, ("H_new = O * torch.tanh(C_new)", "H_new = O * torch.tanh(C)")))
_wrong(E, "b_f forgotten", _edit(LSTM, (" + p[\"b_f\"])", ")")))
_wrong(E, "forget bias + 1 added", _edit(LSTM, (" + p[\"b_f\"])", " + p[\"b_f\"] + 1)")))
_wrong(E, "recurrent weights transposed",
       _edit(LSTM, ("p[\"W_hi\"]", "p[\"W_hi\"].T"), ("p[\"W_hf\"]", "p[\"W_hf\"].T"),
             ("p[\"W_hg\"]", "p[\"W_hg\"].T"), ("p[\"W_ho\"]", "p[\"W_ho\"].T")))
_wrong(E, "copy-paste: W_hi in the forget gate", _edit(LSTM, ("H @ p[\"W_hf\"]", "H @ p[\"W_hi\"]")))
_wrong(E, "returns H only", _edit(LSTM, ("return H_new, C_new", "return H_new")))
_wrong(E, "returns [H, C] side by side in one tensor",
       _edit(LSTM, ("return H_new, C_new", "return torch.cat([H_new, C_new], dim=1)")))
_wrong(E, "tanh applied to G twice",
       _edit(LSTM, ("C_new = F * C + I * G", "C_new = F * C + I * torch.tanh(G)")))
_wrong(E, "candidate with relu", _edit(LSTM, ("G = torch.tanh(", "G = torch.relu(")))
_wrong(E, "copy-paste: output gate from the candidate's weights",
       _edit(LSTM, ("X @ p[\"W_xo\"] + H @ p[\"W_ho\"] + p[\"b_o\"]",
                    "X @ p[\"W_xg\"] + H @ p[\"W_hg\"] + p[\"b_g\"]")))
_wrong(E, "output gate not applied",
       _edit(LSTM, ("H_new = O * torch.tanh(C_new)", "H_new = torch.tanh(C_new)")))
_wrong(E, "returns the old cell", _edit(LSTM, ("return H_new, C_new", "return H_new, C")))
_wrong(E, "torch.ops.aten.lstm_cell (forbidden)", """\
import torch


def lstm_cell(X, H, C, params):
    p = params
    w_ih = torch.cat([p["W_xi"], p["W_xf"], p["W_xg"], p["W_xo"]], dim=1).T.contiguous()
    w_hh = torch.cat([p["W_hi"], p["W_hf"], p["W_hg"], p["W_ho"]], dim=1).T.contiguous()
    b_ih = torch.cat([p["b_i"], p["b_f"], p["b_g"], p["b_o"]])
    b_hh = torch.zeros_like(b_ih)
    h, c = torch.ops.aten.lstm_cell(X, [H, C], w_ih, w_hh, b_ih, b_hh)
    return h, c
""")
_wrong(E, "torch._VF.lstm_cell (forbidden)", """\
import torch


def lstm_cell(X, H, C, params):
    p = params
    w_ih = torch.cat([p["W_xi"], p["W_xf"], p["W_xg"], p["W_xo"]], dim=1).T.contiguous()
    w_hh = torch.cat([p["W_hi"], p["W_hf"], p["W_hg"], p["W_ho"]], dim=1).T.contiguous()
    b_ih = torch.cat([p["b_i"], p["b_f"], p["b_g"], p["b_o"]])
    h, c = torch._VF.lstm_cell(X, (H, C), w_ih, w_hh, b_ih, torch.zeros_like(b_ih))
    return h, c
""")
_right(E, "a gate helper, lowercase names", """\
import torch


def lstm_cell(X, H, C, params):
    def gate(name, act):
        return act(X @ params["W_x" + name] + H @ params["W_h" + name] + params["b_" + name])

    i, f, o = (gate(k, torch.sigmoid) for k in "ifo")
    g = gate("g", torch.tanh)
    c = f * C + i * g
    return o * c.tanh(), c
""")
_right(E, "addmm and a hand-written sigmoid", """\
import torch


def lstm_cell(X, H, C, params):
    def sigmoid(a):
        return 1.0 / (1.0 + torch.exp(-a))

    def pre(k):
        return torch.addmm(params["b_" + k], X, params["W_x" + k]) + H @ params["W_h" + k]

    cell = sigmoid(pre("f")) * C + sigmoid(pre("i")) * torch.tanh(pre("g"))
    hidden = sigmoid(pre("o")) * torch.tanh(cell)
    return hidden, cell
""")
