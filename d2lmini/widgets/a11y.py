"""What a screen reader and a keyboard need from a panel (every notebook's widgets).

ipywidgets gives a slider no accessible name, announces a log or selection slider's position
(or exponent) instead of the value it shows, sends a dropdown's ArrowDown on to JupyterLab
(which moves to the next cell) and cannot put `alt` on an `Image` widget. A panel fixes all of
this with one `Access`: it names every control (`name`), describes every figure (`describe`),
marks the text that shows results as a live region (`announce`, one a panel), and its `.widget`
(put in the panel, invisible) applies these to the panel's views in the browser:

- each named control gets `aria-label` (a slider's handle, its number box, a select, a text box,
  a button, a checkbox; a row of toggle buttons becomes a named group), and a slider's handle
  `aria-valuetext` = the value it shows;
- an image gets `alt`; a live region `role="status" aria-live="polite"`;
- keys pressed inside the panel stay in it (JupyterLab's notebook shortcuts ignore them);
- a control disabled while the kernel works gets the focus back when it is enabled again; while it
  is disabled, the panel's Stop control (`stopper`), enabled for the run, holds the focus;
- Esc leaves the panel for its cell (JupyterLab's command-mode keys, Esc then I, I, reach it);
- `reduced_motion` says whether the browser asks for reduced motion (prefers-reduced-motion).

Names must contain the control's visible description (WCAG 2.5.3, label in name). A panel opens
with `panel_summary`: one or two sentences that say what it does and how to use it, so that a
screen reader meets them before any control or detail. Works with
ipywidgets 7.7 (Colab) and 8.x, in JupyterLab, Colab and VS Code (anywidget).
"""

import html
import re
import uuid
from importlib import resources

import anywidget
import ipywidgets as widgets
import traitlets

from d2lmini.i18n import _

# The browser side, shipped as package data (pyproject.toml): a .js file, read and edited as JavaScript.
_ESM = resources.files("d2lmini.widgets").joinpath("a11y.js").read_text(encoding="utf-8")


class _AccessWidget(anywidget.AnyWidget):
    """The browser side of `Access` (invisible): applies `marks` to the views of its panel."""

    _esm = _ESM
    marks = traitlets.Dict().tag(sync=True)
    # Set by the browser: True where the reader's system asks for reduced motion (prefers-reduced-motion).
    reduced_motion = traitlets.Bool(False).tag(sync=True)


def _visible_text(description: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", description or "")).strip()


class Access:
    """The accessible names, figure descriptions and live regions of one panel.

    Put `access.widget` among the panel's children. `name(control, text)` returns `control`;
    `describe(image, text)` sets an image's alt (call it again when the figure changes);
    `announce(html_widget)` makes a widget a polite live region. `names` maps each named widget
    to its name, `alts` each image to its text (tests read them).
    """

    def __init__(self):
        self.widget = _AccessWidget()
        self.names: dict[widgets.Widget, str] = {}
        self.alts: dict[widgets.Widget, str] = {}
        self.live: list[widgets.Widget] = []
        self._classes: dict[widgets.Widget, str] = {}

    @property
    def reduced_motion(self) -> bool:
        """True where the browser showing the panel asks for reduced motion: redraw less, animate nothing."""
        return self.widget.reduced_motion

    def _mark(self, widget: widgets.Widget, mark: dict) -> None:
        cls = self._classes.get(widget)
        if cls is None:
            cls = self._classes[widget] = f"d2l-a11y-{uuid.uuid4().hex[:10]}"
            widget.add_class(cls)
        self.widget.marks = {**self.widget.marks, cls: mark}

    def name(self, control: widgets.Widget, text: str, valuetext: str | None = None):
        """Give `control` the accessible name `text` (it must contain the visible description).

        `valuetext` is what a slider's value is announced as when it shows no readout of its own
        (a SelectionSlider next to a label); with a readout, the readout's text is announced.
        """
        shown = _visible_text(getattr(control, "description", ""))
        if not text.strip():
            raise ValueError("an accessible name must not be empty")
        if shown and shown.lower() not in text.lower():
            raise ValueError(f"the name {text!r} must contain the visible label {shown!r} (WCAG 2.5.3)")
        self.names[control] = text
        self._mark(control, {"kind": "control", "text": text, "valuetext": valuetext or ""})
        return control

    def follow(self, slider: widgets.Widget, text: str, shown=None):
        """Name `slider` and announce `shown(value)` (default: its label or value) as its value."""
        def valuetext():
            if shown is not None:
                return shown(slider.value)
            return str(getattr(slider, "label", None) or slider.value)
        self.name(slider, text, valuetext())
        slider.observe(lambda change: self.name(slider, text, valuetext()), names="value")
        return slider

    def describe(self, image: widgets.Widget, text: str) -> None:
        """Set the text alternative of the image widget `image` to `text` (what the figure shows)."""
        if not text.strip():
            raise ValueError("a figure's text alternative must not be empty")
        self.alts[image] = text
        self._mark(image, {"kind": "image", "text": text})

    def stopper(self, button: widgets.Widget, text: str):
        """Name `button` (`text`) as the panel's Stop control; return it.

        While a run keeps the panel's controls disabled the panel enables `button`: the focus
        that a disabled control lost moves to it (a keyboard user can stop the run at once,
        and a screen reader announces it once), and goes back to that control after the run.
        """
        self.name(button, text)
        self._mark(button, {"kind": "control", "text": text, "valuetext": "", "stop": True})
        return button

    def expandable(self, accordion: widgets.Widget) -> None:
        """Let Tab reach the headers of `accordion` and Enter or Space open and close them."""
        self._mark(accordion, {"kind": "expandable", "text": ""})

    def announce(self, region: widgets.Widget):
        """Make `region` (the HTML that shows a panel's result) a polite live region; return it."""
        self.live.append(region)
        self._mark(region, {"kind": "live", "text": ""})
        return region


def name_setting(access: Access, control: widgets.Widget, setting) -> widgets.Widget:
    """Name `control` (from `d2lmini.widgets.make_control`) after its declared `setting`: "label: help".

    A log slider announces the value it shows (10**position), not the position. Both are in the
    language d2lmini speaks now, as the control's description is (`make_control`).
    """
    # TRANSLATORS: a control's accessible name: the setting's label ("hidden size"), then what it does.
    text = _("{label}: {help}").format(label=setting.shown_label(), help=setting.shown_help())
    if isinstance(control, widgets.FloatLogSlider):
        return access.follow(control, text, lambda value: f"{value:.3g}")
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.SelectionSlider)):
        return access.follow(control, text)
    return access.name(control, text)


# A panel's summary is at most this long: about 12 s of speech before the first control.
SUMMARY_MOST_WORDS = 30


def panel_summary(text: str) -> widgets.HTML:
    """Return the summary a panel shows first: `text`, plain words (HTML-escaped), as a paragraph.

    One or two sentences saying what the panel does and how to use it; details go after the
    controls. Raises ValueError for an empty text or one longer than `SUMMARY_MOST_WORDS` words.
    """
    words = len(text.split())
    if not words:
        raise ValueError("a panel's summary must not be empty")
    if words > SUMMARY_MOST_WORDS:
        raise ValueError(f"a panel's summary has {words} words; at most {SUMMARY_MOST_WORDS} come "
                         "before the first control (put the rest after the controls)")
    summary = widgets.HTML(f"<p style='margin:2px 0'>{html.escape(text)}</p>")
    summary.add_class("d2l-panel-summary")
    return summary


CONTROL_TYPES = (widgets.ValueWidget, widgets.Button)
# Shown, not set: a progress bar sits beside text that says the same.
DISPLAY_ONLY = (widgets.HTML, widgets.Label, widgets.Image, widgets.Output, widgets.HTMLMath,
                widgets.FloatProgress, widgets.IntProgress)


def controls_in(widget: widgets.Widget) -> list[widgets.Widget]:
    """Return every control (a widget a student can set or press) under `widget`, depth first."""
    found = []
    if isinstance(widget, CONTROL_TYPES) and not isinstance(widget, DISPLAY_ONLY) and not getattr(
            widget, "_a11y_skip", False):
        found.append(widget)
    for child in getattr(widget, "children", ()) or ():
        found.extend(controls_in(child))
    return found


def unnamed_controls(panel_widget: widgets.Widget, access: Access) -> list[str]:
    """Return a description of each control under `panel_widget` that `access` did not name."""
    return [f"{type(c).__name__} {getattr(c, 'description', '')!r}" for c in controls_in(panel_widget)
            if c not in access.names]
