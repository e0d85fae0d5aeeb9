"""Tests for the text-generation panel of notebook 04."""

import math

import pytest
import torch

from d2lmini.rnn import RNNScratch, rnn_forward
from d2lmini.widgets.generate import GeneratePanel, generate_text, generation_html, make_generate_panel

pytestmark = pytest.mark.torch_dependent


@pytest.fixture(scope="module")
def small_model(bundled):
    return RNNScratch(len(bundled.vocab), 16, generator=torch.Generator().manual_seed(3))


def greedy_by_hand(model, vocab, prefix, num_chars):
    """An independent greedy decoder: one rnn_forward call per character, argmax over known tokens."""
    params = [model.W_xh, model.W_hh, model.b_h, model.W_hq, model.b_q]
    state = torch.zeros(1, model.num_hiddens)
    with torch.no_grad():
        for index in vocab.indices(prefix):
            logits, state = rnn_forward(torch.tensor([[index]]), state, *params)
        text = prefix
        for _ in range(num_chars):
            token = 1 + int(logits[-1, 1:].argmax())  # index 0 is <unk>, never generated
            text += vocab.idx_to_token[token]
            logits, state = rnn_forward(torch.tensor([[token]]), state, *params)
    return text


def test_greedy_matches_an_independent_decoder(small_model, bundled):
    text = generate_text(small_model, bundled.vocab, "the ", 40, None)
    assert text == greedy_by_hand(small_model, bundled.vocab, "the ", 40)


def test_sampled_text_has_the_right_length_and_only_known_characters(small_model, bundled):
    text = generate_text(small_model, bundled.vocab, "an rnn", 60, 1.0, seed=1)
    assert text.startswith("an rnn") and len(text) == len("an rnn") + 60
    assert all(c in bundled.vocab.token_to_idx and c != "<unk>" for c in text)
    assert generate_text(small_model, bundled.vocab, "an rnn", 0, 1.0) == "an rnn"


def test_seed_makes_sampling_repeatable(small_model, bundled):
    first = generate_text(small_model, bundled.vocab, "the ", 80, 1.0, seed=5)
    assert first == generate_text(small_model, bundled.vocab, "the ", 80, 1.0, seed=5)
    assert first != generate_text(small_model, bundled.vocab, "the ", 80, 1.0, seed=6)


def test_a_tiny_temperature_is_greedy(small_model, bundled):
    greedy = generate_text(small_model, bundled.vocab, "we ", 30, None)
    assert generate_text(small_model, bundled.vocab, "we ", 30, 1e-4, seed=2) == greedy


@pytest.mark.parametrize("prefix, num_chars, temperature, words", [
    ("", 10, 1.0, "empty"),
    ("Hello", 10, 1.0, "never seen"),
    ("the 1", 10, None, "never seen"),
    ("the ", 10, 0.0, "positive"),
    ("the ", 10, -1.0, "positive"),
    ("the ", 10, math.nan, "positive"),
    ("the ", 10, math.inf, "positive"),
    ("the ", -1, 1.0, "whole number"),
    ("the ", 1001, 1.0, "whole number"),
])
def test_bad_input_raises_a_clear_message(small_model, bundled, prefix, num_chars, temperature, words):
    with pytest.raises(ValueError, match=words):
        generate_text(small_model, bundled.vocab, prefix, num_chars, temperature)
    text, shown = generation_html(small_model, bundled.vocab, prefix, num_chars, temperature)
    assert text is None
    assert words in shown and "Traceback" not in shown


def test_a_length_of_the_wrong_type_is_a_type_error_naming_the_setting(small_model, bundled):
    with pytest.raises(TypeError, match=r"characters to generate \(num_chars\) must be a whole number"):
        generate_text(small_model, bundled.vocab, "the ", 2.5, 1.0)


def test_html_escapes_and_marks_the_prefix(small_model, bundled):
    text, shown = generation_html(small_model, bundled.vocab, "the ", 20, 0.7, seed=0)
    assert text == generate_text(small_model, bundled.vocab, "the ", 20, 0.7, seed=0)
    assert "<b>the </b>" in shown and text[4:] in shown and "temperature 0.7" in shown


def test_panel_follows_its_widgets(small_model, bundled):
    panel = make_generate_panel(small_model, bundled.vocab, prefix="the ", num_chars=30, seed=0)
    assert isinstance(panel, GeneratePanel)
    assert panel.text == generate_text(small_model, bundled.vocab, "the ", 30, 1.0, seed=0)
    assert panel.update() == panel.text  # update() returns what it shows
    panel.greedy.value = True
    assert panel.temperature.disabled
    assert panel.text == greedy_by_hand(small_model, bundled.vocab, "the ", 30)
    panel.greedy.value = False
    panel.temperature.value = 0.0
    assert panel.text is None and "temperature (temperature) must be a positive number" in panel.view.value
    panel.temperature.value = 1.5
    panel.seed.value = 4
    panel.num_chars.value = 50
    assert panel.text == generate_text(small_model, bundled.vocab, "the ", 50, 1.5, seed=4)
    panel.prefix.value = ""
    assert panel.text is None and "prefix is empty" in panel.view.value
    panel.prefix.value = "Big"
    assert panel.text is None and "&#x27;B&#x27;" in panel.view.value


def test_panel_layout_shows_every_label_and_a_usable_slider(small_model, bundled):
    panel = make_generate_panel(small_model, bundled.vocab)
    for control in (panel.prefix, panel.num_chars, panel.temperature, panel.seed):
        assert control.style.description_width == "initial"
    assert int(panel.num_chars.layout.width.removesuffix("px")) >= 400  # room for a long label and the track
    assert not panel.greedy.indent and panel.greedy.layout.width == "auto"
    assert "white-space:pre-wrap;word-break:normal;overflow-wrap:normal" in panel.view.value


def test_typing_never_disables_a_control_and_the_prefix_is_sent_on_enter(small_model, bundled):
    # Disabling the box a student types into takes the focus away mid-word (issue #19): the
    # prefix box waits for Enter, and no regeneration disables any control.
    panel = make_generate_panel(small_model, bundled.vocab, num_chars=20)
    assert panel.prefix.continuous_update is False
    seen = []
    panel.view.observe(lambda change: seen.append([c.disabled for c in panel.controls]), names="value")
    panel.prefix.value = "the time traveller saw it"
    panel.seed.value = 3
    assert seen == [[False] * len(panel.controls)] * 2  # each new text arrived with every control on
    assert panel.text.startswith("the time traveller saw it")
    panel.greedy.value = True
    assert [c.disabled for c in panel.controls] == [False, False, False, True, False]  # temperature off
