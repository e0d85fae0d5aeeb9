"""Tests for the hidden-state explorer of notebook 01."""

import matplotlib.pyplot as plt
import pytest
import torch
from figure_layout import drawn_texts, outside_figure, overlapping_texts

from d2lmini.plot import png_size
from d2lmini.rnn import RNNScratch, TorchRNN, copy_scratch_to_torch
from d2lmini.text import Vocab
from d2lmini.widgets.hidden_state import (
    MAX_SENTENCE,
    MAX_SHOWN_HEIGHT,
    explorer_view,
    hidden_states_for,
    make_hidden_state_explorer,
    next_char_probabilities,
    view_figure,
)

pytestmark = pytest.mark.torch_dependent


@pytest.fixture
def vocab():
    return Vocab("the quick brown fox jumps over the lazy dog")


@pytest.fixture
def model(vocab, generator):
    return RNNScratch(len(vocab), 6, generator=generator)


def by_hand(model, vocab, text):
    """The step formula H_t = tanh(W_xh[x_t] + H_{t-1} W_hh + b_h), written out independently."""
    H = torch.zeros(model.num_hiddens)
    rows = []
    for index in vocab.indices(text):
        H = torch.tanh(model.W_xh[index] + H @ model.W_hh + model.b_h)
        rows.append(H)
    return torch.stack(rows).detach()


def test_hidden_states_shape_and_values(model, vocab):
    text = "the lazy dog"
    states = hidden_states_for(model, vocab, text)
    assert states.shape == (len(text), 6)
    torch.testing.assert_close(states, by_hand(model, vocab, text))


def test_last_row_is_the_final_state_of_one_forward_pass(model, vocab):
    text = "quick brown fox"
    _, final = model(torch.tensor([vocab.indices(text)]), model.begin_state(1))
    torch.testing.assert_close(hidden_states_for(model, vocab, text)[-1], final[0].detach())


def test_prefix_rows_do_not_depend_on_what_follows(model, vocab):
    a = hidden_states_for(model, vocab, "the dog")
    b = hidden_states_for(model, vocab, "the fox")
    torch.testing.assert_close(a[:4], b[:4])
    assert not torch.allclose(a[-1], b[-1])


def test_works_for_the_torch_twin(model, vocab):
    twin = TorchRNN(len(vocab), 6)
    copy_scratch_to_torch(model, twin)
    torch.testing.assert_close(hidden_states_for(twin, vocab, "over the"),
                               hidden_states_for(model, vocab, "over the"), rtol=1e-5, atol=1e-6)


def test_unknown_characters_are_rejected(model, vocab):
    with pytest.raises(ValueError, match="never seen"):
        hidden_states_for(model, vocab, "THE")


def test_next_char_probabilities_are_sorted_probabilities(model, vocab):
    top = next_char_probabilities(model, vocab, "the", k=4)
    assert len(top) == 4
    probs = [p for _, p in top]
    assert probs == sorted(probs, reverse=True) and all(0 < p < 1 for p in probs)
    logits, _ = model(torch.tensor([vocab.indices("the")]), model.begin_state(1))
    assert top[0][0] == vocab.idx_to_token[int(logits[-1].argmax())]


def test_explorer_view_rows_follow_the_step(model, vocab):
    view = explorer_view(model, vocab, "the fox", 3)
    assert view.prefix == "the" and view.states.shape == (3, 6)
    assert view.labels == ["1: 't'", "2: 'h'", "3: 'e'"]
    with pytest.raises(ValueError):
        explorer_view(model, vocab, "the fox", 0)
    with pytest.raises(ValueError):
        explorer_view(model, vocab, "the fox", 8)


def test_explorer_widget_reacts_to_slider_and_text(model, vocab):
    explorer = make_hidden_state_explorer(model, vocab, "the lazy dog")
    assert explorer.view.states.shape[0] == 1
    assert explorer.step.max == len("the lazy dog")
    first_image = explorer.image.value
    explorer.step.value = 5
    assert explorer.view.prefix == "the l"
    torch.testing.assert_close(explorer.view.states, by_hand(model, vocab, "the l"))
    assert explorer.image.value != first_image and explorer.image.value[:4] == b"\x89PNG"
    explorer.text.value = "fox"
    assert explorer.step.max == 3
    assert explorer.view.prefix == explorer.text.value[: explorer.step.value]
    explorer.text.value = "Fox!"
    assert explorer.view is None and "never seen" in explorer.status.value


def test_errors_name_the_sentence_and_hide_the_stale_heatmap(model, vocab):
    explorer = make_hidden_state_explorer(model, vocab, "the lazy dog")
    assert explorer.plot.layout.display is None  # the heatmap is shown
    explorer.text.value = "Fox!"
    assert "sentence" in explorer.status.value and "prefix" not in explorer.status.value
    assert "&#x27;F&#x27;" in explorer.status.value and "&#x27;!&#x27;" in explorer.status.value
    assert explorer.plot.layout.display == "none"  # no heatmap of an earlier sentence under the error
    explorer.text.value = ""
    assert explorer.view is None and "sentence is empty" in explorer.status.value
    assert "between 1 and 0" not in explorer.status.value
    explorer.text.value = "the dog"
    assert explorer.view.prefix == "the dog"[: explorer.step.value]
    assert explorer.plot.layout.display is None and "Cannot read" not in explorer.status.value


def test_a_sentence_longer_than_the_limit_is_refused_with_a_message(model, vocab):
    # Every click stays short (issue #19): 10,000 characters drew a heatmap 160,000 pixels tall.
    longest = ("the quick brown fox jumps over the lazy dog " * 5)[:MAX_SENTENCE]
    assert len(explorer_view(model, vocab, longest, MAX_SENTENCE).states) == MAX_SENTENCE
    with pytest.raises(ValueError, match=f"at most {MAX_SENTENCE}"):
        explorer_view(model, vocab, longest + "a", 1)
    explorer = make_hidden_state_explorer(model, vocab, "the lazy dog")
    explorer.text.value = longest + "a"
    assert explorer.view is None and explorer.plot.layout.display == "none"
    assert f"{MAX_SENTENCE + 1:,} characters" in explorer.status.value and "shorter" in explorer.status.value


def test_step_error_names_the_step(model, vocab):
    with pytest.raises(ValueError, match="step must be between 1 and 7"):
        explorer_view(model, vocab, "the fox", 8)
    with pytest.raises(ValueError, match="sentence is empty"):
        explorer_view(model, vocab, "", 1)


def test_a_long_sentence_scrolls_inside_a_capped_box_at_natural_size(model, vocab):
    sentence = "the quick brown fox jumps over the lazy dog " * 3
    explorer = make_hidden_state_explorer(model, vocab, sentence)
    explorer.step.value = len(sentence)
    width, height = png_size(explorer.image.value)
    assert height > 1500  # one row per character: far taller than the page ...
    assert explorer.plot.layout.max_height == MAX_SHOWN_HEIGHT and explorer.plot.layout.overflow == "auto"
    assert int(MAX_SHOWN_HEIGHT.removesuffix("px")) < 500  # ... so it scrolls inside a box that fits
    assert explorer.image.layout.width == f"{width}px"  # never stretched beyond its pixels


def test_every_label_is_inside_the_figure_at_both_ends_of_the_step_slider(model, vocab):
    # At step 1 the heatmap is one row high, and the axis label was cut to "step: character rea".
    explorer = make_hidden_state_explorer(model, vocab, "the time machine")
    for step in (explorer.step.min, explorer.step.max):
        figure = view_figure(explorer_view(model, vocab, explorer.text.value, step))
        try:
            figure.tight_layout()
            shown = [text.get_text() for text, _ in drawn_texts(figure)]
            assert figure.axes[0].get_ylabel() in shown and "hidden unit" in shown
            assert outside_figure(figure) == [] and overlapping_texts(figure) == [], step
        finally:
            plt.close(figure)
