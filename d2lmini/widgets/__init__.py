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


def parse_menu_choice(setting: Setting, choice) -> float | int | None:
    """Return the number a `menu_options` choice stands for (None for "off"), of the setting's type
    (int or float), checked against `setting`; raise its TypeError or ValueError otherwise."""
    if setting.optional and (choice is None or (isinstance(choice, str)
                                                and choice.strip().lower() in off_words())):
        return None
    value = choice
    if isinstance(choice, str):
        try:
            value = (int if setting.kind is int else float)(choice.strip())
        except ValueError:
            pass  # validate_value names the setting and what it accepts
    return validate_value(setting, value)


def control_value(setting: Setting, control):
    """Return the value the `make_control` widget `control` sets `setting` to, of the setting's type.

    The one way back from every kind of control: a menu of numbers (text) is parsed, every other
    control's value is taken as it is; each is checked against the declaration.
    """
    if _is_number_menu(setting):
        return parse_menu_choice(setting, control.value)
    if setting.optional and _is_text(setting) and control.value == "":
        return None  # an empty box: the setting's default meaning (none_means)
    return validate_value(setting, control.value)


def _is_text(setting: Setting) -> bool:
    return not setting.choices and (setting.kind is str or setting.kind == "path")


def shows_none(setting: Setting) -> bool:
    """Return whether `setting`'s control can show None: a menu's "off", or an empty text box."""
    return setting.optional and (_is_number_menu(setting) or _is_text(setting))


def _is_number_menu(setting: Setting) -> bool:
    return bool(setting.menu) and not setting.slider and not setting.choices


def make_control(setting: Setting, value):
    """Return the ipywidget that sets `setting`, its limits and options taken from the declaration.

    Named choices become a Dropdown of their labels; a number with a `menu` a Dropdown of
    `menu_options`; a number with a `slider` an IntSlider, a FloatSlider (a float setting) or
    (`log_slider`) a FloatLogSlider; other numbers a FloatText or IntText; a bool a Checkbox;
    text a Text box (empty for None). Labels are in the language d2lmini speaks now;
    `control_value` reads any of them back as the setting's value. None for a setting whose
    control cannot show it (`shows_none`) is a ValueError that says so.
    """
    if value is None and not shows_none(setting):
        # TRANSLATORS: {label} is a setting ("time limit"); {none_means} what None means for it ("no limit").
        raise ValueError(_("The {label} ({name}) is shown by a slider or a number box, which cannot show "
                           "None ({none_means}): give it a number, or declare a menu for it.").format(
            label=setting.shown_label(), name=setting.name, none_means=_(setting.none_means)))
    if setting.choices:
        options = [(_(label), key) for key, label in setting.choices.items()]
        control = widgets.Dropdown(options=options, value=value)
    elif _is_number_menu(setting):
        options, shown = menu_options(setting, value)
        control = widgets.Dropdown(options=options, value=shown)
    elif setting.slider and setting.log_slider:
        low, high, step = setting.slider
        control = widgets.FloatLogSlider(value=value, base=10, min=low, max=high, step=step,
                                         readout_format=".3g")
    elif setting.slider and setting.kind is float:
        low, high, step = setting.slider
        control = widgets.FloatSlider(value=value, min=low, max=high, step=step, readout_format=".3g")
    elif setting.slider:
        low, high, step = setting.slider
        control = widgets.IntSlider(value=value, min=low, max=high, step=step)
    elif setting.kind is float:
        control = widgets.FloatText(value=value, step=0.1)
    elif setting.kind is int:
        control = widgets.IntText(value=value)
    elif setting.kind is bool:
        control = widgets.Checkbox(value=value, indent=False)
    else:
        control = widgets.Text(value="" if value is None else str(value))
    control.description = setting.shown_label()
    return control
