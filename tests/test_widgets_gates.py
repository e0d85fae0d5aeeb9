"""Tests for notebook 09's side-by-side memory scrubber (d2lmini.widgets.gates), without a browser."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

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
