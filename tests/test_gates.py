"""The scratch GRU and LSTM against torch.nn.GRU / torch.nn.LSTM, autograd and training."""

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from model_arguments import ANY_ARGUMENT, assert_built_or_refused, generator_problem, size_problem

from d2lmini.gates import (
    GRUScratch,
    LSTMScratch,
    TorchGated,
    copy_gated_to_torch,
    gated_parameter_count,
    gru_step,
    init_gated_params,
    lstm_step,
)
from d2lmini.model_sizes import MAX_PARAMETER_BYTES
from d2lmini.rnn import predict
from d2lmini.text import Vocab, tokenize
from d2lmini.train import TrainConfig, evaluate_perplexity, train

pytestmark = pytest.mark.torch_dependent

CELLS = {"gru": GRUScratch, "lstm": LSTMScratch}


def scratch_and_twin(cell: str, vocab_size=11, hiddens=7, seed=0):
    scratch = CELLS[cell](vocab_size, hiddens, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():  # non-zero biases, so a bias in the wrong place shows
        for p in scratch.parameters():
            if p.dim() == 1:
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + 1)) * 0.3)
    twin = TorchGated(cell, vocab_size, hiddens)
    copy_gated_to_torch(scratch, twin)
    return scratch, twin


@pytest.mark.parametrize("cell", CELLS)
def test_same_outputs_and_state_as_torch(cell):
    scratch, twin = scratch_and_twin(cell)
    X = torch.randint(11, (3, 9), generator=torch.Generator().manual_seed(2))
    state = torch.randn(3, scratch.begin_state(3).shape[1], generator=torch.Generator().manual_seed(3))
    out, new_state = scratch(X, state)
    twin_out, twin_state = twin(X, state)
    assert out.shape == (27, 11) and new_state.shape == state.shape
    torch.testing.assert_close(out, twin_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(new_state, twin_state, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cell", CELLS)
def test_same_gradients_as_torch(cell):
    scratch, twin = scratch_and_twin(cell, seed=4)
    X = torch.randint(11, (2, 6), generator=torch.Generator().manual_seed(5))
    Y = torch.randint(11, (12,), generator=torch.Generator().manual_seed(6))
    for model in (scratch, twin):
        out, _ = model(X, model.begin_state(2))
        torch.nn.functional.cross_entropy(out, Y).backward()
    pairs = [(scratch.W_x.grad.T, twin.rnn.weight_ih_l0.grad),
             (scratch.W_h.grad.T, twin.rnn.weight_hh_l0.grad),
             (scratch.b.grad, twin.rnn.bias_ih_l0.grad),
             (scratch.W_hq.grad.T, twin.output.weight.grad)]
    if cell == "gru":  # the candidate's inner bias is the last third of torch's bias_hh
        pairs.append((scratch.b_hn.grad, twin.rnn.bias_hh_l0.grad[14:]))
    for mine, theirs in pairs:
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("cell_class", [GRUScratch, LSTMScratch], ids=["gru", "lstm"])
def test_hand_written_bptt_equals_autograd(cell_class):
    g = torch.Generator().manual_seed(9)
    fast = cell_class(11, 6, generator=torch.Generator().manual_seed(3)).double()
    plain = cell_class(11, 6, generator=torch.Generator().manual_seed(3), hand_written_bptt=False).double()
    with torch.no_grad():  # biases away from zero, so that every bias's gradient path is exercised
        for model in (fast, plain):
            for name, p in model.named_parameters():
                if name.startswith("b"):
                    p.add_(torch.linspace(-0.5, 0.5, p.numel(), dtype=p.dtype))
    assert fast.hand_written_bptt and not plain.hand_written_bptt
    X = torch.randint(11, (4, 8), generator=g)
    Y = torch.randint(11, (32,), generator=g)
    state = torch.randn(4, 6 * fast.state_width, dtype=torch.double, generator=g)
    results = []
    for model in (fast, plain):
        start = state.clone().requires_grad_()
        out, final = model(X, start)
        (torch.nn.functional.cross_entropy(out, Y) + final.square().sum()).backward()
        results.append([out, final, start.grad] + [p.grad for p in model.parameters()])
    for mine, reference in zip(*results, strict=True):
        torch.testing.assert_close(mine, reference)


def test_gru_and_lstm_steps_pass_gradcheck():
    g = torch.Generator().manual_seed(7)
    H = torch.randn(2, 3, dtype=torch.double, generator=g).requires_grad_()
    C = torch.randn(2, 3, dtype=torch.double, generator=g).requires_grad_()
    W3 = torch.randn(3, 9, dtype=torch.double, generator=g).requires_grad_()
    W4 = torch.randn(3, 12, dtype=torch.double, generator=g).requires_grad_()
    x3 = torch.randn(2, 9, dtype=torch.double, generator=g).requires_grad_()
    x4 = torch.randn(2, 12, dtype=torch.double, generator=g).requires_grad_()
    b_hn = torch.randn(3, dtype=torch.double, generator=g).requires_grad_()
    assert torch.autograd.gradcheck(gru_step, (x3, H, W3, b_hn))
    assert torch.autograd.gradcheck(lambda x, h, c, w: lstm_step(x, h, c, w), (x4, H, C, W4))


def test_lstm_cell_state_jacobian_is_the_forget_gate():
    """dC_t/dC_{t-1} is diag(F): the additive path the notebook measures."""
    g = torch.Generator().manual_seed(8)
    x, H, W = torch.randn(1, 8, generator=g), torch.randn(1, 2, generator=g), torch.randn(2, 8, generator=g)
    C = torch.randn(1, 2, generator=g)
    jacobian = torch.autograd.functional.jacobian(lambda c: lstm_step(x, H, c, W)[1], C).reshape(2, 2)
    forget = torch.sigmoid((x + H @ W)[:, 2:4]).reshape(2)
    torch.testing.assert_close(jacobian, torch.diag(forget))


def test_lstm_starts_with_a_forget_bias_of_one():
    model = LSTMScratch(5, 4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(model.b[4:8], torch.ones(4)) and torch.equal(model.b[:4], torch.zeros(4))
    assert model.begin_state(3).shape == (3, 8)


def test_unknown_torch_cell_is_refused():
    with pytest.raises(ValueError, match="'gru' or 'lstm'"):
        TorchGated("rnn", 5, 4)
    with pytest.raises(TypeError, match="'gru' or 'lstm'"):
        TorchGated(["gru"], 5, 4)  # was torch's "unhashable type: 'list'"


def _construct(kind: str, vocab_size, num_hiddens, extra):
    """Build the gated model `kind` with the drawn arguments (`extra`: its third argument, if any)."""
    if kind == "gru":
        return GRUScratch(vocab_size, num_hiddens, extra)
    if kind == "gru-flag":
        return GRUScratch(vocab_size, num_hiddens, generator=None, hand_written_bptt=extra)
    if kind == "lstm":
        return LSTMScratch(vocab_size, num_hiddens, generator=None, hand_written_bptt=extra)
    if kind == "lstm-generator":
        return LSTMScratch(vocab_size, num_hiddens, extra)
    if kind == "params":
        return init_gated_params(vocab_size, num_hiddens, 3, extra)
    return TorchGated(extra, vocab_size, num_hiddens)


def _expected_problem(kind: str, vocab_size, num_hiddens, extra) -> str | None:
    """Which argument the constructor must name (the first wrong one in the order they are passed), or
    None if every argument is one it can build with."""
    if kind == "torch" and extra not in ("gru", "lstm"):
        return "cell"
    problem = size_problem(vocab_size, num_hiddens) or generator_problem(
        extra if kind in ("gru", "lstm-generator", "params") else None)
    if problem:
        return problem
    gates = 4 if kind.startswith("lstm") or (kind == "torch" and extra == "lstm") else 3
    if 4 * gated_parameter_count(int(vocab_size), int(num_hiddens), gates) > MAX_PARAMETER_BYTES:
        return "GB of parameters"
    if kind in ("lstm", "gru-flag") and not isinstance(extra, bool):
        return "hand_written_bptt"
    return None


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["gru", "gru-flag", "lstm", "lstm-generator", "params", "torch"]), ANY_ARGUMENT,
       ANY_ARGUMENT,
       ANY_ARGUMENT | st.sampled_from(["gru", "lstm", "rnn"]))
def test_any_constructor_argument_builds_the_cell_or_is_refused_naming_it(kind, vocab_size, num_hiddens,
                                                                          extra):
    """Every argument of the gated cells is checked before torch sees it: a model of the right sizes, or
    a TypeError/ValueError naming the argument, never torch's own error (#43 item 9). On the meta device,
    so that a large valid model costs no memory."""
    assert_built_or_refused(lambda: _construct(kind, vocab_size, num_hiddens, extra),
                            _expected_problem(kind, vocab_size, num_hiddens, extra),
                            None if kind == "params" else (vocab_size, num_hiddens))


def test_numpy_sizes_build_the_same_model_as_ints():
    plain = GRUScratch(6, 5, torch.Generator().manual_seed(2))
    numpy = GRUScratch(np.int64(6), np.int16(5), torch.Generator().manual_seed(2))
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), numpy.parameters(), strict=True))
    assert LSTMScratch(6, 5, hand_written_bptt=np.bool_(False)).hand_written_bptt is False
    assert GRUScratch(6, 5, hand_written_bptt=np.bool_(False)).hand_written_bptt is False
    with pytest.raises(TypeError, match="vocabulary size"):
        GRUScratch(Fraction(6), 5)


@pytest.mark.parametrize("cell", CELLS)
def test_trains_evaluates_and_predicts_like_the_rnn(cell):
    text = "the cat sat on the mat and the dog sat on the log " * 30
    vocab = Vocab(tokenize(text))
    indices = torch.tensor(vocab.indices(tokenize(text)))
    torch.manual_seed(0)
    model = CELLS[cell](len(vocab), 16, generator=torch.Generator().manual_seed(0))
    train_part, valid_part = indices[:-200], indices[-200:]
    untrained = evaluate_perplexity(model, valid_part, train_part)
    history = train(model, train_part, valid_part,
                    TrainConfig(num_hiddens=16, batch_size=8, num_steps=10, num_epochs=3, lr=0.02))
    after = evaluate_perplexity(model, valid_part, train_part)
    assert after < untrained / 2, (untrained, after)
    assert history.valid_perplexity[-1] == pytest.approx(after, rel=1e-4)
    sample = predict(model, vocab, "the ", 20)
    assert sample.startswith("the ") and len(sample) == 24
