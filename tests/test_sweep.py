"""Tests for the lab's sweep (`d2lmini.lab.sweep`): reading values, the time check, runs, stopping."""

from dataclasses import replace

import pytest

from d2lmini.lab import LabSettings, run_lab
from d2lmini.lab.sweep import (
    MAX_SWEEP_SECONDS,
    MAX_VALUES,
    SUGGESTED_VALUES,
    SWEEPABLE,
    parse_values,
    run_sweep,
    validate_sweep_time,
    value_text,
)

pytestmark = pytest.mark.torch_dependent

SMALL = LabSettings(num_hiddens=16, batch_size=8, num_steps=8, max_minibatches=20, checkpoints=2)


@pytest.mark.parametrize("name, text, values", [
    ("num_hiddens", "32, 64 128", [32, 64, 128]),
    ("num_hiddens", "32;64", [32, 64]),
    ("lr", "0.001, 1e-2, 0.1", [0.001, 0.01, 0.1]),
    ("theta", "0.5, 1, off", [0.5, 1.0, None]),
    ("max_minibatches", "100, 200.0", [100, 200]),
    ("cell", "rnn, GRU lstm", ["rnn", "gru", "lstm"]),
    ("cell", "LSTM; gru", ["lstm", "gru"]),
])
def test_values_are_read_as_a_student_types_them(name, text, values):
    assert parse_values(name, text) == values


@pytest.mark.parametrize("name, text, words", [
    ("num_hiddens", "32, big", "'big' is not a number"),
    ("num_hiddens", "32, 2.5", "whole numbers"),
    ("num_hiddens", "32", "needs 2 to"),
    ("num_hiddens", ", ".join(str(8 * (i + 1)) for i in range(MAX_VALUES + 1)), "needs 2 to"),
    ("num_hiddens", "32, 32", "repeat"),
    ("num_hiddens", "0, 32", "hidden size"),
    ("lr", "off, 0.1", "'off' is not a number"),
    ("lr", "-1, 0.1", "learning rate"),
    ("temperature", "0.5, 1", "A sweep varies one of"),
    ("optimizer", "sgd, adam", "A sweep varies one of"),
    ("cell", "rnn, transformer", "'transformer' is not a recurrent cell: type some of rnn, gru, lstm"),
    ("cell", "gru, GRU", "repeat"),
    ("cell", "rnn", "needs 2 to"),
])
def test_values_that_cannot_be_swept_give_a_message(name, text, words):
    with pytest.raises(ValueError, match=words):
        parse_values(name, text)


def test_every_suggestion_is_a_valid_sweep_within_the_time_limits():
    for name in SWEEPABLE:
        seconds = validate_sweep_time(LabSettings(), name, parse_values(name, SUGGESTED_VALUES[name]))
        assert len(seconds) == 3 and all(s > 0 for s in seconds)


def test_a_sweep_with_a_run_too_long_for_a_click_names_that_value():
    with pytest.raises(ValueError, match="hidden size at 4000.*one click of the lab"):
        validate_sweep_time(LabSettings(), "num_hiddens", [64, 4000])


def test_a_sweep_too_long_in_total_is_refused():
    values = [256, 240, 224, 208, 192, 176]  # each under 15 s, together over a minute
    with pytest.raises(ValueError, match="a sweep is kept under 60 s"):
        validate_sweep_time(LabSettings(max_minibatches=1200), "num_hiddens", values)
    assert len(validate_sweep_time(LabSettings(max_minibatches=1200), "num_hiddens", values[:3])) == 3


def test_each_run_of_a_sweep_is_the_run_the_lab_would_train_alone():
    sweep = run_sweep(SMALL, "num_hiddens", [8, 24])
    assert sweep.stopped is None and [r.settings.num_hiddens for r in sweep.results] == [8, 24]
    alone = run_lab(replace(SMALL, num_hiddens=24))
    assert sweep.results[1].valid_perplexity == alone.valid_perplexity
    assert sweep.results[1].sample == alone.sample
    assert [v for v, _ in sweep.perplexities()] == [8, 24]
    assert sweep.best() == min(sweep.perplexities(), key=lambda pair: pair[1])


def test_a_failed_run_is_kept_and_the_sweep_goes_on():
    sweep = run_sweep(replace(SMALL, theta=None), "lr", [1000.0, 0.01])
    assert sweep.results[0].diverged and sweep.results[1].error is None and sweep.stopped is None
    assert sweep.perplexities() == [(0.01, sweep.results[1].valid_perplexity)]


def test_an_interrupt_between_runs_stops_the_sweep_keeping_the_runs_so_far():
    def interrupt(index, result):
        raise KeyboardInterrupt

    sweep = run_sweep(SMALL, "num_hiddens", [8, 16, 24], on_run=interrupt)
    assert len(sweep.results) == 1 and sweep.results[0].error is None
    assert "after 1 of 3 runs" in sweep.stopped


def test_an_interrupt_during_a_run_stops_the_sweep_and_keeps_the_partial_run():
    seen = []

    def interrupt_second_run(history):
        seen.append(history)
        if len(seen) == 3:  # the first checkpoint of the second run (two per run)
            raise KeyboardInterrupt

    sweep = run_sweep(SMALL, "num_hiddens", [8, 16, 24], on_checkpoint=interrupt_second_run)
    assert len(sweep.results) == 2 and sweep.results[1].interrupted
    assert sweep.results[1].history.minibatches and sweep.results[1].valid_perplexity is None
    assert "after 2 of 3 runs" in sweep.stopped


def test_a_sweep_over_cells_trains_each_cell_with_everything_else_the_same():
    sweep = run_sweep(SMALL, "cell", ["rnn", "gru", "lstm"])
    assert sweep.stopped is None and [v for v, _ in sweep.perplexities()] == ["rnn", "gru", "lstm"]
    assert [type(r.model).__name__ for r in sweep.results] == ["RNNScratch", "GRUScratch", "LSTMScratch"]
    assert all(r.settings == replace(SMALL, cell=r.settings.cell) for r in sweep.results)
    assert sweep.results[2].valid_perplexity == run_lab(replace(SMALL, cell="lstm")).valid_perplexity
    assert [value_text(v, "cell") for v in sweep.values] == ["RNN", "GRU", "LSTM"]


def test_the_suggested_sweep_over_cells_fits_a_sweep_and_costs_more_for_gated_cells():
    suggested = parse_values("cell", SUGGESTED_VALUES["cell"])
    rnn, gru, lstm = validate_sweep_time(LabSettings(), "cell", suggested)
    assert rnn < gru and rnn < lstm and rnn + gru + lstm <= MAX_SWEEP_SECONDS
