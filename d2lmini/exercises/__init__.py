"""Self-check helpers for the exercises at the end of every notebook.

Each notebook has its own module here (`d2lmini.exercises.one_hot`, ...). A check
function takes the student's answer, prints a friendly verdict and a hint when the
answer is wrong, and returns a `Verdict` (truthy when right) so tests can call it.

Numbers are judged by one rule in every notebook (`number_verdict`): an answer is right
when the exact value rounds to it at the digits the student gave (at least two significant
figures), or agrees with it to `AGREE` (a long answer carried through a rounded step); a
question that asks "about how many" or invites a measurement accepts answers within its own
relative tolerance. An answer right at the digits given but too short is told "close — give
more digits"; one near but rounded wrongly is told so; neither gets a hint that its method
is wrong. Whole-number questions take whole numbers only (`is_count`), shapes take tuples
of whole numbers only (`as_shape`). No self-check raises, whatever it is given. Functions
that students write are checked by `d2lmini.exercises.coding`.
"""

import functools
import math
import operator
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
    value = as_number(answer)
    return value is not None and abs(value - expected) <= max(abs_, rel * abs(expected))


def whole_number(answer) -> int | None:
    """Return `answer` as an int if it is a whole number (7, 7.0, numpy's int64; not True, not 7.4)."""
    if isinstance(answer, bool):
        return None
    try:
        return operator.index(answer)
    except Exception:  # not an integer type: a float may still be whole
        pass
    value = as_number(answer)
    return int(value) if value is not None and math.isfinite(value) and value == int(value) else None


def is_count(answer, expected: int) -> bool:
    """Return True if `answer` is the whole number `expected` (7 or 7.0 for 7; 6.5 and 7.4 are not)."""
    return whole_number(answer) == expected


def count_verdict(answer, expected: int, success: str, hint: str, quiet: bool = False) -> Verdict:
    """Judge a whole-number answer; print and return a Verdict (a fraction is told to be whole)."""
    value = as_number(answer)
    if value is not None and whole_number(answer) is None:
        hint = f"The answer is a whole number, and {value:g} is not one. " + hint
    return verdict(is_count(answer, expected), success, hint, quiet)


def as_shape(answer) -> tuple[int, ...] | None:
    """Return `answer` as a tuple of ints if it is a tuple, list or torch.Size of ints, else None.

    (8.9, 64.2) and ('8', '64') are not shapes: a shape is counted, never rounded or quoted.
    """
    if not isinstance(answer, tuple | list) or len(answer) > 8 or any(isinstance(a, bool) for a in answer):
        return None
    try:
        return tuple(operator.index(a) for a in answer)
    except Exception:  # floats, text, anything else: not a shape
        return None


def shown(answer, limit: int = 40) -> str:
    """`repr(answer)` cut to `limit` characters, or the type's name when it cannot be written."""
    try:
        text = repr(answer)
    except Exception:  # a huge int past Python's digit limit, an object whose repr fails
        return f"a {type(answer).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


NOT_ANSWERED = "Not answered yet: replace None by your answer and run the cell."
MIN_FIGURES = 2  # significant figures an answer must give (0.87 is enough; 0.9 is not)
CLOSE = 0.02  # an answer within 2 % that does not round right is "close", not "wrong"
AGREE = 1e-4  # an answer this close (relative) is right at any number of digits: 2.68135 for 2.681417


def as_number(answer) -> float | None:
    """Return `answer` as a float if it is a number, else None (text, True/False, NaN, 10**400 too)."""
    if isinstance(answer, str | bytes | bool):
        return None
    try:
        value = float(answer)
    except Exception:  # not a number, a tensor of several entries, an int too large for a float
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

    A computed answer (many digits, float rounding noise) is right within `AGREE` relative.
    """
    if math.isinf(expected) or math.isinf(answer):
        return answer == expected
    if abs(answer - expected) <= AGREE * abs(expected) or answer == expected:
        return True
    figures, half_unit = _digits(answer)
    return figures >= min_figures and abs(answer - expected) <= half_unit * (1 + 1e-9)


def _needs_more_digits(answer: float, expected: float, min_figures: int) -> bool:
    """True if the answer is right at the few digits it gives (0.9 for 0.87): more digits would do."""
    if not math.isfinite(expected) or not math.isfinite(answer):
        return False
    figures, half_unit = _digits(answer)
    return figures < min_figures and abs(answer - expected) <= half_unit * (1 + 1e-9)


def _is_near(answer: float, expected: float) -> bool:
    finite = math.isfinite(expected) and math.isfinite(answer)
    return finite and abs(answer - expected) <= CLOSE * abs(expected)


def number_verdict(answer, expected: float, success: str, hint: str, quiet: bool = False,
                   min_figures: int = MIN_FIGURES, about: float = 0.0) -> Verdict:
    """Judge a number answer by the rounding rule (see the module docstring); print and return a Verdict.

    Right: `expected` rounds to the answer, or (for an "about" or measured question) the answer
    is within `about` of it, relative. Right at too few figures: "give more digits". Within 2 %
    but rounded wrongly: "close, check the rounding". Otherwise "Not yet" with `hint`.
    """
    value = as_number(answer)
    if answer is None:
        result = Verdict(False, NOT_ANSWERED)
    elif value is not None and (rounds_to(value, expected, min_figures) or (
            math.isfinite(value) and abs(value - expected) <= about * abs(expected))):
        return verdict(True, success, hint, quiet)
    elif value is not None and _needs_more_digits(value, expected, min_figures):
        result = Verdict(False, f"Close — give more digits. {value:g} is near; give the value "
                         f"rounded correctly to at least {min_figures} significant figures.")
    elif value is not None and _is_near(value, expected):
        result = Verdict(False, f"Close, but {value:g} is not the value rounded to the digits you gave: "
                         "check the rounding, and keep more digits through the intermediate steps.")
    else:
        prefix = "" if value is not None else f"Answer with a number that fits a float, not {shown(answer)}. "
        result = Verdict(False, "Not yet. " + prefix + hint)
    if not quiet:
        print(result.message)
    return result


def self_check(check):
    """Decorate a `check_*(answer, ...)`: an answer still None is "not answered yet", with no hint.

    So a stored notebook, whose exercise cells were run with None, shows no hint and no answer.
    An answer the check cannot read at all (an object whose comparison raises) is told so
    instead of raising: no self-check raises on any value.
    """
    @functools.wraps(check)
    def checked(answer, *args, quiet: bool = False, **kwargs) -> Verdict:
        if answer is None:
            result = Verdict(False, NOT_ANSWERED)
        else:
            try:
                return check(answer, *args, quiet=quiet, **kwargs)
            except Exception as error:  # any Python value can be an answer; none may break the check
                result = Verdict(False, f"Not yet. {shown(answer)} cannot be read as an answer here "
                                 f"({type(error).__name__}); give a plain number, tuple or text.")
        if not quiet:
            print(result.message)
        return result
    return checked
