"""A graded function keeps its check's time limit in its own process, not on the grader's clock.

On a loaded machine (a class graded beside other work, CI), the round trip to the caller process
can take longer than a small function's limit: the last CI run failed an honest solution that way.
The caller process (stood in for here by a short script) now receives the limit and keeps it; the
grading process only waits longer for the reply.
"""

import subprocess
import sys
import time

import pytest

from d2lmini.exercises import guard
from d2lmini.exercises.guard import run_guarded
from d2lmini.grading.base import remote
from d2lmini.grading.base.remote import RemoteFunction, encode

# A caller process's stand-in: reads one request, waits `pause` seconds, then answers `reply`,
# with the request's time limit in it ("asked") for the test to read.
CALLER = """import json, sys, time
request = json.loads(sys.stdin.readline())
time.sleep({pause})
print(json.dumps(dict({reply}, asked=request.get("seconds"))), flush=True)
time.sleep(60)
"""


def _guarded(script: str, seconds: float | None, direct: bool = False):
    """(what a RemoteFunction over a process running `script` gave under a `seconds` guard, or called
    directly; the seconds it took; the RemoteFunction)."""
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    function = RemoteFunction(process, 300, "my_step")
    started = time.monotonic()
    try:
        result = function(1.0) if direct else run_guarded(function, (1.0,), seconds=seconds)
        return result, time.monotonic() - started, function
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()


def _call(pause: float, reply: dict, seconds: float):
    return _guarded(CALLER.format(pause=pause, reply=reply), seconds)


# A caller that answers with the time limit it was sent, as the call's value (and `extra`).
ECHO = ("import json, sys; request = json.loads(sys.stdin.readline()); "
        "print(json.dumps(dict({extra}, value=request['seconds'])), flush=True)")


def test_a_reply_that_comes_after_the_limit_still_counts_when_the_call_kept_it_there():
    outcome, took, _ = _call(1.5, {"value": encode(7)}, seconds=0.5)
    assert took >= 1.5
    assert not outcome.timed_out and outcome.error is None and outcome.value == 7, outcome


def test_the_caller_is_told_the_checks_limit_and_its_timeout_is_reported_as_one():
    outcome, _, _ = _guarded(ECHO.format(extra="{'timed_out': True, 'error': None}"), seconds=2.5)
    assert outcome.timed_out and outcome.seconds == 2.5, outcome
    assert isinstance(outcome.error, guard.RanPastItsLimit)


def test_the_limit_sent_is_the_checks_and_a_direct_call_may_take_the_callers_longest():
    outcome, _, _ = _guarded(ECHO.format(extra="{}"), seconds=2.5)
    assert outcome.error is None and outcome.value == 2.5, outcome
    value, _, _ = _guarded(ECHO.format(extra="{}"), seconds=None, direct=True)
    assert value == remote.CALL_SECONDS


def test_a_caller_that_never_answers_is_stopped_after_the_longer_wait(monkeypatch):
    monkeypatch.setattr(remote, "THERE_MARGIN", 1.0)
    outcome, took, function = _call(60, {"value": encode(7)}, seconds=0.25)
    assert outcome.timed_out and outcome.seconds == 0.25, outcome
    assert 2.0 <= took < 10, took  # the wait here: 4 x 0.25 + 1 s, then the guard's quarter-second retries
    assert function.state["broken"]


@pytest.mark.parametrize("asked, kept", [(2.5, 2.5), (1, 1.0), (0, 300.0), (-1, 300.0), (float("nan"), 300.0),
                                         (True, 300.0), ("5", 300.0), (None, 300.0), (1e9, 300.0)])
def test_the_caller_keeps_a_sensible_limit_whatever_the_request_says(asked, kept):
    from d2lmini.grading.run.caller import _seconds

    assert _seconds(asked) == kept
