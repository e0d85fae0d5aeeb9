"""Notebook 03's typical mistakes: the row lookup, one-hot vectors, minibatches with their tail."""

from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
from d2lmini.i18n import N_

ONE_HOT_SECTION = N_("notebook 03, section 3 (One-hot vectors)")
LOOKUP_SECTION = N_("notebook 03, section 5 (An embedding is a row lookup)")
SHIFT_SECTION = N_("notebook 03, section 6 (Labels are the inputs shifted by one)")
CUT_SECTION = N_("notebook 03, section 7 (Cutting a long text into minibatches)")
STARTS_OFF = N_(
    "the streams start one token off: X starts `offset` tokens into the text, and Y one token after X."
)
ROLLED = N_(
    "Y is made by rolling X: the last label of each row wraps around to the row's first token. Y is the "
    "text shifted by one, read one token after X, so its last label is the token after X's last."
)


def _lookup_with(W, X, shift=0, flat=False, transposed=False, unique=False, summed=False):
    """The rows of W picked by X, with the flags' mistakes (indices from 1, flattened, transposed, unique)."""
    index = X.unique() if unique else X.reshape(-1) if flat else X
    rows = W[index - shift]
    if summed:
        return rows.sum(0)
    return rows.mT if transposed else rows


LOOKUP = (
    Mistake(
        N_(
            "the indices are read as if they started at 1: token index i picks row i of W, and the first "
            "row is row 0."
        ),
        partial(_lookup_with, shift=1),
        LOOKUP_SECTION,
    ),
    Mistake(
        N_(
            "X's shape is lost (X flattened first, or its size-1 dimensions squeezed away): the lookup keeps "
            "X's shape and adds one dimension for the row, X.shape + (hiddens,)."
        ),
        partial(_lookup_with, flat=True),
        LOOKUP_SECTION,
    ),
    Mistake(
        N_("the result is transposed: one row per token, each row a row of W."),
        partial(_lookup_with, transposed=True),
        LOOKUP_SECTION,
    ),
    Mistake(
        N_(
            "repeated tokens are looked up once: every entry of X gets its own row, repeated tokens "
            "included, in X's order."
        ),
        partial(_lookup_with, unique=True),
        LOOKUP_SECTION,
    ),
    Mistake(
        N_("the rows are added up: the lookup keeps one row per token; it does not sum them."),
        partial(_lookup_with, summed=True),
        LOOKUP_SECTION,
    ),
)


def _one_hot_with(
    X, vocab_size, width="vocab", dtype=torch.float32, shift=0, flat=False, vocab_first=False, inverted=False
):
    """One-hot vectors of X with the flags' mistakes (width from the indices, wrong dtype, off by one...)."""
    size = {"vocab": vocab_size, "largest": int(X.max()) + 1, "plus one": vocab_size + 1,
            "minus one": vocab_size - 1}[width]
    index = X.reshape(-1) if flat else X
    hot = (index.unsqueeze(-1) - shift == torch.arange(size, device=X.device)).to(dtype)
    hot = 1 - hot if inverted else hot
    return hot.movedim(-1, 0) if vocab_first else hot


ONE_HOT = (
    Mistake(
        N_(
            "the width comes from the largest index in X: it is vocab_size, whatever indices this X "
            "happens to hold."
        ),
        partial(_one_hot_with, width="largest"),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "the vectors have vocab_size + 1 entries: index i has its 1 at position i, and the indices "
            "run from 0 to vocab_size - 1."
        ),
        partial(_one_hot_with, width="plus one"),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "the vectors have vocab_size - 1 entries: index i has its 1 at position i, and the indices "
            "run from 0 to vocab_size - 1, so there are vocab_size positions."
        ),
        partial(_one_hot_with, width="minus one"),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_("the 1 is one position off: index i has its 1 at position i, counting from 0."),
        partial(_one_hot_with, shift=1),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_("the 1 is one position off: index i has its 1 at position i, counting from 0."),
        partial(_one_hot_with, shift=-1),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "the vectors are integers or booleans: the exercise asks for float32 vectors, ready to be "
            "multiplied with float weights."
        ),
        partial(_one_hot_with, dtype=torch.int64),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "the vectors are integers or booleans: the exercise asks for float32 vectors, ready to be "
            "multiplied with float weights."
        ),
        partial(_one_hot_with, dtype=torch.bool),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "the vectors are integers or booleans: the exercise asks for float32 vectors, ready to be "
            "multiplied with float weights."
        ),
        partial(_one_hot_with, dtype=torch.int32),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_("the vectors are float64: the exercise asks for float32, torch's default float."),
        partial(_one_hot_with, dtype=torch.float64),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "X is flattened first: the result keeps X's shape and adds one last dimension of size vocab_size."
        ),
        partial(_one_hot_with, flat=True),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_(
            "the vocabulary dimension comes first (the result transposed): it is the last one, X.shape + "
            "(vocab_size,)."
        ),
        partial(_one_hot_with, vocab_first=True),
        ONE_HOT_SECTION,
    ),
    Mistake(
        N_("the vectors are inverted: a single 1 at the token's index, zeros elsewhere."),
        partial(_one_hot_with, inverted=True),
        ONE_HOT_SECTION,
    ),
)


def _batches_with(
    indices,
    batch_size,
    num_steps,
    offset,
    use_offset=True,
    label_shift=1,
    tail=True,
    stride=None,
    interleaved=False,
    swapped=False,
    step_major=False,
    start_shift=0,
    counted_from_start=True,
    rolled=False,
    tail_form="end",
    from_text_start=False,
):
    """The (X, Y) pairs of sequential minibatches with a tail, with the flags' mistakes: among them the
    streams started `start_shift` tokens off, or at the text's start (their length `counted_from_start`
    there, or from `offset`),
    Y made by rolling X, or the tail padded to num_steps or cut from the start (`tail_form`)."""
    offset = offset if use_offset else 0
    start = 0 if from_text_start else offset + start_shift
    stream = (len(indices) - (start if counted_from_start else offset) - max(label_shift, 1)) // batch_size
    used = stream * batch_size

    def rows(first):
        part = indices[first : first + used]
        return part.reshape(stream, batch_size).T if interleaved else part.reshape(batch_size, stream)

    xs = rows(start)
    ys = xs.roll(-1, dims=1) if rolled else rows(start + label_shift)
    last = stream if tail else stream - num_steps + 1
    pairs = [
        _cut(xs, ys, first, num_steps, tail_form)
        for first in range(0, max(last, 0), stride or num_steps)
    ]
    pairs = [(x.T, y.T) for x, y in pairs] if step_major else pairs
    return [(y, x) for x, y in pairs] if swapped else pairs


def _cut(xs, ys, first: int, num_steps: int, tail_form: str):
    """The minibatch of steps `first` ... of the streams: a last, shorter one as the exercise has it
    (`tail_form` "end"), padded with zeros to num_steps ("padded"), or cut from the streams' start
    ("start")."""
    x, y = xs[:, first : first + num_steps], ys[:, first : first + num_steps]
    short = num_steps - x.shape[1]
    if short and tail_form == "padded":
        return (torch.cat([x, x.new_zeros(x.shape[0], short)], dim=1),
                torch.cat([y, y.new_zeros(y.shape[0], short)], dim=1))
    if short and tail_form == "start":
        return xs[:, : x.shape[1]], ys[:, : y.shape[1]]
    return x, y


SEQUENTIAL_BATCHES = (
    Mistake(
        N_("the offset is ignored: the streams start `offset` tokens into the text."),
        partial(_batches_with, use_offset=False),
        CUT_SECTION,
    ),
    Mistake(
        N_("the offset is ignored: the streams start `offset` tokens into the text."),
        partial(_batches_with, from_text_start=True, counted_from_start=False),
        CUT_SECTION,
    ),
    *(
        Mistake(STARTS_OFF, partial(_batches_with, start_shift=shift), CUT_SECTION)
        for shift in (1, -1)
    ),
    Mistake(ROLLED, partial(_batches_with, rolled=True), SHIFT_SECTION),
    Mistake(
        N_("the last minibatch is padded to num_steps steps: it holds only the steps left at the end, "
           "fewer than num_steps."),
        partial(_batches_with, tail_form="padded"),
        CUT_SECTION,
    ),
    Mistake(
        N_("the last, shorter minibatch is cut from the start of the streams: it holds the steps left at "
           "their end, where the minibatch before stopped."),
        partial(_batches_with, tail_form="start"),
        CUT_SECTION,
    ),
    Mistake(
        N_(
            "the last, shorter minibatch is dropped: the exercise keeps the steps left at the end as one "
            "more minibatch with fewer steps."
        ),
        partial(_batches_with, tail=False),
        CUT_SECTION,
    ),
    Mistake(
        N_("Y is X itself: the label of each token is the next one, so Y is the text shifted by one."),
        partial(_batches_with, label_shift=0),
        SHIFT_SECTION,
    ),
    Mistake(
        N_("Y starts two tokens after X, not one: the label of each token is the very next one."),
        partial(_batches_with, label_shift=2),
        SHIFT_SECTION,
    ),
    Mistake(
        N_(
            "the minibatches overlap: minibatch k+1 starts one token after minibatch k, not num_steps "
            "tokens after it, so row i no longer continues where it stopped."
        ),
        partial(_batches_with, stride=1),
        CUT_SECTION,
    ),
    Mistake(
        N_(
            "each row takes every batch_size-th token of the text, so a row is not a stretch of the "
            "text: cut the text into batch_size contiguous streams, one per row."
        ),
        partial(_batches_with, interleaved=True),
        CUT_SECTION,
    ),
    Mistake(
        N_("X and Y are swapped: each pair is (inputs, labels), the labels one token ahead."),
        partial(_batches_with, swapped=True),
        SHIFT_SECTION,
    ),
    Mistake(
        N_("the minibatches are transposed: X and Y are (batch_size, num_steps), one row per stream."),
        partial(_batches_with, step_major=True),
        CUT_SECTION,
    ),
)
