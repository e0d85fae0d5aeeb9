"""What a screen reader and a keyboard need from a panel (every notebook's widgets).

ipywidgets gives a slider no accessible name, announces a log or selection slider's position
(or exponent) instead of the value it shows, sends a dropdown's ArrowDown on to JupyterLab
(which moves to the next cell) and cannot put `alt` on an `Image` widget. A panel fixes all of
this with one `Access`: it names every control (`name`), describes every figure (`describe`),
marks the text that shows results as a live region (`announce`), and its `.widget` (put in the
panel, invisible) applies these to the panel's views in the browser:

- each named control gets `aria-label` (a slider's handle, its number box, a select, a text box,
  a button, a checkbox; a row of toggle buttons becomes a named group), and a slider's handle
  `aria-valuetext` = the value it shows;
- an image gets `alt`; a live region `role="status" aria-live="polite"`;
- keys pressed inside the panel stay in it (JupyterLab's notebook shortcuts ignore them);
- a control disabled while the kernel works gets the focus back when it is enabled again.

Names must contain the control's visible description (WCAG 2.5.3, label in name). Works with
ipywidgets 7.7 (Colab) and 8.x, in JupyterLab, Colab and VS Code (anywidget).
"""

import html
import re
import uuid

import anywidget
import ipywidgets as widgets
import traitlets

_ESM = r"""
const HANDLE = '.noUi-handle, .ui-slider-handle';
const FIELDS = 'select, input, textarea';
const FOCUSABLE = 'button, select, input, textarea, [tabindex], [contenteditable]';

function apply(root, marks) {
  for (const [cls, mark] of Object.entries(marks)) {
    for (const el of root.querySelectorAll('.' + cls)) {
      if (mark.kind === 'image') {
        const img = el.tagName === 'IMG' ? el : el.querySelector('img');
        if (img && img.getAttribute('alt') !== mark.text) img.setAttribute('alt', mark.text);
      } else if (mark.kind === 'expandable') {
        expandable(el);
      } else if (mark.kind === 'live') {
        setAll(el, {role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true'});
      } else {
        nameControl(el, mark);
      }
    }
  }
}

function setAll(el, attributes) {
  for (const [key, value] of Object.entries(attributes)) {
    if (el.getAttribute(key) !== value) el.setAttribute(key, value);
  }
}

function nameControl(el, mark) {
  const handle = el.querySelector(HANDLE);
  if (handle) {
    const readout = el.querySelector('.widget-readout');
    const shown = readout && readout.offsetParent !== null ? readout.textContent.trim() : '';
    setAll(handle, {'aria-label': mark.text, 'aria-valuetext': shown || mark.valuetext || ''});
    if (readout) setAll(readout, {'aria-label': mark.text + ', typed value', role: 'textbox'});
    return;
  }
  const buttons = el.querySelectorAll('button');
  if (buttons.length > 1) { setAll(el, {role: 'group', 'aria-label': mark.text}); return; }
  const target = el.matches('button, ' + FIELDS) ? el : (el.querySelector(FIELDS) || buttons[0]);
  if (target) setAll(target, {'aria-label': mark.text});
  for (const icon of el.querySelectorAll('i.fa')) setAll(icon, {'aria-hidden': 'true'});
}

// An Accordion's headers are plain divs: make each a button that Tab reaches and Enter/Space opens.
function expandable(el) {
  for (const header of el.querySelectorAll('.jupyter-widget-Collapse-header, .p-Collapse-header')) {
    const open = header.parentElement.className.includes('Collapse-open');
    // Named by its text: the caret icon's font character must not be read out.
    setAll(header, {tabindex: '0', role: 'button', 'aria-expanded': String(open),
                    'aria-label': header.textContent.trim()});
    for (const icon of header.querySelectorAll('i, .fa')) setAll(icon, {'aria-hidden': 'true'});
    if (!header.dataset.d2lKeys) {
      header.dataset.d2lKeys = '1';
      header.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); header.click(); }
      });
    }
  }
}

function render({ model, el }) {
  el.style.display = 'none';
  let root = null, observer = null, scheduled = false, lost = null, last = null;
  const run = () => {
    scheduled = false;
    root = el.closest('.jp-OutputArea-output, .output_subarea, .output') || el.parentElement;
    if (!root) return;
    apply(root, model.get('marks'));
    if (last && !lost && document.activeElement !== last.target
        && (!last.target.isConnected || last.target.disabled || last.target.closest('[disabled]'))) {
      lost = last;
    }
    if (lost) {
      let target = lost.target;
      if (!target.isConnected && lost.cls) {
        const control = root.querySelector('.' + lost.cls);
        target = control ? control.querySelectorAll(FOCUSABLE)[lost.index] : null;
      }
      if (target && target.isConnected && !target.disabled && !target.closest('[disabled]')) {
        const active = document.activeElement;
        if (!active || active === document.body || active.contains(root)) target.focus();
        lost = null;
      }
    }
    if (!root.dataset.d2lKeys) {
      root.dataset.d2lKeys = '1';
      // JupyterLab's command-mode shortcuts (ArrowDown: next cell, M: Markdown) act on keys that
      // bubble up from a focused select or slider: keep them inside the panel.
      root.addEventListener('keydown', (event) => {
        if (!(event.ctrlKey || event.metaKey || event.altKey) && !['Tab', 'Escape'].includes(event.key)
            && !(event.shiftKey && event.key === 'Enter')) event.stopPropagation();
      });
      // Disabling a focused control, or a redraw replacing it (toggle buttons), sends the focus to
      // the page: remember the control's element and give the focus back when it can take it.
      root.addEventListener('focusin', (event) => {
        const target = event.target, control = target.closest('[class*="d2l-a11y-"]');
        last = control ? {target, index: [...control.querySelectorAll(FOCUSABLE)].indexOf(target),
                          cls: [...control.classList].find(c => c.startsWith('d2l-a11y-'))} : null;
      });
      root.addEventListener('focusout', (event) => { if (event.relatedTarget) last = null; });
    }
    if (!observer) {
      observer = new MutationObserver(schedule);
      observer.observe(root, {subtree: true, childList: true, characterData: true, attributes: true,
                              attributeFilter: ['disabled', 'class', 'src', 'aria-valuenow', 'style']});
    }
  };
  const schedule = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(run); } };
  model.on('change:marks', schedule);
  setTimeout(schedule, 0);
  return () => { if (observer) observer.disconnect(); };
}
export default { render };
"""


class _AccessWidget(anywidget.AnyWidget):
    """The browser side of `Access` (invisible): applies `marks` to the views of its panel."""

    _esm = _ESM
    marks = traitlets.Dict().tag(sync=True)


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

    A log slider announces the value it shows (10**position), not the position.
    """
    text = f"{setting.label}: {setting.help}"
    if isinstance(control, widgets.FloatLogSlider):
        return access.follow(control, text, lambda value: f"{value:.3g}")
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.SelectionSlider)):
        return access.follow(control, text)
    return access.name(control, text)


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
