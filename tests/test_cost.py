"""Tests for the time estimate (`d2lmini.lab.cost` and the lab's use of it): arithmetic and calibration."""

import math
from dataclasses import replace

import pytest

from d2lmini.lab import MAX_CLICK_SECONDS, LabSettings, expected_seconds, reference_seconds, validate_click
from d2lmini.lab.cost import (
    CELL_FACTOR_SIZES,
    CELL_FACTORS,
    EVAL_SECONDS,
    TRAIN_SECONDS,
    MachineSpeed,
    cell_factor,
    estimate_cost,
)
from d2lmini.settings import CELLS, LAB_SETTINGS
from d2lmini.train import CONTEXT_TOKENS

VOCAB, TRAIN, VALID = 28, 117_458, 13_051


def cost(**change):
    return estimate_cost(replace(LabSettings(), **change), VOCAB, TRAIN, VALID, 4, 120)


def test_training_time_is_the_sum_of_its_parts():
    c = cost(max_minibatches=100, num_hiddens=64, batch_size=16, num_steps=10)
    macs = 64 * 64 + 2 * 64 * VOCAB
    one = (TRAIN_SECONDS["minibatch"] + 10 * (TRAIN_SECONDS["step"] + TRAIN_SECONDS["step_mac"] * macs)
           + 160 * (TRAIN_SECONDS["token"] + TRAIN_SECONDS["token_mac"] * macs))
    assert c.train_seconds == pytest.approx(100 * one)
    assert c.eval_seconds > 0 and c.predict_seconds > 0
    assert c.seconds == pytest.approx(c.train_seconds + c.eval_seconds + c.predict_seconds)


def test_more_work_never_costs_less():
    base = cost()
    for name in ("num_hiddens", "batch_size", "num_steps", "max_minibatches"):
        assert cost(**{name: 2 * getattr(LabSettings(), name)}).seconds > base.seconds, name
    assert cost(max_minibatches=1200).train_seconds == pytest.approx(2 * base.train_seconds)


def test_evaluation_of_one_stream_costs_a_call_per_chunk():
    c = estimate_cost(replace(LabSettings(), eval_batch_size=None, eval_num_steps=10, checkpoints=1,
                              max_minibatches=1), VOCAB, TRAIN, VALID)
    calls = math.ceil((VALID - 1 + CONTEXT_TOKENS) / 10)  # the end of the training text, then the text
    assert c.eval_seconds > c.evaluations * calls * EVAL_SECONDS["call"]


def test_estimates_at_the_checkpoints_cost_less_than_one_stream_and_the_last_is_one_stream():
    one_stream = cost(eval_batch_size=None)
    estimates = cost(eval_batch_size=32)
    last_only = estimate_cost(replace(LabSettings(), eval_batch_size=32, checkpoints=None, max_minibatches=1),
                              VOCAB, TRAIN, VALID)
    assert estimates.eval_seconds < one_stream.eval_seconds / 2
    assert last_only.evaluations == 2
    assert last_only.eval_seconds > one_stream.eval_seconds / one_stream.evaluations


def test_machine_speed_is_the_median_ratio_of_the_last_runs():
    speed = MachineSpeed(keep=3)
    assert speed.factor == 1.0 and speed.seconds(4.0) == 4.0
    for measured in (2.0, 6.0, 4.0):
        speed.record(2.0, measured)
    assert speed.factor == 2.0 and speed.seconds(3.0) == 6.0
    speed.record(2.0, 20.0)  # only the last three count: ratios 3, 2, 10
    assert speed.factor == 3.0
    for estimated, measured in ((0.0, 1.0), (1.0, 0.0), (math.inf, 1.0), (1.0, math.nan)):
        speed.record(estimated, measured)
    assert speed.factor == 3.0
    even = MachineSpeed()
    even.record(1.0, 1.0)
    even.record(1.0, 2.0)
    assert even.factor == 1.5


def test_the_lab_learns_this_machines_speed_from_its_runs(monkeypatch):
    from d2lmini import lab

    speed = MachineSpeed()
    monkeypatch.setattr(lab, "MACHINE_SPEED", speed)
    settings = LabSettings(num_hiddens=16, max_minibatches=30)
    result = lab.run_lab(settings)
    assert result.error is None
    assert speed.ratios == [pytest.approx(result.wall_seconds / result.estimated_seconds)]
    assert expected_seconds(settings) == pytest.approx(reference_seconds(settings) * speed.factor)


def test_every_control_at_its_limit_alone_is_a_click_under_the_bound():
    for name in ("num_hiddens", "batch_size", "num_steps", "max_minibatches"):
        top = LAB_SETTINGS[name].slider[1]
        assert validate_click(replace(LabSettings(), **{name: top})) <= MAX_CLICK_SECONDS, name


def test_two_controls_at_their_limits_are_refused_with_what_to_make_smaller():
    with pytest.raises(ValueError, match="about [0-9]+ s on a 2-core laptop.*kept under 15 s.*smaller"):
        validate_click(LabSettings(num_hiddens=384, batch_size=256))


@pytest.mark.parametrize("cell", list(CELLS))
def test_a_default_click_of_every_cell_is_under_the_bound(cell):
    assert validate_click(LabSettings(cell=cell)) <= MAX_CLICK_SECONDS


def test_each_part_of_a_gated_run_is_the_rnns_times_its_measured_factor():
    rnn = cost(num_hiddens=64)
    for cell in ("gru", "lstm"):
        gated = cost(num_hiddens=64, cell=cell)
        assert gated.train_seconds == pytest.approx(rnn.train_seconds * cell_factor(cell, "train", 64))
        assert gated.predict_seconds == pytest.approx(rnn.predict_seconds * cell_factor(cell, "predict", 64))
        assert gated.eval_seconds > rnn.eval_seconds and gated.bytes > rnn.bytes
        assert gated.seconds > 2 * rnn.seconds  # a gated step is several of the RNN's operations


def test_the_rnns_estimate_is_the_one_before_cells_existed():
    assert cost() == cost(cell="rnn")
    assert all(cell_factor("rnn", part, h) == 1.0 for part in CELL_FACTORS["rnn"] for h in (1, 50, 10_000))


def test_the_cell_factor_is_measured_at_three_sizes_and_interpolated_in_log_size():
    small, middle, large = CELL_FACTORS["lstm"]["train"]
    low, mid, high = CELL_FACTOR_SIZES
    assert (cell_factor("lstm", "train", low), cell_factor("lstm", "train", mid),
            cell_factor("lstm", "train", high)) == pytest.approx((small, middle, large))
    halfway = round(math.sqrt(low * mid))  # halfway between 32 and 128 on a log scale
    assert cell_factor("lstm", "train", halfway) == pytest.approx((small + middle) / 2, rel=1e-9)
    assert cell_factor("lstm", "train", 1) == small and cell_factor("lstm", "train", 5000) == large
    assert all(f > 1 for cell in ("gru", "lstm") for f in CELL_FACTORS[cell]["train"])


def test_a_gated_click_over_the_bound_says_the_rnn_cell_is_faster():
    with pytest.raises(ValueError, match=r"under 15 s.*smaller, or choose the RNN cell \(the LSTM trains"):
        validate_click(LabSettings(cell="lstm", num_hiddens=384))
    assert validate_click(LabSettings(num_hiddens=384)) <= MAX_CLICK_SECONDS  # the same settings, the RNN
