"""Tests for notebook 09's side-by-side memory scrubber (d2lmini.widgets.gates), without a browser."""

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from d2lmini.corpus import corpus_from_text  # noqa: E402
from d2lmini.gates import GRUScratch, LSTMScratch  # noqa: E402
from d2lmini.rnn import RNNScratch  # noqa: E402
from d2lmini.widgets.gates import (  # noqa: E402
    SideBySidePanel,
    make_side_by_side_panel,
    side_by_side_alt,
    side_by_side_summary,
    side_by_side_views,
)
from d2lmini.widgets.memory import influence_by_lag, memory_view  # noqa: E402

pytestmark = pytest.mark.torch_dependent

TEXT = "the time machine travels through time and the traveller returns " * 2


@pytest.fixture(scope="module")
def corpus():
    return corpus_from_text("tiny", TEXT)


@pytest.fixture(scope="module")
def models(corpus):
    size = len(corpus.vocab)
    cells = [("RNN", RNNScratch), ("GRU", GRUScratch), ("LSTM", LSTMScratch)]
    return {name: cell(size, 8, generator=torch.Generator().manual_seed(seed))
            for seed, (name, cell) in enumerate(cells)}


def test_each_view_is_that_models_memory_view(corpus, models):
    views = side_by_side_views(models, TEXT, corpus.vocab, position=40, max_lag=12)
    assert list(views) == ["RNN", "GRU", "LSTM"]
    for name, view in views.items():
        alone = memory_view(models[name], TEXT, corpus.vocab, 40, 12)
        assert view.influence == alone.influence and view.probability == alone.probability
        influence = influence_by_lag(models[name], torch.tensor(corpus.vocab.indices(TEXT)), [40], 12)[0]
        torch.testing.assert_close(torch.tensor(view.influence), influence)
    assert len({tuple(v.influence) for v in views.values()}) == 3  # three different models, three profiles


def test_summary_and_alt_name_every_model(corpus, models):
    views = side_by_side_views(models, TEXT, corpus.vocab, position=30, max_lag=10)
    summary, alt = side_by_side_summary(views), side_by_side_alt(views)
    for name, view in views.items():
        ratio = f"{view.influence[-1] / view.influence[0]:.1e}"
        assert f"{name}: P = {view.probability:.2f}" in summary and ratio in summary
        assert f"{name}: strongest {view.peak_lag} back" in alt
    assert "position 30" in alt and repr(TEXT[30]) in alt


def test_the_panel_follows_its_slider(corpus, models):
    panel = make_side_by_side_panel(models, TEXT, corpus.vocab, position=20, max_lag=10)
    assert isinstance(panel, SideBySidePanel) and panel.image.value[:4] == b"\x89PNG"
    first = panel.views
    panel.position.value = 60
    assert all(v.position == 60 for v in panel.views.values()) and panel.views != first
    assert panel.status.value == side_by_side_summary(panel.views)
    assert not panel.position.disabled  # enabled again after the redraw


def test_bad_arguments_are_refused(corpus, models):
    with pytest.raises(ValueError, match="at least one"):
        side_by_side_views({}, TEXT, corpus.vocab, 20)
    with pytest.raises(ValueError, match="max_lag = 200"):
        SideBySidePanel(models, TEXT, corpus.vocab, max_lag=200)


def _filled(cell, size: int, hiddens: int, values: list[float], seed: int = 0):
    """A model of `cell` whose k-th parameter is values[k % len(values)] times seeded normal noise (0: all
    zero; NaN or infinity: a diverged model; 1e300: one whose products overflow)."""
    model = cell(size, hiddens, generator=torch.Generator().manual_seed(seed))
    noise = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for k, parameter in enumerate(model.parameters()):
            parameter.copy_(torch.randn(parameter.shape, generator=noise) * values[k % len(values)])
    return model


def test_a_diverged_and_an_all_zero_model_are_said_so_beside_a_trained_one(corpus, models):
    """#43 item 9: a NaN model crashed the panel ("Axis limits cannot be NaN or Inf") and an all-zero one
    raised ZeroDivisionError in side_by_side_summary; now each says what it is, the others are drawn."""
    size = len(corpus.vocab)
    shown = {"RNN": models["RNN"], "diverged": _filled(GRUScratch, size, 8, [math.nan]),
             "zero": _filled(LSTMScratch, size, 8, [0.0]),
             "infinite": _filled(RNNScratch, size, 8, [math.inf])}
    panel = make_side_by_side_panel(shown, TEXT, corpus.vocab, position=30, max_lag=10)
    lines = panel.status.value.split("<br> ")
    assert lines[0] == side_by_side_summary({"RNN": panel.views["RNN"]})
    assert "diverged: its weights hold NaN or infinity" in lines[1]
    assert lines[2].startswith("zero: P = ") and "every influence is 0" in lines[2]
    assert "infinite: its weights hold NaN or infinity" in lines[3]
    alt = side_by_side_alt(panel.views)
    assert "diverged: no bars" in alt and "zero: every bar 0" in alt and "RNN: strongest" in alt
    assert panel.image.value[:4] == b"\x89PNG"


FILL = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e-300, 1e300])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([RNNScratch, GRUScratch, LSTMScratch]), st.integers(1, 4),
                          st.lists(FILL, min_size=1, max_size=6)), min_size=1, max_size=3),
       st.integers(1, 12), st.integers(0, 200))
def test_any_models_weights_give_a_panel_that_says_what_it_shows(corpus, drawn, max_lag, offset):
    """Models with any weights (NaN, infinity, zero, overflowing, ordinary), at any position the text
    allows: the panel draws, and each model's line says diverged, no influence, or the ratio, as its
    view is; never an exception from matplotlib or a division (#43 item 9)."""
    models = {f"M{k}": _filled(cell, len(corpus.vocab), hiddens, values, seed=k)
              for k, (cell, hiddens, values) in enumerate(drawn)}
    position = max_lag + offset % (len(TEXT) - max_lag)
    panel = make_side_by_side_panel(models, TEXT, corpus.vocab, position=position, max_lag=max_lag)
    lines = panel.status.value.split("<br> ")
    assert len(lines) == len(models) and panel.image.value[:4] == b"\x89PNG"
    for line, (name, view) in zip(lines, panel.views.items(), strict=True):
        finite = all(map(math.isfinite, [view.probability, *view.influence]))
        assert line.startswith(f"{name}: ")
        assert ("NaN or infinity" in line) == (not finite)
        assert ("every influence is 0" in line) == (finite and not any(view.influence))
