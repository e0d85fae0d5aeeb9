"""Self-check helpers for the exercises at the end of every notebook.

Each notebook has its own module here (`d2lmini.exercises.one_hot`, ...). A check
function takes the student's answer, prints a friendly verdict and a hint when the
answer is wrong, and returns a `Verdict` (truthy when right) so tests can call it.

Numbers are judged by one rule in every notebook (`number_verdict`): an answer is right
when the exact value rounds to it at the digits the student gave (at least two significant
figures); an answer that is near but too short or rounded wrongly is told "close — give
more digits", never that its method is wrong. Functions that students write are checked
by `d2lmini.exercises.coding`.
"""

import functools
import math
from dataclasses import dataclass
from decimal import Decimal


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


NOT_ANSWERED = "Not answered yet: replace None by your answer and run the cell."
MIN_FIGURES = 2  # significant figures an answer must give (0.87 is enough; 0.9 is not)
CLOSE = 0.02  # an answer within 2 % that does not round right is "close", not "wrong"


def as_number(answer) -> float | None:
    """Return `answer` as a float if it is a number (not text, not True/False, not NaN), else None."""
    if isinstance(answer, str | bytes | bool):
        return None
    try:
        value = float(answer)
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: a tensor with several entries
        return None
    return None if math.isnan(value) else value


def _digits(value: float) -> tuple[int, float]:
    """(significant figures, half a unit in the last place) of `value` as Python writes it.

    A whole number counts to the units (4230 and 4230.0: 4 figures, half a unit 0.5).
    """
    if value == int(value) and abs(value) < 1e15:
        return len(str(abs(int(value))).lstrip("0")) or 1, 0.5
    _, digits, exponent = Decimal(repr(value)).as_tuple()
    return len("".join(map(str, digits)).lstrip("0")), 0.5 * 10.0**exponent


def rounds_to(answer: float, expected: float, min_figures: int = MIN_FIGURES) -> bool:
    """True if `expected` rounds to `answer` at the digits of `answer` (>= `min_figures` of them).

    A computed answer (many digits, float rounding noise) is right within 1e-6 relative.
    """
    if math.isinf(expected) or math.isinf(answer):
        return answer == expected
    if abs(answer - expected) <= 1e-6 * abs(expected) or answer == expected:
        return True
    figures, half_unit = _digits(answer)
    return figures >= min_figures and abs(answer - expected) <= half_unit * (1 + 1e-9)


def _is_close(answer: float, expected: float) -> bool:
    """Near enough to say "give more digits": within 2 %, or right at fewer figures (0.9 for 0.87)."""
    if not math.isfinite(expected) or not math.isfinite(answer):
        return False
    return abs(answer - expected) <= max(CLOSE * abs(expected), _digits(answer)[1] * (1 + 1e-9))


def number_verdict(answer, expected: float, success: str, hint: str, quiet: bool = False,
                   min_figures: int = MIN_FIGURES) -> Verdict:
    """Judge a number answer by the rounding rule (see the module docstring); print and return a Verdict.

    Right: `expected` rounds to the answer. Close (within 2 %, or right but with fewer than
    `min_figures` significant figures): "give more digits". Otherwise "Not yet" with `hint`.
    """
    value = as_number(answer)
    if answer is None:
        result = Verdict(False, NOT_ANSWERED)
    elif value is not None and rounds_to(value, expected, min_figures):
        return verdict(True, success, hint, quiet)
    elif value is not None and _is_close(value, expected):
        result = Verdict(False, f"Close — give more digits. {value:g} is near; give the value "
                         f"rounded correctly to at least {min_figures} significant figures.")
    else:
        prefix = "" if value is not None else f"Answer with a number, not {repr(answer)[:40]}. "
        result = Verdict(False, "Not yet. " + prefix + hint)
    if not quiet:
        print(result.message)
    return result




def self_check(check):
    """Decorate a `check_*(answer, ...)`: an answer still None is "not answered yet", with no hint.

    So a stored notebook, whose exercise cells were run with None, shows no hint and no answer.
    """
    @functools.wraps(check)
    def checked(answer, *args, quiet: bool = False, **kwargs) -> Verdict:
        if answer is None:
            result = Verdict(False, NOT_ANSWERED)
            if not quiet:
                print(result.message)
            return result
        return check(answer, *args, quiet=quiet, **kwargs)
    return checked
