"""Process-wide settings are recorded and put back (`d2lmini.kernel_settings`), and the self-check's
guard names each one a student's function changed, never claiming what it could not put back."""

import os
import re
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from d2lmini import kernel_settings
from d2lmini.exercises import capstone, hidden_state
from d2lmini.exercises.guard import children, run_guarded
from d2lmini.kernel_settings import restore, snapshot

pytestmark = pytest.mark.torch_dependent


def rnn_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


def switch_gradients_off():
    torch.set_grad_enabled(False)


def set_meta_device():
    torch.set_default_device("meta")


def go_deterministic():
    torch.use_deterministic_algorithms(True, warn_only=True)


def set_float64():
    torch.set_default_dtype(torch.float64)


def detect_anomalies():
    torch.autograd.set_detect_anomaly(True)


def use_one_thread():
    torch.set_num_threads(torch.get_num_threads() + 1)


KEPT = []  # a guard a student keeps entered (a context object held in a global of their notebook)


def stay_in_inference_mode():
    KEPT.append(torch.inference_mode())
    KEPT[-1].__enter__()


CHANGES = [(switch_gradients_off, "grad", "switched gradients off"),
           (set_meta_device, "device", "set the default device to meta"),
           (go_deterministic, "deterministic", "switched deterministic algorithms on (warn only)"),
           (set_float64, "dtype", "set the default dtype to torch.float64"),
           (detect_anomalies, "anomaly", "switched anomaly detection on"),
           (use_one_thread, "threads", "set torch's thread count to"),
           (stay_in_inference_mode, "inference", "switched inference mode on")]


@pytest.mark.parametrize("change, setting, said", CHANGES, ids=[c[1] for c in CHANGES])
def test_each_setting_is_put_back_and_named(change, setting, said):
    before = snapshot()
    change()
    changes = restore(before)
    assert setting in [c.setting for c in changes] and all(c.put_back for c in changes), changes
    assert any(said in c.said for c in changes), changes
    assert snapshot() == before and kernel_settings.changed(before) == []


def test_inference_mode_left_on_is_really_left():
    before = snapshot()
    stay_in_inference_mode()
    restore(before)
    weight = torch.ones(2, requires_grad=True)
    (weight * 3).sum().backward()  # "inference tensors cannot be saved for backward" if still on
    assert weight.grad.tolist() == [3.0, 3.0] and not torch.is_inference_mode_enabled()


def test_nothing_is_said_to_be_put_back_that_was_not():
    before = snapshot()
    with torch.device("meta"):  # a device held by a `with` block: setting the default cannot undo it
        changes = restore(before)
        message = kernel_settings.describe(changes)
        assert [(c.setting, c.put_back) for c in changes] == [("device", False)]
        assert "could not be put back" in message and "put back." not in message
    assert snapshot() == before


def test_the_sigint_handler_is_put_back_in_the_main_thread():
    before = snapshot()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    (change,) = restore(before)
    assert change.setting == "sigint" and change.put_back and signal.getsignal(signal.SIGINT) is before.sigint


def test_describe_says_who_and_what():
    changes = [kernel_settings.Change("grad", "switched gradients off", True),
               kernel_settings.Change("device", "set the default device to meta", False)]
    assert kernel_settings.describe(changes) == (
        "Your function switched gradients off; that was put back. It also set the default device to "
        "meta, which could not be put back: restart the kernel (Kernel > Restart) to undo it.")
    assert kernel_settings.describe([]) == ""


# --- the self-check's guard --------------------------------------------------------------------------


def changing(change):
    def step(*args):
        change()
        return rnn_step(*args)
    return step


# torch 2.3 runs a student's torch.set_default_device("meta") inside the check without the check
# seeing it (the kernel is still on the CPU afterwards, which the test below asserts on every torch).
OLD_DEVICE_MODE = tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 4)
OLD_TORCH_DEVICE = pytest.mark.skipif(OLD_DEVICE_MODE, reason=(
    "torch 2.3's default-device mode is not seen by the check, so there is no change to name"))
IN_THE_CHECK = [pytest.param(*c, id=c[1], marks=OLD_TORCH_DEVICE if c[1] == "device" else ())
                for c in CHANGES if c[1] != "threads"]


@pytest.mark.parametrize("change, setting, said", IN_THE_CHECK)
def test_the_self_check_puts_back_and_names_each_setting(change, setting, said):
    before = snapshot()
    verdict = hidden_state.check_rnn_step(changing(change))
    assert not verdict and said in verdict.message and "put back" in verdict.message, verdict.message
    assert snapshot() == before


def test_a_thread_count_is_put_back_without_blame():
    before = snapshot()
    assert hidden_state.check_rnn_step(changing(use_one_thread))
    assert snapshot() == before


def test_a_student_who_sets_the_meta_device_leaves_later_checks_working():
    verdict = hidden_state.check_rnn_step(changing(set_meta_device))
    assert OLD_DEVICE_MODE or not verdict, verdict.message
    assert torch.ones(1).device.type == "cpu"
    verdict = capstone.check_train(lambda *args: None)  # a full loop check runs on the CPU again
    message = verdict.message
    assert not verdict and "Traceback" not in message and "meta" not in message, message


def replace_sigint_handler():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_replaced_interrupt_handler_is_put_back_and_named():
    before = signal.getsignal(signal.SIGINT)
    outcome = run_guarded(replace_sigint_handler, ())
    assert [(c.setting, c.put_back) for c in outcome.changed] == [("sigint", True)]
    assert signal.getsignal(signal.SIGINT) is before


def start_a_process():
    subprocess.Popen(["sleep", "60"])  # a short command line: the name shows it whole


@pytest.mark.skipif(children.descendants() is None, reason="this platform cannot list child processes")
def test_a_process_the_function_starts_is_ended_and_named():
    before = children.descendants()  # processes earlier tests left running are not the check's to end
    outcome = run_guarded(start_a_process, ())
    (name,) = outcome.processes
    assert "sleep 60" in name and not outcome.processes_unknown
    assert children.descendants() <= before
    verdict = hidden_state.check_rnn_step(changing(start_a_process))
    message = verdict.message
    assert not verdict and "now ended" in message and "sleep 60" in message, message


def test_processes_that_were_there_before_are_spared():
    already = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        outcome = run_guarded(lambda: None, ())
        assert outcome.processes == [] and already.poll() is None
    finally:
        already.kill()
        already.wait()


def test_the_settings_record_is_small_and_frozen():
    record = snapshot()
    with pytest.raises(AttributeError):
        record.grad = False
    assert isinstance(record.sigint, types.BuiltinFunctionType | types.FunctionType | int | signal.Handlers)


@OLD_TORCH_DEVICE
def test_the_guard_never_says_put_back_for_what_it_could_not():
    held = torch.device("meta")  # a `with torch.device(...)` block entered and never left
    try:
        outcome = run_guarded(held.__enter__, ())
        left_on_meta = torch.empty(()).device.type == "meta"
    finally:
        held.__exit__(None, None, None)
    assert left_on_meta and [(c.setting, c.put_back) for c in outcome.changed] == [("device", False)]
    message = kernel_settings.describe(outcome.changed)
    assert "set the default device to meta" in message and "could not be put back" in message, message
    assert "put back." not in message, message


def test_the_fixture_fails_a_test_that_leaves_a_setting_changed(tmp_path):
    conftest = Path(__file__).with_name("conftest.py")
    (tmp_path / "conftest.py").write_text(conftest.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "test_leaky.py").write_text(
        "import torch\n\n"
        "def test_leaves_gradients_off():\n    torch.set_grad_enabled(False)\n\n"
        "def test_after_it():\n    assert torch.is_grad_enabled()\n", encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
               str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(conftest.parents[1])})
    out = done.stdout + done.stderr
    # the leaky test errs at its teardown, naming the setting; the next one finds gradients on again
    assert done.returncode == 1 and re.search(r"2 passed, (\d+ warnings?, )?1 error", out), out
    assert "test_leaves_gradients_off" in out and "it switched gradients off" in out and "was put back" in out


def test_a_process_caught_while_it_starts_its_program_is_named_by_its_command(monkeypatch):
    """Right after `subprocess.Popen` returns, a loaded machine can show an empty command line."""
    shown = iter(["", "", "sleep 60"])
    monkeypatch.setattr(children, "_command", lambda pid: next(shown))
    monkeypatch.setattr(children, "_alive", lambda pid: True)
    assert children.name(42) == "process 42 (sleep 60)"
