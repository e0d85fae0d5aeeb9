"""The widgets wing speaks Chinese: panels, the perplexity lab, the settings' labels, help and messages.

With `D2LMINI_LANG=zh_CN` every panel's summary, control names, texts, figures and alt texts, the
lab's messages and the settings' validation errors come out in Chinese (CJK characters, and no
English sentence of the wing's catalog left); the same calls without the variable give the English.
"""

import re
from dataclasses import replace
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest
import torch
from catalog_checks import CJK, CatalogChecks

from d2lmini.corpus import corpus_from_text
from d2lmini.lab import LabSettings, run_lab
from d2lmini.lab.sweep import parse_values, validate_sweep
from d2lmini.rnn import RNNScratch
from d2lmini.settings import (
    LAB_SETTINGS,
    PREDICT_SETTINGS,
    TRAIN_SETTINGS,
    validate_device_name,
    validate_value,
)
from d2lmini.text import Vocab
from d2lmini.widgets import make_control, menu_options, parse_menu_choice
from d2lmini.widgets.a11y import Access, controls_in, name_setting
from d2lmini.widgets.clipping import (
    draw_result,
    losses_alt,
    make_clipping_panel,
    result_alt,
    run_clipping_experiment,
    runs_alt,
)
from d2lmini.widgets.concat_matmul import make_concat_matmul_panel
from d2lmini.widgets.gates import make_side_by_side_panel
from d2lmini.widgets.generate import generation_html, make_generate_panel
from d2lmini.widgets.gradients import describe_change, draw_reach, make_gradient_reach_panel, reach_view
from d2lmini.widgets.hidden_state import make_hidden_state_explorer, validate_sentence, view_figure
from d2lmini.widgets.lab import make_lab
from d2lmini.widgets.lab_views import curves_figure, sweep_figure
from d2lmini.widgets.memory import draw_memory, make_memory_panel, memory_view
from d2lmini.widgets.one_hot import (
    batch_html,
    encode_text,
    encoding_html,
    layout_html,
    make_one_hot_panel,
    minibatch_positions,
    summary_text,
    transpose_batch,
)
from d2lmini.widgets.perplexity import bigram_log_probs, make_confidence_panel
from d2lmini.widgets.preview import preview_html
from d2lmini.widgets.start import bars_alt, bars_figure, make_temperature_panel

# the CJK font is someone else's: a figure drawn without it only warns
pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from:UserWarning")

CATALOG = Path(__file__).resolve().parent.parent / "d2lmini/locale/zh_CN/LC_MESSAGES/widgets.po"
SMALL = LabSettings(num_hiddens=16, batch_size=8, num_steps=8, max_minibatches=40, checkpoints=4)


CHECKS = CatalogChecks(CATALOG)
assert_chinese, assert_english = CHECKS.assert_chinese, CHECKS.assert_english


@pytest.fixture
def chinese(monkeypatch):
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")


@pytest.fixture
def english(monkeypatch):
    monkeypatch.delenv("D2LMINI_LANG", raising=False)


@pytest.fixture(autouse=True)
def closes_figures():
    yield
    plt.close("all")


def figure_texts(figure) -> str:
    """Every text a figure shows: titles, axis labels, legend entries, annotations."""
    texts = [figure.texts]
    for ax in figure.axes:
        texts += [[ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label], ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            texts.append(legend.get_texts())
    return "\n".join(t.get_text() for group in texts for t in group if t.get_text())


# --- the settings: labels, help, validation -------------------------------------------------------------


def test_a_settings_messages_are_chinese(chinese):
    with pytest.raises(ValueError) as out_of_range:
        validate_value(TRAIN_SETTINGS["num_hiddens"], -1)
    with pytest.raises(TypeError) as wrong_type:
        validate_value(TRAIN_SETTINGS["theta"], "big")
    with pytest.raises(ValueError) as empty:
        validate_value(PREDICT_SETTINGS["prefix"], "")
    with pytest.raises(ValueError) as device:
        validate_device_name("tpu")
    for error in (out_of_range, wrong_type, empty, device):
        assert_chinese(str(error.value))
    assert "隐藏单元数（num_hiddens）" in str(out_of_range.value)
    assert "None（不裁剪）" in str(wrong_type.value)  # the optional setting's None, said in Chinese


def test_the_same_settings_messages_are_english_without_the_variable(english):
    with pytest.raises(ValueError) as out_of_range:
        validate_value(TRAIN_SETTINGS["num_hiddens"], -1)
    with pytest.raises(ValueError) as empty:
        validate_value(PREDICT_SETTINGS["prefix"], "")
    assert str(out_of_range.value) == ("The hidden size (num_hiddens) must be a whole number from 1 up to "
                                       "100,000, not -1.")
    assert str(empty.value) == "The prefix is empty: type at least 1 character (prefix)."


def test_controls_are_labelled_named_and_offer_their_choices_in_chinese(chinese):
    access = Access()
    for name in ("corpus", "cell", "optimizer", "num_hiddens", "lr", "theta", "temperature"):
        setting = LAB_SETTINGS[name]
        control = make_control(setting, getattr(LabSettings(), name))
        assert CJK.search(control.description), control.description
        name_setting(access, control, setting)  # the name holds the (Chinese) label: WCAG 2.5.3
        assert_chinese(access.names[control])
        if setting.choices and name != "cell":  # the cells are RNN (tanh), GRU and LSTM in any language
            assert_chinese(" / ".join(label for label, _value in control.options))
            assert [value for _label, value in control.options] == list(setting.choices)
    options, shown = menu_options(TRAIN_SETTINGS["theta"], None)
    assert shown == options[0] == "关闭"
    assert parse_menu_choice(TRAIN_SETTINGS["theta"], "关闭") is None
    assert parse_menu_choice(TRAIN_SETTINGS["theta"], "off") is None  # typed in English, still read


def test_the_controls_are_english_without_the_variable(english):
    control = make_control(LAB_SETTINGS["corpus"], "bundled")
    assert control.description == "corpus"
    assert control.options[0] == ("bundled corpus", "bundled")
    assert menu_options(TRAIN_SETTINGS["theta"], None)[1] == "off"


# --- every panel, as its static preview shows it ---------------------------------------------------------


@pytest.fixture(scope="module")
def vocab():
    return Vocab("the quick brown fox jumps over the lazy dog")


@pytest.fixture(scope="module")
def model(vocab):
    return RNNScratch(len(vocab), 6, generator=torch.Generator().manual_seed(0))


TEXT = "the quick brown fox jumps over the lazy dog the quick brown fox"


def confidence_panel(vocab):
    ids = torch.tensor(vocab.indices(TEXT * 2))
    return make_confidence_panel(bigram_log_probs(ids, len(vocab))[ids[:-1]], ids[1:])


PANELS = {
    "start": lambda model, vocab: make_temperature_panel(),
    "concat_matmul": lambda model, vocab: make_concat_matmul_panel(),
    "gradients": lambda model, vocab: make_gradient_reach_panel(),
    "one_hot": lambda model, vocab: make_one_hot_panel(vocab),
    "generate": lambda model, vocab: make_generate_panel(model, vocab),
    "hidden_state": lambda model, vocab: make_hidden_state_explorer(model, vocab),
    "perplexity": lambda model, vocab: confidence_panel(vocab),
    "memory": lambda model, vocab: make_memory_panel({"RNN": (model, TEXT, vocab)}),
    "gates": lambda model, vocab: make_side_by_side_panel({"RNN": model, "GRU": model}, TEXT, vocab),
    "lab": lambda model, vocab: make_lab(SMALL),
}


@pytest.mark.parametrize("name", PANELS)
def test_each_panel_shows_its_summary_controls_texts_and_alt_texts_in_chinese(chinese, name, model, vocab):
    panel = PANELS[name](model, vocab)
    preview = preview_html(panel.widget)
    assert_chinese(preview)
    summary = re.search(r"<p style='margin:2px 0'>(.*?)</p>", preview).group(1)
    assert_chinese(summary)
    for control in controls_in(panel.widget):
        description = re.sub(r"<[^>]+>", "", getattr(control, "description", "") or "")
        if re.search(r"[A-Za-z]{3,}", description):  # a word, not ρ(W_hh)
            assert_chinese(description)
        if control in panel.access.names:
            assert_chinese(panel.access.names[control])
    for alt in panel.access.alts.values():
        assert_chinese(alt)


@pytest.mark.parametrize("name", PANELS)
def test_each_panel_is_english_without_the_variable(english, name, model, vocab):
    panel = PANELS[name](model, vocab)
    preview = preview_html(panel.widget)
    assert_english(preview)
    assert "A static preview of an interactive panel" in preview


# --- figures: titles, labels, legends ----------------------------------------------------------------------


def figures(model, vocab):
    """One figure of every panel that draws with matplotlib (those of the lab and clipping below)."""
    probs = {"e": 0.5, "a": 0.3, "z": 0.2}
    yield bars_figure(probs, 0.7)
    yield confidence_panel(vocab).draw()
    figure, ax = plt.subplots()
    draw_reach(ax, reach_view(1.3, 10, max_k=20))
    yield figure
    panel = make_hidden_state_explorer(model, vocab)
    yield view_figure(panel.view)
    figure, ax = plt.subplots()
    draw_memory(ax, memory_view(model, TEXT, vocab, 25))
    yield figure


def test_figures_are_titled_and_labelled_in_chinese(chinese, model, vocab):
    for figure in figures(model, vocab):
        assert_chinese(figure_texts(figure))
    assert_chinese(bars_alt({"e": 0.5, "a": 0.5}, 1.0))


def test_figures_are_english_without_the_variable(english, model, vocab):
    texts = [figure_texts(figure) for figure in figures(model, vocab)]
    for text in texts:
        assert_english(text)
    assert "temperature 0.70" in texts[0] and "probability" in texts[0]


# --- the perplexity lab ------------------------------------------------------------------------------------


def test_the_labs_run_verdict_numbers_table_sample_and_sweep_are_chinese(chinese):
    panel = make_lab(SMALL)
    result = panel.update()
    assert result.error is None
    for shown in (panel.message.value, panel.numbers.value, panel.sample.value, panel.valid_ppl.value,
                  panel.progress_text.value, panel.runs_table.value, panel.access.alts[panel.plot]):
        assert_chinese(shown)
    panel.sweep_setting.value = "theta"
    assert panel.sweep_values.value == "0.1, 1, 关闭"  # the suggestion, "off" in Chinese
    panel.sweep_setting.value = "num_hiddens"
    panel.sweep_values.value = "8, 16"
    assert_chinese(panel.sweep_estimate.value)
    sweep = panel.sweep()
    assert len(sweep.results) == 2
    assert_chinese(panel.message.value)
    assert_chinese(panel.access.alts[panel.sweep_plot])
    assert_chinese(figure_texts(sweep_figure(sweep, {"uniform": 27.0})))
    assert_chinese(figure_texts(curves_figure([("#1", result.history)], result.baselines, 3.0)))
    panel.prefix.value = "QQQ"  # a character the corpus lacks: refused, the last run kept
    panel.update()
    assert "下面的图和数字仍是上一次运行的结果" in panel.message.value
    panel.clear()
    assert_chinese(panel.message.value)
    assert_chinese(panel.runs_table.value)


def test_the_labs_refusals_and_sweep_errors_are_chinese(chinese):
    refused = [run_lab(replace(SMALL, num_hiddens=-1)).error,
               run_lab(replace(SMALL, max_minibatches=None, num_epochs=None, max_seconds=None)).error,
               run_lab(replace(SMALL, num_hiddens=4000, max_minibatches=3000)).error]
    for bad in ("rnn, xyz", "rnn", "rnn, rnn"):
        with pytest.raises(ValueError) as caught:
            parse_values("cell", bad)
        refused.append(str(caught.value))
    with pytest.raises(TypeError) as caught:
        validate_sweep("num_hiddens", "32, 64")
    refused.append(str(caught.value))
    for message in refused:
        assert_chinese(message)
    # "关闭" (off) and the full-width comma are read as a Chinese student types them
    assert parse_values("theta", "0.1，1，关闭") == [0.1, 1.0, None]


def test_the_lab_is_english_without_the_variable(english):
    panel = make_lab(SMALL)
    panel.update()
    assert panel.message.value.startswith("<p style='color:#225522;margin:2px 0'>Trained 40 minibatches")
    assert_english(panel.message.value + panel.numbers.value + panel.runs_table.value)
    assert run_lab(replace(SMALL, max_minibatches=None, num_epochs=None, max_seconds=None)).error == (
        "Give the lab a budget: a number of minibatches, of epochs or a time limit.")


# --- gradient clipping (notebook 06) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(bundled):
    return corpus_from_text("small", bundled.text[:30_000])


def test_the_clipping_panel_and_its_runs_speak_chinese(chinese, small):
    clipped = run_clipping_experiment("1", lr=1.0, num_epochs=1, corpus=small)
    exploded = run_clipping_experiment("off", lr=1000.0, num_epochs=1, corpus=small)
    for text in (clipped.message, result_alt(clipped), losses_alt([clipped, exploded]),
                 runs_alt([clipped, exploded]), figure_texts(draw_result(clipped))):
        assert_chinese(text)
    panel = make_clipping_panel(corpus=small, num_epochs=1)
    assert panel.theta.options[0] == "关闭"
    panel.theta.value = "关闭"  # the slider's own "off" is read as no clipping
    assert panel.result.theta is None
    assert_chinese(panel.status.value)
    assert_chinese(preview_html(panel.widget))


def test_the_clipping_runs_are_english_without_the_variable(english, small):
    clipped = run_clipping_experiment("1", lr=1.0, num_epochs=1, corpus=small)
    assert clipped.message.startswith("θ = 1, learning rate 1: ")
    assert_english(clipped.message + result_alt(clipped) + figure_texts(draw_result(clipped)))


# --- the plain functions of the panels ---------------------------------------------------------------------


def plain_texts(model, vocab):
    """What the panels' plain functions return or raise for good and bad input, as text."""
    texts = []
    for call in (lambda: transpose_batch("abc", vocab, 2, 5), lambda: validate_sentence("", vocab),
                 lambda: validate_sentence("x" * 500, vocab), lambda: validate_sentence("ÉÉ", vocab),
                 lambda: reach_view(-1.0, 3), lambda: reach_view(0.9, 99, max_k=10),
                 lambda: memory_view(model, TEXT, vocab, 2)):
        with pytest.raises(ValueError) as caught:
            call()
        texts.append(str(caught.value))
    encoding = encode_text("the dog!", vocab)
    positions = minibatch_positions(40, "random", 2, 5)
    texts += [encoding_html(encoding, vocab), batch_html(transpose_batch(TEXT, vocab, 2, 5)),
              layout_html(TEXT[:40], positions),
              summary_text(TEXT, True, "random", 2, 5, 0, positions),
              generation_html(model, vocab, "the", 10, temperature=-1.0)[1],
              generation_html(model, vocab, "the", 10, temperature=None)[1],
              reach_view(1.5, 10).summary, describe_change([1.0, 0.5 ** 40]), describe_change([1.0, 1.2])]
    return texts


def test_the_panels_plain_functions_speak_chinese(chinese, model, vocab):
    for text in plain_texts(model, vocab):
        assert_chinese(text)


def test_the_panels_plain_functions_are_english_without_the_variable(english, model, vocab):
    texts = plain_texts(model, vocab)
    for text in texts:
        assert_english(text)
    assert texts[0] == ("A minibatch of 2 x 5 = 10 characters needs a text of at least 10 characters; this "
                        "one has 3.")


def test_a_panel_built_in_chinese_keeps_its_language_when_it_redraws(chinese, vocab):
    panel = make_one_hot_panel(vocab)
    panel.text.value = ""
    assert panel.problems and all(CJK.search(problem) for problem in panel.problems)
    assert isinstance(panel.widget, widgets.Widget)
