"""■ (SIGINT) never breaks the kernel: `d2lmini.interrupt` and interrupts at any moment of a lab run."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from d2lmini import interrupt, lab
from d2lmini.interrupt import interruptible, interrupts_held, remember_main_loop
from d2lmini.lab import LabSettings, run_lab

pytestmark = pytest.mark.torch_dependent

ROOT = Path(__file__).resolve().parents[1]

# Interrupts a first lab run of a fresh interpreter at one moment, then runs the lab again in the
# same process. MOMENT is "import:<module>" (SIGINT as that module starts to import: the first
# optimizer of a process imports torch._dynamo and sympy) or "after:<seconds>" (a timer).
FRESH_RUN = textwrap.dedent("""
    import os, signal, sys, time
    from d2lmini.lab import LabSettings, run_lab

    # SIGINT raises KeyboardInterrupt, as in a kernel running a cell (a background job ignores it)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    kind, _, where = sys.argv[1].partition(":")
    settings = LabSettings(max_minibatches=8, checkpoints=2, num_chars=10, num_hiddens=16)
    fired = []

    def interrupt(*args):
        fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)

    if kind == "import":
        sys.addaudithook(lambda event, args: interrupt() if event == "import" and args[0] == where
                         and not fired else None)
    else:
        signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, float(where))
    first = run_lab(settings)
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("FIRST", bool(fired), first.interrupted, first.error is None, first.error)
    second = run_lab(settings)
    assert second.error is None, second.error
    assert second.valid_perplexity is not None and second.sample is not None
    print("SECOND OK")
""")


def interrupt_a_fresh_run(moment: str) -> str:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", FRESH_RUN, moment], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_an_interrupt_inside_the_first_optimizers_imports_leaves_later_runs_working():
    # sympy half-imported made every later run fail with "module 'sympy' has no attribute ..."
    out = interrupt_a_fresh_run("import:sympy.printing")
    assert "FIRST True True False" in out and "SECOND OK" in out, out


@pytest.mark.slow
@pytest.mark.parametrize("moment", [
    "import:torch._dynamo", "import:sympy", "import:mpmath", "import:sympy.polys.densearith",
    "import:torch.utils._triton", "import:torch._dynamo.backends", "import:torch._dynamo.variables",
    "after:0.0005", "after:0.05", "after:0.3", "after:1.0", "after:2.0", "after:4.0"])
def test_an_interrupt_at_any_moment_of_a_fresh_run_leaves_later_runs_working(moment):
    out = interrupt_a_fresh_run(moment)
    assert "SECOND OK" in out, out
    if moment.startswith("import:") and "FIRST False" in out:
        pytest.skip(f"this torch's first run never imports {moment[7:]}: the moment does not occur")
    if moment.startswith("import:"):  # the interrupt came during the first run: it must say so
        assert "FIRST True True False" in out, out


def test_an_interrupt_during_the_sample_keeps_the_finished_numbers(monkeypatch):
    def interrupted_sample(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lab, "predict", interrupted_sample)
    result = run_lab(LabSettings(max_minibatches=6, checkpoints=2, num_hiddens=16))
    assert result.interrupted and result.sample is None
    assert result.valid_perplexity == result.history.valid_perplexity[-1]
    assert result.train_perplexity == result.history.train_perplexity[-1]
    assert result.minibatches == 6
    assert "while generating the sample" in result.error
    assert f"{result.valid_perplexity:.2f}" in result.error


def sigint_handler():
    return signal.getsignal(signal.SIGINT)


@pytest.fixture(autouse=True)
def python_handles_sigint():
    """Let SIGINT raise KeyboardInterrupt, as in a kernel running a cell (pytest may run with it ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_interruptible_in_the_main_thread_raises_and_restores_the_handler():
    before = sigint_handler()
    with pytest.raises(KeyboardInterrupt), interruptible() as request:
        signal.raise_signal(signal.SIGINT)
    assert request.is_set() and sigint_handler() is before


def install_handler_late(monkeypatch, loop):
    """Enter and leave `interruptible()` in a thread while `loop` (the main loop) is not running."""
    monkeypatch.setattr(interrupt, "INSTALL_WAIT_SECONDS", 0.01)
    remember_main_loop(loop)
    requests = []

    def work():
        with interruptible() as request:
            requests.append(request)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return requests[0]


def test_a_handler_installed_after_the_wait_is_still_restored(monkeypatch):
    loop, before = asyncio.new_event_loop(), sigint_handler()
    try:
        install_handler_late(monkeypatch, loop)
        assert sigint_handler() is before  # the main loop has not installed anything yet
        loop.call_soon(loop.stop)
        loop.run_forever()  # now it installs the handler, then takes it away again
        assert sigint_handler() is before
    finally:
        interrupt._main_loop = None
        loop.close()


def test_a_handler_installed_in_time_stops_the_work_and_is_restored(monkeypatch):
    loop, before, seen = asyncio.new_event_loop(), sigint_handler(), []

    def work():
        with interruptible() as request:
            signal.raise_signal(signal.SIGINT)  # Python runs handlers in the main thread: the request's
            loop.call_soon_threadsafe(lambda: None)  # wake the main loop so that it runs it
            deadline = time.monotonic() + 10
            while not request.is_set() and time.monotonic() < deadline:
                time.sleep(0.001)
            seen.append(request.is_set())
        loop.call_soon_threadsafe(loop.stop)

    remember_main_loop(loop)
    try:
        thread = threading.Thread(target=work)
        loop.call_soon(thread.start)
        loop.run_forever()
        thread.join()
        loop.call_soon(loop.stop)
        loop.run_forever()
        assert seen == [True] and sigint_handler() is before
    finally:
        interrupt._main_loop = None
        loop.close()


def test_interrupts_held_delivers_the_interrupt_after_the_block_and_restores_the_handler():
    before, finished = sigint_handler(), []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)
            finished.append(True)  # the block runs to its end
    assert finished == [True] and sigint_handler() is before
    with interrupts_held():
        pass
    assert sigint_handler() is before


def test_interrupts_held_hands_the_interrupt_to_interruptible():
    with pytest.raises(KeyboardInterrupt), interruptible() as request:
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)
            assert not request.is_set()
    assert request.is_set()


def test_the_first_optimizer_is_made_with_interrupts_held(monkeypatch):
    from d2lmini import train
    seen = []

    class Recording:
        def __init__(self, params, lr):
            seen.append(sigint_handler())

    monkeypatch.setitem(train.OPTIMIZERS, "sgd", ("SGD", Recording))
    before = sigint_handler()
    train.make_optimizer("sgd", [], 0.1)
    assert seen and seen[0] is not before and sigint_handler() is before


def test_a_sweep_interrupted_keeps_every_later_run_working():
    from d2lmini.sweep import run_sweep

    small = replace(LabSettings(), max_minibatches=4, checkpoints=1, num_hiddens=8, num_chars=5)
    calls = []

    def stop_after_first(index, result):
        calls.append(index)
        raise KeyboardInterrupt

    sweep = run_sweep(small, "num_hiddens", [8, 16], on_run=stop_after_first)
    assert len(sweep.results) == 1 and calls == [0]
    assert run_lab(small).error is None
