"""Tests for the lab's run store (`d2lmini.lab.runs`): numbering, what changed, curve labels, the export."""

import csv
import io
import sys
import types
from dataclasses import replace

import pytest

from d2lmini.lab import LabResult, LabSettings
from d2lmini.lab.runs import RunLog, changed_settings, curve_labels, result_values, setting_text
from d2lmini.train import History


def finished(settings: LabSettings, valid: float = 6.0, model=None) -> LabResult:
    """A finished run's result, made by hand (no training)."""
    history = History(epoch=[0.5, 1.0], minibatches=[50, 100], train_perplexity=[8.0, 5.5],
                      valid_perplexity=[9.0, valid], seconds=[0.5, 1.0])
    return LabResult(settings, history=history, train_perplexity=5.5, valid_perplexity=valid,
                     sample="the end", minibatches=100, seconds=1.0, wall_seconds=1.4, model=model)


def test_runs_are_numbered_and_cleared():
    runs = RunLog()
    assert runs.add(finished(LabSettings())) == 1 and runs.add(finished(LabSettings())) == 2
    assert len(runs) == 2 and runs.next_number == 3
    runs.clear()
    assert len(runs) == 0 and runs.latest() is None and runs.add(finished(LabSettings())) == 1


def test_only_the_newest_run_keeps_its_model():
    runs = RunLog()
    runs.add(finished(LabSettings(), model=object()))
    runs.add(finished(LabSettings(), model=object()))
    assert runs.results[0].model is None and runs.results[1].model is not None


def test_changes_name_the_settings_that_differ_from_the_run_before():
    runs = RunLog()
    runs.add(finished(LabSettings()))
    runs.add(finished(LabSettings(num_hiddens=64, lr=0.03)))
    runs.add(finished(LabSettings(num_hiddens=64, lr=0.03)))
    runs.add(finished(LabSettings(num_hiddens=64, lr=0.03, cell="gru")))
    assert runs.changes(0) == [] and runs.changes(1) == ["num_hiddens", "lr"] and runs.changes(2) == []
    assert runs.changes(3) == ["cell"]
    assert changed_settings(None, LabSettings()) == []


def test_curve_labels_name_only_what_differs_among_the_runs_shown():
    a, b = finished(LabSettings()), finished(LabSettings(num_hiddens=64))
    assert curve_labels([a, b], [1, 2]) == ["#1: hidden 128", "#2: hidden 64"]
    c = finished(LabSettings(theta=None, optimizer="sgd"))
    assert curve_labels([a, c], [1, 3]) == ["#1: Adam, θ 1", "#3: SGD, θ off"]
    same = finished(LabSettings(temperature=1.5, prefix="a "))  # the sample does not change a curve
    assert curve_labels([a, same], [1, 2]) == ["#1", "#2"]
    gated = finished(LabSettings(cell="gru"))
    assert curve_labels([a, gated], [1, 2]) == ["#1: RNN", "#2: GRU"]
    seeded = finished(LabSettings(seed=3))  # a setting the panel does not show still tells runs apart
    assert curve_labels([a, seeded], [1, 2]) == ["#1: seed 0", "#2: seed 3"]


def test_setting_text_is_short_and_exact():
    settings = LabSettings(lr=0.003, theta=None, temperature=None)
    assert [setting_text(settings, n) for n in ("lr", "theta", "temperature", "optimizer", "prefix")] == [
        "lr 0.003", "θ off", "greedy", "Adam", "prefix 'the '"]
    cells = [setting_text(LabSettings(cell=c), "cell") for c in ("rnn", "gru", "lstm")]
    assert cells == ["RNN", "GRU", "LSTM"]


def test_a_stopped_run_reports_its_last_checkpoint():
    result = replace(finished(LabSettings()), valid_perplexity=None, train_perplexity=None, sample=None,
                     error="Training was stopped by an interrupt after 100 minibatches", interrupted=True)
    values = result_values(result)
    assert values["valid_perplexity"] == 6.0 and values["train_perplexity"] == 5.5
    assert values["valid_bits"] == pytest.approx(2.585, abs=1e-3) and "interrupt" in values["stopped"]


def test_the_csv_export_has_every_setting_and_result(tmp_path):
    runs = RunLog()
    runs.add(finished(LabSettings(), valid=6.0))
    runs.add(finished(LabSettings(num_hiddens=64, data_dir=tmp_path, cell="lstm"), valid=7.0))
    text = runs.to_csv(tmp_path / "runs.csv")
    assert (tmp_path / "runs.csv").read_text(encoding="utf-8") == text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["run"] for row in rows] == ["1", "2"]
    assert [row["num_hiddens"] for row in rows] == ["128", "64"]
    assert [row["cell"] for row in rows] == ["rnn", "lstm"]
    assert [float(row["valid_perplexity"]) for row in rows] == [6.0, 7.0]
    assert rows[1]["data_dir"] == str(tmp_path) and rows[0]["theta"] == "1.0" and rows[0]["stopped"] == ""
    columns = {"valid_bits", "train_perplexity", "minibatches", "seconds", "wall_seconds", "sample"}
    assert columns <= set(rows[0])


def test_to_dataframe_without_pandas_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    runs = RunLog()
    runs.add(finished(LabSettings()))
    with pytest.raises(ImportError, match="pip install pandas.*to_csv"):
        runs.to_dataframe()


def test_to_dataframe_hands_one_record_per_run_to_pandas(monkeypatch):
    made = []
    fake_pandas = types.ModuleType("pandas")
    fake_pandas.DataFrame = lambda records: made.append(records) or "frame"
    monkeypatch.setitem(sys.modules, "pandas", fake_pandas)
    runs = RunLog()
    runs.add(finished(LabSettings()))
    runs.add(finished(LabSettings(num_hiddens=64), valid=7.0))
    assert runs.to_dataframe() == "frame" and made == [runs.records()]
    assert [row["valid_perplexity"] for row in made[0]] == [6.0, 7.0]
