"""A panel as static HTML, for readers without a kernel: GitHub, nbviewer and the course site.

A panel's outermost box is a `PanelBox`. Displayed, its mime bundle carries the widget view,
which a live frontend (JupyterLab, Colab, VS Code) renders as the real widgets, and a
`text/html` preview, `preview_html(box)`, which static renderers show instead. The preview is
read from the widgets themselves at the moment they are displayed, so it shows exactly what the
panel's own functions drew: every control with its value, every text the panel shows (its
announced results among them), every figure as an `<img>` with the alt text the panel gave it.
`tools/run_notebooks.py` stores the preview and drops the widget view; after each cell that
displayed a panel it asks `previews_json` for the preview as that cell left the panel (the lab
of notebook 08 is displayed first, then trains).
"""

import base64
import functools
import html
import weakref

import ipywidgets as widgets
from IPython.display import JSON, display

from d2lmini.i18n import N_, _
from d2lmini.settings import OFF
from d2lmini.widgets.a11y import _AccessWidget, controls_in

# What a stored notebook shows in place of a panel's live view (tools/run_notebooks.py), beside its preview.
PLACEHOLDER = N_("Run this cell to show the interactive panel.")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# ipywidgets 7 (Google Colab) displays a widget through `_ipython_display_`, 8 through
# `_repr_mimebundle_`; a PanelBox adds its preview on whichever path the installed one takes.
IPYWIDGETS_7 = hasattr(widgets.Widget, "_ipython_display_")
# Every displayed PanelBox by model id, for `previews_json`.
_displayed: "weakref.WeakValueDictionary[str, PanelBox]" = weakref.WeakValueDictionary()
NOTE = N_("A static preview of an interactive panel at its default settings. "
        "Run the notebook to change the settings.")


def _marks(root: widgets.Widget) -> dict[str, dict]:
    """Return the accessibility marks (alt texts, control names) of every `Access` under `root`."""
    marks = {}
    stack = [root]
    while stack:
        widget = stack.pop()
        if isinstance(widget, _AccessWidget):
            marks.update(widget.marks)
        stack.extend(getattr(widget, "children", ()) or ())
    return marks


def _mark_of(widget: widgets.Widget, marks: dict[str, dict]) -> dict:
    for cls in getattr(widget, "_dom_classes", ()):
        if cls in marks:
            return marks[cls]
    return {}


def _hidden(widget: widgets.Widget) -> bool:
    layout = getattr(widget, "layout", None)
    return layout is not None and (layout.display == "none" or layout.visibility == "hidden")


def control_value(control: widgets.Widget) -> str:
    """Return the value `control` shows, as text: a menu's label, a log slider's 3-digit value, on/off."""
    if isinstance(control, widgets.Button):
        return _("button")
    if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        # TRANSLATORS: a ticked checkbox in a static preview ("off": not ticked).
        return _("on") if control.value else _(OFF)
    if hasattr(control, "label") and hasattr(control, "options"):  # a menu, toggle row, selection slider
        return str(control.label)
    if isinstance(control, widgets.FloatLogSlider):
        return f"{control.value:.3g}"
    if isinstance(control, widgets.Text | widgets.Textarea):
        return control.value or _("(empty)")
    value = control.value
    if isinstance(value, tuple):
        parts = [f"{v:g}" if isinstance(v, float) else str(v) for v in value]
        # TRANSLATORS: a range slider's two ends in a static preview: "0.5 to 2".
        return functools.reduce(lambda low, high: _("{low} to {high}").format(low=low, high=high), parts) \
            if parts else ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _img(data: bytes, fmt: str, alt: str | None, width=None) -> str:
    source = f"data:image/{fmt};base64,{base64.b64encode(data).decode('ascii')}"
    alt_attribute = "" if alt is None else f' alt="{html.escape(alt)}"'
    width_attribute = f' width="{int(width)}"' if width else ""
    return f'<img src="{source}"{alt_attribute}{width_attribute} style="max-width:100%;height:auto">'


def _output_html(output: widgets.Output, alt: str | None) -> list[str]:
    parts = []
    for item in output.outputs:
        data = item.get("data", {})
        if "image/png" in data:
            parts.append(_img(base64.b64decode(data["image/png"]), "png", alt))
        elif "text/html" in data:
            parts.append("".join(data["text/html"]))
        elif "text/plain" in data or item.get("output_type") == "stream":
            text = "".join(data.get("text/plain", item.get("text", "")))
            parts.append(f"<pre>{html.escape(text)}</pre>")
    return parts


def _shown_html(widget: widgets.Widget, marks: dict[str, dict]) -> list[str]:
    """Return the HTML of what `widget` and its children show (not their controls), in order."""
    if _hidden(widget) or isinstance(widget, _AccessWidget):
        return []
    alt = _mark_of(widget, marks).get("text")
    if isinstance(widget, widgets.Image):
        return [_img(widget.value, widget.format, alt, widget.width)] if widget.value else []
    if isinstance(widget, widgets.Output):
        return _output_html(widget, alt)
    if isinstance(widget, widgets.HTML | widgets.HTMLMath):
        return [f"<div>{widget.value}</div>"] if widget.value else []
    if isinstance(widget, widgets.Label):
        return [f"<p>{html.escape(widget.value)}</p>"] if widget.value else []
    children = getattr(widget, "children", ()) or ()
    if isinstance(widget, widgets.Accordion | widgets.Tab):
        return _sections_html(widget, children, marks)
    return [part for child in children for part in _shown_html(child, marks)]


def _sections_html(widget, children, marks) -> list[str]:
    """An Accordion or Tab as one `<details>` per child, open where the widget has it open."""
    parts = []
    for index, child in enumerate(children):
        title = widget.get_title(index) or _("section {number}").format(number=index + 1)
        opened = " open" if widget.selected_index == index else ""
        inner = "".join(_shown_html(child, marks))
        parts.append(f"<details{opened}><summary>{html.escape(title)}</summary>{inner}</details>")
    return parts


def _summaries(root: widgets.Widget) -> list[widgets.Widget]:
    """Return the panel's summary (`d2lmini.widgets.a11y.panel_summary`) among `root`'s children, if any."""
    return [child for child in getattr(root, "children", ()) or ()
            if "d2l-panel-summary" in getattr(child, "_dom_classes", ())]


def preview_html(root: widgets.Widget) -> str:
    """Return a static HTML picture of the panel whose outermost widget is `root`, as it is now.

    A note that it is a preview; the panel's summary, first here too; its controls, each by its
    accessible name (or description) with the value it shows (as a screen reader is told it,
    where the panel says); then the texts and figures it shows, in order, each figure an `<img>`
    with the alt text the panel's `Access` gave it. Hidden widgets are left out.
    """
    marks = _marks(root)
    summaries = _summaries(root)
    items = []
    for control in controls_in(root):
        if _hidden(control) or isinstance(control, widgets.Button):
            continue
        mark = _mark_of(control, marks)
        name = mark.get("text") or getattr(control, "description", "") or _("setting")
        value = html.escape(mark.get("valuetext") or control_value(control))  # as a screen reader hears it
        # TRANSLATORS: one control in a static preview: {name} is its name, {value} what it is set to.
        # Keep the HTML tags.
        item = _("{name}, set to <strong>{value}</strong>").format(name=html.escape(name), value=value)
        items.append(f"<li>{item}</li>")
    controls = "<p>" + _("Controls:") + f"</p><ul>{''.join(items)}</ul>" if items else ""
    summary = "".join(part for widget in summaries for part in _shown_html(widget, marks))
    shown = "".join(part for child in getattr(root, "children", ()) or () if child not in summaries
                    for part in _shown_html(child, marks))
    return (f'<div class="d2l-panel-preview" style="border:1px solid #767676;padding:0.5em 1em">'
            f"<p><em>{_(NOTE)}</em></p>{summary}{controls}{shown}</div>")


class PanelBox(widgets.VBox):
    """A panel's outermost box: a VBox that is displayed with `preview_html` of itself as text/html."""

    def _repr_mimebundle_(self, **kwargs):
        """Return ipywidgets 8's bundle (text/plain and the widget view) with the preview added."""
        _displayed[self.model_id] = self
        return {**super()._repr_mimebundle_(**kwargs), "text/html": preview_html(self)}

    if IPYWIDGETS_7:
        def _ipython_display_(self, **kwargs):
            """Display as ipywidgets 7 does (text/plain and the widget view), with the preview added."""
            _displayed[self.model_id] = self
            plaintext = repr(self)
            display({"text/plain": plaintext if len(plaintext) <= 110 else plaintext[:110] + "…",
                     WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": self.model_id},
                     "text/html": preview_html(self)}, raw=True)
            self._handle_displayed(**kwargs)


def previews_json(model_ids: list[str]) -> JSON:
    """Return, as JSON for a kernel client, the preview now of each displayed PanelBox in `model_ids`."""
    return JSON({model_id: preview_html(_displayed[model_id]) for model_id in model_ids
                 if model_id in _displayed})
