"""Self-check helpers for the exercises at the end of every notebook.

Each notebook has its own module here (`d2lmini.exercises.one_hot`, ...). A check
function takes the student's answer, prints a friendly verdict and a hint when the
answer is wrong, and returns a `Verdict` (truthy when right) so tests can call it.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """The result of a self-check: whether the answer is right and what to tell the student."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Show nothing when a notebook cell ends with a check: its message is already printed."""


def verdict(correct: bool, success: str, hint: str, quiet: bool = False) -> Verdict:
    """Return (and unless `quiet`, print) a `Verdict` with `success` or `hint` as its message."""
    result = Verdict(correct, ("Correct! " + success) if correct else ("Not yet. " + hint))
    if not quiet:
        print(result.message)
    return result


def close_enough(answer, expected, rel: float = 1e-6, abs_: float = 1e-9) -> bool:
    """Return True if the number `answer` is within tolerance of `expected` (False if not a number).

    Text such as "6" and True/False are not numbers here: an exercise that asks for a number
    is answered with one, so a quoted guess is never counted as right.
    """
    if isinstance(answer, str | bytes | bool):
        return False
    try:
        answer = float(answer)
    except (TypeError, ValueError):
        return False
    return abs(answer - expected) <= max(abs_, rel * abs(expected))


def is_count(answer, expected: int) -> bool:
    """Return True if `answer` is a number (not True/False) that rounds to the whole number `expected`."""
    return not isinstance(answer, bool) and close_enough(answer, expected, rel=0.0, abs_=0.5)
