"""Self-checks for the exercises of notebook 03 (one-hot vectors, embeddings, minibatches).

Each `check_*` takes the student's answer and returns a `Verdict` (with a hint when wrong),
which shows itself when a cell ends with the check; nothing is printed. The numbers of each
question are module constants.
"""

import torch
import torch.nn.functional as F

from d2lmini.batching import sequential_batches
from d2lmini.exercises import Verdict, count_verdict, self_check, verdict
from d2lmini.exercises.coding import Case, at_most_matmuls, check_function, never, sampler, take_pairs
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import N_, _

# Exercise 1 and 2: a one-hot minibatch of BATCH x STEPS characters, VOCAB entries, float32.
BATCH, STEPS, VOCAB, HIDDENS = 64, 50, 28, 256
# Exercise 3: sequential partitioning of TEXT_TOKENS tokens with this offset.
TEXT_TOKENS, SEQ_BATCH, SEQ_STEPS, SEQ_OFFSET, SEQ_ROW, SEQ_MINIBATCH = 1000, 4, 10, 7, 2, 3


@self_check
def check_one_hot_bytes(answer, batch: int = BATCH, steps: int = STEPS, vocab: int = VOCAB) -> Verdict:
    """Exercise 1: bytes of a float32 one-hot minibatch of shape (steps, batch, vocab)."""
    expected = steps * batch * vocab * 4
    return count_verdict(
        answer, expected,
        _("{steps} x {batch} x {vocab} numbers of 4 bytes each: {expected:,} bytes, while the int64 "
          "indices take only {indices:,}.").format(steps=steps, batch=batch, vocab=vocab, expected=expected,
                                           indices=steps * batch * 8),
        _("Count the numbers in the tensor (multiply the three sizes) and multiply by the bytes of one "
          "float32 (torch.float32 has element_size() == 4)."),
    )


@self_check
def check_multiply_adds(answer, batch: int = BATCH, steps: int = STEPS, vocab: int = VOCAB,
                        hiddens: int = HIDDENS) -> Verdict:
    """Exercise 2: multiply-adds of one_hot(X) @ W_xh, X as in exercise 1, W_xh of shape (vocab, hiddens)."""
    tokens = batch * steps
    expected = tokens * vocab * hiddens
    return count_verdict(
        answer, expected,
        _("({tokens}, {vocab}) @ ({vocab}, {hiddens}) does {tokens} x {vocab} x {hiddens} = {expected:,} "
          "multiply-adds, almost all of them multiplying by zero; W_xh[X] does none.").format(
              tokens=tokens, vocab=vocab, hiddens=hiddens, expected=expected),
        _("An (n, k) @ (k, m) product does one multiply-add for every n, k and m: n * k * m. Here n is the "
          "number of tokens in the minibatch."),
    )


@self_check
def check_sequential_start(answer, num_tokens: int = TEXT_TOKENS, batch_size: int = SEQ_BATCH,
                           num_steps: int = SEQ_STEPS, offset: int = SEQ_OFFSET, row: int = SEQ_ROW,
                           minibatch: int = SEQ_MINIBATCH) -> Verdict:
    """Exercise 3: text position of the first input of row `row` of minibatch `minibatch`."""
    stream = (num_tokens - offset - 1) // batch_size
    expected = offset + row * stream + minibatch * num_steps
    return count_verdict(
        answer, expected,
        _("Each row is a stream of ({num_tokens} - {offset} - 1) // {batch_size} = {stream} tokens, so the "
          "answer is {offset} + {row} x {stream} + {minibatch} x {num_steps} = {expected}.").format(
              num_tokens=num_tokens, offset=offset, batch_size=batch_size, stream=stream, row=row,
              minibatch=minibatch, num_steps=num_steps, expected=expected),
        _("Row i is one stream of L = (num_tokens - offset - 1) // batch_size tokens that starts at offset "
          "+ i * L; minibatch k takes the steps k * num_steps onwards of every stream."),
    )


@self_check
def check_carry_state(answer) -> Verdict:
    """Exercise 4: which partitioning scheme lets the hidden state be carried to the next minibatch?"""
    text = answer.strip().lower() if isinstance(answer, str) else ""
    return verdict(
        text in {"sequential", "sequential partitioning"},
        _("Under sequential partitioning row i of minibatch k+1 continues row i of minibatch k, so the "
          "final state of one minibatch is the right starting state of the next (detach it to truncate "
          "backpropagation)."),
        # TRANSLATORS: 'random' and 'sequential' are the answers the check accepts: keep them in English.
        _("Answer 'random' or 'sequential'. Ask: does row i of the next minibatch start where row i of "
          "this one ended?"),
    )


def _lookup_cases(device: torch.device):
    rand = sampler(3, device)
    generator = torch.Generator().manual_seed(30)
    for shape, vocab, hiddens in [((7,), 5, 3), ((2, 4), 11, 6), ((3, 1), 28, 8), ((4,), 3, 2)]:
        W = rand(vocab, hiddens)
        X = torch.randint(vocab, shape, generator=generator).to(device)
        if shape == (4,):
            X = torch.tensor([2, 0, 2, 2]).to(device)  # repeated tokens and both ends of the vocabulary
        yield Case(_("X of shape {shape}, W of shape ({vocab}, {hiddens})").format(
            shape=shape, vocab=vocab, hiddens=hiddens), (W, X), reference=_lookup_reference)
    # A lookup copies rows of W, so it keeps W's dtype: a float64 W tells it from a result converted to
    # float32 (#45, the third held-apart set).
    W, X = sampler(31, device, torch.float64)(6, 4), torch.tensor([[5, 0, 3], [3, 1, 5]]).to(device)
    yield Case(_("X of shape {shape}, W of shape ({vocab}, {hiddens}) in float64").format(
        shape=(2, 3), vocab=6, hiddens=4), (W, X), reference=_lookup_reference)


def _lookup_reference(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    return F.one_hot(X, W.shape[0]).to(W.dtype) @ W


def _one_hot_reference(X: torch.Tensor, vocab_size: int) -> torch.Tensor:
    return F.one_hot(X, vocab_size).float()


def check_lookup(lookup) -> Verdict:
    """Exercise 5: `lookup(W, X)` equals `one_hot(X) @ W` for any integer X, without one-hot vectors."""
    return check_function(
        lookup, _lookup_cases,
        _("Indexing the rows of W with X gives one row per token, exactly the one-hot product, with no "
          "multiplications at all."),
        rules=[never({"one_hot", "eye"}, N_("Your function builds one-hot vectors (one_hot, or rows of "
                                            "eye); the exercise asks you to do without.")),
               at_most_matmuls(0, N_("Your function multiplies matrices (a broadcast multiply followed by "
                                     "a sum is a matrix product too); a lookup needs no products."))],
        signature="lookup(W, X)", mistakes=mistakes_of("03:lookup"))


def _one_hot_cases(device: torch.device):
    generator = torch.Generator().manual_seed(31)
    for shape, vocab in [((5,), 4), ((3, 6), 28), ((2, 1), 2)]:
        X = torch.randint(vocab, shape, generator=generator)
        X.view(-1)[0], X.view(-1)[-1] = 0, vocab - 1  # the first and the last index both occur
        yield Case(_("X of shape {shape} and vocab_size={vocab}").format(shape=shape, vocab=vocab),
                   (X.to(device), vocab), reference=_one_hot_reference)
    # The width comes from vocab_size, not from the indices: here the largest index is below it.
    for values, vocab in [([[2, 0, 1], [1, 1, 0]], 6), ([0, 0], 3)]:
        X = torch.tensor(values)
        label = _("X = {values} (largest index {largest}) and vocab_size={vocab}").format(
            values=values, largest=X.max().item(), vocab=vocab)
        yield Case(label, (X.to(device), vocab), reference=_one_hot_reference)


def check_one_hot(one_hot) -> Verdict:
    """Exercise 6: `one_hot(X, vocab_size)` returns float32 one-hot vectors, shape X.shape + (vocab_size,)."""
    return check_function(
        one_hot, _one_hot_cases,
        _("Every index became a row with a single 1, for inputs of any shape."),
        rules=[never({"one_hot"}, N_("Your function calls one_hot; the exercise asks you to write it "
                                     "yourself."))],
        signature="one_hot(X, vocab_size)", mistakes=mistakes_of("03:one_hot"))


def _tail(text: torch.Tensor, batch_size: int, num_steps: int, offset: int) -> list[torch.Tensor]:
    """Return [X, Y] of the shorter last minibatch that sequential partitioning drops, or []."""
    stream_length = (len(text) - offset - 1) // batch_size
    kept = stream_length // num_steps * num_steps
    if kept == stream_length:
        return []
    streams = text[offset : offset + stream_length * batch_size + 1]
    xs = streams[:-1].reshape(batch_size, stream_length)
    ys = streams[1:].reshape(batch_size, stream_length)
    return [xs[:, kept:], ys[:, kept:]]


def _sequential_cases(device: torch.device):
    generator = torch.Generator().manual_seed(32)
    settings = [(1000, 4, 10, 7), (37, 2, 5, 3), (30, 3, 4, 0), (25, 2, 3, 2), (41, 2, 5, 0)]
    for num_tokens, batch_size, num_steps, offset in settings:
        text = torch.randint(28, (num_tokens,), generator=generator).to(device)
        count = len(_sequential_reference(text, batch_size, num_steps, offset)) // 2
        # TRANSLATORS: {name} is X or Y (the inputs or the labels) of minibatch {k}.
        names = [_("{name} of minibatch {k}").format(name="XY"[i % 2], k=i // 2) for i in range(2 * count)]
        label = _("a text of {num_tokens} tokens, batch_size={batch_size}, num_steps={num_steps}, "
                  "offset={offset}").format(num_tokens=num_tokens, batch_size=batch_size, num_steps=num_steps,
                                            offset=offset)
        yield Case(label, (text, batch_size, num_steps, offset), reference=_sequential_reference,
                   names=names, convert=take_pairs(count + 1))


def _sequential_reference(text, batch_size: int, num_steps: int, offset: int) -> list[torch.Tensor]:
    """X0, Y0, X1, Y1, ... of sequential partitioning, with the shorter last pair it would drop."""
    pairs = list(sequential_batches(text, batch_size, num_steps, device=text.device, offset=offset))
    return take_pairs(len(pairs))(pairs) + _tail(text, batch_size, num_steps, offset)


def check_sequential_batches(batches_fn) -> Verdict:
    """Exercise 7: `batches_fn(indices, batch_size, num_steps, offset)` yields sequential (X, Y) pairs
    and, where steps are left over, a last shorter pair instead of dropping them."""
    return check_function(
        batches_fn, _sequential_cases,
        _("Row i of every minibatch continues row i of the one before, every label is the next token, and "
          "no token is dropped at the end."),
        signature="batches_with_tail(indices, batch_size, num_steps, offset)",
        mistakes=mistakes_of("03:sequential_batches"))
