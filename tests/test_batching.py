"""Random sampling and sequential partitioning."""

import pytest
import torch

from d2lmini.batching import make_batches, random_batches, sequential_batches

pytestmark = pytest.mark.torch_dependent

TEXT = torch.arange(1000)


def test_labels_are_inputs_shifted_by_one():
    for batches in (random_batches(TEXT, 4, 5, torch.Generator().manual_seed(0)),
                    sequential_batches(TEXT, 4, 5, torch.Generator().manual_seed(0))):
        for X, Y in batches:
            assert X.shape == Y.shape == (4, 5)
            assert torch.equal(Y, X + 1)  # on arange, the next token is the index plus one


def test_sequential_rows_continue_and_cover_the_text_once():
    batches = list(sequential_batches(TEXT, 4, 5, torch.Generator().manual_seed(1)))
    rows = torch.cat([X for X, _ in batches], dim=1)  # row i of every minibatch, in order
    for row in rows:
        assert torch.equal(row, torch.arange(int(row[0]), int(row[0]) + len(row)))
    seen = rows.flatten()
    assert len(set(seen.tolist())) == len(seen), "no token may be an input twice"
    offset = int(seen.min())
    assert 0 <= offset < 5
    assert len(TEXT) - 1 - offset - len(seen) < 4 * 5, "at most one minibatch may be left over"


def test_random_sampling_shuffles_disjoint_subsequences():
    batches = list(random_batches(TEXT, 4, 5, torch.Generator().manual_seed(2)))
    starts = torch.cat([X[:, 0] for X, _ in batches])
    assert len(set(starts.tolist())) == len(starts)
    assert len(set((starts % 5).tolist())) == 1, "all subsequences share the offset"
    assert not torch.equal(starts, starts.sort().values), "subsequences come in random order"
    second_rows_continue = torch.equal(batches[1][0][:, 0], batches[0][0][:, -1] + 1)
    assert not second_rows_continue


def test_offset_is_random_but_seeded():
    def first(seed):
        return next(sequential_batches(TEXT, 2, 10, torch.Generator().manual_seed(seed)))[0]
    assert torch.equal(first(7), first(7))
    assert len({int(first(seed)[0, 0]) for seed in range(20)}) > 1


def test_too_long_a_minibatch_is_a_clear_error():
    with pytest.raises(ValueError, match="does not fit"):
        list(sequential_batches(torch.arange(50), 8, 10))
    with pytest.raises(ValueError, match="random' or 'sequential"):
        make_batches("shuffled", TEXT, 2, 2)


def test_batches_are_created_on_the_requested_device():
    X, Y = next(make_batches("random", TEXT, 2, 3, torch.Generator().manual_seed(0), "cpu"))
    assert X.device.type == Y.device.type == "cpu"
