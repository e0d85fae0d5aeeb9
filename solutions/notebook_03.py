"""Solutions to the exercises of notebook 03 (one-hot vectors, embeddings, minibatches)."""

import torch

ANSWERS = {
    "check_one_hot_bytes": 50 * 64 * 28 * 4,
    "check_multiply_adds": 64 * 50 * 28 * 256,
    "check_sequential_start": 7 + 2 * ((1000 - 7 - 1) // 4) + 3 * 10,
    "check_carry_state": "sequential",
}


def lookup(W, X):
    """The rows of W picked by the token indices X: equal to one_hot(X) @ W."""
    return W[X]


def one_hot(X, vocab_size):
    """float32 one-hot vectors of the indices X, of shape X.shape + (vocab_size,)."""
    return (X.unsqueeze(-1) == torch.arange(vocab_size, device=X.device)).float()


def batches_with_tail(indices, batch_size, num_steps, offset):
    """Yield (X, Y) minibatches whose rows continue one another, starting at `offset`; the last
    may have fewer steps (the steps sequential partitioning would drop)."""
    stream_length = (len(indices) - offset - 1) // batch_size
    used = stream_length * batch_size
    xs = indices[offset : offset + used].reshape(batch_size, stream_length)
    ys = indices[offset + 1 : offset + 1 + used].reshape(batch_size, stream_length)
    for start in range(0, stream_length, num_steps):
        yield xs[:, start : start + num_steps], ys[:, start : start + num_steps]
