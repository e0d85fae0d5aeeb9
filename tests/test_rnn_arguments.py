"""RNNScratch, TorchRNN and init_rnn_params check every argument before torch sees it (#43 item 9).

Before, a float, a bool or NaN as a size reached randn()'s argument list, -1 "math domain error", 0
ZeroDivisionError, a string generator randn()'s again, and hand_written_bptt="no" or a numpy vocab_size
(which `predict` then refused) silently made a model.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from model_arguments import ANY_ARGUMENT, assert_built_or_refused, generator_problem, size_problem

from d2lmini.model_sizes import MAX_PARAMETER_BYTES
from d2lmini.rnn import RNNScratch, TorchRNN, init_rnn_params, predict, rnn_parameter_count
from d2lmini.text import Vocab

pytestmark = pytest.mark.torch_dependent

KINDS = ("scratch-init", "scratch-generator", "scratch-flag", "params-init", "params-generator", "torch")


def _construct(kind: str, vocab_size, num_hiddens, extra):
    """Build with the drawn arguments; `extra` is the init rule, the generator or the flag, as `kind` says."""
    if kind == "scratch-init":
        return RNNScratch(vocab_size, num_hiddens, extra)
    if kind == "scratch-generator":
        return RNNScratch(vocab_size, num_hiddens, generator=extra)
    if kind == "scratch-flag":
        return RNNScratch(vocab_size, num_hiddens, hand_written_bptt=extra)
    if kind == "params-init":
        return init_rnn_params(vocab_size, num_hiddens, extra)
    if kind == "params-generator":
        return init_rnn_params(vocab_size, num_hiddens, "normal", extra)
    return TorchRNN(vocab_size, num_hiddens)


def _expected_problem(kind: str, vocab_size, num_hiddens, extra) -> str | None:
    """The words naming the first wrong argument in the order they are passed, or None if all can work."""
    problem = size_problem(vocab_size, num_hiddens)
    if problem:
        return problem
    if kind.endswith("-init") and extra not in ("normal", "lecun"):
        return "init"
    if kind.endswith("-generator") and generator_problem(extra):
        return "generator"
    if 4 * rnn_parameter_count(int(vocab_size), int(num_hiddens)) > MAX_PARAMETER_BYTES:
        return "GB of parameters"
    if kind == "scratch-flag" and not isinstance(extra, bool):
        return "hand_written_bptt"
    return None


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(KINDS), ANY_ARGUMENT, ANY_ARGUMENT,
       ANY_ARGUMENT | st.sampled_from(["normal", "lecun", "xavier", "LeCun"]))
def test_any_constructor_argument_builds_the_rnn_or_is_refused_naming_it(kind, vocab_size, num_hiddens,
                                                                         extra):
    """A model of the given sizes, or a TypeError/ValueError naming the argument in one line, never torch's
    own error. On the meta device, so that a large valid model costs no memory."""
    assert_built_or_refused(lambda: _construct(kind, vocab_size, num_hiddens, extra),
                            _expected_problem(kind, vocab_size, num_hiddens, extra),
                            None if kind.startswith("params") else (vocab_size, num_hiddens))


@pytest.mark.parametrize("build", [
    lambda size: RNNScratch(size, 4), lambda size: TorchRNN(size, 4), lambda size: init_rnn_params(size, 4),
    lambda size: RNNScratch(4, size), lambda size: TorchRNN(4, size), lambda size: init_rnn_params(4, size)],
    ids=["scratch-vocab", "torch-vocab", "params-vocab", "scratch-hidden", "torch-hidden", "params-hidden"])
@pytest.mark.parametrize("size, error", [(5.0, TypeError), (True, TypeError), (math.nan, TypeError),
                                         ("5", TypeError), (-1, ValueError), (0, ValueError),
                                         (10**9, ValueError)])
def test_a_size_that_is_no_whole_number_in_range_is_refused_naming_it(build, size, error):
    # on the meta device, so that a constructor that does not refuse 10**9 allocates nothing
    with torch.device("meta"), pytest.raises(
            error, match=r"(vocabulary|hidden) size \((vocab_size|num_hiddens)\) must be a whole"):
        build(size)


def test_numpy_sizes_build_the_same_model_as_ints_and_it_can_predict():
    plain = RNNScratch(6, 5, generator=torch.Generator().manual_seed(2))
    numpy = RNNScratch(np.int64(6), np.int16(5), generator=torch.Generator().manual_seed(2))
    assert type(numpy.vocab_size) is int and type(TorchRNN(np.int32(6), 5).vocab_size) is int
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), numpy.parameters(), strict=True))
    vocab = Vocab(list("abcde"))  # 6 tokens with <unk>; predict refused a numpy vocab_size before
    assert predict(numpy, vocab, "ab", 3).startswith("ab")


def test_a_model_too_large_for_memory_is_refused_before_anything_is_allocated():
    for build in (lambda: RNNScratch(10_000_000, 100_000), lambda: TorchRNN(2_000_000, 1_000)):
        # on the meta device, so that a constructor that does not refuse allocates nothing either
        with torch.device("meta"), pytest.raises(
                ValueError, match=r"^A model with vocab_size [\d,]+ and num_hiddens [\d,]+ holds about "
                                  r"[\d.]+ GB of parameters; make the vocabulary or the hidden size"):
            build()


@pytest.mark.parametrize("generator, error, words", [
    (1, TypeError, "generator must be a CPU torch.Generator or None, not int"),
    ("seed", TypeError, "not str"),
    (np.random.default_rng(0), TypeError, "not Generator"),
])
def test_a_generator_that_is_not_a_torch_generator_is_refused(generator, error, words):
    for build in (lambda: RNNScratch(5, 4, generator=generator),
                  lambda: init_rnn_params(5, 4, generator=generator)):
        with pytest.raises(error, match=words):
            build()


class _GeneratorOnAGPU(torch.Generator):
    """A CPU generator that says it is on a GPU, so the test runs on a machine without one."""

    @property
    def device(self):
        return torch.device("cuda", 0)


@pytest.mark.parametrize("generator", [
    _GeneratorOnAGPU(),
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here"))])
def test_a_generator_on_a_gpu_is_refused(generator):
    generator = torch.Generator(device="cuda") if generator == "cuda" else generator
    with pytest.raises(ValueError, match="generator must be a CPU torch.Generator, not one on cuda"):
        RNNScratch(5, 4, generator=generator)


@pytest.mark.parametrize("init, error", [("xavier", ValueError), ("", ValueError), (["lecun"], TypeError),
                                         (np.array([1, 2]), TypeError), (None, TypeError)])
def test_an_unknown_init_rule_is_refused_naming_it(init, error):
    # np.array([1, 2]) was "The truth value of an array with more than one element is ambiguous"
    for build in (lambda: RNNScratch(5, 4, init), lambda: init_rnn_params(5, 4, init)):
        with pytest.raises(error, match="init must be 'normal' or 'lecun', not "):
            build()


@pytest.mark.parametrize("flag", ["no", None, 0, 1, torch.tensor(True)])
def test_hand_written_bptt_must_be_true_or_false(flag):
    with pytest.raises(TypeError, match="hand_written_bptt must be True or False, not "):
        RNNScratch(5, 4, hand_written_bptt=flag)  # "no" and None made a model before
    assert RNNScratch(5, 4, hand_written_bptt=np.bool_(False)).hand_written_bptt is False
