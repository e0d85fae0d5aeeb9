"""An exact fraction is a number like any other (#45, item 4): `Fraction("3.364")` is the decimal 3.364.

A Fraction with a finite decimal form is read at the digits of that form, so the rounding rule
judges it as it judges the same number typed as a float or a Decimal; one with no finite decimal
form (1/3) is exact, with every digit.
"""

from decimal import Decimal
from fractions import Fraction

import pytest
from test_exercises_fairness import LISTED, OTHER_FORMS

from d2lmini.exercises import perplexity, read_number

pytestmark = pytest.mark.torch_dependent


@pytest.mark.parametrize("answer", [Fraction("3.364"), Decimal("3.364"), Fraction("3.36"), Fraction(841, 250),
                                    Fraction("3.3636")])
def test_07_q1_accepts_an_exact_fraction_or_decimal(answer):
    result = perplexity.check_sequence_perplexity(answer)
    assert result, result.message


@pytest.mark.parametrize("answer", [Fraction("3.365"), Fraction("3.5"), Fraction(10, 3), Decimal("3.365")])
def test_07_q1_still_rejects_a_wrong_fraction(answer):
    assert not perplexity.check_sequence_perplexity(answer)


def _as(kind, answer):
    """`answer` (a number, or a pair or vector of them) retyped as `kind` from the decimal it reads as."""
    if isinstance(answer, tuple | list) or getattr(answer, "shape", ()) not in ((), (1,)):
        return tuple(_as(kind, item) for item in answer)
    number = read_number(answer)
    return kind(str(number))


@pytest.mark.parametrize("kind", [Fraction, Decimal])
@pytest.mark.parametrize("check, answer", LISTED + OTHER_FORMS,
                         ids=lambda v: getattr(v, "__name__", None) or repr(v)[:30])
def test_every_accepted_number_is_accepted_as_a_fraction_or_decimal(check, answer, kind):
    if check.__name__ == "check_hidden_state_shape":
        pytest.skip("a shape is whole numbers, already exact")
    result = check(_as(kind, answer))
    assert result, result.message


def test_a_fraction_reads_as_its_finite_decimal_or_stays_exact():
    assert str(read_number(Fraction("3.364"))) == "3.364"
    assert str(read_number(Fraction(3, 40))) == "0.075"
    assert str(read_number(Fraction(-7, 8))) == "-0.875"
    assert str(read_number(Fraction(1, 3))) == "1/3"
    assert read_number(Fraction(1, 3)).decimal is None
