"""Tests for d2lmini.settings: one declaration per setting, and everything derived from it."""

import argparse
import dataclasses
import importlib.util
import math
from pathlib import Path

import pytest
from settings_examples import an_invalid_choice

from d2lmini import settings as schema
from d2lmini.lab import LabSettings
from d2lmini.settings import (
    LAB_SETTINGS,
    LR_SCHEDULES,
    OPTIMIZERS,
    PREDICT_SETTINGS,
    TRAIN_SETTINGS,
    validate_settings,
    validate_value,
)
from d2lmini.train import TrainConfig
from d2lmini.widgets import make_control, menu_options, parse_menu_choice
from d2lmini.widgets.clipping import LR_CHOICES, THETA_CHOICES, ClippingPanel
from d2lmini.widgets.lab import LabPanel

REPO = Path(__file__).resolve().parent.parent


def test_every_field_of_trainconfig_and_labsettings_is_declared_once():
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert train_fields == set(TRAIN_SETTINGS)
    assert {f.name for f in dataclasses.fields(LabSettings)} == set(LAB_SETTINGS)
    for name, setting in LAB_SETTINGS.items():
        assert setting.name == name and setting.label and setting.help
    assert {"prefix", "num_chars", "temperature"} == set(PREDICT_SETTINGS)
    assert all(LAB_SETTINGS[name] is PREDICT_SETTINGS[name] for name in PREDICT_SETTINGS)


def test_the_defaults_pass_their_own_declaration():
    validate_settings(TrainConfig(), TRAIN_SETTINGS)
    validate_settings(LabSettings(), LAB_SETTINGS)


@pytest.mark.parametrize("name, value, error", [
    ("lr", "0.1", TypeError), ("lr", None, TypeError), ("lr", 0.0, ValueError), ("lr", math.nan, ValueError),
    ("theta", "1", TypeError), ("theta", math.nan, ValueError), ("theta", -1.0, ValueError),
    ("batch_size", 0, ValueError), ("batch_size", "3", TypeError), ("batch_size", 2.0, TypeError),
    ("num_steps", 0, ValueError), ("eval_num_steps", 0.5, TypeError), ("eval_num_steps", -1, ValueError),
    ("eval_batch_size", "8", TypeError), ("eval_batch_size", [8], TypeError), ("init", 3, TypeError),
    ("init", an_invalid_choice(TRAIN_SETTINGS["init"]), ValueError), ("max_seconds", 1e-300, ValueError),
    ("max_seconds", math.inf, ValueError),
    ("seed", True, TypeError), ("count_eval_time", 1, TypeError),
    ("optimizer", an_invalid_choice(TRAIN_SETTINGS["optimizer"]), ValueError),
    ("cell", an_invalid_choice(TRAIN_SETTINGS["cell"]), ValueError), ("cell", "GRU", ValueError),
    ("cell", 3, TypeError),
])
def test_a_wrong_value_is_named_by_its_label_and_its_field(name, value, error):
    setting = TRAIN_SETTINGS[name]
    with pytest.raises(error) as caught:
        validate_value(setting, value)
    assert f"The {setting.label} ({name}) must be" in str(caught.value)


def test_messages_stay_short_for_huge_or_odd_values():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    with pytest.raises(TypeError) as caught:
        validate_value(TRAIN_SETTINGS["lr"], "x" * 1_000_000)
    assert len(str(caught.value)) < 300
    with pytest.raises(TypeError, match="a Broken"):
        validate_value(TRAIN_SETTINGS["lr"], Broken())


def test_choices_are_spelled_out_once_and_used_everywhere():
    assert list(TRAIN_SETTINGS["lr_schedule"].choices) == list(LR_SCHEDULES)
    assert list(TRAIN_SETTINGS["optimizer"].choices) == list(OPTIMIZERS)
    panel = LabPanel(LabSettings(max_minibatches=20))
    assert [value for _, value in panel.optimizer.options] == list(OPTIMIZERS)
    assert [value for _, value in panel.corpus.options] == list(schema.CORPORA)
    assert list(TRAIN_SETTINGS["cell"].choices) == list(schema.CELLS) == ["rnn", "gru", "lstm"]
    assert panel.cell.options == tuple((label, name) for name, label in schema.CELLS.items())
    assert THETA_CHOICES == tuple(menu_options(TRAIN_SETTINGS["theta"], None)[0])
    assert set(LR_CHOICES) <= set(TRAIN_SETTINGS["lr"].menu)


def test_widget_limits_come_from_the_declaration():
    panel = LabPanel(LabSettings(max_minibatches=20))
    for name, attribute in LabPanel.SHOWN.items():
        setting = LAB_SETTINGS[name]
        control = getattr(panel, attribute)
        assert control.description == setting.label
        if setting.slider and not setting.log_slider:
            assert (control.min, control.max, control.step) == setting.slider
    assert (panel.learning_rate.min, panel.learning_rate.max) == TRAIN_SETTINGS["lr"].slider[:2]
    clipping = ClippingPanel()
    assert clipping.theta.description == TRAIN_SETTINGS["theta"].label


def test_menu_choices_are_checked_by_the_declaration():
    theta = TRAIN_SETTINGS["theta"]
    assert parse_menu_choice(theta, "off") is None and parse_menu_choice(theta, "2.5") == 2.5
    for bad in ("0", "nan", "-1"):
        with pytest.raises(ValueError, match="clipping θ"):
            parse_menu_choice(theta, bad)
    with pytest.raises(TypeError, match="clipping θ"):
        parse_menu_choice(theta, "banana")
    assert make_control(TRAIN_SETTINGS["optimizer"], "sgd").value == "sgd"


def _quality_parser() -> argparse.ArgumentParser:
    spec = importlib.util.spec_from_file_location("quality", REPO / "benchmarks" / "quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parser = argparse.ArgumentParser()
    for flag, name in module.SETTING_FLAGS.items():
        module.add_setting(parser, flag, TRAIN_SETTINGS[name], getattr(TrainConfig(), name))
    return parser


def test_the_benchmark_command_line_takes_its_choices_from_the_declaration():
    actions = {a.dest: a for a in _quality_parser()._actions}
    assert actions["schedule"].choices == list(LR_SCHEDULES)
    assert actions["optimizer"].choices == list(OPTIMIZERS)
    assert actions["init"].choices == list(TRAIN_SETTINGS["init"].choices)
