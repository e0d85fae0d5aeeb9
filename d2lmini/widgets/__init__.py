"""Interactive panels for the notebooks, one module per notebook.

Every panel is a thin layer of ipywidgets over a plain function that computes what
the panel shows; tests call those functions (and set widget values) without a browser.
The panels use only ipywidgets APIs present in both 7.7 (Google Colab) and 8.x.

The convention of the panel modules (CONTRIBUTING.md, "Widgets"): plain functions compute
what the panel shows; a `make_*` function returns the panel, whose `.widget` the notebook
displays; the panel's `update()` recomputes and redraws for the current control values
inside `controls_disabled` (never disabling a box a student types into); controls for
declared settings (`d2lmini.settings`) come from `make_control`, so their limits and options
are the declaration's.
"""

import contextlib

import ipywidgets as widgets

from d2lmini.i18n import _
from d2lmini.settings import OFF, Setting, off_words, validate_value


@contextlib.contextmanager
def controls_disabled(controls):
    """Disable every widget in `controls` while the `with` block runs, then restore each one's state.

    A panel wraps its computation in this, so a student cannot move a control mid-run and
    get a result that belongs to a value the control no longer shows.
    """
    before = [control.disabled for control in controls]
    for control in controls:
        control.disabled = True
    try:
        yield
    finally:
        for control, was_disabled in zip(controls, before, strict=True):
            control.disabled = was_disabled


@contextlib.contextmanager
def stop_enabled(button):
    """Enable the Stop `button` while the `with` block (a run) is in progress, then disable it again.

    Disabled, it is out of the tab order while nothing runs; enabled, a keyboard user reaches it
    (`d2lmini.widgets.a11y.Access.stopper` moves the focus to it).
    """
    button.disabled = False
    try:
        yield
    finally:
        button.disabled = True


def menu_options(setting: Setting, value) -> tuple[list[str], str]:
    """Return (options, shown) of a menu for a number `setting` with "off" for None, as strings.

    ipywidgets reads a Dropdown value of None as "nothing chosen", so numbers are offered as
    text; the current `value` is added when the declared `menu` lacks it. "off" is written in the
    language d2lmini speaks now (`parse_menu_choice` reads it in English too).
    """
    off = _(OFF)
    options = ([off] if setting.optional else []) + [f"{v:g}" for v in setting.menu]
    shown = off if value is None else f"{value:g}"
    return (options if shown in options else [*options, shown]), shown


def parse_menu_choice(setting: Setting, choice) -> float | None:
    """Return the number a `menu_options` choice stands for (None for "off"); check it against `setting`."""
    if setting.optional and (choice is None or (isinstance(choice, str)
                                                and choice.strip().lower() in off_words())):
        return None
    try:
        value = float(choice)
    except (TypeError, ValueError):
        value = choice
    validate_value(setting, value)
    return value


def make_control(setting: Setting, value):
    """Return the ipywidget that sets `setting`, its limits and options taken from the declaration.

    Named choices become a Dropdown of their labels; a number with a `menu` a Dropdown of
    `menu_options`; a number with a `slider` an IntSlider or (`log_slider`) a FloatLogSlider;
    other numbers a FloatText or IntText; text a Text box. Labels are in the language d2lmini
    speaks now; the values are the setting's.
    """
    if setting.choices:
        options = [(_(label), key) for key, label in setting.choices.items()]
        control = widgets.Dropdown(options=options, value=value)
    elif setting.menu and not setting.slider:
        options, shown = menu_options(setting, value)
        control = widgets.Dropdown(options=options, value=shown)
    elif setting.slider and setting.log_slider:
        low, high, step = setting.slider
        control = widgets.FloatLogSlider(value=value, base=10, min=low, max=high, step=step,
                                         readout_format=".3g")
    elif setting.slider:
        low, high, step = setting.slider
        control = widgets.IntSlider(value=value, min=low, max=high, step=step)
    elif setting.kind is float:
        control = widgets.FloatText(value=value, step=0.1)
    elif setting.kind is int:
        control = widgets.IntText(value=value)
    else:
        control = widgets.Text(value=value)
    control.description = setting.shown_label()
    return control
