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
import torch

from d2lmini import interrupt, lab
from d2lmini.held import interrupts_held
from d2lmini.interrupt import interruptible, remember_main_loop
from d2lmini.lab import LabSettings, run_lab

pytestmark = pytest.mark.torch_dependent

ROOT = Path(__file__).resolve().parents[1]

# Runs the course's first imports and long cells in a fresh interpreter, as a kernel runs cells (an
# interrupt ends the cell, the process goes on), with SIGINT sent at MOMENT: "import:<module>" (once,
# as that module starts to import) or "after:<seconds>,<seconds>,..." (at each of those times from the
# start, each landing in whichever cell runs then); then runs every cell again, uninterrupted,
# and trains. Any moment is fine: what is checked is that the process still works afterwards.
# The first cell imports the package first: ■ during a cell's own `import torch` before it leaves
# torch's compiled core unable to load again, which no package can prevent.
FRESH_RUN = textwrap.dedent("""
    import os, signal, sys, textwrap
    import IPython  # in every kernel before its first cell: `import d2lmini` then holds ■ over its imports

    # SIGINT raises KeyboardInterrupt, as in a kernel running a cell (a background job ignores it)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    kind, _, where = sys.argv[1].partition(":")
    times = [float(t) for t in where.split(",")] if kind == "after" else [0.0]
    fired = []

    def interrupt(*args):
        if len(fired) < len(times):
            fired.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        if kind == "after" and len(fired) < len(times):  # the next moment of the schedule
            signal.setitimer(signal.ITIMER_REAL, times[len(fired)] - times[len(fired) - 1])

    CELLS = [
        "import d2lmini\\nimport torch\\nfrom d2lmini.lab import LabSettings, run_lab\\nimport d2lmini.plot",
        "params = [torch.zeros(3, requires_grad=True)]\\n"
        "adam = torch.optim.Adam(params, lr=0.1)\\nsgd = torch.optim.SGD(params, lr=0.1)",
        "first = run_lab(LabSettings(max_minibatches=8, checkpoints=2, num_chars=10, num_hiddens=16))",
        "from d2lmini.interrupt import interruptible\\nfrom d2lmini.train import TrainConfig, "
        "evaluate_perplexity, make_model, train\\n"
        "model = make_model('scratch', 30, TrainConfig(num_hiddens=8))\\n"
        "text = torch.randint(0, 30, (400,))\\nwith interruptible():\\n"
        "    for _ in range(30):\\n        evaluate_perplexity(model, text, num_steps=7)",
        "history = train(model, text, text, TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, "
        "max_minibatches=60, num_epochs=None, checkpoints=3))\\nassert history.step_loss or history.stopped",
    ]
    namespace = {}

    def run(source):
        try:
            exec(source, namespace)
        except KeyboardInterrupt:
            print("INTERRUPTED", source.splitlines()[0])
        except NameError as error:  # a name an interrupted cell did not define: the student runs it again
            print("NOT DEFINED", error)

    if kind == "import":
        sys.addaudithook(lambda event, args: interrupt() if event == "import" and args[0] == where else None)
    else:
        signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, times[0])
    for cell in CELLS:
        run(cell)
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("FIRED", bool(fired))
    for cell in CELLS:  # the same kernel, no interrupt: everything works
        exec(cell, namespace)
    import torch
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    second = namespace["first"]
    assert second.error is None, second.error
    assert second.valid_perplexity is not None and second.sample is not None
    assert not namespace["history"].stopped and namespace["history"].valid_perplexity
    print("SECOND OK")
""")


@pytest.mark.parametrize("kernel", [True, False], ids=["in IPython", "plain process"])
def test_the_package_imports_whole_only_where_an_interrupt_can_reach_a_cell(kernel):
    """In IPython (every kernel) `import d2lmini` imports torch._dynamo and pyplot whole, with ■ held; a
    plain process, like the grader's caller started once per exercise, does not pay for them."""
    probe = ("import sys\n" + ("import IPython\n" if kernel else "") + "import d2lmini\n"
             "print(sorted({'torch._dynamo', 'matplotlib.pyplot'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    expected = ["matplotlib.pyplot", "torch._dynamo"] if kernel else []
    assert done.stdout.strip() == str(expected)


def interrupt_a_fresh_run(moment: str) -> str:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", FRESH_RUN, moment], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_an_interrupt_inside_the_first_imports_leaves_later_cells_working():
    # sympy half-imported made every later run fail with "module 'sympy' has no attribute ..."
    out = interrupt_a_fresh_run("import:sympy.printing")
    assert "FIRED True" in out and "INTERRUPTED import d2lmini" in out and "SECOND OK" in out, out


@pytest.mark.slow
@pytest.mark.parametrize("moment", [
    "import:torch._dynamo", "import:sympy", "import:mpmath", "import:sympy.polys.densearith",
    "import:matplotlib.pyplot", "import:d2lmini.lab", "import:d2lmini.plot", "import:d2lmini.train",
    "after:0.0005,0.8,2.5,5.0", "after:0.05,1.2,3.0,6.0", "after:0.3,1.6,3.5,7.0", "after:0.6,2.0,4.0,8.0",
    "after:1.0,2.2,4.5,9.0"])
def test_an_interrupt_at_any_moment_of_the_first_cells_leaves_later_cells_working(moment):
    out = interrupt_a_fresh_run(moment)
    assert "SECOND OK" in out, out
    if moment.startswith("import:") and "FIRED False" in out:
        pytest.skip(f"this torch never imports {moment[7:]} here: the moment does not occur")


def test_an_interrupt_while_the_first_optimizer_is_made_never_escapes_train(monkeypatch):
    # ■ held during the optimizer's first import was delivered after it, before train's try/except
    from d2lmini import train as training

    class InterruptedWhileMade(torch.optim.SGD):
        def __init__(self, params, lr):
            with interrupts_held():
                signal.raise_signal(signal.SIGINT)
                super().__init__(params, lr=lr)

    monkeypatch.setitem(training.OPTIMIZERS, "sgd", ("SGD", InterruptedWhileMade))
    model = training.make_model("scratch", 20, training.TrainConfig(num_hiddens=8))
    text = torch.randint(0, 20, (300,), generator=torch.Generator().manual_seed(0))
    config = training.TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, max_minibatches=5,
                                  num_epochs=None,
                                  optimizer="sgd")
    with pytest.warns(RuntimeWarning, match="stopped by an interrupt"):
        history = training.train(model, text, text, config)
    assert history.interrupted and history.step_loss == []


def test_an_interrupt_as_train_puts_the_settings_back_keeps_the_finished_history(monkeypatch):
    from d2lmini import kernel_settings
    from d2lmini import train as training
    put_back = kernel_settings.restore

    def interrupted_while_putting_back(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        return put_back(*args, **kwargs)

    monkeypatch.setattr(kernel_settings, "restore", interrupted_while_putting_back)
    model = training.make_model("scratch", 20, training.TrainConfig(num_hiddens=8))
    text = torch.randint(0, 20, (300,), generator=torch.Generator().manual_seed(0))
    config = training.TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, max_minibatches=5,
                                  num_epochs=None)
    with pytest.warns(RuntimeWarning, match="nothing was stopped"):
        history = training.train(model, text, text, config)
    assert len(history.step_loss) == 5 and not history.interrupted and history.valid_perplexity


def test_an_interrupt_inside_no_grad_under_interruptible_leaves_gradients_on():
    # ■ between torch.no_grad()'s start and its end leaves gradients off; interruptible puts them back
    with pytest.warns(RuntimeWarning, match="switched gradients off"), pytest.raises(KeyboardInterrupt):
        with interruptible():
            torch.set_grad_enabled(False)  # where an interrupted no_grad would leave it
            signal.raise_signal(signal.SIGINT)
    assert torch.is_grad_enabled()


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
    from d2lmini.lab.sweep import run_sweep

    small = replace(LabSettings(), max_minibatches=4, checkpoints=1, num_hiddens=8, num_chars=5)
    calls = []

    def stop_after_first(index, result):
        calls.append(index)
        raise KeyboardInterrupt

    sweep = run_sweep(small, "num_hiddens", [8, 16], on_run=stop_after_first)
    assert len(sweep.results) == 1 and calls == [0]
    assert run_lab(small).error is None


# A kernel after its first cell (`import d2lmini`), forked once per try so that each try makes the
# kernel's first optimizer: ■ (SIGINT) lands at the Nth Python call of the cell that makes a student's
# own `torch.optim.Adam`, for N spread over every call that cell makes. Each try prints what its cell
# said and whether the next cell's training ran to its end.
FIRST_OPTIMIZER = textwrap.dedent("""
    import os, signal, sys
    import IPython  # as in every kernel: `import d2lmini` then imports what a first optimizer needs
    import d2lmini, torch
    from d2lmini.train import TrainConfig, make_model, train

    signal.signal(signal.SIGINT, signal.default_int_handler)
    CELL = "params = [torch.zeros(3, requires_grad=True)]\\nadam = torch.optim.Adam(params, lr=0.1)\\n"

    def calls_of(source, fire_at=None):
        # Run `source` in a fork, with ■ at its `fire_at`-th call; return how many calls it made.
        count = [0]
        def profile(frame, event, arg):
            if event == "call":
                count[0] += 1
                if count[0] == fire_at:
                    os.kill(os.getpid(), signal.SIGINT)
        modules = set(sys.modules)
        reading, writing = os.pipe()
        pid = os.fork()
        if pid:
            os.close(writing)
            with os.fdopen(reading) as told:
                calls = told.read()
            os.waitpid(pid, 0)
            return int(calls)
        sys.setprofile(profile)
        try:
            exec(source, {"torch": torch})
            said = "DONE"
        except KeyboardInterrupt:
            said = "INTERRUPTED"
        sys.setprofile(None)
        imported = len(set(sys.modules) - modules)
        model = make_model("scratch", 20, TrainConfig(num_hiddens=8))
        text = torch.randint(0, 20, (300,))
        history = train(model, text, text, TrainConfig(num_hiddens=8, batch_size=2, num_steps=5,
                        max_minibatches=20, num_epochs=None, checkpoints=1))
        print(fire_at, said, "calls", count[0], "new modules", imported,
              "next cell", "stopped" if history.stopped else "trained", flush=True)
        os.write(writing, str(count[0]).encode())
        os._exit(0)
""")


def test_an_interrupt_while_a_fresh_kernels_first_optimizer_is_made_stays_in_its_cell():
    """Issue 43 item 10: ■ during a student's first `torch.optim.Adam(...)` in a fresh kernel printed
    neither "done" nor "interrupted" in 13 of 15 tries, and stopped the next cell's `train()` instead.
    After `import d2lmini` (every notebook's first cell) the first Adam imports nothing, so ■ at any of
    its calls ends that cell and the next cell trains to its end."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    # The moments come from this process's own count: another process, with another hash seed, can
    # make a dozen calls more or fewer (134 against 122 at torch 2.3).
    probe = FIRST_OPTIMIZER + textwrap.dedent("""
        calls = calls_of(CELL)
        for at in sorted({1 + i * (calls - 1) // 14 for i in range(15)}):
            calls_of(CELL, at)
    """)
    tries = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           env=environment, timeout=300)
    assert tries.returncode == 0, tries.stderr
    _, said, _, calls, _, _, modules, _, _, next_cell = tries.stdout.splitlines()[0].split()
    assert (said, next_cell) == ("DONE", "trained") and int(modules) == 0, tries.stdout
    moments = sorted({1 + i * (int(calls) - 1) // 14 for i in range(15)})
    outcomes = [line.split() for line in tries.stdout.splitlines()[1:]]
    assert len(outcomes) == len(moments), tries.stdout
    # A collection can add or save a call or two from one fork to the next (131 against 133 at torch
    # 2.3): a moment past its own try's last call never fires, and is no try.
    fired = [o for o in outcomes if int(o[0]) <= int(o[3])]
    wrong = [o for o in fired if (o[1], o[-1]) != ("INTERRUPTED", "trained")]
    assert not wrong, f"{len(wrong)} of {len(fired)} tries: {wrong}"
    assert len(fired) >= len(moments) - 1, tries.stdout
