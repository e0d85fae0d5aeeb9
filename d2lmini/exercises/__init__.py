"""Self-check helpers for the exercises at the end of every notebook.

Each notebook has its own module here (`d2lmini.exercises.one_hot`, ...). A check
function takes the student's answer and returns a `Verdict` (truthy when right) with a
friendly message and a hint when the answer is wrong; a notebook cell that ends with the
check shows the verdict (it displays itself, nothing is printed).

Numbers are judged by one rule in every notebook (`number_verdict`): an answer is right
when the exact value rounds to it at the digits the student gave (at least two significant
figures), or agrees with it to `AGREE` (a long answer carried through a rounded step); a
question that asks "about how many" or invites a measurement accepts answers within its own
relative tolerance, bound included. The digits a student gave are read from any number:
a Python or numpy number, a one-entry tensor or array, a `Fraction` or a `Decimal`; a
float32 (or float16) value is read as the shortest decimal that type stores as it, so
`torch.tensor(0.87)` is 0.87, not 0.8700000047. Bounds are compared exactly (fractions).
An answer right at the digits given but too short is told "close — give more digits"; one
near but rounded wrongly is told so; neither gets a hint that its method is wrong.
Whole-number questions take whole numbers only (`is_count`), shapes take tuples of whole
numbers only (`as_shape`). No self-check raises, whatever it is given. Functions that
students write are checked by `d2lmini.exercises.coding`.
"""

import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from d2lmini.i18n import N_, _

NOT_YET = "Not yet. "  # how every verdict on a wrong answer starts, in English (`Verdict.not_yet`)


@dataclass(frozen=True)
class Verdict:
    """The result of a self-check: whether the answer is right and what to tell the student.

    `printed` keeps what a student's function printed while it was checked (capped). A
    notebook cell that ends with a check shows the verdict: `_repr_pretty_` is what Jupyter
    and IPython display, so no check prints anything itself. A wrong answer's verdict is made by
    `not_yet`, which keeps what is wrong in `problem` (the message without its "Not yet. "), so a
    caller that words it again (the capstone naming its first failing piece) never parses text.
    Messages are worded in the language d2lmini speaks when the check runs (`d2lmini.i18n`).
    """

    correct: bool
    message: str
    printed: str = ""
    problem: str = ""

    @classmethod
    def not_yet(cls, problem: str, printed: str = "", **fields) -> "Verdict":
        """The verdict on a wrong answer: the message is "Not yet. " + `problem`, kept as `problem`."""
        # TRANSLATORS: how every verdict on a wrong answer starts; {problem} says what is wrong.
        return cls(False, _("Not yet. {problem}").format(problem=problem), printed, problem, **fields)

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return self.message

    def shown(self) -> str:
        """The text a notebook shows: what the function printed (if anything), then the message."""
        if not self.printed:
            return self.message
        # TRANSLATORS: {printed} is what the student's function printed, {message} the verdict.
        return _("What your function printed:\n{printed}\n{message}").format(printed=self.printed,
                                                                              message=self.message)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.shown())


def verdict(correct: bool, success: str, hint: str) -> Verdict:
    """Return a `Verdict` with "Correct! " + `success` or "Not yet. " + `hint` as its message."""
    return Verdict(True, correct_message(success)) if correct else Verdict.not_yet(hint)


def correct_message(success: str) -> str:
    """The message of a right answer: "Correct! " + `success`, in the language d2lmini speaks."""
    # TRANSLATORS: how every verdict on a right answer starts; {success} says why it is right.
    return _("Correct! {success}").format(success=success)


def close_enough(answer, expected, rel: float = 1e-6, abs_: float = 1e-9) -> bool:
    """Return True if the number `answer` is within tolerance of `expected` (False if not a number).

    Text such as "6" and True/False are not numbers here: an exercise that asks for a number
    is answered with one, so a quoted guess is never counted as right.
    """
    value = as_number(answer)
    return value is not None and abs(value - expected) <= max(abs_, rel * abs(expected))


def whole_number(answer) -> int | None:
    """Return `answer` as an int if it is a whole number (7, 7.0, int64, tensor(7); not True or 7.4)."""
    number = read_number(answer)
    if number is None or not number.is_finite():
        return None
    value = number.exact
    return int(value) if value.denominator == 1 else None


def is_count(answer, expected: int) -> bool:
    """Return True if `answer` is the whole number `expected` (7 or 7.0 for 7; 6.5 and 7.4 are not)."""
    return whole_number(answer) == expected


def count_verdict(answer, expected: int, success: str, hint: str) -> Verdict:
    """Judge a whole-number answer; return a Verdict (a fraction is told to be whole, text to be a number)."""
    number = read_number(answer)
    if number is None:
        # TRANSLATORS: {answer} is what the student gave (Python's repr); {hint} the exercise's hint.
        hint = _("Answer with a number, not {answer}. {hint}").format(answer=shown(answer), hint=hint)
    elif whole_number(answer) is None:
        hint = _("The answer is a whole number, and {number} is not one. "
                 "{hint}").format(number=number, hint=hint)
    return verdict(is_count(answer, expected), success, hint)


def as_shape(answer) -> tuple[int, ...] | None:
    """Return `answer` as a tuple of ints if it is a tuple, list, torch.Size or 1-d integer array of ints.

    (8.9, 64.2) and ('8', '64') are not shapes: a shape is counted, never rounded or quoted.
    """
    if _is_array(answer) and len(getattr(answer, "shape", ())) == 1 and "int" in str(answer.dtype):
        answer = tuple(answer.tolist())
    if not isinstance(answer, tuple | list) or len(answer) > 8 or any(_is_boolean(a) for a in answer):
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
        # TRANSLATORS: an object that cannot be written out, named by its Python type ("a Foo").
        return _("a {type_name}").format(type_name=type(answer).__name__)
    return text if len(text) <= limit else text[: limit - 3] + "..."


NOT_ANSWERED = N_("Not answered yet: replace None by your answer and run the cell.")
MIN_FIGURES = 2  # significant figures an answer must give (0.87 is enough; 0.9 is not)
CLOSE = Fraction(2, 100)  # an answer within 2 % that does not round right is "close", not "wrong"
AGREE = Fraction(1, 10_000)  # this close (relative) is right at any number of digits: 2.68135 for 2.681417


@dataclass(frozen=True)
class Number:
    """A number as the student wrote it: its `decimal` digits, or an `exact` fraction with no digits.

    `decimal` is None for a `Fraction` with no finite decimal form (1/3: it has every digit);
    `infinite` is +1 or -1 for ±inf (then `exact` is 0).
    """

    exact: Fraction
    decimal: Decimal | None
    infinite: int = 0

    def is_finite(self) -> bool:
        return not self.infinite

    def __float__(self) -> float:
        return self.infinite * math.inf if self.infinite else float(self.exact)

    def __str__(self) -> str:
        if self.infinite:
            return "inf" if self.infinite > 0 else "-inf"
        return str(self.decimal) if self.decimal is not None else str(self.exact)


def _is_boolean(value) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_" or (
        _is_array(value) and str(getattr(value, "dtype", "")) in ("bool", "torch.bool"))


def _is_array(value) -> bool:
    """A torch tensor or a numpy array or scalar (recognised without importing either)."""
    module = type(value).__module__ or ""
    return module.startswith(("torch", "numpy")) and hasattr(value, "dtype")


def _shortest(value: float, stored: Callable[[float], float] | None) -> str:
    """The shortest decimal that, stored in the answer's own float type, gives `value` back."""
    for figures in range(1, 18):
        text = f"{value:.{figures}g}"
        if stored(float(text)) == value:
            return text
    return repr(value)


def _float_type(answer):
    """How `answer`'s own float type stores a number (float32, float16, bfloat16), or None for float64."""
    dtype = str(getattr(answer, "dtype", "float64")).removeprefix("torch.")
    if dtype in ("float64", "double", "longdouble", "float128"):
        return None
    if type(answer).__module__.startswith("torch"):
        import torch
        return lambda v: torch.tensor(v, dtype=answer.dtype).item()
    import numpy as np
    return lambda v: float(np.array(v, dtype=answer.dtype))


def _scalar(answer):
    """A one-entry tensor or array as a 0-d one of the same dtype; anything else as it is."""
    if not _is_array(answer) or not hasattr(answer, "reshape"):
        return answer
    if getattr(answer, "is_sparse", False) or str(getattr(answer, "device", "cpu")).startswith("meta"):
        raise ValueError("not a readable tensor")
    size = answer.numel() if hasattr(answer, "numel") else answer.size
    if size != 1:
        raise ValueError("a tensor of several entries is not a number")
    return answer.reshape(())


def _finite_decimal(exact: Fraction) -> Decimal | None:
    """`exact` as the shortest decimal equal to it (Fraction("3.364") is 3.364), or None when it has
    no finite decimal form (1/3: then it has every digit)."""
    rest, twos, fives = exact.denominator, 0, 0
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    places = max(twos, fives)
    if rest != 1 or places > 60:  # no finite decimal, or none a student typed
        return None
    return Decimal(exact.numerator * 10**places // exact.denominator).scaleb(-places)


def read_number(answer) -> Number | None:
    """Return `answer` as the `Number` the student wrote, or None if it is not a number.

    Text, True/False, NaN and complex values are not numbers. Python and numpy numbers,
    one-entry tensors and arrays, Fractions and Decimals are. A float32 value is read at the
    digits it was written with (`np.float32(2.24)` is 2.24, not 2.2400000095).
    """
    if answer is None or isinstance(answer, str | bytes) or _is_boolean(answer):
        return None
    try:
        answer = _scalar(answer)
        if "complex" in str(getattr(answer, "dtype", "")) or isinstance(answer, complex):
            return None
        if isinstance(answer, Fraction | int) or "int" in str(getattr(answer, "dtype", "")):
            exact = Fraction(answer if isinstance(answer, Fraction | int) else int(answer.item()))
            return Number(exact, _finite_decimal(exact))
        if isinstance(answer, Decimal):
            decimal = answer
        else:
            value = float(answer.item() if _is_array(answer) else answer)
            stored = _float_type(answer) if _is_array(answer) else None
            decimal = Decimal(_shortest(value, stored) if stored and math.isfinite(value) else repr(value))
    except Exception:  # not a number, a tensor of several entries, an object whose __float__ raises
        return None
    if decimal.is_nan():
        return None
    if decimal.is_infinite():
        return Number(Fraction(0), None, 1 if decimal > 0 else -1)
    return Number(Fraction(decimal), decimal)


def as_number(answer) -> float | None:
    """Return `answer` as a float if it is a number, else None (text, True/False, NaN, 10**400 too)."""
    number = read_number(answer)
    if number is None:
        return None
    try:
        return float(number)
    except OverflowError:  # an int too large for a float
        return None


def _unit(number: Number) -> tuple[int, Fraction] | None:
    """(significant figures, half a unit in the last place) of the digits given; None for an exact fraction.

    A whole number counts to the units (4230 and 4230.0: 4 figures, half a unit 1/2).
    """
    if number.decimal is None:
        return None
    if number.exact.denominator == 1:
        return len(str(abs(number.exact.numerator)).lstrip("0")) or 1, Fraction(1, 2)
    _sign, digits, exponent = number.decimal.as_tuple()
    return len("".join(map(str, digits)).lstrip("0")), Fraction(1, 2) * Fraction(10) ** exponent


def _exact(value: float) -> Fraction:
    return Fraction(value)


def rounds_to(answer, expected: float, min_figures: int = MIN_FIGURES) -> bool:
    """True if `expected` rounds to `answer` at the digits of `answer` (>= `min_figures` of them).

    A computed answer (many digits, float rounding noise) is right within `AGREE` relative.
    Compared exactly: an answer exactly half a unit away counts as right.
    """
    number = answer if isinstance(answer, Number) else read_number(answer)
    if number is None:
        return False
    if not number.is_finite() or math.isinf(expected):
        return float(number) == expected
    gap, target = abs(number.exact - _exact(expected)), _exact(expected)
    if gap <= AGREE * abs(target):
        return True
    unit = _unit(number)
    return unit is not None and unit[0] >= min_figures and gap <= unit[1]


def _needs_more_digits(number: Number, expected: float, min_figures: int) -> bool:
    """True if the answer is right at the few digits it gives (0.9 for 0.87): more digits would do."""
    unit = _unit(number) if number.is_finite() and math.isfinite(expected) else None
    return unit is not None and unit[0] < min_figures and abs(number.exact - _exact(expected)) <= unit[1]


def _within(number: Number, expected: float, share: Fraction) -> bool:
    """True if the answer is within `share` of `expected`, relative, bound included (compared exactly)."""
    finite = number.is_finite() and math.isfinite(expected)
    return finite and abs(number.exact - _exact(expected)) <= share * abs(_exact(expected))


def number_verdict(answer, expected: float, success: str, hint: str,
                   min_figures: int = MIN_FIGURES, about: float = 0.0) -> Verdict:
    """Judge a number answer by the rounding rule (see the module docstring); return a Verdict.

    Right: `expected` rounds to the answer, or (for an "about" or measured question) the answer
    is within `about` of it, relative, bound included. Right at too few figures: "give more
    digits". Within 2 % but rounded wrongly: "close, check the rounding". Otherwise "Not yet"
    with `hint`.
    """
    number = read_number(answer)
    if answer is None:
        return Verdict(False, _(NOT_ANSWERED))
    if number is not None and as_number(number) is None:
        number = None  # a whole number too large for a float: no quantity here is that large
    if number is not None and (rounds_to(number, expected, min_figures)
                               or _within(number, expected, Fraction(str(about)))):
        return verdict(True, success, hint)
    if number is not None and _needs_more_digits(number, expected, min_figures):
        message = _("Close — give more digits. {number} is near; give the value rounded correctly to at "
                    "least {figures} significant figures.")
        return Verdict(False, message.format(number=number, figures=min_figures))
    if number is not None and _within(number, expected, CLOSE):
        message = _("Close, but {number} is not the value rounded to the digits you gave: check the "
                    "rounding, and keep more digits through the intermediate steps.")
        return Verdict(False, message.format(number=number))
    if number is None:
        hint = _("Answer with a number that fits a float, not {answer}. {hint}").format(
            answer=shown(answer), hint=hint)
    return Verdict.not_yet(hint)


def self_check(check):
    """Decorate a `check_*(answer, ...)`: an answer still None is "not answered yet", with no hint.

    So a stored notebook, whose exercise cells were run with None, shows no hint and no answer.
    An answer the check cannot read at all (an object whose comparison raises) is told so
    instead of raising: no self-check raises on any value.
    """
    @functools.wraps(check)
    def checked(answer, *args, **kwargs) -> Verdict:
        if answer is None:
            return Verdict(False, _(NOT_ANSWERED))
        try:
            return check(answer, *args, **kwargs)
        except Exception as error:  # any Python value can be an answer; none may break the check
            # TRANSLATORS: {answer} is the student's answer (Python's repr), {error} an exception's class.
            return Verdict.not_yet(_("{answer} cannot be read as an answer here "
                                     "({error}); give a plain number, tuple or "
                                     "text.").format(answer=shown(answer), error=type(error).__name__))
    return checked
