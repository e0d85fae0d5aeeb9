"""Accessibility of what the course draws, without a browser (issue 29).

Every panel names every control (`d2lmini.widgets.a11y.Access`), gives every image a text
alternative and marks a live region; names contain the visible label; figures shown inline are
`<img alt>`; and no stored notebook holds an image output without a text alternative. The
browser side (axe-core, keyboard) is tests/test_browser_notebooks.py and tests/test_browser_keyboard.py.
"""

import base64
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
from d2lmini.lab import LabSettings  # noqa: E402
from d2lmini.plot import figure_html, figure_png, perplexity_alt  # noqa: E402
from d2lmini.rnn import RNNScratch  # noqa: E402
from d2lmini.train import History  # noqa: E402
from d2lmini.widgets.a11y import Access, controls_in, unnamed_controls  # noqa: E402
from d2lmini.widgets.clipping import make_clipping_panel  # noqa: E402
from d2lmini.widgets.concat_matmul import make_concat_matmul_panel  # noqa: E402
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
