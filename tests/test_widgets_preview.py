"""The static preview each panel stores for readers without a kernel (d2lmini.widgets.preview)."""

import html
import importlib.util
import re
from pathlib import Path

import ipywidgets as widgets
import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output

from d2lmini.widgets.concat_matmul import SUMMARY, make_concat_matmul_panel
from d2lmini.widgets.lab import make_lab
from d2lmini.widgets.preview import WIDGET_VIEW, PanelBox, preview_html
from d2lmini.widgets.start import bars_alt, make_temperature_panel

pytestmark = pytest.mark.torch_dependent


def displayed(widget) -> dict:
    """Return the mime bundle IPython's display() publishes for `widget` (ipywidgets 7 and 8 alike)."""
    InteractiveShell.instance()  # display() publishes through a shell, as in a kernel
    with capture_output() as captured:
        display(widget)
    [output] = captured.outputs
    return output.data


def alts(preview: str) -> list[str]:
    return [html.unescape(alt) for alt in re.findall(r'<img [^>]*alt="([^"]*)"', preview)]


def test_a_displayed_panel_carries_the_widget_view_and_its_preview():
    panel = make_concat_matmul_panel()
    data = displayed(panel.widget)
    assert data[WIDGET_VIEW]["model_id"] == panel.widget.model_id
    assert data["text/html"] == preview_html(panel.widget)


def test_the_preview_shows_the_controls_the_announced_result_and_the_figure_with_its_alt():
    panel = make_concat_matmul_panel(batch=3, num_inputs=1, num_hiddens=4)
    preview = preview_html(panel.widget)
    assert alts(preview) == list(panel.access.alts.values())
    assert panel.status.value in preview  # the live region's text, numbers included
    for control, name in panel.access.names.items():
        assert f"<li>{html.escape(name)}, set to <strong>{control.value}</strong></li>" in preview
    assert preview.count("<img ") == 1 and 'src="data:image/png;base64,' in preview


def test_the_preview_says_the_panel_s_summary_before_its_controls():
    panel = make_concat_matmul_panel()
    preview = preview_html(panel.widget)
    summary = html.escape(SUMMARY)
    assert preview.count(summary) == 1 and preview.index(summary) < preview.index("<p>Controls:</p>")


def test_the_preview_follows_the_panel_s_own_functions():
    default, other = make_concat_matmul_panel(), make_concat_matmul_panel(batch=5, num_hiddens=7)
    assert alts(preview_html(default.widget)) != alts(preview_html(other.widget))
    assert "(5, 7)" in preview_html(other.widget) and "(5, 7)" not in preview_html(default.widget)
    default.num_hiddens.value = 7
    default.batch.value = 5
    assert alts(preview_html(default.widget)) == alts(preview_html(other.widget))


def test_a_log_slider_is_listed_with_the_value_it_shows():
    panel = make_temperature_panel()
    panel.slider.value = 0.5
    preview = preview_html(panel.widget)
    assert "set to <strong>0.50</strong>" in preview  # as the panel announces it
    assert alts(preview) == [bars_alt(panel.shown, 0.5)]


def test_the_lab_lists_every_setting_and_leaves_out_its_buttons_and_the_invisible_access_widget():
    lab = make_lab()
    preview = preview_html(lab.widget)
    for name, control in lab.controls.items():
        assert html.escape(lab.access.names[control]) in preview, name
    assert "Train a new model" not in preview
    assert alts(preview) == [lab.access.alts[lab.plot]]


def test_hidden_widgets_are_left_out():
    shown, hidden = widgets.HTML("shown text"), widgets.HTML("hidden text")
    hidden.layout.display = "none"
    preview = preview_html(PanelBox([shown, hidden]))
    assert "shown text" in preview and "hidden text" not in preview


@pytest.mark.parametrize("make", [make_temperature_panel, make_concat_matmul_panel, make_lab])
def test_every_figure_in_a_preview_has_an_alt(make):
    preview = preview_html(make().widget)
    assert preview.count("<img ") == len(alts(preview)) >= 1


@pytest.mark.slow
def test_a_stored_panel_keeps_the_preview_its_cell_left_and_no_widget_view(tmp_path):
    """run_notebooks.py: a cell displays a panel, then changes it; the stored preview shows the change."""
    tools = Path(__file__).resolve().parent.parent / "tools"
    spec = importlib.util.spec_from_file_location("run_notebooks", tools / "run_notebooks.py")
    run_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_notebooks)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from d2lmini.widgets.concat_matmul import make_concat_matmul_panel\n"
        "panel = make_concat_matmul_panel(batch=3)\n"
        "display(panel.widget)\n"
        "panel.batch.value = 6")])
    path = tmp_path / "panel.ipynb"
    nbformat.write(notebook, path)
    run_notebooks.execute(path, timeout=120)
    [output] = nbformat.read(path, as_version=4).cells[0].outputs
    assert set(output["data"]) == {"text/plain", "text/html"}
    assert output["data"]["text/plain"] == run_notebooks.PLACEHOLDER
    assert "rows of X and H, set to <strong>6</strong>" in output["data"]["text/html"]
    assert "X (6, 1)" in output["data"]["text/html"]
