"""Accessibility of what the course draws, without a browser (issue 29).

Every panel names every control (`d2lmini.widgets.a11y.Access`), gives every image a text
alternative and marks one live region, and opens with a short summary of what it does and how to
use it, before any control (issue 35); names contain the visible label; figures shown inline are
`<img alt>`; and no stored notebook holds an image output without a text alternative. The
browser side (axe-core, keyboard) is tests/test_browser_notebooks.py and tests/test_browser_keyboard.py.
"""

import base64
import html
import html.parser
import json
import re
from pathlib import Path

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from course import COURSE  # noqa: E402

from d2lmini.corpus import corpus_from_text  # noqa: E402
from d2lmini.gates import GRUScratch  # noqa: E402
from d2lmini.lab import LabSettings  # noqa: E402
from d2lmini.plot import figure_html, figure_png, perplexity_alt  # noqa: E402
from d2lmini.rnn import RNNScratch  # noqa: E402
from d2lmini.train import History  # noqa: E402
from d2lmini.widgets.a11y import (  # noqa: E402
    CONTROL_TYPES,
    DISPLAY_ONLY,
    SUMMARY_MOST_WORDS,
    Access,
    _AccessWidget,
    controls_in,
    panel_summary,
    unnamed_controls,
)
from d2lmini.widgets.clipping import make_clipping_panel  # noqa: E402
from d2lmini.widgets.concat_matmul import make_concat_matmul_panel  # noqa: E402
from d2lmini.widgets.gates import make_side_by_side_panel  # noqa: E402
from d2lmini.widgets.generate import make_generate_panel  # noqa: E402
from d2lmini.widgets.gradients import make_gradient_reach_panel  # noqa: E402
from d2lmini.widgets.hidden_state import make_hidden_state_explorer  # noqa: E402
from d2lmini.widgets.lab import make_lab  # noqa: E402
from d2lmini.widgets.memory import make_memory_panel  # noqa: E402
from d2lmini.widgets.one_hot import make_one_hot_panel  # noqa: E402
from d2lmini.widgets.perplexity import make_confidence_panel  # noqa: E402
from d2lmini.widgets.start import make_temperature_panel  # noqa: E402

pytestmark = pytest.mark.torch_dependent

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = [notebook.path for notebook in COURSE]


def _panels(bundled):
    small = corpus_from_text("small", bundled.text[:30_000])
    model = RNNScratch(len(bundled.vocab), 8, generator=torch.Generator().manual_seed(0))
    yield "00 temperature", make_temperature_panel()
    yield "01 hidden state", make_hidden_state_explorer(model, bundled.vocab, "the time")
    yield "02 concat", make_concat_matmul_panel()
    yield "03 one-hot", make_one_hot_panel(bundled.vocab)
    yield "04 generate", make_generate_panel(model, bundled.vocab, num_chars=20)
    yield "05 reach", make_gradient_reach_panel(max_k=10)
    yield "05 memory", make_memory_panel({"untrained": (model, bundled.text[:200], bundled.vocab)})
    yield "06 clipping", make_clipping_panel(small, num_epochs=1)
    scores = torch.randn(50, 6, generator=torch.Generator().manual_seed(0))
    yield "07 confidence", make_confidence_panel(torch.log_softmax(scores, 1), torch.arange(50) % 6)
    yield "08 lab", make_lab(LabSettings(num_hiddens=16, batch_size=8, num_steps=8, max_minibatches=40,
                                         checkpoints=4))
    gru = GRUScratch(len(bundled.vocab), 8, generator=torch.Generator().manual_seed(1))
    yield "09 side by side", make_side_by_side_panel({"RNN": model, "GRU": gru}, bundled.text[:200],
                                                     bundled.vocab)


def _images(widget):
    found = [widget] if isinstance(widget, widgets.Image) else []
    for child in getattr(widget, "children", ()) or ():
        found.extend(_images(child))
    return found


def test_every_control_of_every_panel_is_named_and_every_image_described(bundled):
    for title, panel in _panels(bundled):
        access = panel.access
        assert access.widget in panel.widget.children, f"{title}: Access is not in the panel"
        assert unnamed_controls(panel.widget, access) == [], title
        assert len(controls_in(panel.widget)) >= 1, title
        for image in _images(panel.widget):
            if image.value:
                assert access.alts.get(image, "").strip(), f"{title}: an image without alt"
        assert access.live, f"{title}: no live region announces the result"
        # One region, so that a change is announced once (the lab's too: its perplexity and progress
        # line are shown, and its message announces; tests/test_browser_access.py counts per run).
        regions = len(access.live)
        assert regions == 1, f"{title}: {regions} live regions"
        marks = access.widget.marks
        assert all(m["text"].strip() for m in marks.values() if m["kind"] in ("control", "image")), title


# Words that say nothing of what one panel does: a summary made only of these is generic.
GENERIC = {"a", "an", "the", "this", "panel", "interactive", "widget", "widgets", "use", "controls",
           "below", "above", "to", "explore", "change", "settings", "see", "what", "happens", "and", "try"}


# Where a browser's textContent, which a live region's announcement is built from, meets the next
# element's text without a space unless the HTML has one: a paragraph, a block or a line break.
BLOCK_TAGS = {"p", "div", "br", "li", "ul", "ol", "table", "tr", "td", "th", "pre", "h1", "h2", "h3", "h4"}


class _TextRuns(html.parser.HTMLParser):
    """The text of an HTML fragment as textContent joins it, and where a block boundary fell in it."""

    def __init__(self):
        super().__init__()
        self.text, self.boundaries = "", []

    def _boundary(self, tag):
        if tag in BLOCK_TAGS:
            self.boundaries.append(len(self.text))

    handle_starttag = handle_startendtag = lambda self, tag, attrs: self._boundary(tag)  # noqa: E731
    handle_endtag = _boundary

    def handle_data(self, data):
        self.text += data


def run_together(fragment: str) -> list[str]:
    """Return each place in `fragment` where two blocks' words meet with no space between them."""
    runs = _TextRuns()
    runs.feed(fragment)
    text = runs.text
    return sorted({text[max(0, at - 12):at + 12] for at in runs.boundaries
                   if 0 < at < len(text) and not text[at - 1].isspace() and not text[at].isspace()})


def test_run_together_finds_sentences_without_a_space():
    assert ["0.7the" in seam for seam in run_together("<p>temperature 0.7</p><div>the time</div>")] == [True]
    assert ["backGRU" in seam for seam in run_together("RNN: 1 back<br>GRU: 2 back")] == [True]
    assert run_together("<p>temperature 0.7</p> <div>the time</div>") == []
    assert run_together("a <b>bold</b> word") == []


def test_every_live_region_keeps_a_space_between_its_sentences(bundled):
    """Issue 47: 09's status said "...1 backGRU...", 04's "temperature 0.7the...": a screen reader reads
    the live region's text as one run, and the words at the seam became one."""
    for title, panel in _panels(bundled):
        for region in panel.access.live:
            assert run_together(region.value) == [], title


def _shown_words(widget, access) -> list[str]:
    """The words a display widget shows as a screen reader reads them: text, and each image's alt."""
    if isinstance(widget, widgets.Image):
        return access.alts.get(widget, "").split()
    if isinstance(widget, widgets.Label):
        return widget.value.split()
    value = getattr(widget, "value", "") or ""
    alts = " ".join(re.findall(r'alt="([^"]*)"', value))
    return (html.unescape(re.sub(r"<[^>]+>", " ", value)) + " " + html.unescape(alts)).split()


def _reading_order(widget, access):
    """Yield ("control", widget) or ("text", words) for everything under `widget`, in reading order.

    Hidden widgets and the invisible `Access` are skipped; an accordion's header is a control, and
    its closed sections are not read.
    """
    layout = getattr(widget, "layout", None)
    if isinstance(widget, _AccessWidget) or (layout is not None and layout.display == "none"):
        return
    if isinstance(widget, CONTROL_TYPES) and not isinstance(widget, DISPLAY_ONLY):
        yield "control", widget
    elif isinstance(widget, DISPLAY_ONLY):
        yield "text", _shown_words(widget, access)
    children = getattr(widget, "children", ()) or ()
    for index, child in enumerate(children):
        if isinstance(widget, widgets.Accordion):
            yield "control", widget
            if widget.selected_index != index:
                continue
        yield from _reading_order(child, access)


def text_before_first_control(panel) -> str:
    """The text a screen reader reading `panel` in order meets before its first control."""
    words = []
    for kind, item in _reading_order(panel.widget, panel.access):
        if kind == "control":
            break
        words += item
    return " ".join(words)


def _visible_labels(panel) -> set[str]:
    return {html.unescape(re.sub(r"<[^>]+>", "", c.description)).strip().lower()
            for c in controls_in(panel.widget) if getattr(c, "description", "").strip()}


def test_every_panel_opens_with_a_short_summary_of_what_it_does(bundled):
    summaries = {}
    for title, panel in _panels(bundled):
        text = text_before_first_control(panel)
        words = text.split()
        assert words, f"{title}: a control comes first, so nothing says what the panel is"
        assert len(words) <= SUMMARY_MOST_WORDS, f"{title}: {len(words)} words before the first control"
        assert len(words) >= 8, f"{title}: {text!r} is a title, not a sentence saying what to do"
        assert {w.strip(".,:;()").lower() for w in words} - GENERIC, f"{title}: {text!r} is generic"
        # How to use it: the summary names at least one of the panel's controls by its visible label.
        assert any(label in text.lower() for label in _visible_labels(panel)), \
            f"{title}: {text!r} names none of its controls ({sorted(_visible_labels(panel))})"
        summaries[title] = text
    assert len(set(summaries.values())) == len(summaries), "two panels share a summary: it is generic"


def test_the_summary_check_finds_a_panel_that_starts_with_a_control_or_a_long_text():
    access = Access()
    slider = access.name(widgets.IntSlider(description="seed"), "seed of the run")
    panel = type("Panel", (), {"access": access})()
    panel.widget = widgets.VBox([widgets.HBox([slider]), widgets.HTML("<p>What the seed does</p>")])
    assert text_before_first_control(panel) == ""
    details = "<p>" + "word " * (SUMMARY_MOST_WORDS + 1) + "</p>"
    panel.widget = widgets.VBox([widgets.HTML(details), slider])
    assert len(text_before_first_control(panel).split()) > SUMMARY_MOST_WORDS
    closed = widgets.Accordion(children=[widgets.HTML("<p>hidden details</p>")], selected_index=None)
    panel.widget = widgets.VBox([widgets.HTML("<p>Move the seed slider.</p>"), closed, slider])
    assert text_before_first_control(panel) == "Move the seed slider."


def test_a_summary_is_short_plain_text():
    summary = panel_summary("Move the <seed> slider & watch.")
    assert "&lt;seed&gt;" in summary.value and "&amp;" in summary.value
    assert "d2l-panel-summary" in summary._dom_classes
    with pytest.raises(ValueError, match="empty"):
        panel_summary("  ")
    with pytest.raises(ValueError, match="at most"):
        panel_summary("word " * (SUMMARY_MOST_WORDS + 1))


def test_names_say_what_they_set_and_contain_the_visible_label():
    access = Access()
    slider = widgets.IntSlider(description="seed")
    with pytest.raises(ValueError, match="visible label"):
        access.name(slider, "random number")  # WCAG 2.5.3: the spoken name must contain "seed"
    with pytest.raises(ValueError, match="empty"):
        access.name(widgets.Button(), "  ")
    assert access.name(slider, "seed of the random matrices") is slider
    assert any(c.startswith("d2l-a11y-") for c in slider._dom_classes)


def test_log_and_selection_sliders_announce_the_value_they_show():
    access = Access()
    log = widgets.FloatLogSlider(value=0.01, base=10, min=-4, max=0, description="learning rate")
    access.follow(log, "learning rate of Adam", lambda value: f"{value:.3g}")
    marks = access.widget.marks
    assert [m["valuetext"] for m in marks.values()] == ["0.01"]  # not the exponent -2
    log.value = 0.001
    assert [m["valuetext"] for m in access.widget.marks.values()] == ["0.001"]
    choice = widgets.SelectionSlider(options=["off", "0.5", "1"], value="1", description="clipping θ")
    access.follow(choice, "clipping θ: threshold")
    assert access.widget.marks[_class(choice)]["valuetext"] == "1"  # not the position 2
    choice.value = "off"
    assert access.widget.marks[_class(choice)]["valuetext"] == "off"


def _class(widget):
    return next(c for c in widget._dom_classes if c.startswith("d2l-a11y-"))


def test_figure_html_carries_the_alt_and_the_png():
    figure, ax = plt.subplots(figsize=(2, 1))
    ax.plot([1, 2])
    png = figure_png(figure)
    shown = figure_html(png, 'loss falls from 4.2 to 1.3 "fast" <quickly>')
    assert 'alt="loss falls from 4.2 to 1.3 &quot;fast&quot; &lt;quickly&gt;"' in shown
    data = re.search(r'src="data:image/png;base64,([^"]+)"', shown).group(1)
    assert base64.b64decode(data) == png
    with pytest.raises(ValueError):
        figure_html(png, " ")


def test_the_live_plot_describes_its_numbers():
    history = History()
    history.epoch, history.train_perplexity, history.valid_perplexity = [1, 2], [20.0, 9.5], [21.0, 10.25]
    text = perplexity_alt(history, {"unigram": 16.5})
    assert "validation perplexity from 21 to 10.2" in text and "unigram 16.5" in text
    assert "no epoch" in perplexity_alt(History())


def _images_without_alt(notebook: Path) -> list[str]:
    """Return the ids of cells with an image output that has no `<img alt="...">` beside it."""
    cells = json.loads(notebook.read_text("utf-8"))["cells"]
    missing = []
    for cell in cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html_text = "".join(data.get("text/html", ""))
            images = re.findall(r"<img\b[^>]*>", html_text)
            if any(not re.search(r'\balt="[^"]*\S[^"]*"', img) for img in images):
                missing.append(cell["id"])
            if "image/png" in data or "image/jpeg" in data or "image/svg+xml" in data:
                missing.append(cell["id"])  # JupyterLab drops the alt of an image output
    return missing


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_stored_figure_has_a_text_alternative(notebook):
    assert _images_without_alt(notebook) == []


def test_the_scan_finds_an_image_without_alt(tmp_path):
    planted = {"cells": [{"cell_type": "code", "id": "a", "source": "", "outputs": [
        {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}]},
        {"cell_type": "code", "id": "b", "source": "", "outputs": [
            {"output_type": "display_data", "data": {"text/html": '<img src="x" alt="">'}}]},
        {"cell_type": "code", "id": "c", "source": "", "outputs": [
            {"output_type": "display_data", "data": {"text/html": '<img alt="a curve" src="x">'}}]}]}
    path = tmp_path / "planted.ipynb"
    path.write_text(json.dumps(planted))
    assert _images_without_alt(path) == ["a", "b"]


def test_figure_texts_state_what_is_drawn_and_its_numbers(bundled):
    from d2lmini.figures import batch_transpose_alt, block_matmul_alt, bptt_graph_alt, reach_curves_alt

    assert "3 x 5 matrix" in block_matmul_alt(3, 1, 4) and "3 x 4" in block_matmul_alt(3, 1, 4)
    text = reach_curves_alt({0.5: [1.0, 0.5, 0.25], 1.5: [1.0, 1.5, 2.25]}, input_scale=0.0)
    assert "ρ = 0.5: 1 at k = 0, 0.25 at k = 2" in text and "ρ = 1.5" in text and "no inputs" in text
    assert "over 4 steps" in bptt_graph_alt(4)
    transpose = batch_transpose_alt(["abc", "xyz"], bundled.vocab)
    assert "(2, 3)" in transpose and "'a', 'x'; 'b', 'y'; 'c', 'z'" in transpose
