"""A third held-apart set of student answers to the coding exercises of notebooks 01-09 (issue #45).

How and when it was written: in one sitting, by a helper session started for #45's "Done when"
measurement, after the second set (`tests/held_apart_fresh.py`) had started to be used to extend
the mistake catalogue and so no longer counted as held apart. It was written WITHOUT opening the
mistake catalogue (`d2lmini/exercises/mistakes/`), the check modules under `d2lmini/exercises/`
(only the exercise signatures were read, from `d2lmini/grading/assignment/exercises.json`), the first set
(`tests/held_apart_wrong_answers.py`), the answers of the second set (only its docstring, its
`_edit` helper and its `ENTRY_POINTS` were read, for the data format), the tests built on them
(`test_exercises_held_apart*.py`, `test_exercises_mistakes.py`), `tools/mistake_rates.py` or the
other engineers' diffs. The sources were what a student sees: the English notebooks
(`notebooks/NN_*.ipynb`: the exercise cells and the prose before them), the signatures in
`d2lmini/grading/assignment/exercises.json`, and the instructors' solutions (`solutions/notebook_NN.py`,
`solutions/capstone.py`) to know what right looks like.

Before the commit, a sanity pass of the helper's own (a scratch script outside the repository,
not the self-checks) ran every answer beside the instructors' solutions on random inputs: every
wrong answer differed there or raised, except those labelled as a route the exercise forbids
(they compute the right numbers by design) or as an in-place edit of an input (right values, the
caller's tensor changed). Every correct answer agreed with the solution. The set was committed
before any answer ran through a self-check (`ex.check_*`), and no answer is to be edited after
seeing the checks' results: a mistake in an answer is recorded, not fixed.

Covered: every coding exercise of notebooks 01-09 in exercises.json (05b has none) except the two
08 checks that train for minutes ("08:train", "08:capstone").

Data:

- `ENTRY_POINTS`: for each exercise id, the name of the function that an answer's source defines
  and that is passed to the self-check's single slot.
- `WRONG`: (exercise id, label, source) for answers with a real mistake; each must be refused and
  its label says what is wrong.
- `CORRECT`: (exercise id, label, source) for right answers written differently from the
  solutions (another order, einsum, loops, a fused product, ...); each must be accepted.

Many wrong answers are one-mistake edits (`_edit`) of a right answer written in a student's own
style, as most real mistakes are; the others are written out whole.
"""


def _edit(base, *changes):
    """`base` with each (old, new) or (old, new, count) change made; `old` must occur `count` times."""
    source = base
    for change in changes:
        old, new = change[0], change[1]
        count = change[2] if len(change) > 2 else 1
        found = source.count(old)
        if found != count:
            raise ValueError(f"{old!r} is found {found} times, not {count}, in:\n{source}")
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
    "09:lstm_step_backward": "lstm_step_backward",
}

WRONG = []
CORRECT = []


def _wrong(exercise, base, items):
    """Add one wrong answer per (label, change, change, ...) item, each an `_edit` of `base`."""
    for label, *changes in items:
        WRONG.append((exercise, label, _edit(base, *changes)))


def _whole(exercise, label, source):
    WRONG.append((exercise, label, source))


def _right(exercise, label, source):
    CORRECT.append((exercise, label, source))


# ---------------------------------------------------------------------------------------------------------
# 01: all_states(tokens, W_xh, W_hh, b_h) -> (steps, batch, hiddens), from a zero H_0

_ALL_STATES = """
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    H = torch.zeros(batch, W_hh.shape[1], dtype=W_xh.dtype, device=W_xh.device)
    outputs = []
    for t in range(steps):
        X_t = W_xh[tokens[:, t]]
        H = torch.tanh(X_t + H @ W_hh + b_h)
        outputs.append(H)
    return torch.stack(outputs)
"""

_wrong("01:all_states", _ALL_STATES, [
    ("reads tokens by rows: tokens[t] is taken as the step t (batch and time mixed up)",
     ("W_xh[tokens[:, t]]", "W_xh[tokens[t]]"), ("for t in range(steps)", "for t in range(batch)")),
    ("H_{t-1} multiplies the transposed recurrent weight (H @ W_hh.T)", ("H @ W_hh", "H @ W_hh.T")),
    ("no nonlinearity: a linear recurrence", ("torch.tanh(X_t + H @ W_hh + b_h)", "X_t + H @ W_hh + b_h")),
    ("ReLU instead of tanh", ("torch.tanh(", "torch.relu(")),
    ("sigmoid instead of tanh", ("torch.tanh(", "torch.sigmoid(")),
    ("the bias b_h is left out", ("X_t + H @ W_hh + b_h", "X_t + H @ W_hh")),
    ("the bias is added twice (once to the looked-up row, once in the sum)",
     ("X_t = W_xh[tokens[:, t]]", "X_t = W_xh[tokens[:, t]] + b_h")),
    ("stacks along dim 1: returns (batch, steps, hiddens)", ("torch.stack(outputs)",
                                                             "torch.stack(outputs, dim=1)")),
    ("returns only the final state H_T", ("return torch.stack(outputs)", "return H")),
    ("returns H_0 ... H_{T-1}: the state is recorded before the update",
     ("        H = torch.tanh(X_t + H @ W_hh + b_h)\n        outputs.append(H)\n",
      "        outputs.append(H)\n        H = torch.tanh(X_t + H @ W_hh + b_h)\n")),
    ("includes the zero H_0 as the first state: steps + 1 states", ("outputs = []", "outputs = [H]")),
    ("the state is not carried: every step starts again from the zero state",
     ("H = torch.tanh(X_t + H @ W_hh + b_h)", "H = torch.tanh(X_t + torch.zeros_like(H) @ W_hh + b_h)")),
    ("reads the sequence backwards in time", ("for t in range(steps)", "for t in reversed(range(steps))")),
    ("looks up columns of W_xh instead of rows (W_xh.T[tokens])", ("W_xh[tokens[:, t]]",
                                                                   "W_xh.T[tokens[:, t]]")),
    ("concatenates the states: (steps * batch, hiddens) instead of a stack",
     ("torch.stack(outputs)", "torch.cat(outputs)")),
    ("the zero state is made float32 whatever the weights' dtype",
     ("torch.zeros(batch, W_hh.shape[1], dtype=W_xh.dtype, device=W_xh.device)",
      "torch.zeros(batch, W_hh.shape[1], device=W_xh.device)")),
    ("bag of characters: adds the embeddings of every token read so far, not only the current one",
     ("X_t = W_xh[tokens[:, t]]", "X_t = W_xh[tokens[:, : t + 1]].sum(dim=1)")),
])

_right("01:all_states", "one-hot rows times W_xh, loop over tokens.T", """
import torch
import torch.nn.functional as F


def all_states(tokens, W_xh, W_hh, b_h):
    vocab_size, num_hiddens = W_xh.shape
    H = W_hh.new_zeros(tokens.shape[0], num_hiddens)
    states = []
    for column in tokens.T:
        X = F.one_hot(column, vocab_size).to(W_xh.dtype)
        H = torch.tanh(X @ W_xh + b_h + H @ W_hh)
        states.append(H)
    return torch.stack(states, dim=0)
""")
_right("01:all_states", "all inputs looked up before the loop, einsum, a preallocated result", """
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    inputs = W_xh[tokens] + b_h  # (batch, steps, hiddens)
    result = torch.empty(steps, batch, W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    H = torch.zeros_like(result[0])
    for t in range(steps):
        H = torch.tanh(inputs[:, t] + torch.einsum("bh,hk->bk", H, W_hh))
        result[t] = H
    return result
""")
_right("01:all_states", "index_select and addmm, the first step written apart", """
import torch


def all_states(tokens, W_xh, W_hh, b_h):
    rows = torch.index_select(W_xh, 0, tokens[:, 0])
    H = torch.tanh(rows + b_h)  # H_0 = 0, so the first step has no recurrent term
    states = [H]
    for t in range(1, tokens.shape[1]):
        rows = torch.index_select(W_xh, 0, tokens[:, t])
        H = torch.tanh(torch.addmm(rows + b_h, H, W_hh))
        states.append(H)
    return torch.stack(states)
""")

# ---------------------------------------------------------------------------------------------------------
# 02: fused_step(X, H, W_xh, W_hh, b_h) with one matrix product

_FUSED = """
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    XH = torch.cat([X, H], dim=1)
    W = torch.cat([W_xh, W_hh], dim=0)
    return torch.tanh(XH @ W + b_h)
"""

_wrong("02:fused_step", _FUSED, [
    ("concatenates along the wrong axes (X under H, W_xh beside W_hh)",
     ("torch.cat([X, H], dim=1)", "torch.cat([X, H], dim=0)"), ("torch.cat([W_xh, W_hh], dim=0)",
                                                               "torch.cat([W_xh, W_hh], dim=1)")),
    ("stacks the weights in the other order ([W_hh; W_xh]) than the inputs ([X, H])",
     ("torch.cat([W_xh, W_hh], dim=0)", "torch.cat([W_hh, W_xh], dim=0)")),
    ("puts H before X in the concatenation but keeps [W_xh; W_hh]",
     ("torch.cat([X, H], dim=1)", "torch.cat([H, X], dim=1)")),
    ("no tanh", ("return torch.tanh(XH @ W + b_h)", "return XH @ W + b_h")),
    ("the bias is left out", ("XH @ W + b_h", "XH @ W")),
    ("the bias is added after tanh", ("torch.tanh(XH @ W + b_h)", "torch.tanh(XH @ W) + b_h")),
    ("the bias is subtracted", ("XH @ W + b_h", "XH @ W - b_h")),
    ("elementwise product instead of a matrix product", ("XH @ W", "XH * W")),
    ("multiplies by the transposed stacked weight", ("XH @ W + b_h", "XH @ W.T + b_h")),
    ("ReLU instead of tanh", ("torch.tanh(", "torch.relu(")),
    ("tanh written as 2 sigmoid(x) - 1 (which is tanh(x / 2))",
     ("torch.tanh(XH @ W + b_h)", "2 * torch.sigmoid(XH @ W + b_h) - 1")),
    ("route the exercise forbids: two matrix products, not one (right numbers)",
     ("XH = torch.cat([X, H], dim=1)\n    W = torch.cat([W_xh, W_hh], dim=0)\n"
      "    return torch.tanh(XH @ W + b_h)", "return torch.tanh(X @ W_xh + H @ W_hh + b_h)")),
    ("writes the result into H in place and returns H (the caller's state is overwritten)",
     ("return torch.tanh(XH @ W + b_h)", "H.copy_(torch.tanh(XH @ W + b_h))\n    return H")),
    ("adds X and H instead of concatenating them (and adds the two weights)",
     ("torch.cat([X, H], dim=1)", "X + H"), ("torch.cat([W_xh, W_hh], dim=0)", "W_xh + W_hh")),
    ("concatenates the weights but multiplies only X (H's rows of W never used)",
     ("XH @ W + b_h", "X @ W[: X.shape[1]] + b_h")),
])

_right("02:fused_step", "the bias as an extra row of W, with a column of ones", """
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    ones = torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)
    inputs = torch.cat((X, H, ones), dim=1)
    weights = torch.cat((W_xh, W_hh, b_h.reshape(1, -1)), dim=0)
    return torch.tanh(inputs @ weights)
""")
_right("02:fused_step", "hstack/vstack and einsum", """
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    stacked = torch.vstack([W_xh, W_hh])
    side_by_side = torch.hstack([X, H])
    return torch.einsum("nk,kh->nh", side_by_side, stacked).add(b_h).tanh()
""")
_right("02:fused_step", "addmm with the bias as the added term", """
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    W = torch.cat((W_xh, W_hh))
    pre = torch.addmm(b_h.expand(X.shape[0], -1), torch.cat((X, H), 1), W)
    return torch.tanh(pre)
""")

# ---------------------------------------------------------------------------------------------------------
# 03: lookup(W, X) == one_hot(X) @ W without one-hot vectors or a product

_LOOKUP = """
import torch


def lookup(W, X):
    rows = W.index_select(0, X.reshape(-1))
    return rows.reshape(*X.shape, W.shape[1])
"""

_wrong("03:lookup", _LOOKUP, [
    ("picks columns of W instead of rows", ("W.index_select(0, X.reshape(-1))",
                                            "W.index_select(1, X.reshape(-1))"),
     ("rows.reshape(*X.shape, W.shape[1])", "rows.T.reshape(*X.shape, W.shape[0])")),
    ("indices read as starting at 1 (W[X - 1])", ("X.reshape(-1))", "X.reshape(-1) - 1)")),
    ("returns the flattened rows: (X.numel(), columns) whatever the shape of X",
     ("return rows.reshape(*X.shape, W.shape[1])", "return rows")),
    ("squeezes the result: dimensions of size 1 disappear",
     ("return rows.reshape(*X.shape, W.shape[1])", "return rows.reshape(*X.shape, W.shape[1]).squeeze()")),
    ("converts the result to float32 whatever W's dtype",
     ("return rows.reshape(*X.shape, W.shape[1])", "return rows.reshape(*X.shape, W.shape[1]).float()")),
    ("merges the trailing dimensions: view(X.shape[0], -1)",
     ("return rows.reshape(*X.shape, W.shape[1])", "return rows.reshape(X.shape[0], -1)")),
    ("returns the transposed lookup", ("return rows.reshape(*X.shape, W.shape[1])",
                                       "return rows.reshape(*X.shape, W.shape[1]).transpose(-1, -2)")),
])
_whole(
    "03:lookup",
    "route the exercise forbids: builds the one-hot vectors and multiplies (right numbers)",
    """
import torch.nn.functional as F


def lookup(W, X):
    return F.one_hot(X, W.shape[0]).to(W.dtype) @ W
""")
_whole("03:lookup", "a loop that only works for a 1-D X, into a float32 buffer", """
import torch


def lookup(W, X):
    out = torch.zeros(len(X), W.shape[1])
    for i, x in enumerate(X):
        out[i] = W[x]
    return out
""")
_whole("03:lookup", "gather with an index expanded for a 1-D X only", """
import torch


def lookup(W, X):
    index = X.unsqueeze(-1).expand(-1, W.shape[1])
    return torch.gather(W, 0, index)
""")
_whole("03:lookup", "sums the picked rows (a bag of the tokens) instead of keeping one row per index", """
def lookup(W, X):
    return W[X].sum(dim=0)
""")

_right("03:lookup", "index_select on the flattened indices, view back", """
import torch


def lookup(W, X):
    flat = torch.index_select(W, 0, X.flatten())
    return flat.view(tuple(X.shape) + (W.shape[1],))
""")
_right("03:lookup", "F.embedding, a row lookup", """
import torch.nn.functional as F


def lookup(W, X):
    return F.embedding(X, W)
""")
_right("03:lookup", "advanced indexing with an explicit slice", """
def lookup(W, X):
    return W[X, :]
""")

# ---------------------------------------------------------------------------------------------------------
# 03: one_hot(X, vocab_size) -> float32, X.shape + (vocab_size,), no F.one_hot

_ONE_HOT = """
import torch


def one_hot(X, vocab_size):
    out = torch.zeros(*X.shape, vocab_size, device=X.device)
    out.scatter_(-1, X.unsqueeze(-1), 1.0)
    return out
"""

_wrong("03:one_hot", _ONE_HOT, [
    ("scatters along dim 0 instead of the last axis", ("out.scatter_(-1,", "out.scatter_(0,")),
    ("the vocabulary axis first: (vocab_size,) + X.shape",
     ("torch.zeros(*X.shape, vocab_size, device=X.device)",
      "torch.zeros(vocab_size, *X.shape, device=X.device)"),
     ("out.scatter_(-1, X.unsqueeze(-1), 1.0)", "out.scatter_(0, X.unsqueeze(0), 1.0)")),
    ("float64 result", ("device=X.device)", "device=X.device, dtype=torch.float64)")),
    ("int64 result", ("device=X.device)", "device=X.device, dtype=torch.long)"), ("1.0)", "1)")),
    ("one column too many (vocab_size + 1)", ("*X.shape, vocab_size,", "*X.shape, vocab_size + 1,")),
    ("flattens X: (X.numel(), vocab_size) for a multi-dimensional X",
     ("torch.zeros(*X.shape, vocab_size, device=X.device)",
      "torch.zeros(X.numel(), vocab_size, device=X.device)"),
     ("X.unsqueeze(-1)", "X.reshape(-1, 1)")),
    ("changes X in place (X.unsqueeze_) before scattering", ("X.unsqueeze(-1), 1.0",
                                                             "X.unsqueeze_(-1), 1.0")),
])
_whole("03:one_hot", "route the exercise forbids: calls F.one_hot (right numbers)", """
import torch.nn.functional as F


def one_hot(X, vocab_size):
    return F.one_hot(X, vocab_size).float()
""")
_whole("03:one_hot", "returns the boolean comparison, not float32", """
import torch


def one_hot(X, vocab_size):
    return X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)
""")
_whole("03:one_hot", "compares with arange(1, vocab_size + 1): every 1 is one place off", """
import torch


def one_hot(X, vocab_size):
    return (X.unsqueeze(-1) == torch.arange(1, vocab_size + 1, device=X.device)).float()
""")
_whole("03:one_hot", "broadcasts the wrong way: the index axis first, (vocab_size,) + X.shape", """
import torch


def one_hot(X, vocab_size):
    return (X.unsqueeze(0) == torch.arange(vocab_size, device=X.device).reshape(-1, *([1] * X.dim()))).float()
""")
_whole("03:one_hot", "works only for a 1-D X (row numbers from arange(len(X)))", """
import torch


def one_hot(X, vocab_size):
    out = torch.zeros(len(X), vocab_size, device=X.device)
    out[torch.arange(len(X)), X] = 1
    return out
""")
_whole("03:one_hot", "rows of the identity, but picked with X - 1", """
import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size, device=X.device)[X - 1]
""")

_right("03:one_hot", "rows of the identity matrix", """
import torch


def one_hot(X, vocab_size):
    return torch.eye(vocab_size, dtype=torch.float32, device=X.device)[X]
""")
_right("03:one_hot", "scatter into a float32 zero tensor (not in place)", """
import torch


def one_hot(X, vocab_size):
    base = torch.zeros(X.shape + (vocab_size,), dtype=torch.float32, device=X.device)
    return base.scatter(X.dim(), X[..., None], 1.0)
""")
_right("03:one_hot", "torch.where on a broadcast comparison", """
import torch


def one_hot(X, vocab_size):
    positions = torch.arange(vocab_size, device=X.device)
    hit = X[..., None] == positions
    return torch.where(hit, 1.0, 0.0).to(torch.float32)
""")

# ---------------------------------------------------------------------------------------------------------
# 03: batches_with_tail(indices, batch_size, num_steps, offset): sequential partitioning + a short tail

_TAIL = """
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    k = 0
    while k < L:
        step = min(num_steps, L - k)
        yield X[:, k : k + step], Y[:, k : k + step]
        k += step
"""

_wrong("03:sequential_batches", _TAIL, [
    ("drops the tail, as section 7's sequential_batches does",
     ("    while k < L:\n", "    while k + num_steps <= L:\n")),
    ("stream length without the -1 for the labels: (n - o) // B",
     ("L = (len(indices) - offset - 1) // batch_size", "L = (len(indices) - offset) // batch_size")),
    ("ignores the offset: starts at 0", ("indices[offset : offset + batch_size * L]",
                                         "indices[: batch_size * L]"),
     ("indices[offset + 1 : offset + 1 + batch_size * L]", "indices[1 : 1 + batch_size * L]")),
    ("streams read down the columns: reshape(L, B).T interleaves them",
     ("indices[offset : offset + batch_size * L].reshape(batch_size, L)",
      "indices[offset : offset + batch_size * L].reshape(L, batch_size).T"),
     ("indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)",
      "indices[offset + 1 : offset + 1 + batch_size * L].reshape(L, batch_size).T")),
    ("the last minibatch is padded to num_steps steps instead of holding r steps",
     ("        step = min(num_steps, L - k)\n        yield X[:, k : k + step], Y[:, k : k + step]\n",
      "        step = min(num_steps, L - k)\n        x, y = X[:, k : k + step], Y[:, k : k + step]\n"
      "        if step < num_steps:\n"
      "            x = torch.cat([x, x.new_zeros(batch_size, num_steps - step)], dim=1)\n"
      "            y = torch.cat([y, y.new_zeros(batch_size, num_steps - step)], dim=1)\n"
      "        yield x, y\n"),
     ("def batches_with_tail", "import torch\n\n\ndef batches_with_tail")),
    ("the tail is glued onto the last full minibatch (num_steps + r steps)",
     ("step = min(num_steps, L - k)", "step = L - k if L - k < 2 * num_steps else num_steps")),
    ("yields (Y, X): labels first", ("yield X[:, k : k + step], Y[:, k : k + step]",
                                     "yield Y[:, k : k + step], X[:, k : k + step]")),
    ("yields time-major minibatches (steps, batch)", ("yield X[:, k : k + step], Y[:, k : k + step]",
                                                       "yield X[:, k : k + step].T, Y[:, k : k + step].T")),
    ("labels made with roll: the last column of every minibatch wraps around",
     ("Y = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)",
      "Y = torch.roll(X, -1, dims=1)"), ("def batches_with_tail", "import torch\n\n\ndef batches_with_tail")),
    ("starts one token late: X from offset + 1, Y from offset + 2",
     ("Y = indices[offset + 1 : offset + 1 +", "Y = indices[offset + 2 : offset + 2 +"),
     ("X = indices[offset : offset +", "X = indices[offset + 1 : offset + 1 +"),
     ("L = (len(indices) - offset - 1) // batch_size", "L = (len(indices) - offset - 2) // batch_size")),
    ("the stream length is rounded instead of floored",
     ("L = (len(indices) - offset - 1) // batch_size",
      "L = round((len(indices) - offset - 1) / batch_size)")),
    ("never ends: starts over from the first minibatch when the streams run out",
     ("    k = 0\n    while k < L:\n",
      "    k = 0\n    while True:\n        if k >= L:\n            k = 0\n")),
])
_whole(
    "03:sequential_batches",
    "the tail is cut from the start of the streams (X[:, :r]), not from their end",
    """
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    full = L // num_steps
    for k in range(full):
        yield X[:, k * num_steps : (k + 1) * num_steps], Y[:, k * num_steps : (k + 1) * num_steps]
    r = L % num_steps
    if r:
        yield X[:, :r], Y[:, :r]
""")
_whole("03:sequential_batches", "yields an empty (B, 0) minibatch at the end when nothing is left over", """
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    X = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    full = L // num_steps
    for k in range(full):
        yield X[:, k * num_steps : (k + 1) * num_steps], Y[:, k * num_steps : (k + 1) * num_steps]
    yield X[:, full * num_steps :], Y[:, full * num_steps :]
""")
_whole(
    "03:sequential_batches",
    "cuts consecutive chunks of the text (row i of k+1 does not continue row i of k)",
    """
def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    start = offset
    done = 0
    while done < L:
        width = min(num_steps, L - done)
        X = indices[start : start + batch_size * width].reshape(batch_size, width)
        Y = indices[start + 1 : start + 1 + batch_size * width].reshape(batch_size, width)
        yield X, Y
        start += batch_size * width
        done += width
""")
_whole("03:sequential_batches", "draws a random offset instead of using the one given", """
import random


def batches_with_tail(indices, batch_size, num_steps, offset):
    offset = random.randrange(num_steps)
    L = (len(indices) - offset - 1) // batch_size
    X = indices[offset : offset + batch_size * L].reshape(batch_size, L)
    Y = indices[offset + 1 : offset + 1 + batch_size * L].reshape(batch_size, L)
    for k in range(0, L, num_steps):
        yield X[:, k : k + num_steps], Y[:, k : k + num_steps]
""")

_right("03:sequential_batches", "torch.split of the two stream matrices", """
import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    length = (len(indices) - offset - 1) // batch_size
    n = length * batch_size
    xs = indices[offset : offset + n].view(batch_size, length)
    ys = indices[offset + 1 : offset + 1 + n].view(batch_size, length)
    yield from zip(torch.split(xs, num_steps, dim=1), torch.split(ys, num_steps, dim=1))
""")
_right("03:sequential_batches", "positions from p = o + iL + kT, gathered", """
import torch


def batches_with_tail(indices, batch_size, num_steps, offset):
    L = (len(indices) - offset - 1) // batch_size
    rows = offset + L * torch.arange(batch_size)
    for k in range(0, L, num_steps):
        width = min(num_steps, L - k)
        positions = rows[:, None] + k + torch.arange(width)[None, :]
        yield indices[positions], indices[positions + 1]
""")
_right("03:sequential_batches", "full minibatches first, then the tail if any", """
def batches_with_tail(indices, batch_size, num_steps, offset):
    stream = (len(indices) - offset - 1) // batch_size
    body = indices[offset:]
    X = body[: batch_size * stream].reshape(batch_size, -1)
    Y = body[1 : batch_size * stream + 1].reshape(batch_size, -1)
    full, tail = divmod(stream, num_steps)
    for k in range(full):
        cols = slice(k * num_steps, (k + 1) * num_steps)
        yield X[:, cols], Y[:, cols]
    if tail > 0:
        yield X[:, stream - tail :], Y[:, stream - tail :]
""")

# ---------------------------------------------------------------------------------------------------------
# 04: train_loop(model, batches, optimizer): one epoch, state carried detached, mean minibatch loss

_TRAIN = """
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

_wrong("04:train_loop", _TRAIN, [
    ("labels flattened batch-major (Y.reshape(-1)) against step-major outputs",
     ("Y.T.reshape(-1)", "Y.reshape(-1)")),
    ("the state is not detached: the second backward reaches into the freed graph",
     ("        else:\n            state = state.detach()\n", "")),
    ("the state is reset at every minibatch (random-sampling style), not carried",
     ("        if state is None:\n            state = model.begin_state(X.shape[0])\n"
      "        else:\n            state = state.detach()\n"
      "", "        state = model.begin_state(X.shape[0])\n")),
    ("the new state is thrown away: every minibatch starts from the first state",
     ("outputs, state = model(X, state)", "outputs, _ = model(X, state)")),
    ("no zero_grad: gradients pile up from minibatch to minibatch", ("        optimizer.zero_grad()\n", "")),
    ("zero_grad between backward and step: the step sees zero gradients",
     ("        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n",
      "        loss.backward()\n        optimizer.zero_grad()\n        optimizer.step()\n")),
    ("forgets optimizer.step(): the parameters never change", ("        optimizer.step()\n", "")),
    ("returns the last minibatch's loss, not the mean", ("return total / count", "return loss.item()")),
    ("returns the sum of the minibatch losses", ("return total / count", "return total")),
    ("returns inside the loop: trains on the first minibatch only",
     ("        count += 1\n    return total / count", "        count += 1\n        return total / count")),
    ("summed cross-entropy instead of the mean",
     ("Y.T.reshape(-1))\n", 'Y.T.reshape(-1), reduction="sum")\n')),
    ("no detach, but retain_graph=True: gradients flow back through every earlier minibatch",
     ("        else:\n            state = state.detach()\n", ""), ("loss.backward()",
                                                                   "loss.backward(retain_graph=True)")),
    ("begin_state gets the number of steps instead of the batch size",
     ("model.begin_state(X.shape[0])", "model.begin_state(X.shape[1])")),
    ("steps before the backward: every update uses the previous minibatch's gradients",
     ("        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n",
      "        optimizer.step()\n        optimizer.zero_grad()\n        loss.backward()\n")),
    ("nll_loss on raw logits (no log_softmax)", ("F.cross_entropy(outputs,", "F.nll_loss(outputs,")),
    ("the forward pass runs under torch.no_grad(): nothing to backpropagate",
     ("        outputs, state = model(X, state)\n",
      "        with torch.no_grad():\n            outputs, state = model(X, state)\n")),
    ("the mean is divided by the number of tokens of a minibatch as well",
     ("return total / count", "return total / count / X.numel()")),
])

_right("04:train_loop", "own cross-entropy (log_softmax and gather), detach after the step", """
import torch


def train_loop(model, batches, optimizer):
    state = None
    losses = []
    for X, Y in batches:
        if state is None:
            state = model.begin_state(X.shape[0])
        outputs, state = model(X, state)
        targets = Y.t().flatten()
        log_probs = torch.log_softmax(outputs, dim=-1)
        loss = -log_probs.gather(1, targets[:, None]).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        state = state.detach()
        losses.append(loss.detach())
    return torch.stack(losses).mean().item()
""")
_right("04:train_loop", "an iterator: the first minibatch opens the state", """
import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    batches = iter(batches)
    X, Y = next(batches)
    state = model.begin_state(len(X))
    losses = []
    while True:
        outputs, new_state = model(X, state)
        loss = F.cross_entropy(outputs, Y.transpose(0, 1).reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
        state = new_state.detach()
        try:
            X, Y = next(batches)
        except StopIteration:
            break
    return sum(losses) / len(losses)
""")
_right("04:train_loop", "nll_loss of log_softmax, a running mean", """
import torch.nn.functional as F


def train_loop(model, batches, optimizer):
    state, mean, n = None, 0.0, 0
    for X, Y in batches:
        state = model.begin_state(X.size(0)) if state is None else state.detach()
        logits, state = model(X, state)
        loss = F.nll_loss(F.log_softmax(logits, dim=1), Y.permute(1, 0).reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        n += 1
        mean += (loss.item() - mean) / n
    return mean
""")

# ---------------------------------------------------------------------------------------------------------
# 05: masked_loss_and_grad(outputs, Y, lengths): mean cross-entropy over the real steps, and dL/doutputs

_MASKED = """
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    labels = Y.T.reshape(-1)
    mask = torch.arange(steps, device=Y.device)[:, None] < lengths[None, :]
    mask = mask.reshape(-1).to(outputs.dtype)
    N = mask.sum()
    log_p = torch.log_softmax(outputs, dim=1)
    rows = torch.arange(labels.shape[0], device=Y.device)
    loss = -(log_p[rows, labels] * mask).sum() / N
    grad = torch.softmax(outputs, dim=1)
    grad[rows, labels] -= 1
    grad = grad * mask[:, None] / N
    return loss, grad
"""

_wrong("05:masked_loss_and_grad", _MASKED, [
    ("the mask is laid out batch-major while the rows are step-major",
     ("torch.arange(steps, device=Y.device)[:, None] < lengths[None, :]",
      "torch.arange(steps, device=Y.device)[None, :] < lengths[:, None]")),
    ("divides by n*T (every step) instead of N real steps", ("N = mask.sum()", "N = mask.numel()")),
    ("labels flattened batch-major", ("labels = Y.T.reshape(-1)", "labels = Y.reshape(-1)")),
    ("the gradient is not masked: padded rows get a gradient", ("grad = grad * mask[:, None] / N",
                                                                "grad = grad / N")),
    ("the gradient is masked but divided by n*T", ("grad = grad * mask[:, None] / N",
                                                    "grad = grad * mask[:, None] / len(labels)")),
    ("<= instead of <: one padded step counted as real", ("[:, None] < lengths[None, :]",
                                                          "[:, None] <= lengths[None, :]")),
    ("lengths - 1: the last real step dropped", ("< lengths[None, :]", "< lengths[None, :] - 1")),
    ("the gradient's sign flipped (one_hot - softmax)",
     ("grad = torch.softmax(outputs, dim=1)\n    grad[rows, labels] -= 1",
                                                         "grad = -torch.softmax(outputs, dim=1)\n"
                                                         "    grad[rows, labels] += 1")),
    ("the loss in bits (log2)", ("/ N\n    grad = torch.softmax",
                                 "/ N / torch.log(torch.tensor(2.0))\n    grad = torch.softmax")),
    ("forgets the -1 at the targets: the gradient is softmax alone", ("    grad[rows, labels] -= 1\n", "")),
    ("softmax over the rows (dim 0) in the gradient", ("grad = torch.softmax(outputs, dim=1)",
                                                       "grad = torch.softmax(outputs, dim=0)")),
    ("padding taken at the start: the LAST lengths[i] steps are the real ones",
     ("torch.arange(steps, device=Y.device)[:, None] < lengths[None, :]",
      "torch.arange(steps, device=Y.device)[:, None] >= steps - lengths[None, :]")),
    ("stabilises in place: subtracts the row maxima from the caller's outputs (right values)",
     ("    log_p = torch.log_softmax(outputs, dim=1)\n",
      "    outputs -= outputs.max(dim=1, keepdim=True).values\n"
      "    log_p = torch.log_softmax(outputs, dim=1)\n")),
    ("returns (d_outputs, loss) in the wrong order", ("return loss, grad", "return grad, loss")),
])
_whole(
    "05:masked_loss_and_grad",
    "mean over sequences of each sequence's mean loss (not over all real steps)",
    """
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    labels = Y.T.reshape(-1)
    real = (torch.arange(steps, device=Y.device)[:, None] < lengths[None, :]).to(outputs.dtype)
    weight = (real / lengths[None, :].to(outputs.dtype) / batch).reshape(-1)
    rows = torch.arange(len(labels), device=Y.device)
    log_p = torch.log_softmax(outputs, dim=1)
    loss = -(log_p[rows, labels] * weight).sum()
    grad = torch.softmax(outputs, dim=1)
    grad[rows, labels] -= 1
    return loss, grad * weight[:, None]
""")
_whole("05:masked_loss_and_grad", "padding found with ignore_index=0: assumes a padded target is 0", """
import torch
import torch.nn.functional as F


def masked_loss_and_grad(outputs, Y, lengths):
    labels = Y.T.reshape(-1)
    loss = F.cross_entropy(outputs, labels, ignore_index=0)
    keep = (labels != 0).to(outputs.dtype)
    grad = torch.softmax(outputs, dim=1)
    grad[torch.arange(len(labels)), labels] -= 1
    return loss, grad * keep[:, None] / keep.sum()
""")
_whole("05:masked_loss_and_grad", "route the exercise forbids: autograd for the gradient (right numbers)", """
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    logits = outputs.detach().clone().requires_grad_(True)
    steps = Y.shape[1]
    real = (torch.arange(steps)[:, None] < lengths[None, :]).reshape(-1)
    labels = Y.T.reshape(-1)
    picked = torch.log_softmax(logits, dim=1)[torch.arange(len(labels)), labels]
    loss = -picked[real].mean()
    (grad,) = torch.autograd.grad(loss, logits)
    return loss.detach(), grad
""")

_right("05:masked_loss_and_grad", "cross_entropy with reduction='none', the one-hot from F.one_hot", """
import torch
import torch.nn.functional as F


def masked_loss_and_grad(outputs, Y, lengths):
    targets = Y.transpose(0, 1).reshape(-1)
    steps = Y.shape[1]
    real = (torch.arange(steps, device=Y.device).unsqueeze(1) < lengths.unsqueeze(0)).flatten()
    weights = real.to(outputs.dtype) / real.sum()
    per_step = F.cross_entropy(outputs, targets, reduction="none")
    loss = (per_step * weights).sum()
    d = torch.softmax(outputs, dim=-1) - F.one_hot(targets, outputs.shape[1]).to(outputs.dtype)
    return loss, d * weights.unsqueeze(1)
""")
_right("05:masked_loss_and_grad", "a loop over the sequences and their real steps", """
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    n = int(lengths.sum())
    total = outputs.new_zeros(())
    grad = torch.zeros_like(outputs)
    for i in range(batch):
        for t in range(int(lengths[i])):
            row = t * batch + i
            logits = outputs[row]
            log_z = torch.logsumexp(logits, dim=0)
            total = total + (log_z - logits[Y[i, t]])
            grad[row] = torch.exp(logits - log_z)
            grad[row, Y[i, t]] -= 1
    return total / n, grad / n
""")
_right("05:masked_loss_and_grad", "boolean row selection and logsumexp", """
import torch


def masked_loss_and_grad(outputs, Y, lengths):
    steps = Y.shape[1]
    labels = Y.T.flatten()
    keep = (torch.arange(steps, device=Y.device).view(-1, 1) < lengths.view(1, -1)).flatten()
    n = keep.sum()
    sel = outputs[keep]
    lab = labels[keep]
    log_z = torch.logsumexp(sel, dim=1)
    loss = (log_z - sel.gather(1, lab.view(-1, 1)).squeeze(1)).sum() / n
    probs = torch.exp(sel - log_z[:, None])
    probs[torch.arange(len(lab), device=Y.device), lab] -= 1
    grad = torch.zeros_like(outputs)
    grad[keep] = probs / n
    return loss, grad
""")

# ---------------------------------------------------------------------------------------------------------
# 05: leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha)

_LEAKY = """
import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    steps, batch, h = hiddens.shape
    dH_out = (d_outputs @ W_hq.T).reshape(steps, batch, h)
    dW_xh = torch.zeros_like(W_xh)
    dW_hh = torch.zeros_like(W_hh)
    db_h = torch.zeros_like(b_h)
    dH = torch.zeros_like(state)
    for t in range(steps - 1, -1, -1):
        H_prev = state if t == 0 else hiddens[t - 1]
        A = W_xh[X[:, t]] + H_prev @ W_hh + b_h
        dH = dH + dH_out[t]
        dA = dH * alpha * (A > 0).to(A.dtype)
        dW_xh.index_add_(0, X[:, t], dA)
        dW_hh += H_prev.T @ dA
        db_h += dA.sum(dim=0)
        dH = dH * (1 - alpha) + dA @ W_hh.T
    return dW_xh, dW_hh, db_h, dH
"""

_wrong("05:leaky_bptt", _LEAKY, [
    ("ReLU's slope read from H_t > 0 instead of A_t > 0", ("(A > 0).to(A.dtype)",
                                                           "(hiddens[t] > 0).to(A.dtype)")),
    ("forgets the direct path (1 - alpha) H_{t-1} -> H_t", ("dH = dH * (1 - alpha) + dA @ W_hh.T",
                                                            "dH = dA @ W_hh.T")),
    ("forgets the factor alpha in dA", ("dA = dH * alpha * (A > 0)", "dA = dH * (A > 0)")),
    ("the direct path weighted by alpha instead of 1 - alpha", ("dH * (1 - alpha)", "dH * alpha")),
    ("tanh's slope 1 - H^2 (copied from the tanh RNN) instead of ReLU's",
     ("dA = dH * alpha * (A > 0).to(A.dtype)", "dA = dH * alpha * (1 - hiddens[t] ** 2)")),
    ("W_hh not transposed on the way back", ("dA @ W_hh.T", "dA @ W_hh")),
    ("dW_hh transposed: dA.T @ H_prev", ("dW_hh += H_prev.T @ dA", "dW_hh += dA.T @ H_prev")),
    ("H_prev off by one: hiddens[t] instead of hiddens[t - 1]",
     ("H_prev = state if t == 0 else hiddens[t - 1]", "H_prev = hiddens[t]")),
    ("the first step's H_prev is a zero state instead of `state`",
     ("H_prev = state if t == 0 else hiddens[t - 1]",
      "H_prev = torch.zeros_like(state) if t == 0 else hiddens[t - 1]")),
    ("dW_xh[X[:, t]] += dA: repeated tokens in a column are counted once",
     ("dW_xh.index_add_(0, X[:, t], dA)", "dW_xh[X[:, t]] += dA")),
    ("the loop stops before the first step (range(steps - 1, 0, -1))",
     ("range(steps - 1, -1, -1)", "range(steps - 1, 0, -1)")),
    ("d_outputs unflattened batch-major", ("(d_outputs @ W_hq.T).reshape(steps, batch, h)",
                                           "(d_outputs @ W_hq.T).reshape(batch, steps, h).transpose(0, 1)")),
    ("A_t recomputed without the bias", ("A = W_xh[X[:, t]] + H_prev @ W_hh + b_h",
                                         "A = W_xh[X[:, t]] + H_prev @ W_hh")),
    ("db_h averaged over the batch instead of summed", ("db_h += dA.sum(dim=0)", "db_h += dA.mean(dim=0)")),
    ("ReLU's slope replaced by ReLU(A) itself", ("(A > 0).to(A.dtype)", "torch.relu(A)")),
    ("the output's gradient is added after dA is computed (dA sees only the later steps)",
     ("        dH = dH + dH_out[t]\n        dA = dH * alpha * (A > 0).to(A.dtype)\n",
      "        dA = dH * alpha * (A > 0).to(A.dtype)\n        dH = dH + dH_out[t]\n")),
    ("walks forward in time instead of backward", ("range(steps - 1, -1, -1)", "range(steps)")),
    ("returns dL/dA_1 as d_state instead of dL/dH_0",
     ("    return dW_xh, dW_hh, db_h, dH", "    return dW_xh, dW_hh, db_h, dA")),
])
_whole(
    "05:leaky_bptt",
    "route the exercise forbids: recomputes the forward pass and calls autograd (right numbers)",
    """
import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    leaves = [t.detach().clone().requires_grad_(True) for t in (W_xh, W_hh, b_h, state)]
    Wx, Wh, b, H = leaves
    states = []
    for t in range(X.shape[1]):
        H = (1 - alpha) * H + alpha * torch.relu(Wx[X[:, t]] + H @ Wh + b)
        states.append(H)
    outputs = torch.stack(states).reshape(-1, W_hh.shape[0]) @ W_hq
    grads = torch.autograd.grad((outputs * d_outputs).sum(), leaves)
    return tuple(grads)
""")

_right("05:leaky_bptt", "all A_t recomputed in a forward loop first, then the backward loop", """
import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    steps = X.shape[1]
    previous = torch.cat([state.unsqueeze(0), hiddens[:-1]], dim=0)
    A = torch.stack([W_xh[X[:, t]] + previous[t] @ W_hh + b_h for t in range(steps)])
    slope = (A > 0).to(A.dtype)
    from_outputs = d_outputs.matmul(W_hq.t()).view(hiddens.shape)
    dW_xh, dW_hh, db_h = W_xh.new_zeros(W_xh.shape), W_hh.new_zeros(W_hh.shape), b_h.new_zeros(b_h.shape)
    carry = state.new_zeros(state.shape)
    for t in reversed(range(steps)):
        g = from_outputs[t] + carry
        dA = alpha * slope[t] * g
        dW_hh = dW_hh + previous[t].t() @ dA
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        db_h = db_h + dA.sum(0)
        carry = (1 - alpha) * g + dA @ W_hh.t()
    return dW_xh, dW_hh, db_h, carry
""")
_right("05:leaky_bptt", "one-hot products for dW_xh, einsum for dW_hh", """
import torch
import torch.nn.functional as F


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    T, n, h = hiddens.shape
    V = W_xh.shape[0]
    dO = d_outputs.reshape(T, n, -1)
    grads = [torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)]
    dH_next = torch.zeros_like(state)
    for t in range(T - 1, -1, -1):
        H_prev = hiddens[t - 1] if t >= 1 else state
        X_t = F.one_hot(X[:, t], V).to(hiddens.dtype)
        A = X_t @ W_xh + H_prev @ W_hh + b_h
        dH = torch.einsum("nv,hv->nh", dO[t], W_hq) + dH_next
        dA = torch.where(A > 0, alpha * dH, torch.zeros_like(dH))
        grads[0] = grads[0] + X_t.T @ dA
        grads[1] = grads[1] + torch.einsum("ni,nj->ij", H_prev, dA)
        grads[2] = grads[2] + dA.sum(0)
        dH_next = dH - alpha * dH + dA @ W_hh.T
    return grads[0], grads[1], grads[2], dH_next
""")
_right("05:leaky_bptt", "two gradients kept apart: through A_t and along the leak", """
import torch


def leaky_bptt(X, state, hiddens, d_outputs, W_xh, W_hh, b_h, W_hq, alpha):
    steps, batch, hidden = hiddens.shape
    dW_xh, dW_hh, db_h = 0 * W_xh, 0 * W_hh, 0 * b_h
    through_A = torch.zeros_like(state)
    along_leak = torch.zeros_like(state)
    for t in reversed(range(steps)):
        rows = slice(t * batch, (t + 1) * batch)
        dH = d_outputs[rows] @ W_hq.T + through_A + along_leak
        H_prev = state if t == 0 else hiddens[t - 1]
        pre = H_prev @ W_hh + W_xh[X[:, t]] + b_h
        dA = dH * (pre > 0) * alpha
        for i in range(batch):
            dW_xh[X[i, t]] += dA[i]
        dW_hh += H_prev.T @ dA
        db_h += dA.sum(0)
        through_A = dA @ W_hh.T
        along_leak = (1 - alpha) * dH
    return dW_xh, dW_hh, db_h, through_A + along_leak
""")

# ---------------------------------------------------------------------------------------------------------
# 06: my_clip(grads, theta): new tensors scaled by min(1, theta / joint norm)

_MY_CLIP = """
import torch


def my_clip(grads, theta):
    total = 0.0
    for g in grads:
        total = total + (g * g).sum()
    norm = total ** 0.5
    scale = min(1.0, theta / norm) if norm > 0 else 1.0
    return [g * scale for g in grads]
"""

_wrong("06:clip_function", _MY_CLIP, [
    ("squared norm: the square root is forgotten", ("norm = total ** 0.5", "norm = total")),
    ("always rescales to theta: small gradients are scaled up",
     ("scale = min(1.0, theta / norm) if norm > 0 else 1.0", "scale = theta / norm if norm > 0 else 1.0")),
    ("max instead of min", ("min(1.0, theta / norm)", "max(1.0, theta / norm)")),
    ("the factor inverted: norm / theta", ("theta / norm", "norm / theta")),
    ("root mean square of the entries instead of the norm",
     ("        total = total + (g * g).sum()\n", "        total = total + (g * g).mean()\n")),
    ("the norm of the first gradient only", ("    for g in grads:\n        total = total + (g * g).sum()\n",
                                            "    total = (grads[0] * grads[0]).sum()\n")),
    ("scales in place (mul_) and returns the caller's tensors",
     ("return [g * scale for g in grads]", "for g in grads:\n        g.mul_(scale)\n    return grads")),
    ("returns (clipped, norm), the capstone's form, instead of the list",
     ("return [g * scale for g in grads]", "return [g * scale for g in grads], float(norm)")),
])
_whole("06:clip_function", "clips every tensor by its own norm", """
import torch


def my_clip(grads, theta):
    out = []
    for g in grads:
        norm = torch.sqrt((g ** 2).sum())
        out.append(g * theta / norm if norm > theta else g.clone())
    return out
""")
_whole("06:clip_function", "clips each entry to [-theta, theta] (value clipping)", """
import torch


def my_clip(grads, theta):
    return [torch.clamp(g, -theta, theta) for g in grads]
""")
_whole("06:clip_function", "the joint norm taken as the sum of the per-tensor norms", """
import torch


def my_clip(grads, theta):
    norm = sum(torch.linalg.norm(g) for g in grads)
    scale = min(1.0, float(theta / norm)) if norm > 0 else 1.0
    return [g * scale for g in grads]
""")
_whole("06:clip_function", "normalises first (g / norm * min(norm, theta)): NaN for all-zero gradients", """
import torch


def my_clip(grads, theta):
    norm = torch.sqrt(sum(torch.sum(g * g) for g in grads))
    return [g / norm * min(norm, theta) for g in grads]
""")
_whole("06:clip_function", "returns the input list itself when under the threshold (no new tensors)", """
import math


def my_clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    if norm <= theta:
        return grads
    return [g * (theta / norm) for g in grads]
""")
_whole("06:clip_function", "the largest entry (infinity norm) instead of the 2-norm", """
def my_clip(grads, theta):
    norm = max(float(g.abs().max()) for g in grads)
    scale = min(1.0, theta / norm) if norm > 0 else 1.0
    return [g * scale for g in grads]
""")
_whole("06:clip_function", "stacks the gradients to take the norm: fails for tensors of different shapes", """
import torch


def my_clip(grads, theta):
    norm = torch.stack(grads).norm()
    scale = torch.clamp(theta / norm, max=1.0)
    return [g * scale for g in grads]
""")

_right("06:clip_function", "vector_norm of the concatenation, clamp", """
import torch


def my_clip(grads, theta):
    flat = torch.cat([g.reshape(-1) for g in grads])
    norm = torch.linalg.vector_norm(flat)
    factor = torch.clamp(theta / torch.clamp(norm, min=1e-30), max=1.0)
    return [g * factor for g in grads]
""")
_right("06:clip_function", "math.sqrt of float sums, clones when under the threshold", """
import math


def my_clip(grads, theta):
    norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
    if norm > theta:
        return [g.mul(theta / norm) for g in grads]
    return [g.clone() for g in grads]
""")
_right("06:clip_function", "norm of the per-tensor norms, torch.where for the factor", """
import torch


def my_clip(grads, theta):
    norms = torch.stack([g.norm() for g in grads])
    norm = norms.norm()
    factor = torch.where(norm > theta, theta / norm, torch.ones_like(norm))
    return [factor * g for g in grads]
""")

# ---------------------------------------------------------------------------------------------------------
# 07: perplexity(logits, targets): a number, own cross-entropy, stable for logits of 1000

_PPL7 = """
import math

import torch


def perplexity(logits, targets):
    m = logits.max(dim=1, keepdim=True).values
    log_z = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()
    nll = log_z - logits[torch.arange(len(targets)), targets]
    return math.exp(nll.mean().item())
"""

_wrong("07:perplexity_function", _PPL7, [
    ("mean of the per-token perplexities instead of exp of the mean",
     ("return math.exp(nll.mean().item())", "return nll.exp().mean().item()")),
    ("exp of the summed cross-entropy", ("nll.mean()", "nll.sum()")),
    ("returns the mean cross-entropy (no exp)", ("return math.exp(nll.mean().item())",
                                                 "return nll.mean().item()")),
    ("returns a tensor, not a Python number", ("return math.exp(nll.mean().item())",
                                               "return torch.exp(nll.mean())")),
    ("the cross-entropy in bits, then exp", ("return math.exp(nll.mean().item())",
                                             "return math.exp(nll.mean().item() / math.log(2))")),
    ("the probability of the most likely token instead of the target's",
     ("nll = log_z - logits[torch.arange(len(targets)), targets]", "nll = log_z - m.squeeze(1)")),
    ("exp of the mean log-probability: the inverse of the perplexity",
     ("return math.exp(nll.mean().item())", "return math.exp(-nll.mean().item())")),
    ("no shift by the maximum: overflows for logits of 1000",
     ("log_z = m.squeeze(1) + (logits - m).exp().sum(dim=1).log()", "log_z = logits.exp().sum(dim=1).log()")),
    ("shifts by the largest logit of the whole batch, not of each row: rows far below it underflow",
     ("m = logits.max(dim=1, keepdim=True).values", "m = logits.max().expand(logits.shape[0], 1)")),
    ("divides the total by n - 1", ("nll.mean().item()", "(nll.sum() / (len(targets) - 1)).item()")),
    ("picks the target's logit with gather along dim 0",
     ("logits[torch.arange(len(targets)), targets]", "logits.gather(0, targets.unsqueeze(0)).squeeze(0)")),
])
_whole("07:perplexity_function", "route the exercise forbids: F.cross_entropy (right numbers)", """
import math

import torch.nn.functional as F


def perplexity(logits, targets):
    return math.exp(F.cross_entropy(logits, targets).item())
""")
_whole("07:perplexity_function", "softmax over dim 0 (over the positions, not the vocabulary)", """
import math

import torch


def perplexity(logits, targets):
    log_p = torch.log_softmax(logits, dim=0)
    picked = log_p[torch.arange(len(targets)), targets]
    return math.exp(-picked.mean().item())
""")
_whole("07:perplexity_function", "stable softmax, but the log of a probability clamped at 1e-10", """
import math

import torch


def perplexity(logits, targets):
    p = torch.softmax(logits, dim=1)
    picked = p[torch.arange(len(targets)), targets].clamp(min=1e-10)
    return math.exp(-torch.log(picked).mean().item())
""")
_whole(
    "07:perplexity_function",
    "geometric mean as a product of probabilities: underflows for long texts",
    """
import torch


def perplexity(logits, targets):
    p = torch.softmax(logits, dim=1)[torch.arange(len(targets)), targets]
    return float(torch.prod(p) ** (-1.0 / len(targets)))
""")
_whole("07:perplexity_function", "the perplexity of the mean probability: 1 / mean p(target)", """
import torch


def perplexity(logits, targets):
    p = torch.softmax(logits, dim=1)[torch.arange(len(targets)), targets]
    return 1.0 / p.mean().item()
""")

_right("07:perplexity_function", "logsumexp, the mean as sum / n, float()", """
import math

import torch


def perplexity(logits, targets):
    n = targets.shape[0]
    nats = torch.logsumexp(logits, dim=1) - logits.gather(1, targets.view(-1, 1)).view(-1)
    return math.exp(float(nats.sum()) / n)
""")
_right("07:perplexity_function", "a loop over the rows in float64", """
import math


def perplexity(logits, targets):
    rows = logits.double()
    total = 0.0
    for row, target in zip(rows, targets.tolist()):
        top = float(row.max())
        log_z = top + math.log(float((row - top).exp().sum()))
        total += log_z - float(row[target])
    return math.exp(total / len(rows))
""")
_right("07:perplexity_function", "2 to the mean number of bits", """
import math

import torch


def perplexity(logits, targets):
    log_p = torch.log_softmax(logits.double(), dim=1)
    bits = -log_p[torch.arange(len(targets)), targets] / math.log(2)
    return 2.0 ** bits.mean().item()
""")

# ---------------------------------------------------------------------------------------------------------
# 07: kn_bigram(text, context, char, discount): interpolated Kneser-Ney, continuation lower order

_KN = """
def kn_bigram(text, context, char, discount=0.75):
    pairs = {}
    for a, b in zip(text, text[1:]):
        pairs[(a, b)] = pairs.get((a, b), 0) + 1
    c_a = sum(n for (a, b), n in pairs.items() if a == context)
    n_types = len(pairs)
    n_before = len({a for (a, b) in pairs if b == char})
    p_cont = n_before / n_types
    if c_a == 0:
        return p_cont
    T_a = len({b for (a, b) in pairs if a == context})
    c_ab = pairs.get((context, char), 0)
    return max(c_ab - discount, 0) / c_a + discount * T_a / c_a * p_cont
"""

_wrong("07:kn_bigram", _KN, [
    ("no max(., 0): an unseen pair gets a negative first term",
     ("max(c_ab - discount, 0) / c_a", "(c_ab - discount) / c_a")),
    ("the lower order is the plain unigram frequency, not the continuation count",
     ("p_cont = n_before / n_types", "p_cont = text.count(char) / len(text)")),
    ("N1+(. b) counts pair tokens ending in b instead of distinct predecessors",
     ("n_before = len({a for (a, b) in pairs if b == char})",
      "n_before = sum(n for (a, b), n in pairs.items() if b == char)"),
     ("n_types = len(pairs)", "n_types = sum(pairs.values())")),
    ("N1+(. .) counted as all pair tokens (len(text) - 1) instead of distinct pairs",
     ("n_types = len(pairs)", "n_types = len(text) - 1")),
    ("T(a) counts the pair tokens after a, not the distinct followers",
     ("T_a = len({b for (a, b) in pairs if a == context})", "T_a = c_a")),
    ("c(a .) as text.count(a): counts a final a that nothing follows",
     ("c_a = sum(n for (a, b), n in pairs.items() if a == context)", "c_a = text.count(context)")),
    ("c(ab) with str.count: overlapping pairs like 'aa' in 'aaa' counted once",
     ("c_ab = pairs.get((context, char), 0)", "c_ab = text.count(context + char)")),
    ("an unseen context gets 0 instead of the continuation unigram", ("        return p_cont\n",
                                                                      "        return 0.0\n")),
    ("an unseen context gets a uniform probability over the characters of the text",
     ("        return p_cont\n", "        return 1 / len(set(text))\n")),
    ("the interpolation weight forgets the discount", ("discount * T_a / c_a * p_cont",
                                                       "T_a / c_a * p_cont")),
    ("back-off instead of interpolation: the lower order only for unseen pairs",
     ("    return max(c_ab - discount, 0) / c_a + discount * T_a / c_a * p_cont",
      "    if c_ab > 0:\n        return (c_ab - discount) / c_a\n    return discount * T_a / c_a * p_cont")),
    ("N1+(. b) counts the characters after b, not before",
     ("n_before = len({a for (a, b) in pairs if b == char})",
      "n_before = len({b for (a, b) in pairs if a == char})")),
    ("the discount is taken from the relative frequency: max(c(ab)/c(a.) - d, 0)",
     ("max(c_ab - discount, 0) / c_a", "max(c_ab / c_a - discount, 0)")),
    ("the discount argument is ignored: 0.75 always",
     ("    pairs = {}\n", "    discount = 0.75\n    pairs = {}\n")),
    ("the continuation denominator is the number of distinct characters, not of distinct pairs",
     ("p_cont = n_before / n_types", "p_cont = n_before / len(set(text))")),
])
_whole("07:kn_bigram", "context and char swapped: p(context | char)", """
def kn_bigram(text, context, char, discount=0.75):
    context, char = char, context
    pairs = {}
    for a, b in zip(text, text[1:]):
        pairs[(a, b)] = pairs.get((a, b), 0) + 1
    c_a = sum(n for (a, b), n in pairs.items() if a == context)
    p_cont = len({a for (a, b) in pairs if b == char}) / len(pairs)
    if c_a == 0:
        return p_cont
    T_a = len({b for (a, b) in pairs if a == context})
    return max(pairs.get((context, char), 0) - discount, 0) / c_a + discount * T_a / c_a * p_cont
""")

_right("07:kn_bigram", "Counter of bigram strings, sets for the type counts", """
from collections import Counter


def kn_bigram(text, context, char, discount=0.75):
    bigrams = Counter(text[i : i + 2] for i in range(len(text) - 1))
    distinct = set(bigrams)
    p_cont = sum(1 for pair in distinct if pair[1] == char) / len(distinct)
    after = {pair: n for pair, n in bigrams.items() if pair[0] == context}
    c_a = sum(after.values())
    if not c_a:
        return p_cont
    first = max(bigrams[context + char] - discount, 0.0) / c_a
    return first + discount * len(after) / c_a * p_cont
""")
_right("07:kn_bigram", "index loops and defaultdicts", """
from collections import defaultdict


def kn_bigram(text, context, char, discount=0.75):
    followers = defaultdict(lambda: defaultdict(int))
    predecessors = defaultdict(set)
    for i in range(1, len(text)):
        followers[text[i - 1]][text[i]] += 1
        predecessors[text[i]].add(text[i - 1])
    distinct_pairs = sum(len(f) for f in followers.values())
    p_cont = len(predecessors[char]) / distinct_pairs
    row = followers.get(context, {})
    total = sum(row.values())
    if total == 0:
        return p_cont
    lam = discount * len(row) / total
    return max(row.get(char, 0) - discount, 0) / total + lam * p_cont
""")
_right("07:kn_bigram", "the missing mass written as 1 - the discounted sum", """
def kn_bigram(text, context, char, discount=0.75):
    counts = {}
    for pair in zip(text[:-1], text[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    n_pairs = len(counts)
    p_cont = sum(1 for (_, b) in counts if b == char) / n_pairs
    row = {b: n for (a, b), n in counts.items() if a == context}
    if not row:
        return p_cont
    total = sum(row.values())
    discounted = {b: max(n - discount, 0) / total for b, n in row.items()}
    left = 1 - sum(discounted.values())  # = d T(a) / c(a.) since every count is >= 1 >= d
    return discounted.get(char, 0.0) + left * p_cont
""")

# ---------------------------------------------------------------------------------------------------------
# 08 (capstone pieces): minibatches(indices, batch_size, num_steps), offset 0, the remainder dropped

_MINI = """
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X = indices[: batch_size * L].reshape(batch_size, L)
    Y = indices[1 : batch_size * L + 1].reshape(batch_size, L)
    for k in range(L // num_steps):
        yield X[:, k * num_steps : (k + 1) * num_steps], Y[:, k * num_steps : (k + 1) * num_steps]
"""

_wrong("08:minibatches", _MINI, [
    ("keeps a shorter last minibatch (notebook 03's exercise, not the capstone's)",
     ("for k in range(L // num_steps):", "for k in range(-(-L // num_steps)):")),
    ("one full minibatch too few (range(L // num_steps - 1))", ("range(L // num_steps)",
                                                                "range(L // num_steps - 1)")),
    ("stream length without the -1 for the labels", ("L = (len(indices) - 1) // batch_size",
                                                     "L = len(indices) // batch_size")),
    ("streams interleaved: reshape(L, B).T", ("indices[: batch_size * L].reshape(batch_size, L)",
                                              "indices[: batch_size * L].reshape(L, batch_size).T"),
     ("indices[1 : batch_size * L + 1].reshape(batch_size, L)",
      "indices[1 : batch_size * L + 1].reshape(L, batch_size).T")),
    ("yields time-major minibatches (steps, batch)",
     ("yield X[:, k * num_steps : (k + 1) * num_steps], Y[:, k * num_steps : (k + 1) * num_steps]",
      "yield X[:, k * num_steps : (k + 1) * num_steps].T, Y[:, k * num_steps : (k + 1) * num_steps].T")),
    ("inputs and labels swapped: X is the shifted text", ("X = indices[: batch_size * L]",
                                                          "X = indices[1 : batch_size * L + 1]"),
     ("Y = indices[1 : batch_size * L + 1]", "Y = indices[: batch_size * L]")),
    ("labels by roll: the last label of every stream wraps around",
     ("Y = indices[1 : batch_size * L + 1].reshape(batch_size, L)", "Y = X.roll(-1, dims=1)")),
    ("never ends: cycles through the minibatches forever",
     ("    for k in range(L // num_steps):\n",
      "    k = -1\n    while True:\n        k = (k + 1) % (L // num_steps)\n")),
    ("a random offset instead of 0", ("    L = (len(indices) - 1) // batch_size\n",
                                      "    import random\n    o = random.randrange(num_steps)\n"
                                      "    indices = indices[o:]\n"
                                      "    L = (len(indices) - 1) // batch_size\n")),
    ("minibatches in a random order (random sampling)", ("    for k in range(L // num_steps):\n",
                                                         "    import random\n"
                                                         "    order = list(range(L // num_steps))\n"
                                                         "    random.shuffle(order)\n    for k in order:\n")),
    ("the inputs converted to float", ("yield X[:, k * num_steps : (k + 1) * num_steps], Y",
                                        "yield X[:, k * num_steps : (k + 1) * num_steps].float(), Y")),
])
_whole(
    "08:minibatches",
    "range(0, L - num_steps, num_steps): the last full minibatch is lost when it ends the stream",
    """
def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X = indices[: batch_size * L].reshape(batch_size, L)
    Y = indices[1 : batch_size * L + 1].reshape(batch_size, L)
    for s in range(0, L - num_steps, num_steps):
        yield X[:, s : s + num_steps], Y[:, s : s + num_steps]
""")
_whole(
    "08:minibatches",
    "consecutive chunks of the text: row i of minibatch k+1 does not continue row i of k",
    """
def minibatches(indices, batch_size, num_steps):
    size = batch_size * num_steps
    for start in range(0, len(indices) - size, size):
        X = indices[start : start + size].reshape(batch_size, num_steps)
        Y = indices[start + 1 : start + size + 1].reshape(batch_size, num_steps)
        yield X, Y
""")

_right("08:minibatches", "unfold into windows of num_steps", """
def minibatches(indices, batch_size, num_steps):
    stream = (len(indices) - 1) // batch_size
    n = stream * batch_size
    xs = indices[:n].view(batch_size, stream).unfold(1, num_steps, num_steps)
    ys = indices[1 : n + 1].view(batch_size, stream).unfold(1, num_steps, num_steps)
    for k in range(xs.shape[1]):
        yield xs[:, k], ys[:, k]
""")
_right("08:minibatches", "torch.split, keeping the full-width pieces", """
import torch


def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    X = indices[: L * batch_size].reshape(batch_size, L)
    Y = indices[1 : L * batch_size + 1].reshape(batch_size, L)
    for x, y in zip(torch.split(X, num_steps, 1), torch.split(Y, num_steps, 1)):
        if x.shape[1] == num_steps:
            yield x, y
""")
_right("08:minibatches", "positions p = iL + kT, gathered", """
import torch


def minibatches(indices, batch_size, num_steps):
    L = (len(indices) - 1) // batch_size
    starts = torch.arange(batch_size) * L
    window = torch.arange(num_steps)
    k = 0
    while (k + 1) * num_steps <= L:
        pos = starts[:, None] + k * num_steps + window[None, :]
        yield indices[pos], indices[pos + 1]
        k += 1
""")

# ---------------------------------------------------------------------------------------------------------
# 08: forward(X, state, params) -> (outputs (steps*batch, vocab) step-major, hiddens (steps, batch, h))

_FWD = """
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    H = state
    hs, outs = [], []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)
        hs.append(H)
        outs.append(H @ W_hq + b_q)
    return torch.cat(outs, dim=0), torch.stack(hs)
"""

_wrong("08:forward", _FWD, [
    ("outputs laid out batch-major", ("torch.cat(outs, dim=0)",
                                      "torch.stack(outs, dim=1).reshape(-1, W_hq.shape[1])")),
    ("hiddens hold H_0 ... H_{T-1} (recorded before the update)",
     ("        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)\n        hs.append(H)\n",
      "        hs.append(H)\n        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)\n")),
    ("the output bias b_q is left out", ("H @ W_hq + b_q", "H @ W_hq")),
    ("ReLU instead of tanh", ("torch.tanh(", "torch.relu(")),
    ("W_hh transposed", ("H @ W_hh", "H @ W_hh.T")),
    ("ignores the given state: starts from zeros", ("H = state", "H = torch.zeros_like(state)")),
    ("returns (hiddens, outputs) in the wrong order",
     ("return torch.cat(outs, dim=0), torch.stack(hs)", "return torch.stack(hs), torch.cat(outs, dim=0)")),
    ("outputs stacked (steps, batch, vocab), not flattened", ("torch.cat(outs, dim=0)", "torch.stack(outs)")),
    ("reads X by rows: X[t] taken as step t", ("W_xh[X[:, t]]", "W_xh[X[t]]"), ("range(X.shape[1])",
                                                                                "range(X.shape[0])")),
    ("softmax applied: returns probabilities instead of logits",
     ("outs.append(H @ W_hq + b_q)", "outs.append(torch.softmax(H @ W_hq + b_q, dim=1))")),
    ("the bias b_h added outside the tanh", ("torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)",
                                             "torch.tanh(W_xh[X[:, t]] + H @ W_hh) + b_h")),
    ("hiddens stacked batch-first (batch, steps, h)", ("torch.stack(hs)", "torch.stack(hs, dim=1)")),
    ("updates H in place: state overwritten and every stored hidden is the same tensor",
     ("        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)\n",
      "        H[:] = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)\n")),
    ("the output is computed from the previous state H_{t-1}",
     ("        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)\n        hs.append(H)\n"
      "        outs.append(H @ W_hq + b_q)\n",
      "        outs.append(H @ W_hq + b_q)\n        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)\n"
      "        hs.append(H)\n")),
])

_right("08:forward", "the states first, then one product for every output", """
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    states = []
    H = state
    for column in torch.unbind(X, dim=1):
        H = torch.tanh(torch.index_select(W_xh, 0, column) + b_h + H @ W_hh)
        states.append(H)
    hiddens = torch.stack(states)
    outputs = torch.cat(states) @ W_hq + b_q
    return outputs, hiddens
""")
_right("08:forward", "einsum for the outputs of all steps at once", """
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    inputs = W_xh[X.T]  # (steps, batch, hiddens)
    hiddens = torch.empty(inputs.shape, dtype=state.dtype, device=state.device)
    H = state
    for t in range(inputs.shape[0]):
        H = (inputs[t] + H @ W_hh + b_h).tanh()
        hiddens[t] = H
    outputs = torch.einsum("tbh,hv->tbv", hiddens, W_hq) + b_q
    return outputs.reshape(-1, W_hq.shape[1]), hiddens
""")
_right("08:forward", "one-hot rows built by scatter", """
import torch


def forward(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    batch, steps = X.shape
    vocab = W_xh.shape[0]
    out_rows, hiddens = [], []
    H = state
    for t in range(steps):
        onehot = torch.zeros(batch, vocab, dtype=W_xh.dtype, device=W_xh.device)
        onehot.scatter_(1, X[:, t : t + 1], 1.0)
        H = torch.tanh(onehot @ W_xh + H @ W_hh + b_h)
        hiddens.append(H)
        out_rows.append(torch.addmm(b_q, H, W_hq))
    return torch.cat(out_rows), torch.stack(hiddens)
""")

# ---------------------------------------------------------------------------------------------------------
# 08: loss_and_grad(outputs, Y) -> (mean cross-entropy in nats, dL/doutputs); stable

_LOSS = """
import torch


def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    n = y.shape[0]
    m = outputs.max(dim=1, keepdim=True).values
    e = torch.exp(outputs - m)
    log_z = m.squeeze(1) + torch.log(e.sum(dim=1))
    idx = torch.arange(n, device=outputs.device)
    loss = (log_z - outputs[idx, y]).mean()
    grad = e / e.sum(dim=1, keepdim=True)
    grad[idx, y] -= 1
    return loss, grad / n
"""

_wrong("08:loss_and_grad", _LOSS, [
    ("targets flattened batch-major", ("y = Y.T.reshape(-1)", "y = Y.reshape(-1)")),
    ("the gradient is not divided by the number of rows", ("return loss, grad / n", "return loss, grad")),
    ("the gradient's sign flipped", ("return loss, grad / n", "return loss, -grad / n")),
    ("no shift by the row maximum: overflows for large logits",
     ("m = outputs.max(dim=1, keepdim=True).values", "m = torch.zeros_like(outputs[:, :1])")),
    ("the loss in bits", ("loss = (log_z - outputs[idx, y]).mean()",
                          "loss = (log_z - outputs[idx, y]).mean() / torch.log(torch.tensor(2.0))")),
    ("the loss summed instead of averaged", ("(log_z - outputs[idx, y]).mean()",
                                             "(log_z - outputs[idx, y]).sum()")),
    ("forgets the -1 at the targets", ("    grad[idx, y] -= 1\n", "")),
    ("forgets to add the maximum back into log Z", ("log_z = m.squeeze(1) + torch.log(e.sum(dim=1))",
                                                    "log_z = torch.log(e.sum(dim=1))")),
    ("softmax normalised over the rows (dim 0) in the gradient", ("grad = e / e.sum(dim=1, keepdim=True)",
                                                                  "grad = e / e.sum(dim=0, keepdim=True)")),
    ("shifts the caller's outputs in place (right values, outputs changed)",
     ("    e = torch.exp(outputs - m)\n", "    outputs -= m\n    e = torch.exp(outputs)\n"),
     ("log_z = m.squeeze(1) + torch.log(e.sum(dim=1))", "log_z = torch.log(e.sum(dim=1))")),
    ("the gradient divided by the batch size only (Y.shape[0]), not steps * batch",
     ("return loss, grad / n", "return loss, grad / Y.shape[0]")),
    ("the loss summed over steps and averaged over the batch only",
     ("loss = (log_z - outputs[idx, y]).mean()", "loss = (log_z - outputs[idx, y]).sum() / Y.shape[0]")),
])
_whole("08:loss_and_grad", "log of the softmax probability: -inf once a probability underflows", """
import torch


def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    rows = torch.arange(len(y), device=outputs.device)
    shifted = outputs - outputs.max(dim=1, keepdim=True).values
    p = torch.exp(shifted) / torch.exp(shifted).sum(dim=1, keepdim=True)
    loss = -torch.log(p[rows, y]).mean()
    g = p.clone()
    g[rows, y] -= 1
    return loss, g / len(y)
""")
_whole(
    "08:loss_and_grad",
    "the gradient with respect to the probabilities (-1/p at the target), not the logits",
    """
import torch


def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    rows = torch.arange(len(y), device=outputs.device)
    log_p = outputs - torch.logsumexp(outputs, dim=1, keepdim=True)
    loss = -log_p[rows, y].mean()
    grad = torch.zeros_like(outputs)
    grad[rows, y] = -1 / torch.exp(log_p[rows, y])
    return loss, grad / len(y)
""")
_whole(
    "08:loss_and_grad",
    "route the capstone forbids: torch.nn.functional.cross_entropy for the loss (right numbers)",
    """
import torch
import torch.nn.functional as F


def loss_and_grad(outputs, Y):
    y = Y.T.reshape(-1)
    loss = F.cross_entropy(outputs, y)
    grad = F.softmax(outputs, dim=1)
    grad[torch.arange(len(y), device=outputs.device), y] -= 1
    return loss, grad / len(y)
""")

_right("08:loss_and_grad", "torch.logsumexp, the one-hot subtracted by scatter", """
import torch


def loss_and_grad(outputs, Y):
    targets = Y.t().flatten()
    log_z = torch.logsumexp(outputs, dim=1)
    picked = outputs.gather(1, targets[:, None]).squeeze(1)
    loss = torch.mean(log_z - picked)
    probs = torch.exp(outputs - log_z[:, None])
    onehot = torch.zeros_like(outputs).scatter_(1, targets[:, None], 1.0)
    return loss, (probs - onehot) / targets.numel()
""")
_right("08:loss_and_grad", "per-row loop over the steps' blocks", """
import torch


def loss_and_grad(outputs, Y):
    batch, steps = Y.shape
    n = batch * steps
    grad = torch.empty_like(outputs)
    total = outputs.new_zeros(())
    for t in range(steps):
        block = outputs[t * batch : (t + 1) * batch]
        top = block.max(dim=1, keepdim=True).values
        log_p = block - top - torch.log(torch.exp(block - top).sum(dim=1, keepdim=True))
        total = total - log_p[torch.arange(batch, device=outputs.device), Y[:, t]].sum()
        g = torch.exp(log_p)
        g[torch.arange(batch, device=outputs.device), Y[:, t]] -= 1
        grad[t * batch : (t + 1) * batch] = g / n
    return total / n, grad
""")
_right("08:loss_and_grad", "the mean written as a sum divided, softmax from the log-probabilities", """
import torch


def loss_and_grad(outputs, Y):
    labels = Y.transpose(0, 1).reshape(-1)
    shift = outputs.amax(dim=1, keepdim=True)
    log_probs = (outputs - shift) - (outputs - shift).exp().sum(1, keepdim=True).log()
    which = torch.arange(labels.numel(), device=outputs.device)
    loss = -log_probs[which, labels].sum() / labels.numel()
    grad = log_probs.exp()
    minus_one = torch.tensor(-1.0, dtype=grad.dtype, device=grad.device)
    grad.index_put_((which, labels), minus_one, accumulate=True)
    return loss, grad / labels.numel()
""")

# ---------------------------------------------------------------------------------------------------------
# 08: backward(X, state, hiddens, d_outputs, d_final, params) -> ([dW_xh, dW_hh, db_h, dW_hq, db_q], d_state)

_BWD = """
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T, B, h = hiddens.shape
    H_all = hiddens.reshape(T * B, h)
    dW_hq = H_all.T @ d_outputs
    db_q = d_outputs.sum(dim=0)
    dH_out = (d_outputs @ W_hq.T).reshape(T, B, h)
    dW_xh = torch.zeros_like(W_xh)
    dW_hh = torch.zeros_like(W_hh)
    db_h = torch.zeros_like(b_h)
    dH = d_final
    for t in range(T - 1, -1, -1):
        dH = dH + dH_out[t]
        dA = dH * (1 - hiddens[t] ** 2)
        H_prev = hiddens[t - 1] if t > 0 else state
        dW_xh.index_add_(0, X[:, t], dA)
        dW_hh += H_prev.T @ dA
        db_h += dA.sum(dim=0)
        dH = dA @ W_hh.T
    return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH
"""

_wrong("08:backward", _BWD, [
    ("d_final ignored: the walk back starts from zero", ("dH = d_final", "dH = torch.zeros_like(d_final)")),
    ("tanh' written as 1 - tanh(H)^2: tanh applied to a value that already went through it",
     ("(1 - hiddens[t] ** 2)", "(1 - torch.tanh(hiddens[t]) ** 2)")),
    ("tanh' taken from H_{t-1}", ("dA = dH * (1 - hiddens[t] ** 2)", "dA = dH * (1 - hiddens[t - 1] ** 2)")),
    ("H_prev off by one: hiddens[t]", ("H_prev = hiddens[t - 1] if t > 0 else state", "H_prev = hiddens[t]")),
    ("dW_hh transposed: dA.T @ H_prev", ("dW_hh += H_prev.T @ dA", "dW_hh += dA.T @ H_prev")),
    ("W_hh not transposed on the way back", ("dH = dA @ W_hh.T", "dH = dA @ W_hh")),
    ("dW_xh[X[:, t]] += dA: repeated tokens counted once", ("dW_xh.index_add_(0, X[:, t], dA)",
                                                            "dW_xh[X[:, t]] += dA")),
    ("returns dL/dA_1 as d_state (the last product by W_hh.T missing)",
     ("        dH = dA @ W_hh.T\n    return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH",
      "        dH = dA @ W_hh.T\n    return [dW_xh, dW_hh, db_h, dW_hq, db_q], dA")),
    ("dW_hq transposed (vocab, hiddens)", ("dW_hq = H_all.T @ d_outputs", "dW_hq = d_outputs.T @ H_all")),
    ("db_q averaged instead of summed", ("db_q = d_outputs.sum(dim=0)", "db_q = d_outputs.mean(dim=0)")),
    ("d_outputs unflattened batch-major", ("(d_outputs @ W_hq.T).reshape(T, B, h)",
                                           "(d_outputs @ W_hq.T).reshape(B, T, h).transpose(0, 1)")),
    ("the first step's H_prev is zero instead of `state`", ("else state", "else torch.zeros_like(state)")),
    ("d_final added at every step", ("        dH = dH + dH_out[t]\n",
                                     "        dH = dH + dH_out[t] + d_final\n"),
     ("dH = d_final\n", "dH = torch.zeros_like(d_final)\n")),
    ("in-place += on dH, which is the caller's d_final (right values, d_final changed)",
     ("        dH = dH + dH_out[t]\n", "        dH += dH_out[t]\n")),
    ("W_xh's and W_hh's gradients returned in each other's place",
     ("return [dW_xh, dW_hh, db_h, dW_hq, db_q], dH", "return [dW_hh, dW_xh, db_h, dW_hq, db_q], dH")),
    ("walks forward in time", ("range(T - 1, -1, -1)", "range(T)")),
    ("sigmoid's slope H(1 - H) instead of tanh's", ("(1 - hiddens[t] ** 2)",
                                                    "hiddens[t] * (1 - hiddens[t])")),
    ("db_h accumulated from dH (before the tanh slope)", ("db_h += dA.sum(dim=0)", "db_h += dH.sum(dim=0)")),
])
_whole(
    "08:backward",
    "route the capstone forbids: the forward pass again and torch.autograd.grad (right numbers)",
    """
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    leaves = [p.detach().clone().requires_grad_(True) for p in params]
    H0 = state.detach().clone().requires_grad_(True)
    W_xh, W_hh, b_h, W_hq, b_q = leaves
    H, hs = H0, []
    for t in range(X.shape[1]):
        H = torch.tanh(W_xh[X[:, t]] + H @ W_hh + b_h)
        hs.append(H)
    outputs = torch.cat(hs) @ W_hq + b_q
    total = (outputs * d_outputs).sum() + (H * d_final).sum()
    grads = torch.autograd.grad(total, leaves + [H0])
    return list(grads[:5]), grads[5]
""")

_right("08:backward", "two passes: every dA first, then the weight gradients in one product each", """
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    steps, batch, hidden = hiddens.shape
    flat = hiddens.reshape(-1, hidden)
    d_hidden = (d_outputs @ W_hq.t()).view(steps, batch, hidden)
    dAs = [None] * steps
    carry = d_final
    for t in reversed(range(steps)):
        dAs[t] = (d_hidden[t] + carry) * (1 - hiddens[t] * hiddens[t])
        carry = dAs[t] @ W_hh.t()
    dA = torch.stack(dAs)
    previous = torch.cat([state[None], hiddens[:-1]])
    dW_hh = previous.reshape(-1, hidden).t() @ dA.reshape(-1, hidden)
    dW_xh = torch.zeros_like(W_xh).index_add(0, X.t().reshape(-1), dA.reshape(-1, hidden))
    return [dW_xh, dW_hh, dA.sum((0, 1)), flat.t() @ d_outputs, d_outputs.sum(0)], carry
""")
_right("08:backward", "einsum, and one-hot rows for dW_xh", """
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T, B, h = hiddens.shape
    V = W_xh.shape[0]
    dO = d_outputs.reshape(T, B, V)
    g = [torch.zeros_like(p) for p in params]
    g[3] = torch.einsum("tbh,tbv->hv", hiddens, dO)
    g[4] = dO.sum(dim=(0, 1))
    upstream = d_final.clone()
    for t in range(T - 1, -1, -1):
        dH = upstream + torch.einsum("bv,hv->bh", dO[t], W_hq)
        dA = dH * (1 - hiddens[t].pow(2))
        prev = state if t == 0 else hiddens[t - 1]
        onehot = torch.zeros(B, V, dtype=dA.dtype, device=dA.device)
        onehot[torch.arange(B, device=dA.device), X[:, t]] = 1
        g[0] += onehot.T @ dA
        g[1] += torch.einsum("bi,bj->ij", prev, dA)
        g[2] += dA.sum(dim=0)
        upstream = torch.einsum("bj,ij->bi", dA, W_hh)
    return g, upstream
""")
_right("08:backward", "tanh' kept in a tensor first, the loop from t = T down to 1", """
import torch


def backward(X, state, hiddens, d_outputs, d_final, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    T = hiddens.shape[0]
    slope = 1 - hiddens.square()
    from_out = (d_outputs @ W_hq.mT).reshape(hiddens.shape)
    dW_xh, dW_hh, db_h = W_xh * 0, W_hh * 0, b_h * 0
    d = d_final
    for step in range(T, 0, -1):
        t = step - 1
        dA = slope[t] * (from_out[t] + d)
        before = hiddens[t - 1] if t else state
        dW_hh = dW_hh + before.mT @ dA
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        db_h = db_h + dA.sum(0)
        d = dA @ W_hh.mT
    dW_hq = hiddens.flatten(0, 1).mT @ d_outputs
    return [dW_xh, dW_hh, db_h, dW_hq, d_outputs.sum(0)], d
""")

# ---------------------------------------------------------------------------------------------------------
# 08: clip(grads, theta) -> (clipped, the norm before)

_CLIP8 = """
import torch


def clip(grads, theta):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads)).item()
    if norm > theta:
        return [g * (theta / norm) for g in grads], norm
    return [g.clone() for g in grads], norm
"""

_wrong("08:clip", _CLIP8, [
    ("returns the norm after clipping",
     ("    if norm > theta:\n        return [g * (theta / norm) for g in grads], norm\n",
                                         "    if norm > theta:\n"
                                         "        return [g * (theta / norm) for g in grads], theta\n")),
    ("returns only the clipped list (notebook 06's form)", ("for g in grads], norm\n    return",
                                                            "for g in grads]\n    return"),
     ("[g.clone() for g in grads], norm", "[g.clone() for g in grads]")),
    ("returns (norm, clipped) in the wrong order", ("return [g * (theta / norm) for g in grads], norm",
                                                    "return norm, [g * (theta / norm) for g in grads]"),
     ("return [g.clone() for g in grads], norm", "return norm, [g.clone() for g in grads]")),
    ("the squared norm", ("torch.sqrt(sum((g ** 2).sum() for g in grads)).item()",
                          "sum((g ** 2).sum() for g in grads).item()")),
    ("always rescales to theta", ("    if norm > theta:\n", "    if norm > 0:\n")),
    ("scales in place and returns the caller's tensors",
     ("        return [g * (theta / norm) for g in grads], norm\n",
      "        for g in grads:\n            g.mul_(theta / norm)\n        return grads, norm\n")),
    ("the factor inverted (norm / theta)", ("g * (theta / norm)", "g * (norm / theta)")),
    ("root mean square of the entries instead of the norm", ("(g ** 2).sum()", "(g ** 2).mean()")),
    ("the norm returned as a tensor, not a number", ("for g in grads)).item()", "for g in grads))")),
])
_whole("08:clip", "clips every tensor by its own norm", """
import torch


def clip(grads, theta):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    out = []
    for g in grads:
        n = float(g.norm())
        out.append(g * min(1.0, theta / n) if n > 0 else g.clone())
    return out, total
""")
_whole("08:clip", "clips each entry to [-theta, theta]", """
import math


def clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    return [g.clamp(-theta, theta) for g in grads], norm
""")
_whole("08:clip", "the joint norm as the sum of the per-tensor norms", """
def clip(grads, theta):
    norm = sum(float(g.norm()) for g in grads)
    scale = min(1.0, theta / norm) if norm > 0 else 1.0
    return [g * scale for g in grads], norm
""")
_whole("08:clip", "g / norm * min(norm, theta): NaN for all-zero gradients", """
import torch


def clip(grads, theta):
    norm = torch.sqrt(sum((g * g).sum() for g in grads))
    return [g / norm * min(norm, theta) for g in grads], float(norm)
""")
_whole("08:clip", "returns the list of per-tensor norms instead of the joint norm", """
import math


def clip(grads, theta):
    norms = [float(g.norm()) for g in grads]
    joint = math.sqrt(sum(n * n for n in norms))
    scale = min(1.0, theta / joint) if joint > 0 else 1.0
    return [g * scale for g in grads], norms
""")
_whole("08:clip", "max(1, theta / norm) instead of min", """
import math


def clip(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = max(1.0, theta / norm) if norm > 0 else 1.0
    return [g * scale for g in grads], norm
""")

_right("08:clip", "vector_norm of the concatenation, a clamped factor", """
import torch


def clip(grads, theta):
    norm = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads]))
    factor = torch.clamp(theta / torch.clamp(norm, min=1e-30), max=1.0)
    return [g * factor for g in grads], norm.item()
""")
_right("08:clip", "math.hypot of the per-tensor norms", """
import math


def clip(grads, theta):
    norm = math.hypot(*(float(g.norm()) for g in grads))
    factor = 1.0 if norm <= theta else theta / norm
    return [g * factor for g in grads], norm
""")
_right("08:clip", "torch.where for the factor", """
import torch


def clip(grads, theta):
    sq = torch.stack([(g * g).sum() for g in grads]).sum()
    norm = sq.sqrt()
    factor = torch.where(norm > theta, theta / norm, torch.ones_like(norm))
    return [factor * g for g in grads], float(norm)
""")

# ---------------------------------------------------------------------------------------------------------
# 08: sgd(params, grads, lr) -> new tensors p - lr g

_SGD = """
def sgd(params, grads, lr):
    new = []
    for p, g in zip(params, grads):
        new.append(p - lr * g)
    return new
"""

_wrong("08:sgd", _SGD, [
    ("gradient ascent: p + lr g", ("p - lr * g", "p + lr * g")),
    ("updates in place (p -= lr g) and returns the caller's tensors",
     ("        new.append(p - lr * g)\n    return new", "        p -= lr * g\n    return params")),
    ("sub_ in place, the same tensors returned in a new list", ("new.append(p - lr * g)",
                                                                "new.append(p.sub_(lr * g))")),
    ("forgets the learning rate", ("p - lr * g", "p - g")),
    ("divides by the learning rate", ("p - lr * g", "p - g / lr")),
    ("params and grads swapped: g - lr p", ("p - lr * g", "g - lr * p")),
    ("adds a weight decay nobody asked for", ("p - lr * g", "p - lr * (g + 0.01 * p)")),
    ("only the weight matrices are updated, not the biases",
     ("new.append(p - lr * g)", "new.append(p - lr * g if p.dim() == 2 else p)")),
    ("the result converted to float32", ("new.append(p - lr * g)", "new.append((p - lr * g).float())")),
    ("steps by the mean of the gradient, one number per tensor", ("p - lr * g", "p - lr * g.mean()")),
    ("pairs every parameter with the gradient of another (grads reversed)",
     ("zip(params, grads)", "zip(params, reversed(grads))")),
])
_whole("08:sgd", "writes through .data in place and returns the caller's list", """
def sgd(params, grads, lr):
    for p, g in zip(params, grads):
        p.data = p.data - lr * g
    return params
""")

_right("08:sgd", "torch.add with alpha", """
import torch


def sgd(params, grads, lr):
    return [torch.add(p, g, alpha=-lr) for p, g in zip(params, grads)]
""")
_right("08:sgd", "map with a lambda, the step written as p + (-lr) g", """
def sgd(params, grads, lr):
    return list(map(lambda p, g: p + (-lr) * g, params, grads))
""")
_right("08:sgd", "indexed loop, sub without in-place", """
def sgd(params, grads, lr):
    out = []
    for i in range(len(params)):
        out.append(params[i].sub(grads[i] * lr))
    return out
""")

# ---------------------------------------------------------------------------------------------------------
# 08: perplexity(logits, targets): exp of the mean cross-entropy, a number, stable

_PPL8 = """
import math

import torch


def perplexity(logits, targets):
    log_z = torch.logsumexp(logits, dim=1)
    picked = logits[torch.arange(len(targets), device=logits.device), targets]
    return math.exp((log_z - picked).mean().item())
"""

_wrong("08:perplexity", _PPL8, [
    ("mean of the per-token perplexities", ("return math.exp((log_z - picked).mean().item())",
                                            "return (log_z - picked).exp().mean().item()")),
    ("returns the mean cross-entropy in nats (no exp)", ("return math.exp((log_z - picked).mean().item())",
                                                         "return (log_z - picked).mean().item()")),
    ("returns a tensor", ("return math.exp((log_z - picked).mean().item())",
                          "return torch.exp((log_z - picked).mean())")),
    ("2 to the mean nats", ("return math.exp((log_z - picked).mean().item())",
                            "return 2 ** (log_z - picked).mean().item()")),
    ("exp of the total, not the mean", ("(log_z - picked).mean()", "(log_z - picked).sum()")),
    ("sign flipped: exp(mean log p), the inverse of the perplexity", ("(log_z - picked).mean()",
                                                                      "(picked - log_z).mean()")),
    ("the largest logit in place of the target's",
     ("picked = logits[torch.arange(len(targets), device=logits.device), targets]",
                                                     "picked = logits.max(dim=1).values")),
    ("logsumexp over dim 0", ("torch.logsumexp(logits, dim=1)", "torch.logsumexp(logits, dim=0)")),
])
_whole("08:perplexity", "log-sum-exp without the shift: inf for large logits", """
import math

import torch


def perplexity(logits, targets):
    log_z = torch.log(torch.exp(logits).sum(dim=1))
    nll = log_z - logits[torch.arange(len(targets)), targets]
    return math.exp(nll.mean().item())
""")
_whole("08:perplexity", "shifted by the largest logit of the whole batch: rows far below it underflow", """
import math

import torch


def perplexity(logits, targets):
    top = logits.max()
    log_z = top + torch.log(torch.exp(logits - top).sum(dim=1))
    nll = log_z - logits[torch.arange(len(targets)), targets]
    return math.exp(nll.mean().item())
""")
_whole("08:perplexity", "route the capstone forbids: torch.nn.functional.cross_entropy (right numbers)", """
import math

import torch.nn.functional as F


def perplexity(logits, targets):
    return math.exp(F.cross_entropy(logits, targets).item())
""")
_whole("08:perplexity", "clamps the probability at 1e-12 before the log", """
import math

import torch


def perplexity(logits, targets):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    p = shifted.exp() / shifted.exp().sum(dim=1, keepdim=True)
    p_true = p[torch.arange(len(targets)), targets].clamp_min(1e-12)
    return math.exp(-p_true.log().mean().item())
""")
_whole("08:perplexity", "1 / mean p(target): the perplexity of the mean probability", """
import torch


def perplexity(logits, targets):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    p = shifted.exp() / shifted.exp().sum(dim=1, keepdim=True)
    return float(1 / p[torch.arange(len(targets)), targets].mean())
""")
_whole("08:perplexity", "the mean cross-entropy in bits, then exp", """
import math

import torch


def perplexity(logits, targets):
    log_z = torch.logsumexp(logits, dim=1)
    nll = log_z - logits[torch.arange(len(targets)), targets]
    return math.exp(nll.mean().item() / math.log(2))
""")

_right("08:perplexity", "manual shift by each row's maximum, gather", """
import math


def perplexity(logits, targets):
    top = logits.amax(dim=1, keepdim=True)
    log_z = (logits - top).exp().sum(dim=1).log() + top.squeeze(1)
    true = logits.gather(1, targets.unsqueeze(1)).squeeze(1)
    return math.exp(float((log_z - true).sum()) / len(targets))
""")
_right("08:perplexity", "float64, the mean of the log-probabilities, exp of minus it", """
import math

import torch


def perplexity(logits, targets):
    z = logits.double()
    log_probs = z - torch.logsumexp(z, dim=1, keepdim=True)
    mean_log_p = log_probs[torch.arange(z.shape[0], device=z.device), targets].mean()
    return float(torch.exp(-mean_log_p))
""")
_right("08:perplexity", "2 to the mean bits", """
import math

import torch


def perplexity(logits, targets):
    rows = torch.arange(targets.numel(), device=logits.device)
    nats = torch.logsumexp(logits, dim=-1) - logits[rows, targets]
    return 2 ** (nats.mean().item() / math.log(2))
""")

# ---------------------------------------------------------------------------------------------------------
# 09: gru_cell(X, H, params): torch's convention, the reset gate scales H W_hn + b_hn

_GRU = """
import torch


def gru_cell(X, H, params):
    r = torch.sigmoid(X @ params["W_xr"] + H @ params["W_hr"] + params["b_r"])
    z = torch.sigmoid(X @ params["W_xz"] + H @ params["W_hz"] + params["b_z"])
    n = torch.tanh(X @ params["W_xn"] + params["b_n"] + r * (H @ params["W_hn"] + params["b_hn"]))
    return z * H + (1 - z) * n
"""

_wrong("09:gru_cell", _GRU, [
    ("Chung's convention: Z takes the candidate (z n + (1 - z) H)", ("return z * H + (1 - z) * n",
                                                                      "return z * n + (1 - z) * H")),
    ("the reset gate applied before the product: (R * H) W_hn + b_hn",
     ('r * (H @ params["W_hn"] + params["b_hn"])', '(r * H) @ params["W_hn"] + params["b_hn"]')),
    ("b_hn left outside the reset gate", ('r * (H @ params["W_hn"] + params["b_hn"])',
                                          'r * (H @ params["W_hn"]) + params["b_hn"]')),
    ("b_hn forgotten", ('r * (H @ params["W_hn"] + params["b_hn"])', 'r * (H @ params["W_hn"])')),
    ("b_n moved inside the reset gate", ('params["b_n"] + r * (H @ params["W_hn"] + params["b_hn"])',
                                         'r * (H @ params["W_hn"] + params["b_hn"] + params["b_n"])')),
    ("sigmoid for the candidate", ("n = torch.tanh(", "n = torch.sigmoid(")),
    ("tanh for the gates", ("r = torch.sigmoid(", "r = torch.tanh("), ("z = torch.sigmoid(",
                                                                       "z = torch.tanh(")),
    ("reset and update gates swapped", ('n = torch.tanh(X @ params["W_xn"] + params["b_n"] + r *',
                                        'n = torch.tanh(X @ params["W_xn"] + params["b_n"] + z *'),
     ("return z * H + (1 - z) * n", "return r * H + (1 - r) * n")),
    ("returns the candidate N_t instead of H_t", ("return z * H + (1 - z) * n", "return n")),
    ("z H + n: the candidate is not weighted by 1 - z", ("return z * H + (1 - z) * n", "return z * H + n")),
    ("no reset gate in the candidate", ('r * (H @ params["W_hn"]', '(H @ params["W_hn"]')),
    ("W_hr transposed", ('H @ params["W_hr"]', 'H @ params["W_hr"].T')),
    ("copy-paste slip: the update gate reads W_xr", ('X @ params["W_xz"]', 'X @ params["W_xr"]')),
    ("the reset gate scales the whole pre-activation of the candidate",
     ('n = torch.tanh(X @ params["W_xn"] + params["b_n"] + r * (H @ params["W_hn"] + params["b_hn"]))',
      'n = torch.tanh(r * (X @ params["W_xn"] + params["b_n"] + H @ params["W_hn"] + params["b_hn"]))')),
    ("updates H in place and returns it (the caller's state changed)",
     ("    return z * H + (1 - z) * n", "    H.mul_(z).add_((1 - z) * n)\n    return H")),
    ("sigmoid written 1 / (1 + exp(x)): the sign of the exponent lost",
     ("import torch\n", "import torch\n\n\ndef sigmoid(x):\n    return 1 / (1 + torch.exp(x))\n"),
     ("r = torch.sigmoid(", "r = sigmoid("), ("z = torch.sigmoid(", "z = sigmoid(")),
    ("the old state in the update is H_{t-1} W_hn instead of H_{t-1}",
     ("return z * H + (1 - z) * n", 'return z * (H @ params["W_hn"]) + (1 - z) * n')),
])
_whole(
    "09:gru_cell",
    "route the exercise forbids: torch.gru_cell with the weights stacked (right numbers)",
    """
import torch


def gru_cell(X, H, params):
    p = params
    w_ih = torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], dim=1).T
    w_hh = torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], dim=1).T
    b_ih = torch.cat([p["b_r"], p["b_z"], p["b_n"]])
    b_hh = torch.cat([torch.zeros_like(p["b_r"]), torch.zeros_like(p["b_z"]), p["b_hn"]])
    return torch.gru_cell(X, H, w_ih, w_hh, b_ih, b_hh)
""")

_right("09:gru_cell", "the update as n + z (H - n), sigmoid by hand", """
import torch


def gru_cell(X, H, params):
    def sig(a):
        return 1 / (1 + torch.exp(-a))

    W = params
    reset = sig(X @ W["W_xr"] + H @ W["W_hr"] + W["b_r"])
    update = sig(X @ W["W_xz"] + H @ W["W_hz"] + W["b_z"])
    hidden_part = H @ W["W_hn"] + W["b_hn"]
    cand = torch.tanh(X @ W["W_xn"] + W["b_n"] + reset * hidden_part)
    return cand + update * (H - cand)
""")
_right("09:gru_cell", "fused: the three gates side by side, one product each for X and H", """
import torch


def gru_cell(X, H, params):
    p = params
    h = H.shape[1]
    gx = X @ torch.cat([p["W_xr"], p["W_xz"], p["W_xn"]], dim=1) + torch.cat([p["b_r"], p["b_z"], p["b_n"]])
    gh = H @ torch.cat([p["W_hr"], p["W_hz"], p["W_hn"]], dim=1)
    r = torch.sigmoid(gx[:, :h] + gh[:, :h])
    z = torch.sigmoid(gx[:, h : 2 * h] + gh[:, h : 2 * h])
    n = torch.tanh(gx[:, 2 * h :] + r * (gh[:, 2 * h :] + p["b_hn"]))
    return (1 - z) * n + z * H
""")
_right("09:gru_cell", "einsum and a helper for each gate", """
import torch


def gru_cell(X, H, params):
    def affine(x_name, h_name, b_name):
        return (torch.einsum("nv,vh->nh", X, params[x_name])
                + torch.einsum("nk,kh->nh", H, params[h_name]) + params[b_name])

    R = torch.sigmoid(affine("W_xr", "W_hr", "b_r"))
    Z = torch.sigmoid(affine("W_xz", "W_hz", "b_z"))
    inner = torch.einsum("nk,kh->nh", H, params["W_hn"]) + params["b_hn"]
    N = torch.tanh(params["b_n"] + torch.einsum("nv,vh->nh", X, params["W_xn"]) + R * inner)
    return Z * H + N - Z * N
""")

# ---------------------------------------------------------------------------------------------------------
# 09: lstm_cell(X, H, C, params) -> (H_t, C_t)

_LSTM = """
import torch


def lstm_cell(X, H, C, params):
    p = params
    i = torch.sigmoid(X @ p["W_xi"] + H @ p["W_hi"] + p["b_i"])
    f = torch.sigmoid(X @ p["W_xf"] + H @ p["W_hf"] + p["b_f"])
    o = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"] + p["b_o"])
    g = torch.tanh(X @ p["W_xg"] + H @ p["W_hg"] + p["b_g"])
    C_new = f * C + i * g
    H_new = o * torch.tanh(C_new)
    return H_new, C_new
"""

_wrong("09:lstm_cell", _LSTM, [
    ("returns (C_t, H_t) in the wrong order", ("return H_new, C_new", "return C_new, H_new")),
    ("H_t = O C_t: no tanh on the cell", ("H_new = o * torch.tanh(C_new)", "H_new = o * C_new")),
    ("H_t = tanh(O C_t): the gate inside the tanh", ("H_new = o * torch.tanh(C_new)",
                                                     "H_new = torch.tanh(o * C_new)")),
    ("sigmoid for the candidate G", ("g = torch.tanh(", "g = torch.sigmoid(")),
    ("the input gate and the candidate's nonlinearities swapped",
     ("i = torch.sigmoid(", "i = torch.tanh("), ("g = torch.tanh(", "g = torch.sigmoid(")),
    ("no input gate: C_t = F C + G", ("C_new = f * C + i * g", "C_new = f * C + g")),
    ("no forget gate: C_t = C + I G", ("C_new = f * C + i * g", "C_new = C + i * g")),
    ("coupled gates: C_t = F C + (1 - F) G", ("C_new = f * C + i * g", "C_new = f * C + (1 - f) * g")),
    ("H_t from the old cell C_{t-1}", ("H_new = o * torch.tanh(C_new)", "H_new = o * torch.tanh(C)")),
    ("input and forget gates swapped in the cell update", ("C_new = f * C + i * g", "C_new = i * C + f * g")),
    ("adds 1 to the forget gate's bias (an initialisation trick, not part of the step)",
     ('p["b_f"])', 'p["b_f"] + 1)')),
    ("copy-paste slip: the output gate reads W_xf", ('X @ p["W_xo"]', 'X @ p["W_xf"]')),
    ("returns H_t only", ("return H_new, C_new", "return H_new")),
    ("updates C in place (the caller's cell changed)",
     ("    C_new = f * C + i * g\n", "    C.mul_(f).add_(i * g)\n    C_new = C\n")),
    ("tanh applied to the candidate twice", ("C_new = f * C + i * g", "C_new = f * C + i * torch.tanh(g)")),
    ("ReLU instead of tanh on the cell for H_t", ("H_new = o * torch.tanh(C_new)",
                                                  "H_new = o * torch.relu(C_new)")),
    ("the output gate forgets the input X", ('o = torch.sigmoid(X @ p["W_xo"] + H @ p["W_ho"]',
                                            'o = torch.sigmoid(H @ p["W_ho"]')),
])
_whole(
    "09:lstm_cell",
    "route the exercise forbids: torch.lstm_cell with the gates stacked i, f, g, o (right numbers)",
    """
import torch


def lstm_cell(X, H, C, params):
    p = params
    w_ih = torch.cat([p["W_xi"], p["W_xf"], p["W_xg"], p["W_xo"]], dim=1).T
    w_hh = torch.cat([p["W_hi"], p["W_hf"], p["W_hg"], p["W_ho"]], dim=1).T
    b = torch.cat([p["b_i"], p["b_f"], p["b_g"], p["b_o"]])
    return torch.lstm_cell(X, (H, C), w_ih, w_hh, b, torch.zeros_like(b))
""")

_right("09:lstm_cell", "fused weights, chunked in the order i, f, g, o", """
import torch


def lstm_cell(X, H, C, params):
    order = "ifgo"
    W_x = torch.cat([params["W_x" + k] for k in order], dim=1)
    W_h = torch.cat([params["W_h" + k] for k in order], dim=1)
    b = torch.cat([params["b_" + k] for k in order])
    a_i, a_f, a_g, a_o = (X @ W_x + H @ W_h + b).chunk(4, dim=1)
    cell = torch.sigmoid(a_f) * C + torch.sigmoid(a_i) * torch.tanh(a_g)
    return torch.sigmoid(a_o) * torch.tanh(cell), cell
""")
_right("09:lstm_cell", "a gate helper, the cell update written as a sum of two products", """
import torch


def lstm_cell(X, H, C, params):
    def gate(name, act):
        return act(torch.addmm(params["b_" + name], X, params["W_x" + name]) + H.mm(params["W_h" + name]))

    forget = gate("f", torch.sigmoid)
    remember = gate("i", torch.sigmoid) * gate("g", torch.tanh)
    out = gate("o", torch.sigmoid)
    new_C = remember + forget * C
    return out * new_C.tanh(), new_C
""")
_right("09:lstm_cell", "einsum and a hand-written sigmoid", """
import torch


def lstm_cell(X, H, C, params):
    def pre(k):
        return torch.einsum("nv,vh->nh", X, params[f"W_x{k}"]) + H @ params[f"W_h{k}"] + params[f"b_{k}"]

    def sigma(a):
        return 1 / (1 + torch.exp(-a))

    C_t = sigma(pre("f")) * C + sigma(pre("i")) * torch.tanh(pre("g"))
    H_t = sigma(pre("o")) * torch.tanh(C_t)
    return (H_t, C_t)
""")

# ---------------------------------------------------------------------------------------------------------
# 09: lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C)
#     -> (dX, dH_prev, dC_prev, dW_x, dW_h, db)

_LSB = """
import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    h = C.shape[1]
    I, F, G, O = gates[:, :h], gates[:, h : 2 * h], gates[:, 2 * h : 3 * h], gates[:, 3 * h :]
    tC = torch.tanh(C)
    dO = dH * tC
    dC_total = dC + dH * O * (1 - tC ** 2)
    dI = dC_total * G
    dF = dC_total * C_prev
    dG = dC_total * I
    dC_prev = dC_total * F
    dA_i = dI * I * (1 - I)
    dA_f = dF * F * (1 - F)
    dA_g = dG * (1 - G ** 2)
    dA_o = dO * O * (1 - O)
    dA = torch.cat([dA_i, dA_f, dA_g, dA_o], dim=1)
    dX = dA @ W_x.T
    dH_prev = dA @ W_h.T
    dW_x = X.T @ dA
    dW_h = H_prev.T @ dA
    db = dA.sum(dim=0)
    return dX, dH_prev, dC_prev, dW_x, dW_h, db
"""

_wrong("09:lstm_step_backward", _LSB, [
    ("C_t's gradient through H_t is forgotten: dC alone", ("dC_total = dC + dH * O * (1 - tC ** 2)",
                                                           "dC_total = dC")),
    ("the incoming dC is dropped: only the path through H_t", ("dC_total = dC + dH * O * (1 - tC ** 2)",
                                                               "dC_total = dH * O * (1 - tC ** 2)")),
    ("tanh's slope written 1 - C^2 (on C, not on tanh C)", ("dH * O * (1 - tC ** 2)",
                                                            "dH * O * (1 - C ** 2)")),
    ("dC_prev forgets the forget gate", ("dC_prev = dC_total * F", "dC_prev = dC_total")),
    ("dC_prev only carries the incoming dC (times F)", ("dC_prev = dC_total * F", "dC_prev = dC * F")),
    ("tanh's slope (1 - s^2) used for the sigmoid gates",
     ("dA_i = dI * I * (1 - I)", "dA_i = dI * (1 - I ** 2)"), ("dA_f = dF * F * (1 - F)",
                                                               "dA_f = dF * (1 - F ** 2)"),
     ("dA_o = dO * O * (1 - O)", "dA_o = dO * (1 - O ** 2)")),
    ("sigmoid's slope G(1 - G) used for the tanh candidate", ("dA_g = dG * (1 - G ** 2)",
                                                              "dA_g = dG * G * (1 - G)")),
    ("gates read in the order I, F, O, G (and dA written back in that order)",
     ("I, F, G, O = gates", "I, F, O, G = gates"), ("torch.cat([dA_i, dA_f, dA_g, dA_o], dim=1)",
                                                    "torch.cat([dA_i, dA_f, dA_o, dA_g], dim=1)")),
    ("dA's blocks concatenated in the order I, F, O, G", ("torch.cat([dA_i, dA_f, dA_g, dA_o], dim=1)",
                                                           "torch.cat([dA_i, dA_f, dA_o, dA_g], dim=1)")),
    ("dW_x transposed: dA.T @ X", ("dW_x = X.T @ dA", "dW_x = dA.T @ X")),
    ("db averaged over the batch", ("db = dA.sum(dim=0)", "db = dA.mean(dim=0)")),
    ("the output gate's gradient uses tanh(C_{t-1})", ("dO = dH * tC", "dO = dH * torch.tanh(C_prev)")),
    ("the forget gate's gradient uses C_t instead of C_{t-1}", ("dF = dC_total * C_prev",
                                                                "dF = dC_total * C")),
    ("the candidate's gradient multiplied by F instead of I", ("dG = dC_total * I", "dG = dC_total * F")),
    ("an extra identity path: dH_prev gets dH added (as in the leaky RNN)",
     ("dH_prev = dA @ W_h.T", "dH_prev = dH + dA @ W_h.T")),
    ("adds into the caller's dC in place (right values, dC changed)",
     ("dC_total = dC + dH * O * (1 - tC ** 2)", "dC += dH * O * (1 - tC ** 2)\n    dC_total = dC")),
    ("returns the gradients in another order (dH_prev first)",
     ("return dX, dH_prev, dC_prev, dW_x, dW_h, db", "return dH_prev, dX, dC_prev, dW_x, dW_h, db")),
    ("the output gate's sigmoid slope forgotten", ("dA_o = dO * O * (1 - O)", "dA_o = dO")),
    ("the gates split along the batch axis (chunk on dim 0)",
     ("I, F, G, O = gates[:, :h], gates[:, h : 2 * h], gates[:, 2 * h : 3 * h], gates[:, 3 * h :]",
      "I, F, G, O = gates.chunk(4, dim=0)")),
    ("W_x not transposed for dX", ("dX = dA @ W_x.T", "dX = dA @ W_x")),
    ("the input gate's gradient uses C_{t-1} in place of G", ("dI = dC_total * G", "dI = dC_total * C_prev")),
])
_whole(
    "09:lstm_step_backward",
    "route the exercise forbids: rebuilds the step and calls torch.autograd.grad (right numbers)",
    """
import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    h = C.shape[1]
    # b is not given: recover the pre-activations from the gates by inverting the nonlinearities
    I, F, G, O = gates.split(h, dim=1)
    pre = torch.cat([torch.logit(I), torch.logit(F), torch.atanh(G), torch.logit(O)], dim=1)
    b = (pre - X @ W_x - H_prev @ W_h).mean(0)
    leaves = [t.detach().clone().requires_grad_(True) for t in (X, H_prev, C_prev, W_x, W_h, b)]
    x, hp, cp, wx, wh, bb = leaves
    a = x @ wx + hp @ wh + bb
    i, f, g, o = a.split(h, dim=1)
    c = torch.sigmoid(f) * cp + torch.sigmoid(i) * torch.tanh(g)
    out = torch.sigmoid(o) * torch.tanh(c)
    return torch.autograd.grad((out * dH).sum() + (c * dC).sum(), leaves)
""")

_right("09:lstm_step_backward", "chunk, the slopes first, einsum for the weight gradients", """
import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    I, F, G, O = torch.chunk(gates, 4, dim=1)
    sig_slope = gates * (1 - gates)  # right for I, F and O
    t = C.tanh()
    cell = dC + dH * O * (1 - t * t)
    dA_i = cell * G * sig_slope.chunk(4, 1)[0]
    dA_f = cell * C_prev * sig_slope.chunk(4, 1)[1]
    dA_g = cell * I * (1 - G * G)
    dA_o = dH * t * sig_slope.chunk(4, 1)[3]
    dA = torch.cat((dA_i, dA_f, dA_g, dA_o), 1)
    dW_x = torch.einsum("nv,nk->vk", X, dA)
    dW_h = torch.einsum("nh,nk->hk", H_prev, dA)
    return dA @ W_x.t(), dA @ W_h.t(), cell * F, dW_x, dW_h, torch.einsum("nk->k", dA)
""")
_right("09:lstm_step_backward", "the four blocks of dA written into a preallocated tensor", """
import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    n, h = C.shape
    i, f, g, o = (gates[:, k * h : (k + 1) * h] for k in range(4))
    tanh_c = torch.tanh(C)
    through_h = dH * o * (1 - tanh_c.pow(2))
    dc = through_h + dC
    dA = torch.empty_like(gates)
    dA[:, :h] = dc * g * i * (1 - i)
    dA[:, h : 2 * h] = dc * C_prev * f * (1 - f)
    dA[:, 2 * h : 3 * h] = dc * i * (1 - g.pow(2))
    dA[:, 3 * h :] = dH * tanh_c * o * (1 - o)
    ones = torch.ones(n, dtype=dA.dtype, device=dA.device)
    return (torch.mm(dA, W_x.T), torch.mm(dA, W_h.T), f * dc,
            torch.mm(X.T, dA), torch.mm(H_prev.T, dA), ones @ dA)
""")
_right("09:lstm_step_backward", "the gate slopes stacked on a new axis", """
import torch


def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    n, four_h = gates.shape
    h = four_h // 4
    blocks = gates.reshape(n, 4, h)
    I, F, G, O = blocks.unbind(1)
    tanh_C = torch.tanh(C)
    dC_t = dC + dH * O * (1 - tanh_C ** 2)
    upstream = torch.stack([dC_t * G, dC_t * C_prev, dC_t * I, dH * tanh_C], dim=1)
    slopes = torch.stack([I * (1 - I), F * (1 - F), 1 - G ** 2, O * (1 - O)], dim=1)
    dA = (upstream * slopes).reshape(n, four_h)
    return dA @ W_x.T, dA @ W_h.T, dC_t * F, X.T @ dA, H_prev.T @ dA, dA.sum(0)
""")
