"""■ (SIGINT) at any moment of a self-check ends in a verdict or a KeyboardInterrupt, and the kernel
stays as it was (#43, item 10: "cannot join thread before it is started").

A trace function counts the lines the guard runs and sends SIGINT to the process at the N-th one,
for every N: the interrupt lands wherever the guard is then (starting its watchdog, putting the
kernel back, ...), as ■ does in a notebook.
"""

import signal
import sys
from pathlib import Path

import pytest
import torch

from d2lmini.exercises import Verdict, guard, hidden_state

pytestmark = pytest.mark.torch_dependent

GUARD = str(Path(guard.__file__).parent)


def rnn_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


class InterruptAtLine:
    """A trace function that sends SIGINT the first time the guard runs the line `at` (file, line
    number), and records the lines the guard runs, in the order it first runs them."""

    def __init__(self, at: tuple[str, int] | None):
        self.at, self.fired, self.seen = at, False, {}

    def __call__(self, frame, event, arg):
        if event == "call" and not self.fired and frame.f_code.co_filename.startswith(GUARD):
            return self.line
        return None

    def line(self, frame, event, arg):
        if self.fired:
            return None
        if event == "line":
            where = (frame.f_code.co_filename, frame.f_lineno)
            self.seen.setdefault(where, len(self.seen))
            if where == self.at:
                self.fired = True
                signal.raise_signal(signal.SIGINT)
        return self.line


def check_interrupted_at(at: tuple[str, int] | None):
    """Run one self-check with SIGINT at the guard's line `at`: (the verdict or the exception, the
    guard's lines in the order they first ran)."""
    tracer = InterruptAtLine(at)
    sys.settrace(tracer)
    try:
        result = hidden_state.check_rnn_step(rnn_step)
    except BaseException as error:  # what the notebook would see
        result = error
    finally:
        sys.settrace(None)
    return result, list(tracer.seen)


def test_an_interrupt_at_any_line_of_the_guard_ends_in_a_verdict_or_keyboard_interrupt():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert hidden_state.check_rnn_step(rnn_step)  # the first check fingerprints the package: not counted
    _, lines = check_interrupted_at(None)  # never: list the lines one check runs
    assert len(lines) > 100
    before = (sys.getprofile(), signal.getsignal(signal.SIGALRM), torch.is_grad_enabled())
    interrupted = 0
    for at in lines:
        result, _ = check_interrupted_at(at)
        assert isinstance(result, Verdict | KeyboardInterrupt), (at, repr(result))
        interrupted += isinstance(result, KeyboardInterrupt)
        after = (sys.getprofile(), signal.getsignal(signal.SIGALRM), torch.is_grad_enabled())
        assert after == before, (at, after)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, at
    assert interrupted > len(lines) // 2  # most of them end as ■ should: in a KeyboardInterrupt
    assert hidden_state.check_rnn_step(rnn_step)  # and the next check works
