"""Cutting a long sequence of token indices into minibatches (introduced in notebook 03).

Both iterators yield `(X, Y)` pairs of shape (batch_size, num_steps) on `device`, where
`Y` is `X` shifted one token to the left: the label of every input is the next token.
Each pass starts at a random offset in [0, num_steps), drawn on the CPU from
`generator`, so different epochs see different cuts of the text.
"""

from collections.abc import Iterator

import torch

from d2lmini.i18n import _


def validate_fits(num_tokens: int, batch_size: int, num_steps: int) -> None:
    """Raise ValueError unless minibatches of batch_size x num_steps can be cut from num_tokens.

    One extra row of num_steps is needed for the random start offset and the shifted labels.
    """
    if batch_size < 1 or num_steps < 1:
        raise ValueError(_("batch_size and num_steps must be positive, not {batch_size}, {num_steps}").format(
            batch_size=batch_size, num_steps=num_steps))
    if num_tokens < batch_size * num_steps + num_steps:
        # TRANSLATORS: batch_size and num_steps are the settings' names in code, kept as they are.
        raise ValueError(_(
            "batch_size x num_steps = {batch_size} x {num_steps} = {tokens} tokens per minibatch does not "
            "fit in a text of {num_tokens} tokens; make the batch or the number of steps smaller."
        ).format(batch_size=batch_size, num_steps=num_steps, tokens=batch_size * num_steps,
                 num_tokens=num_tokens))


def steps_per_epoch(num_tokens: int, batch_size: int, num_steps: int) -> int:
    """Return the minibatches of batch_size x num_steps in one pass over `num_tokens` tokens (at least 1)."""
    return max(1, (num_tokens - 1) // (batch_size * num_steps))


def random_offset(num_steps: int, generator: torch.Generator | None) -> int:
    """Return a random offset in 0 ... num_steps - 1, drawn on the CPU from `generator` (notebook 03)."""
    return int(torch.randint(num_steps, (1,), generator=generator))


def random_batches(
    indices: torch.Tensor,
    batch_size: int,
    num_steps: int,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield minibatches of subsequences taken in random order (random sampling).

    The text after a random offset is cut into non-overlapping subsequences of
    `num_steps` tokens; they are shuffled and grouped `batch_size` at a time.
    Neighbouring rows of consecutive minibatches are unrelated pieces of text (one may
    continue another by chance, never by design), so the hidden state must be reset for
    every minibatch. Incomplete minibatches are dropped.
    """
    validate_fits(len(indices), batch_size, num_steps)
    offset = random_offset(num_steps, generator)
    num_subseqs = (len(indices) - offset - 1) // num_steps
    starts = offset + num_steps * torch.randperm(num_subseqs, generator=generator)
    window = torch.arange(num_steps)
    for first in range(0, num_subseqs - batch_size + 1, batch_size):
        rows = starts[first : first + batch_size, None] + window
        yield indices[rows].to(device), indices[rows + 1].to(device)


def sequential_batches(
    indices: torch.Tensor,
    batch_size: int,
    num_steps: int,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
    offset: int | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield minibatches whose rows continue one another (sequential partitioning).

    After a random offset the text is split into `batch_size` equal streams, one per
    row; minibatch k holds steps k*num_steps ... (k+1)*num_steps - 1 of every stream.
    So row i of one minibatch continues exactly where row i of the previous one ended,
    and a hidden state carried from one minibatch to the next stays meaningful. Every
    token after the offset (but a short remainder) is an input exactly once. `offset`
    fixes the offset instead of drawing it (0 <= offset < num_steps; notebook 03's exercise).
    """
    validate_fits(len(indices), batch_size, num_steps)
    if offset is None:
        offset = random_offset(num_steps, generator)
    else:
        check_offset(offset, num_steps)
    stream_length = (len(indices) - offset - 1) // batch_size
    used = stream_length * batch_size
    xs = indices[offset : offset + used].reshape(batch_size, stream_length)
    ys = indices[offset + 1 : offset + 1 + used].reshape(batch_size, stream_length)
    for start in range(0, stream_length - num_steps + 1, num_steps):
        yield xs[:, start : start + num_steps].to(device), ys[:, start : start + num_steps].to(device)


def check_offset(offset: int, num_steps: int) -> None:
    """Raise ValueError unless 0 <= `offset` < `num_steps` (`sequential_batches`'s fixed offset)."""
    if not 0 <= offset < num_steps:
        raise ValueError(_("offset must be in 0 ... num_steps - 1 = {last}, not {offset}").format(
            last=num_steps - 1, offset=offset))


def make_batches(sampling: str, *args, **kwargs) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Return `random_batches(...)` or `sequential_batches(...)` by name ("random" or "sequential")."""
    if sampling == "random":
        return random_batches(*args, **kwargs)
    if sampling == "sequential":
        return sequential_batches(*args, **kwargs)
    raise ValueError(_("sampling must be 'random' or 'sequential', not {sampling}").format(
        sampling=repr(sampling)))
