"""Leave the kernel as a student's function found it: torch's functions, the package's, and threads.

`snapshot` records torch's namespaces, every loaded `d2lmini` module and the exercise
machinery's classes; `restore` puts back what a function replaced (and names it); threads a
function started are stopped by `stop_threads`. Process-wide settings (gradient mode, the
default device, ...) are `d2lmini.kernel_settings`'. Used by `d2lmini.exercises.guard`.
"""

import ctypes
import math
import sys
import threading
import types

import torch
import torch.nn.functional as F

from d2lmini.exercises.guard.refusals import MACHINERY

# Namespaces whose functions a student's code might replace; they are put back after each call.
GUARDED_NAMESPACES = (torch, F, torch.Tensor, torch.linalg, torch.special, torch.nn.init,
                      torch.nn.utils, torch.autograd, math)


def raise_in(thread_id: int, exception: type[BaseException]) -> None:
    """Raise `exception` in the thread `thread_id` at its next Python instruction."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exception))


_FOUND: dict[str, object] = {"modules": -1, "namespaces": []}  # found again when a module is imported


def _namespaces() -> list:
    """torch's namespaces, every loaded d2lmini module, and the classes the exercise machinery defines."""
    if _FOUND["modules"] != len(sys.modules):
        _FOUND["namespaces"], _FOUND["modules"] = _find_namespaces(), len(sys.modules)
    return _FOUND["namespaces"]


def _find_namespaces() -> list:
    modules = [m for name, m in list(sys.modules.items())
               if (name == "d2lmini" or name.startswith("d2lmini.")) and isinstance(m, types.ModuleType)]
    machinery = [m for m in modules if getattr(m, "__file__", None) in MACHINERY]
    classes = [v for m in machinery for v in vars(m).values()
               if isinstance(v, type) and v.__module__ == m.__name__]
    return [*GUARDED_NAMESPACES, *modules, *classes]


def snapshot() -> list[tuple[object, dict]]:
    return [(space, dict(vars(space))) for space in _namespaces()]


def _torch_rebinding(old, new) -> bool:
    """True when torch itself wrapped one of its functions (importing torch._dynamo wraps manual_seed)."""
    module = getattr(new, "__module__", "") or ""
    if not module.startswith("torch"):
        return False
    wrapped = getattr(new, "__wrapped__", None)
    for _level in range(4):  # older torch wraps twice (torch 2.3: a wrapper of a wrapper of manual_seed)
        if wrapped is None or wrapped is old:
            break
        wrapped = getattr(wrapped, "__wrapped__", None)
    return wrapped is old


# What Python itself caches on a class or a module: copyreg writes `__slotnames__` the first time an
# instance is pickled (torch.save, copy.deepcopy); the warnings machinery writes `__warningregistry__`
# into the globals of the module a warning is attributed to (one raised from torch's C code, such as
# `torch.tensor(a_tensor)`'s, goes to the innermost Python frame, which can be the checks' own).
# Neither is a student replacing anything.
PYTHON_CACHES = frozenset({"__slotnames__", "__warningregistry__"})


def restore(snapshot) -> list[str]:
    """Put back every attribute that changed since `snapshot`, remove new ones; return their names.

    A new attribute may shadow an inherited one (`torch.Tensor.tanh = ...`); new submodules,
    which torch imports lazily, stay, and so do torch's own wrappers of its functions and the
    caches Python keeps on a class or a module (`PYTHON_CACHES`).
    """
    replaced = []
    for space, before in snapshot:
        now = dict(vars(space))
        label = getattr(space, "__name__", str(space))
        for name, value in now.items():
            if name not in before and not isinstance(value, types.ModuleType) and name not in PYTHON_CACHES:
                _set(space, name, None, delete=True)
                replaced.append(f"{label}.{name}")
        for name, value in before.items():
            current = now.get(name, _MISSING)
            if current is not value and not _torch_rebinding(value, current):
                _set(space, name, value)
                replaced.append(f"{label}.{name}")
    return replaced


def _set(space, name: str, value, delete: bool = False) -> None:
    try:
        delattr(space, name) if delete else setattr(space, name, value)
    except (AttributeError, TypeError):  # a read-only slot: nothing a student could have changed
        pass


_MISSING = object()


def stop_threads(before: set[int], spared: set[int | None]) -> int:
    """Stop every Python thread started since `before`, except `spared` ones (raising SystemExit in
    it); return how many. Threads that torch or Python start for their own work are spared."""
    started = set(sys._current_frames()) - before - spared
    for ident in started:
        raise_in(ident, SystemExit)
    for _wait in range(40):  # up to a second for them to end
        if not started & set(sys._current_frames()):
            break
        threading.Event().wait(0.025)
    return len(started)
