"""Tests for the memory scrubber of notebook 05 (d2lmini.widgets.memory), without a browser."""

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from d2lmini.bptt import PARAM_NAMES  # noqa: E402
from d2lmini.corpus import corpus_from_text  # noqa: E402
from d2lmini.gates import GRUScratch, LSTMScratch, TorchGated, copy_gated_to_torch  # noqa: E402
from d2lmini.markov import EchoSource  # noqa: E402
from d2lmini.plot import png_size  # noqa: E402
from d2lmini.rnn import RNNScratch, TorchRNN, rnn_forward  # noqa: E402
from d2lmini.train import TrainConfig, make_model, train  # noqa: E402
from d2lmini.widgets.memory import (  # noqa: E402
    MemoryPanel,
    influence_by_lag,
    make_memory_panel,
    memory_alt,
    memory_view,
    next_probability,
    peak_lags,
    share_peaking_at,
)

pytestmark = pytest.mark.torch_dependent

LAG = 3


@pytest.fixture(scope="module")
def echo():
    source = EchoSource(alphabet="abcd", lag=LAG, keep=0.9)
    return corpus_from_text("echo", source.sample(6_000, seed=1))


@pytest.fixture(scope="module")
def echo_model(echo):
    """A tiny RNN trained on the echo source for a fraction of a second."""
    config = TrainConfig(num_hiddens=32, lr=0.01, batch_size=32, num_steps=16, theta=1.0,
                         num_epochs=None, max_minibatches=150, checkpoints=1, seed=0)
    model = make_model("scratch", len(echo.vocab), config, "cpu")
    train(model, *echo.split(), config)
    return model


def random_model(vocab_size=5, num_hiddens=6, seed=0):
    model = RNNScratch(vocab_size, num_hiddens, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        model.b_h.normal_(0, 0.3, generator=torch.Generator().manual_seed(seed + 1))
    return model.double()


def full_context_influence(model, indices, position, max_lag):
    """The definition, by autograd over the whole prefix: every input one-hot and a leaf."""
    params = [getattr(model, n).detach() for n in PARAM_NAMES]
    one_hot = F.one_hot(indices[:position], model.vocab_size).to(params[0].dtype).requires_grad_(True)
    H = torch.zeros(1, model.num_hiddens, dtype=params[0].dtype)
    W_xh, W_hh, b_h, W_hq, b_q = params
    for x in one_hot:
        H = torch.tanh(x[None] @ W_xh + H @ W_hh + b_h)
    torch.log_softmax(H @ W_hq + b_q, dim=1)[0, indices[position]].backward()
    return one_hot.grad.norm(dim=1).flip(0)[:max_lag]


def test_influence_is_the_gradient_norm_of_the_log_probability():
    model = random_model()
    indices = torch.randint(0, 5, (40,), generator=torch.Generator().manual_seed(3))
    positions = [4, 9, 20, 39]
    influence = influence_by_lag(model, indices, positions, max_lag=4)
    assert influence.shape == (4, 4) and influence.dtype == torch.float64
    for row, p in zip(influence, positions, strict=True):
        torch.testing.assert_close(row, full_context_influence(model, indices, p, 4), rtol=1e-10, atol=1e-12)
    assert float(influence.min()) > 0  # every lag sways a random model a little


def test_the_probability_is_the_models():
    model = random_model(seed=4)
    indices = torch.randint(0, 5, (30,), generator=torch.Generator().manual_seed(5))
    params = [getattr(model, n).detach() for n in PARAM_NAMES]
    outputs, _ = rnn_forward(indices[None, :17], torch.zeros(1, 6, dtype=torch.float64), *params)
    expected = torch.softmax(outputs[-1], dim=0)[indices[17]]
    assert next_probability(model, indices, 17) == pytest.approx(float(expected), rel=1e-10)


def test_a_model_trained_on_the_echo_source_looks_exactly_lag_back(echo, echo_model):
    _, valid = echo.split()
    influence = influence_by_lag(echo_model, valid, list(range(12, 600, 7)), max_lag=10)
    assert share_peaking_at(influence, LAG) >= 0.9
    assert int(influence.mean(0).argmax()) + 1 == LAG


def test_a_model_without_memory_fails_the_echo_property(echo, echo_model):
    """The planted wrong model: the trained echo model with W_hh zeroed remembers one step only."""
    amnesic = make_model("scratch", echo_model.vocab_size, TrainConfig(num_hiddens=32), "cpu")
    amnesic.load_state_dict(echo_model.state_dict())
    with torch.no_grad():
        amnesic.W_hh.zero_()
    _, valid = echo.split()
    influence = influence_by_lag(amnesic, valid, list(range(12, 600, 7)), max_lag=10)
    assert share_peaking_at(influence, LAG) == 0.0
    assert set(peak_lags(influence)) == {1} and float(influence[:, 1:].abs().max()) == 0.0


def test_an_untrained_model_fails_the_echo_property(echo):
    untrained = make_model("scratch", len(echo.vocab), TrainConfig(num_hiddens=32), "cpu")
    _, valid = echo.split()
    influence = influence_by_lag(untrained, valid, list(range(12, 600, 7)), max_lag=10)
    assert share_peaking_at(influence, LAG) < 0.5


def test_bad_positions_and_models_are_refused(echo):
    model = random_model()
    indices = torch.zeros(10, dtype=torch.long)
    with pytest.raises(ValueError, match="from max_lag = 4 to 9"):
        influence_by_lag(model, indices, [3], max_lag=4)
    with pytest.raises(ValueError, match="from max_lag = 4 to 9"):
        influence_by_lag(model, indices, [10], max_lag=4)
    with pytest.raises(ValueError, match="max_lag"):
        influence_by_lag(model, indices, [5], max_lag=0)
    with pytest.raises(TypeError, match="RNNScratch"):
        influence_by_lag(TorchRNN(5, 3), indices, [5], max_lag=4)


def test_memory_view_names_the_characters(echo, echo_model):
    text = echo.text[-200:]
    view = memory_view(echo_model, text, echo.vocab, position=50, max_lag=12)
    assert view.target == text[50] and "".join(view.context) == text[38:50]
    assert len(view.influence) == 12 and view.peak_lag == peak_lags(torch.tensor([view.influence]))[0]
    assert 0 < view.probability < 1 and f"{view.peak_lag} back" in view.summary


def test_panel_follows_its_controls(echo, echo_model):
    other = corpus_from_text("other", "abcdabcd" * 10)
    other_model = random_model(len(other.vocab), 32).float()
    panel = make_memory_panel({"echo": (echo_model, echo.text[-200:], echo.vocab),
                               "other": (other_model, other.text, other.vocab)}, position=30, max_lag=10)
    assert isinstance(panel, MemoryPanel) and panel.view.position == 30
    assert all(control.description for control in panel.controls)
    assert panel.position.min == 10 and panel.position.max == 199
    panel.position.value = 120
    assert panel.view.position == 120 and panel.view.target == echo.text[-200:][120]
    panel.source.value = "other"
    assert panel.position.max == 79 and panel.view.position == 79
    assert png_size(panel.image.value)[0] > 0 and not any(c.disabled for c in panel.controls)
    with pytest.raises(ValueError, match="more than max_lag"):
        make_memory_panel({"short": (echo_model, "abc", echo.vocab)}, max_lag=10)


@pytest.mark.parametrize("fill, says, alt", [
    (math.nan, "hold NaN or infinity", "No bar chart"), (math.inf, "hold NaN or infinity", "No bar chart"),
    (0.0, "no character before it sways the prediction", "every bar is 0")])
def test_a_diverged_or_all_zero_model_is_said_so_not_a_crash(echo, fill, says, alt):
    """Notebook 05's panel shares draw_memory with 09's: a NaN or infinite model raised "Axis limits cannot
    be NaN or Inf", and an all-zero one named a strongest character among bars of 0 (#43 item 9)."""
    model = random_model(len(echo.vocab), 6)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(fill)
    panel = make_memory_panel({"m": (model, echo.text[-100:], echo.vocab)}, position=30, max_lag=10)
    assert says in panel.status.value and "strongest" not in panel.status.value
    assert png_size(panel.image.value)[0] > 0 and alt in memory_alt(panel.view)


def torch_twin_influence(scratch, indices, position, max_lag):
    """The definition through torch.nn.GRU / nn.LSTM with the scratch cell's weights: an independent
    implementation, the whole prefix read from a zero state with every one-hot input a leaf."""
    twin = TorchGated(scratch.__class__.__name__[:-7].lower(), scratch.vocab_size, scratch.num_hiddens)
    twin = twin.double()
    copy_gated_to_torch(scratch, twin)
    one_hot = F.one_hot(indices[:position], scratch.vocab_size).double().requires_grad_(True)
    hiddens, _ = twin.rnn(one_hot[:, None])
    log_probs = torch.log_softmax(twin.output(hiddens[-1]), dim=1)
    log_probs[0, indices[position]].backward()
    return one_hot.grad.norm(dim=1).flip(0)[:max_lag]


@pytest.mark.parametrize("cell", [GRUScratch, LSTMScratch], ids=["gru", "lstm"])
def test_the_scrubber_measures_a_gated_cell_as_torchs_twin_does(cell):
    model = cell(5, 6, generator=torch.Generator().manual_seed(2)).double()
    with torch.no_grad():
        model.b.normal_(0, 0.3, generator=torch.Generator().manual_seed(3))
    indices = torch.randint(0, 5, (40,), generator=torch.Generator().manual_seed(4))
    influence = influence_by_lag(model, indices, [6, 25, 39], max_lag=6)
    for row, p in zip(influence, [6, 25, 39], strict=True):
        torch.testing.assert_close(row, torch_twin_influence(model, indices, p, 6), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_the_scrubber_panel_shows_a_trained_gated_cell(echo, cell):
    config = TrainConfig(num_hiddens=16, batch_size=16, num_steps=8, num_epochs=None, max_minibatches=20,
                         checkpoints=1, cell=cell)
    model = make_model("scratch", len(echo.vocab), config)
    train(model, *echo.split(), config)
    panel = make_memory_panel({cell: (model, echo.text[:300], echo.vocab)}, max_lag=8)
    view = panel.update()
    assert len(view.influence) == 8 and all(math.isfinite(v) for v in view.influence)
    assert 0 < view.probability < 1 and str(view.position) in view.summary
    assert panel.access.alts[panel.image].strip()
