"""A setting is its declaration (issue 44): every kind of control is made from a `Setting` and read back
as the setting's value in one place (`make_control`, `control_value`), and a new lab setting of any
kind is a declaration plus a field. The invalid examples come from the declarations themselves.
"""

import dataclasses

import ipywidgets as widgets
import pytest
from settings_examples import invalid_values, valid_values

from d2lmini.lab import LabSettings
from d2lmini.settings import LAB_SETTINGS, TRAIN_SETTINGS, Setting
from d2lmini.widgets import control_value, make_control, shows_none
from d2lmini.widgets import lab as lab_panel

# One declaration of each kind of control a panel makes, with the widget it must become.
KINDS = {
    "int slider": (Setting("layers", "layers", "how many", int, low=1, high=8, slider=(1, 8, 1)),
                   widgets.IntSlider, 2),
    "float slider": (Setting("keep", "keep", "a share", float, low=0.0, high=1.0, slider=(0.0, 1.0, 0.05)),
                     widgets.FloatSlider, 0.25),
    "log slider": (Setting("rate", "rate", "a rate", float, low=0, low_open=True, slider=(-3, 1, 0.1),
                           log_slider=True), widgets.FloatLogSlider, 0.01),
    "menu of floats": (Setting("decay", "decay", "weight decay", float, low=0.0, menu=(0.0, 0.01, 0.1)),
                       widgets.Dropdown, 0.01),
    "menu of whole numbers": (Setting("width", "width", "units", int, low=1, menu=(16, 32, 64)),
                              widgets.Dropdown, 32),
    "optional menu": (Setting("cap", "cap", "a cap", float, low=0, low_open=True, optional=True,
                              none_means="no cap", menu=(1.0, 2.0)), widgets.Dropdown, None),
    "menu of names": (Setting("act", "activation", "the nonlinearity", str,
                              choices={"tanh": "tanh", "relu": "ReLU"}), widgets.Dropdown, "relu"),
    "whole number": (Setting("count", "count", "a count", int, low=0), widgets.IntText, 3),
    "number": (Setting("scale", "scale", "a scale", float, low=0.0), widgets.FloatText, 1.5),
    "text": (Setting("note", "note", "a note", str, max_length=20), widgets.Text, "hi"),
    "switch": (Setting("on", "on", "whether", bool), widgets.Checkbox, True),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_setting_makes_its_control_and_reads_back_every_valid_value(kind):
    setting, widget_type, default = KINDS[kind]
    control = make_control(setting, default)
    assert type(control) is widget_type
    assert control_value(setting, control) == default
    for value in valid_values(setting):
        shown = make_control(setting, value)  # a menu offers the value, a slider moves to it
        read = control_value(setting, shown)
        assert read == value and type(read) is type(value), (kind, value, read)


@pytest.mark.parametrize("kind", KINDS)
def test_a_control_set_to_an_invalid_value_is_refused_naming_the_setting(kind):
    setting, _widget_type, default = KINDS[kind]
    control = make_control(setting, default)
    for value in invalid_values(setting):
        try:
            control.value = value
        except Exception:  # noqa: BLE001  the widget itself refuses it (a trait error): nothing to read back
            continue
        if control.value is not value:  # the widget clamped or coerced it: what it holds must be valid
            control_value(setting, control)
            continue
        with pytest.raises((TypeError, ValueError), match=setting.label):
            control_value(setting, control)


@pytest.mark.parametrize("schema, name", [(schema, name) for schema in (LAB_SETTINGS, TRAIN_SETTINGS)
                                          for name in schema])
def test_every_declared_setting_round_trips_through_its_control(schema, name):
    setting = schema[name]
    for value in valid_values(setting):
        if value is None and not shows_none(setting):
            with pytest.raises(ValueError, match="cannot show None"):
                make_control(setting, value)
            continue
        read = control_value(setting, make_control(setting, value))
        assert read == value and type(read) is type(value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_lab_setting_of_each_kind_is_a_declaration_and_a_field(monkeypatch, kind):
    """What CONTRIBUTING's "Add a lab setting" says, done here: the panel shows it and reads it back."""
    setting, widget_type, default = KINDS[kind]
    field = (setting.name, object, dataclasses.field(default=default))
    extended = dataclasses.make_dataclass("Extended", [field], bases=(LabSettings,))
    monkeypatch.setitem(LAB_SETTINGS, setting.name, setting)
    monkeypatch.setattr(lab_panel.LabPanel, "SHOWN", {**lab_panel.LabPanel.SHOWN, setting.name: setting.name})
    panel = lab_panel.LabPanel(extended())
    control = panel.controls[setting.name]
    assert type(control) is widget_type and control in panel.widget.children[1].children[0].children
    for value in valid_values(setting):
        panel.controls[setting.name] = make_control(setting, value)
        assert getattr(panel.settings(), setting.name) == value
