"""Tests for the Stop control of a panel whose run lasts more than a few seconds (notebook 08's lab).

A keyboard user stops a run with the panel's own Stop button (WCAG 2.2.2, 2.1.1): disabled, and so
out of the tab order, while nothing runs; enabled while a run or a sweep is in progress; its click
(handled in another kernel thread while the run trains, as JupyterLab's subshells do) stops the
run after its minibatch and keeps what was trained.
"""

import threading
import time
from dataclasses import replace

import ipywidgets as widgets
import pytest

from d2lmini.lab import LabSettings
from d2lmini.widgets import stop_enabled
from d2lmini.widgets.lab import make_lab

pytestmark = pytest.mark.torch_dependent

SMALL = LabSettings(num_hiddens=16, batch_size=8, num_steps=8, max_minibatches=3000, checkpoints=4)


def click_stop_while_it_runs(panel, start):
    """Run `start()` in a worker thread, click Stop as soon as it is enabled; return what `start` returned."""
    results = []
    worker = threading.Thread(target=lambda: results.append(start()))
    worker.start()
    deadline = time.monotonic() + 60
    while panel.stop_button.disabled and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # a few minibatches in
    enabled_during_the_run = not panel.stop_button.disabled
    panel.stop_button.click()
    worker.join(timeout=120)
    assert not worker.is_alive() and enabled_during_the_run
    return results[0]


def test_stop_is_out_of_the_tab_order_while_nothing_runs_and_named():
    panel = make_lab(replace(SMALL, max_minibatches=40))
    assert panel.stop_button.disabled and not panel.stop()  # nothing to stop
    name = panel.access.names[panel.stop_button]
    assert "Stop" in name and panel.access.widget.marks[next(
        c for c in panel.stop_button._dom_classes if c.startswith("d2l-a11y-"))]["stop"] is True
    panel.update()
    assert panel.stop_button.disabled and not panel.train_button.disabled  # disabled again after a run


def test_the_stop_button_stops_a_run_and_keeps_what_it_trained():
    panel = make_lab(SMALL)
    result = click_stop_while_it_runs(panel, panel.update)
    assert result.interrupted and 0 < result.minibatches < SMALL.max_minibatches
    assert "(stopped)" in panel.valid_ppl.value and len(panel.runs) == 1
    assert panel.stop_button.disabled and not panel.train_button.disabled


def test_the_stop_button_stops_a_sweep_keeping_the_runs_so_far():
    panel = make_lab(SMALL)
    panel.sweep_values.value = "8, 16, 24"
    sweep = click_stop_while_it_runs(panel, panel.sweep)
    assert sweep.stopped and len(sweep.results) == 1 and sweep.results[0].interrupted
    assert panel.stop_button.disabled and not panel.sweep_button.disabled


def test_stop_enabled_disables_the_button_again_even_when_the_run_fails():
    button = widgets.Button(description="Stop", disabled=True)
    with pytest.raises(RuntimeError), stop_enabled(button):
        assert not button.disabled
        raise RuntimeError("the run failed")
    assert button.disabled
