"""A check cannot be fooled by a torch mode or a torch.library kernel left on (#45, item 4).

A student's kernel where a `TorchFunctionMode` or `TorchDispatchMode` was entered and never left,
or where `torch.library` gave one of torch's operators another kernel, makes `isclose`, `any`, ...
lie for the check's comparison too: a wrong answer then got "Correct!". Each test leaves such a
thing on, submits a wrong answer and asserts that the check says it cannot judge; the kernel is
put back as it was afterwards (by the test: the check leaves the student's kernel as it found it).
"""

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._python_dispatch import _pop_mode as _pop_dispatch_mode

from d2lmini.exercises import hidden_state
from d2lmini.exercises.guard import overrides

pytestmark = [pytest.mark.torch_dependent,
              # at torch 2.3 planting these modes and kernels crashes the process itself (open, #45)
              pytest.mark.skipif(not overrides.POPS_FUNCTION_MODES, reason="torch 2.3 crashes")]

LIES = {"isclose": True, "allclose": True, "equal": True, "any": False, "all": True}


def wrong_step(X, H, W_xh, W_hh, b_h):
    return torch.zeros(X.shape[0], W_hh.shape[1])  # the right shape, the wrong values


def right_step(X, H, W_xh, W_hh, b_h):
    return torch.tanh(X @ W_xh + H @ W_hh + b_h)


class LyingFunctions(TorchFunctionMode):
    """Every comparison says "the same", every `any` says "none"."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        lie = LIES.get(getattr(func, "__name__", ""))
        if lie is None:
            return result
        return torch.full_like(result, lie) if isinstance(result, torch.Tensor) else lie


class LyingKernels(TorchDispatchMode):
    """The same lies one level down, where every operator passes."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        lie = LIES.get(func.overloadpacket.__name__)
        return result if lie is None else torch.full_like(result, lie)


@pytest.fixture
def kernel_put_back():
    """After the test, no mode is left on (the test leaves them on, as a student did)."""
    functions, dispatches = torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()
    yield
    while torch._C._len_torch_function_stack() > functions:
        torch.overrides._pop_mode()
    while torch._C._len_torch_dispatch_stack() > dispatches:
        _pop_dispatch_mode()


@pytest.mark.parametrize("mode", [LyingFunctions, LyingKernels], ids=lambda m: m.__name__)
def test_a_mode_left_on_gives_no_verdict_on_a_wrong_answer(mode, kernel_put_back):
    assert not hidden_state.check_rnn_step(wrong_step)
    mode().__enter__()  # and never left, as in a cell that ran `mode.__enter__()`
    assert bool(torch.isclose(torch.zeros(1), torch.ones(1)).all())  # the mode does lie
    result = hidden_state.check_rnn_step(wrong_step)
    assert not result and "cannot judge" in result.message and mode.__name__ in result.message, result.message
    result = hidden_state.check_rnn_step(right_step)  # nor a verdict on a right one: it says why
    assert not result and "cannot judge" in result.message, result.message


def leaves_a_mode_on(X, H, W_xh, W_hh, b_h):
    LyingFunctions().__enter__()
    return wrong_step(X, H, W_xh, W_hh, b_h)


def test_a_mode_the_function_itself_leaves_on_is_left_and_fools_no_check(kernel_put_back):
    depths = overrides.mode_depths()
    result = hidden_state.check_rnn_step(leaves_a_mode_on)
    assert not result and "is wrong" in result.message, result.message
    assert overrides.mode_depths() == depths and not overrides.modes_on()  # the guard left it


@pytest.mark.filterwarnings("ignore:Warning only once for all operators")
@pytest.mark.parametrize("operator", ["any", "isclose"])
def test_a_torch_library_kernel_for_torchs_own_operator_gives_no_verdict(operator):
    library = torch.library.Library("aten", "IMPL")
    try:
        if operator == "any":
            library.impl("any", lambda tensor: torch.zeros((), dtype=torch.bool), "CPU")
        else:
            library.impl("isclose", lambda a, b, *rest: torch.ones(torch.broadcast_shapes(a.shape, b.shape),
                                                                   dtype=torch.bool), "CPU")
        assert not bool(torch.ones(3, dtype=torch.bool).any()) or bool(torch.isclose(torch.zeros(1),
                                                                                      torch.ones(1)))
        result = hidden_state.check_rnn_step(wrong_step)
        assert not result and "cannot judge" in result.message and f"aten::{operator}" in result.message, \
            result.message
    finally:
        library._destroy()
    assert hidden_state.check_rnn_step(right_step)  # the kernel as it was: judged again
    assert not hidden_state.check_rnn_step(wrong_step)


def test_torchs_own_modes_and_kernels_are_not_counted():
    assert overrides.unjudgeable() is None
    torch.set_default_device("cpu")  # torch's own mode, which changes no value
    try:
        assert overrides.unjudgeable() is None
        assert hidden_state.check_rnn_step(right_step)
    finally:
        torch.set_default_device(None)
