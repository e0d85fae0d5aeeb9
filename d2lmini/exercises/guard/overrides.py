"""What a check cannot judge under: torch's functions made to answer something else (#45, item 4).

A `TorchFunctionMode` or `TorchDispatchMode` left on in the kernel (entered with `__enter__` and
never left, or a `with` block the student's function never leaves), or a kernel registered with
`torch.library` for one of torch's own operators (`Library("aten", "IMPL").impl("isclose", ...,
"CPU")`), changes what `torch.isclose`, `sub`, `abs` ... return, for the check's comparison as for
anyone else. No comparison done with torch can then be trusted, so `unjudgeable()` says so and the
check gives no verdict on the answer. torch's own modes and kernels (the default device's mode, the
kernels torch registers from its own Python files) are not counted. Used by `d2lmini.exercises.coding`.
"""

import os

import torch
import torch.library
from torch.overrides import _get_current_function_mode_stack
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
from torch.utils._python_dispatch import _pop_mode as _pop_dispatch_mode

from d2lmini.i18n import _

TORCH = os.path.dirname(torch.__file__) + os.sep
# At torch 2.3 the tests that plant a lying mode or kernel crash the process (test_exercises_overrides
# skips there): whether the guard judges right under them at 2.3 is not shown.
POPS_FUNCTION_MODES = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 4)
NAMESPACES = ("aten/", "prims/")  # the operators the check's own comparisons reach
_TORCHS_OWN: set[str] = set()  # torch.library registrations already found to be torch's own


def _is_torchs_own_mode(mode) -> bool:
    """The default device's mode (`torch.set_default_device`): torch's own, it changes no value."""
    return type(mode).__module__.startswith("torch.utils._device")


def modes_on() -> list[str]:
    """The class names of the torch function and dispatch modes on now, torch's own left out."""
    modes = [m for m in _get_current_function_mode_stack() if not _is_torchs_own_mode(m)]
    modes += list(_get_current_dispatch_mode_stack())
    keys = getattr(torch._C, "_TorchDispatchModeKey", None)
    for key in keys.__members__.values() if keys is not None else ():
        mode = torch._C._get_dispatch_mode(key)  # fake, functional and proxy tensors' modes
        if mode is not None:
            modes.append(mode)
    return [type(mode).__name__ for mode in modes]


def _registered_outside_torch(entry: str) -> bool:
    """True if the kernel `entry` ("aten/isclose/CPU") was registered from a file outside torch."""
    namespace, _slash, rest = entry.partition("/")
    operator, _slash, key = rest.rpartition("/")
    try:
        table = torch._C._dispatch_dump(f"{namespace}::{operator}")
    except RuntimeError:  # an operator since removed: nothing of it left to call
        return False
    for line in table.splitlines():
        if line.startswith(f"{key}: registered at "):
            where = line.removeprefix(f"{key}: registered at ")
            # torch 2.3 records its own Python kernels at /dev/null, not at their file
            return not where.startswith((TORCH, "/dev/null"))
    return False


def library_overrides() -> list[str]:
    """The torch operators ("aten::isclose") given a kernel with `torch.library` from outside torch."""
    found = []
    for entry in sorted(getattr(torch.library, "_impls", ())):
        if entry in _TORCHS_OWN or not entry.startswith(NAMESPACES) or entry.endswith("/Meta"):
            continue  # a Meta kernel computes shapes only, never a value a check compares
        if _registered_outside_torch(entry):
            found.append(entry.rpartition("/")[0].replace("/", "::", 1))
        else:
            _TORCHS_OWN.add(entry)
    return found


def unjudgeable() -> str | None:
    """Why no check can judge now (a mode on, an operator overridden), in words; None when nothing is."""
    modes, overridden = modes_on(), library_overrides()
    if modes:
        # TRANSLATORS: {names} lists Python class names (a TorchFunctionMode the student wrote).
        return _("A torch mode is on in this kernel ({names}): it changes what torch's functions return, "
                 "for the check's comparison too, so the check cannot judge your function while it is on. "
                 "Leave its `with` block (or restart the kernel), then run the check again.").format(
                     names=", ".join(modes))
    if overridden:
        # TRANSLATORS: {names} lists torch operators, e.g. aten::isclose.
        return _("torch's own {names} was given another kernel with torch.library in this kernel: it "
                 "changes what torch computes, for the check's comparison too, so the check cannot judge "
                 "your function while it is registered. Restart the kernel (or delete that Library "
                 "object), then run the check again.").format(names=", ".join(sorted(set(overridden))))
    return None


def mode_depths() -> tuple[int, int]:
    """How many torch function and dispatch modes are on now (`leave_modes_above` puts it back)."""
    return torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()


def leave_modes_above(depths: tuple[int, int]) -> int:
    """Leave every mode entered since `mode_depths()` gave `depths` (a function that entered one and
    never left it, or a limit that cut a `with` block's exit); return how many were left."""
    left, kept = 0, []
    while torch._C._len_torch_function_stack() > depths[0]:
        mode = torch._C._pop_torch_function_stack()
        if _is_torchs_own_mode(mode):  # the default device's: kernel_settings puts it back, or says why not
            kept.append(mode)
        else:
            left += 1
    for mode in reversed(kept):
        torch._C._push_on_torch_function_stack(mode)
    while torch._C._len_torch_dispatch_stack() > depths[1]:
        _pop_dispatch_mode()
        left += 1
    return left
