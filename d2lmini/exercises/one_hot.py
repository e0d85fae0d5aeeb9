"""Self-checks for the exercises of notebook 03 (one-hot vectors, embeddings, minibatches).

Each `check_*` takes the student's answer, prints a verdict (with a hint when wrong)
and returns a `Verdict`. The numbers of each question are module constants.
"""

import torch
import torch.nn.functional as F

from d2lmini.exercises import Verdict, is_count, verdict

# Exercise 1 and 2: a one-hot minibatch of BATCH x STEPS characters, VOCAB entries, float32.
BATCH, STEPS, VOCAB, HIDDENS = 64, 50, 28, 256
# Exercise 3: sequential partitioning of TEXT_TOKENS tokens with this offset.
TEXT_TOKENS, SEQ_BATCH, SEQ_STEPS, SEQ_OFFSET, SEQ_ROW, SEQ_MINIBATCH = 1000, 4, 10, 7, 2, 3


def check_one_hot_bytes(answer) -> Verdict:
    """Exercise 1: bytes of a float32 one-hot minibatch of shape (STEPS, BATCH, VOCAB)."""
    expected = STEPS * BATCH * VOCAB * 4
    return verdict(
        is_count(answer, expected),
        f"{STEPS} x {BATCH} x {VOCAB} numbers of 4 bytes each: {expected:,} bytes, "
        f"while the int64 indices take only {STEPS * BATCH * 8:,}.",
        "Count the numbers in the tensor (multiply the three sizes) and multiply by the bytes "
        "of one float32 (torch.float32 has element_size() == 4).",
    )


def check_multiply_adds(answer) -> Verdict:
    """Exercise 2: multiply-adds of one_hot(X) @ W_xh, X as in exercise 1, W_xh of shape (VOCAB, HIDDENS)."""
    tokens = BATCH * STEPS
    expected = tokens * VOCAB * HIDDENS
    return verdict(
        is_count(answer, expected),
        f"({tokens}, {VOCAB}) @ ({VOCAB}, {HIDDENS}) does {tokens} x {VOCAB} x {HIDDENS} = {expected:,} "
        "multiply-adds, almost all of them multiplying by zero; W_xh[X] does none.",
        "An (n, k) @ (k, m) product does one multiply-add for every n, k and m: n * k * m. "
        "Here n is the number of tokens in the minibatch.",
    )


def check_sequential_start(answer) -> Verdict:
    """Exercise 3: text position of the first input of row SEQ_ROW of minibatch SEQ_MINIBATCH."""
    stream = (TEXT_TOKENS - SEQ_OFFSET - 1) // SEQ_BATCH
    expected = SEQ_OFFSET + SEQ_ROW * stream + SEQ_MINIBATCH * SEQ_STEPS
    return verdict(
        is_count(answer, expected),
        f"Each row is a stream of ({TEXT_TOKENS} - {SEQ_OFFSET} - 1) // {SEQ_BATCH} = {stream} tokens, "
        f"so the answer is {SEQ_OFFSET} + {SEQ_ROW} x {stream} + {SEQ_MINIBATCH} x {SEQ_STEPS} = {expected}.",
        "Row i is one stream of L = (num_tokens - offset - 1) // batch_size tokens that starts at "
        "offset + i * L; minibatch k takes the steps k * num_steps onwards of every stream.",
    )


def check_carry_state(answer) -> Verdict:
    """Exercise 4: which scheme lets the hidden state be carried to the next minibatch ("sequential")."""
    text = str(answer).strip().lower() if answer is not None else ""
    return verdict(
        text in {"sequential", "sequential partitioning"},
        "Under sequential partitioning row i of minibatch k+1 continues row i of minibatch k, so "
        "the final state of one minibatch is the right starting state of the next (detach it to "
        "truncate backpropagation).",
        "Answer 'random' or 'sequential'. Ask: does row i of the next minibatch start where "
        "row i of this one ended?",
    )


def check_lookup(lookup) -> Verdict:
    """Exercise 5: `lookup(W, X)` must equal `one_hot(X) @ W` for any integer tensor X."""
    generator = torch.Generator().manual_seed(3)
    ok = callable(lookup)
    for shape, vocab, hiddens in [((7,), 5, 3), ((2, 4), 11, 6), ((3, 1), 28, 8)]:
        if not ok:
            break
        W = torch.randn(vocab, hiddens, generator=generator)
        X = torch.randint(vocab, shape, generator=generator)
        try:
            got = lookup(W, X)
            ok = (isinstance(got, torch.Tensor) and got.shape == (*shape, hiddens)
                  and torch.allclose(got, F.one_hot(X, vocab).to(W.dtype) @ W))
        except Exception:  # any error in the student's code is a wrong answer, not a crash
            ok = False
    return verdict(
        ok,
        "Indexing the rows of W with X gives one row per token, exactly the one-hot product.",
        "Write a function of (W, X) whose result has shape X.shape + (W.shape[1],) and equals "
        "F.one_hot(X, W.shape[0]).float() @ W. Hint: W[X].",
    )

