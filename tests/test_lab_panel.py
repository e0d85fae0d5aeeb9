"""Tests for the lab panel as a place to experiment: runs side by side, resampling, a sweep, stopping."""

import asyncio
import csv
import os
import signal
import threading
from dataclasses import replace

import ipywidgets as widgets
import pytest

from d2lmini.interrupt import remember_main_loop
from d2lmini.lab import LabSettings
from d2lmini.settings import LAB_SETTINGS
from d2lmini.widgets.lab import ANNOUNCE_EVERY_SECONDS, PanelRun, make_lab
from d2lmini.widgets.lab_views import overlay

pytestmark = pytest.mark.torch_dependent

SMALL = LabSettings(num_hiddens=16, batch_size=8, num_steps=8, max_minibatches=40, checkpoints=4)


@pytest.fixture
def panel():
    return make_lab(SMALL)


def test_two_runs_with_different_settings_are_two_rows_and_two_curves(panel):
    first = panel.update()
    panel.hidden_size.value = 32
    second = panel.update()
    assert first.error is None and second.error is None and len(panel.runs) == 2
    table = panel.runs_table.value
    assert table.count("class='lab-run'") == 2
    assert f"{first.valid_perplexity:.2f}" in table and f"{second.valid_perplexity:.2f}" in table
    assert "background:#fff3b0'>✱&nbsp;hidden 32<" in table  # what changed, marked by a symbol too
    assert "✱&nbsp;hidden 16<" not in table
    assert [label for label, _ in overlay(panel.runs)] == ["#1: hidden 16", "#2: hidden 32"]
    assert "took" in panel.progress_text.value and "estimated" in panel.progress_text.value


def test_the_estimate_and_progress_are_shown_while_a_run_trains(panel, monkeypatch):
    seen, during_the_run_numbers = [], []
    live = PanelRun.checkpoint

    def spy(run, history):
        live(run, history)
        seen.append((panel.progress.value, panel.progress_text.value))
        during_the_run_numbers.append((panel.numbers.value, panel.sample.value))

    panel.update()  # a first run, whose numbers and sample must not be shown as the second's
    monkeypatch.setattr(PanelRun, "checkpoint", spy)
    panel.hidden_size.value = 24
    panel.update()
    assert set(during_the_run_numbers) == {("", "")}
    assert len(seen) == 4 and all("of about" in text and "■" in text for _, text in seen)
    assert [value for value, _ in seen] == sorted(value for value, _ in seen) and 0 < seen[0][0] < 1
    assert "minibatch 40 of 40" in seen[-1][1]


def test_changing_only_the_temperature_resamples_without_training(panel):
    trained = panel.update()
    weights = [p.detach().clone() for p in trained.model.parameters()]
    panel.temperature.value = 1.5  # the observer resamples at once
    assert len(panel.runs) == 1 and "nothing was trained" in panel.message.value
    assert panel.result.sample != trained.sample and panel.result.settings.temperature == 1.5
    assert all((a == b).all() for a, b in zip(weights, trained.model.parameters(), strict=True))
    panel.temperature.value = trained.settings.temperature  # back: the run's own sample again
    assert panel.result.sample == trained.sample
    panel.prefix.value = "and "
    assert panel.result.sample.startswith("and ") and len(panel.runs) == 1
    assert panel.update().sample.startswith("and ") and len(panel.runs) == 1  # Train resamples too


def test_a_bad_prefix_after_a_run_is_a_message_and_keeps_the_run(panel):
    trained = panel.update()
    panel.prefix.value = "The Lab!"
    assert "never seen" in panel.message.value and panel.result is trained and len(panel.runs) == 1


def test_the_runs_can_be_cleared_and_exported(panel, tmp_path):
    panel.update()
    panel.hidden_size.value = 24
    panel.update()
    path = panel.export(tmp_path / "runs.csv")
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [row["num_hiddens"] for row in rows] == ["16", "24"] and "Saved 2 runs" in panel.message.value
    panel.clear()
    assert len(panel.runs) == 0 and "No runs yet" in panel.runs_table.value and panel.result is None
    assert panel.update().error is None and panel.runs.numbers == [1]


def test_a_sweep_from_the_panel_plots_one_point_per_value(panel):
    panel.sweep_setting.value = "num_hiddens"
    assert panel.sweep_values.value == "32, 128, 384"  # the suggestion for this setting
    panel.sweep_values.value = "8, 16, 24"
    assert "3 runs, about" in panel.sweep_estimate.value
    sweep = panel.sweep()
    assert sweep.stopped is None and len(sweep.results) == 3 and len(panel.runs) == 3
    assert bytes(panel.sweep_plot.value).startswith(b"\x89PNG")
    best = sweep.best()
    assert f"{best[1]:.2f}" in panel.message.value and "PPMd" in panel.message.value
    assert not panel.sweep_button.disabled and not panel.train_button.disabled


def test_a_sweep_that_cannot_run_says_why_and_trains_nothing(panel):
    panel.sweep_values.value = "16, lots"
    assert "&#x27;lots&#x27; is not a number" in panel.sweep_estimate.value  # escaped in HTML
    assert panel.sweep() is None and "&#x27;lots&#x27; is not a number" in panel.message.value
    assert len(panel.runs) == 0
    panel.budget.value = 3000
    panel.sweep_values.value = "1024, 2048"
    assert "one click of the lab" in panel.sweep_estimate.value and panel.sweep() is None


def test_the_sweep_suggestions_follow_the_setting(panel):
    panel.sweep_setting.value = "theta"
    assert panel.sweep_values.value == "0.1, 1, off"
    panel.sweep_setting.value = "lr"
    assert panel.sweep_values.value == "0.001, 0.01, 0.1"


def press_stop_during(click, monkeypatch):
    """Call `click()` with SIGINT ignored (as the idle kernel has it) and sent from the run's first
    checkpoint (never after a fixed delay, which a loaded machine may reach before the run starts).

    Returns what `click()` returned; checks that the ignoring handler is put back.
    """
    checkpoint, sent = PanelRun.checkpoint, []

    def press_stop_at_the_first(run, history):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        checkpoint(run, history)

    monkeypatch.setattr(PanelRun, "checkpoint", press_stop_at_the_first)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        returned = click()
    finally:
        restored = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)
    assert sent and restored is signal.SIG_IGN
    return returned


def test_the_interrupt_button_stops_a_panel_run_even_while_the_kernel_ignores_sigint(panel, monkeypatch):
    # Between messages the Jupyter kernel ignores SIGINT, and ipykernel 7 hands a widget message on
    # concurrently without changing that: the panel must turn SIGINT into KeyboardInterrupt itself.
    panel.budget.value = 3000
    panel.hidden_size.value = 16
    result = press_stop_during(panel.update, monkeypatch)
    assert result.interrupted and 0 < result.minibatches < 3000 and result.history.minibatches
    assert "stopped by an interrupt" in panel.message.value and "(stopped)" in panel.valid_ppl.value
    assert len(panel.runs) == 1 and "(stopped)" in panel.runs_table.value
    assert not panel.train_button.disabled and not panel.hidden_size.disabled


def test_the_interrupt_button_stops_a_sweep_keeping_the_runs_so_far(panel, monkeypatch):
    panel.sweep_values.value = "8, 16, 24"
    panel.budget.value = 3000
    sweep = press_stop_during(panel.sweep, monkeypatch)
    assert sweep.stopped and len(sweep.results) == 1 and sweep.results[0].interrupted
    assert "Stopped by an interrupt after 1 of 3 runs" in panel.message.value and len(panel.runs) == 1
    assert not panel.sweep_button.disabled


def test_the_panel_starts_with_an_empty_chart_and_no_runs():
    panel = make_lab(replace(SMALL, corpus="markov", prefix="a"))
    assert bytes(panel.plot.value).startswith(b"\x89PNG") and "No runs yet" in panel.runs_table.value


def test_the_interrupt_button_stops_a_run_started_in_a_kernel_subshell_thread(panel, monkeypatch):
    # JupyterLab 4.6 sends widget messages to a kernel subshell: the callback runs in another
    # thread while the main thread idles in its event loop, ignoring SIGINT.
    loop = asyncio.new_event_loop()
    remember_main_loop(loop)
    panel.budget.value = 3000
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    results, checkpoint, trained = [], PanelRun.checkpoint, threading.Event()

    def note_the_checkpoint(run, history):
        trained.set()
        checkpoint(run, history)

    monkeypatch.setattr(PanelRun, "checkpoint", note_the_checkpoint)
    worker = threading.Thread(target=lambda: results.append(panel.update()))

    async def press_stop_while_it_trains():
        worker.start()
        while not trained.is_set() and worker.is_alive():  # the run has asked the loop for a handler
            await asyncio.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)
        while worker.is_alive():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.05)  # the handler is put back through the loop

    try:
        loop.run_until_complete(press_stop_while_it_trains())
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
        remember_main_loop(None)
        loop.close()
    (result,) = results
    assert result.interrupted and 0 < result.minibatches < 3000 and "(stopped)" in panel.valid_ppl.value
    assert not panel.train_button.disabled


def test_a_run_is_an_object_made_when_it_begins_that_owns_its_drawing_and_end(panel):
    assert panel.run is None
    result = panel.update()
    run = panel.run
    assert isinstance(run, PanelRun) and run.finished == [result]
    assert [plan.settings for plan in run.plans] == [result.settings]
    assert run.plans[0].cost.seconds == result.estimated_seconds  # the estimate shown is the run's plan
    assert "estimated" in panel.progress_text.value and panel.progress.bar_style == "success"
    panel.hidden_size.value = 24
    panel.update()
    assert panel.run is not run  # a new run, a new object


def test_one_live_region_announces_a_run_once_per_state_change(panel):
    # Issue 35: the message is the panel's one live region; the perplexity beside the chart is shown only.
    assert panel.access.live == [panel.message]
    said = []
    panel.message.observe(lambda change: said.append(change["new"]), names="value")
    result = panel.update()
    assert len(said) == 2, said  # started, finished: a short run has no progress line
    assert "Training run #1: about" in said[0]
    assert f"Validation perplexity {result.valid_perplexity:.2f}" in said[1]
    said.clear()
    panel.run.last_draw = 0.0  # due for a redraw
    panel.run.checkpoint(result.history)  # within ten seconds of the last announcement: shown, not said
    assert said == [] and "training…" in panel.valid_ppl.value
    panel.run.last_announced -= ANNOUNCE_EVERY_SECONDS + 1
    panel.run.checkpoint(result.history)
    assert len(said) == 1 and "minibatch 40 of 40" in said[0]
    assert f"validation perplexity {result.history.valid_perplexity[-1]:.2f} so far" in said[0]


def test_the_cell_control_comes_from_the_declaration_and_is_named_after_it(panel):
    setting = LAB_SETTINGS["cell"]
    assert isinstance(panel.cell, widgets.Dropdown) and panel.cell.value == "rnn"
    assert panel.cell.options == tuple((label, name) for name, label in setting.choices.items())
    assert [name for _, name in panel.cell.options] == ["rnn", "gru", "lstm"]
    assert panel.cell.description == "recurrent cell"
    assert panel.access.names[panel.cell] == f"{setting.label}: {setting.help}"
    assert [name for name, _ in panel.sweep_setting.options].count(setting.label) == 1


def test_a_gated_cell_chosen_in_the_panel_trains_and_shows_in_the_table_and_curves(panel):
    panel.update()
    panel.cell.value = "lstm"
    result = panel.update()
    assert result.error is None and type(result.model).__name__ == "LSTMScratch"
    assert "✱&nbsp;LSTM<" in panel.runs_table.value and "LSTM, validation" in panel.numbers.value
    assert [label for label, _ in overlay(panel.runs)] == ["#1: RNN", "#2: LSTM"]
    panel.temperature.value = 1.5  # a new sample from the LSTM's model, without training
    assert panel.result.settings.temperature == 1.5 and panel.result.sample != result.sample
    assert panel.result.sample.startswith(SMALL.prefix) and len(panel.runs) == 2


def test_a_sweep_over_cells_from_the_panel_puts_the_cells_side_by_side(panel):
    panel.sweep_setting.value = "cell"
    assert panel.sweep_values.value == "rnn, gru, lstm"
    panel.sweep_values.value = "gru, rnn"
    assert "2 runs, about" in panel.sweep_estimate.value
    sweep = panel.sweep()
    assert sweep.stopped is None and sweep.values == ["gru", "rnn"] and len(panel.runs) == 2
    assert bytes(panel.sweep_plot.value).startswith(b"\x89PNG")
    alt = panel.access.alts[panel.sweep_plot]
    assert "Sweep of the recurrent cell" in alt and "GRU: " in alt and "RNN: " in alt
    best = sweep.best()
    assert f"came at {best[0].upper()}" in panel.message.value
