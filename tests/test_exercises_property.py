"""Property test (Hypothesis): no self-check and no coding checker raises, whatever it is given (#17, #20).

Every `@self_check` question of every notebook gets random Python values of every kind as
its answer; every coding checker gets a function that returns such a value. Each must come
back with a Verdict (never a traceback), and none of them may call a wrong answer right.
"""

import importlib
import inspect

import numpy as np
import pytest
import torch
from course import WITH_EXERCISES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from d2lmini.exercises import Verdict

pytestmark = pytest.mark.torch_dependent

MODULES = tuple(notebook.exercises for notebook in WITH_EXERCISES)


class Hostile:
    """An answer whose every conversion raises: float(), int(), ==, len(), iter(), repr()."""

    def __float__(self):
        raise RuntimeError("no float")

    def __index__(self):
        raise RuntimeError("no index")

    def __eq__(self, other):
        raise RuntimeError("no comparison")

    __hash__ = None

    def __len__(self):
        raise RuntimeError("no length")

    def __iter__(self):
        raise RuntimeError("no iteration")

    def __repr__(self):
        raise RuntimeError("no repr")


def _all_checks():
    questions, coders = [], []
    for name in MODULES:
        module = importlib.import_module(f"d2lmini.exercises.{name}")
        for attr, fn in vars(module).items():
            if not attr.startswith("check_") or not callable(fn) or fn.__module__ != module.__name__:
                continue
            kind = questions if hasattr(fn, "__wrapped__") else coders
            kind.append(pytest.param(fn, id=f"{name}.{attr}"))
    return questions, coders


QUESTIONS, CODERS = _all_checks()

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.just(-(2**63)),
    st.sampled_from([400, 5000, 19]).map(lambda k: 10**k),  # mapped: Hypothesis cannot repr 10**5000
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(), st.text(max_size=20),
    st.binary(max_size=10), st.sampled_from(["x" * 1_000_000, "sequential", "7", "(8, 64)", ""]),
    st.builds(Hostile), st.builds(object),
    st.sampled_from([np.float64("nan"), np.int64(7), np.zeros((2, 3)), np.array(4.2), np.float32(0.5)]),
    st.sampled_from([torch.tensor(7), torch.tensor(float("nan")), torch.zeros(3, 2).to_sparse(),
                     torch.zeros(2, device="meta"), torch.tensor(1.0, device="meta"), torch.zeros(0),
                     torch.ones(2, 2, dtype=torch.complex64)]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=3), inner, max_size=2),
    st.frozensets(st.integers(), max_size=3)), max_leaves=6)


@pytest.mark.parametrize("check", QUESTIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=VALUES)
def test_no_self_check_raises_on_any_value(check, answer):
    result = check(answer)
    assert isinstance(result, Verdict) and isinstance(result.message, str)


@pytest.mark.parametrize("check", CODERS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_no_checker_raises_on_any_returned_value(check, value):
    result = check(lambda *args, **kwargs: value)
    assert isinstance(result, Verdict) and not result


def test_every_notebook_is_covered():
    assert len(QUESTIONS) >= 27 and len(CODERS) >= 12
    assert all(inspect.signature(p.values[0]).parameters for p in QUESTIONS + CODERS)


INF = float("inf")
LISTED = [10**400, -(10**400), float("nan"), INF, Hostile(), "x" * 2_000_000, (10**400, 1.0),
          torch.zeros(2, device="meta"), np.zeros(3), 1j]


@pytest.mark.parametrize("check", QUESTIONS)
def test_the_listed_values_get_a_verdict_from_every_self_check(check):
    for answer in LISTED:
        result = check(answer)
        right = check.__name__ == "check_zero_probability" and answer is INF  # its answer is ∞
        assert isinstance(result, Verdict) and bool(result) == right, (check.__name__, type(answer))
