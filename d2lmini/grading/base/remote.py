"""Values on the wire between a student's kernel and the grading process, and the remote function.

Both sides use this module. A value travels as JSON: numbers, text, lists, tuples, Fractions,
Decimals, and tensors and numpy arrays as `.npy` bytes read with `allow_pickle=False`; a model
travels as its class name and parameters. Nothing the student's kernel sends is ever unpickled
or evaluated: anything else arrives as an `Unreadable` that names its type.

`RemoteFunction` is what the grading process hands to a checker in place of the student's
function: calling it sends the inputs (and the check's bans) to a fresh sandboxed process
(`d2lmini.grading.run.caller`), where the student's function runs under the self-check's guard,
and brings back the result, what it printed, the torch functions it called, and the inputs as
the function left them. So the expected values stay in the grading
process. This file is part of the guarded call's machinery (`d2lmini.exercises.guard`), the
only grading module a guarded call may run. What it says is translated with `d2lmini.i18n`,
which the guard counts as its machinery too (`refusals.MACHINERY`): a `RemoteFunction` words
its messages while the check's guard watches the call.
"""

import base64
import builtins
import dataclasses
import io
import json
import math
import os
import re
import select
import sys
import time
import types
import weakref
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import numpy as np
import torch

from d2lmini.exercises.guard.limits import RanPastItsLimit, TimedElsewhere
from d2lmini.i18n import _

MIME = "application/x-d2lmini-grading+json"  # the display messages the kernel side answers with
GENERATOR_LIMIT = 10_000  # items read from a generator a student's function returns
# The kernel's own limit on one call: the longest any check allows (the capstone's training run). Each
# check's shorter limit is kept by its guard in the grading process, which then interrupts the kernel.
CALL_SECONDS = 300.0
# How long the grading process waits for the reply of a call limited to s seconds in the caller:
# THERE_FACTOR * s + THERE_MARGIN (at most the RemoteFunction's own wait). The caller stops the call
# after s; the rest is for a loaded machine, where the caller waits for a CPU before and after.
THERE_FACTOR, THERE_MARGIN = 4.0, 20.0


class Unreadable:
    """A value the kernel could not send (an object of a type the wire does not carry)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        # TRANSLATORS: a value the grader could not read, named by its Python type ("a generator object").
        return _("a {type_name} object").format(type_name=self.type_name)

    def __float__(self) -> float:
        raise TypeError(_("a {type_name} object is not a number").format(type_name=self.type_name))


class RemoteError(Exception):
    """An exception the student's function raised in its kernel (subclassed under its name there)."""


class ReplacedTorchFunction(Exception):
    """The student's function replaced torch functions in its kernel (they were put back there)."""

    refused_call = True  # a refusal, for `coding.Tally`: no partial credit


class RefusedInKernel(Exception):
    """The student's function called the package's own code or torch's clipping in its kernel."""

    refused_call = True
    route = True  # a route the exercise forbids (`coding.incident_of` names it), not a danger


def _array(data: dict) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(data["npy"])), allow_pickle=False)


def _npy(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    np.save(buffer, np.array(array, order="C", copy=True), allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def encode(value, depth: int = 0):
    """Return `value` as JSON-ready data (see the module docstring); never raises."""
    try:
        return _encode(value, depth)
    except Exception:  # an object whose conversion fails: it travels as its type's name
        return {"t": "unreadable", "type": type(value).__name__}


def _encode(value, depth: int):
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return {"t": "int", "v": str(value)} if abs(value) > 2**53 else value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"t": "float", "v": repr(value)}
    if isinstance(value, Fraction):
        return {"t": "fraction", "v": str(value)}
    if isinstance(value, Decimal):
        return {"t": "decimal", "v": str(value)}
    if isinstance(value, torch.nn.Module) and depth < 8:
        return {"t": "module", "class": type(value).__name__, "init": _plain_attributes(vars(value)),
                "state": {k: _encode(v, depth + 1) for k, v in value.state_dict().items()}}
    if isinstance(value, torch.optim.Optimizer):
        return {"t": "optimizer", "class": type(value).__name__, "init": _plain_attributes(value.defaults)}
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, np.ndarray | np.generic):
        return {"t": "ndarray", "npy": _npy(np.asarray(value)), "scalar": isinstance(value, np.generic)}
    if isinstance(value, list | tuple) and depth < 8 and len(value) <= 100_000:  # torch.Size: a tuple
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"t": kind, "v": [_encode(v, depth + 1) for v in value]}
    if type(value) is dict and depth < 8 and all(isinstance(k, str) for k in value):
        return {"t": "dict", "v": {k: _encode(v, depth + 1) for k, v in value.items()}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and depth < 8:  # settings (a Budget)
        return {"t": "record", "class": type(value).__name__,
                "v": {f.name: _encode(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}}
    return {"t": "unreadable", "type": type(value).__name__}


def _plain_attributes(attributes: dict) -> dict:
    """The numbers, flags and text among `attributes` (a model's sizes, an optimizer's settings)."""
    return {k: v for k, v in attributes.items()
            if not k.startswith("_") and isinstance(v, bool | int | float | str)}


def _encode_tensor(value: torch.Tensor) -> dict:
    with torch._C.DisableTorchFunction():  # the checker's call recorder must not count the transfer
        if value.layout != torch.strided or value.device.type == "meta":
            return {"t": "unreadable", "type": f"{value.layout} tensor on {value.device.type}"}
        plain = value.detach().cpu()
        if plain.dtype == torch.bfloat16:
            return {"t": "unreadable", "type": "bfloat16 tensor"}
        return {"t": "tensor", "npy": _npy(plain.numpy()), "device": value.device.type,
                "grad": value.requires_grad, "parameter": isinstance(value, torch.nn.Parameter)}


def decode(data, device_of: Callable[[str], torch.device] | None = None):
    """Return the value `data` (from `encode`) stands for; tensors go to `device_of(device type)`."""
    if not isinstance(data, dict):
        return data
    kind = data.get("t")
    if kind == "int":
        return int(data["v"])
    if kind == "float":
        return float(data["v"])
    if kind == "fraction":
        return Fraction(data["v"])
    if kind == "decimal":
        return Decimal(data["v"])
    if kind in ("list", "tuple"):
        items = [decode(v, device_of) for v in data["v"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: decode(v, device_of) for k, v in data["v"].items()}
    if kind == "record":  # a checker's settings: read by attribute, as the dataclass was
        return types.SimpleNamespace(**{k: decode(v, device_of) for k, v in data["v"].items()})
    if kind == "ndarray":
        array = _array(data)
        return array[()] if data.get("scalar") else array
    if kind == "tensor":
        return _decode_tensor(data, device_of)
    if kind == "module":
        return {k: decode(v, device_of) for k, v in data["state"].items()}
    return Unreadable(str(data.get("type", "unknown")))


def _decode_tensor(data: dict, device_of) -> torch.Tensor:
    with torch._C.DisableTorchFunction():
        tensor = torch.from_numpy(_array(data).copy())
        if device_of is not None:
            tensor = tensor.to(device_of(data["device"]))
        if data.get("parameter"):
            return torch.nn.Parameter(tensor, requires_grad=data.get("grad", True))
        return tensor.requires_grad_(bool(data.get("grad"))) if tensor.is_floating_point() else tensor


def local_device(kind: str) -> torch.device:
    """The device of that type here, or the CPU when this machine has none."""
    available = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    return torch.device(kind if available.get(kind, kind == "cpu") else "cpu")


def write_back(original, after) -> None:
    """Copy into `original` (a tensor, model, or list of them) what the kernel's function left there."""
    with torch._C.DisableTorchFunction(), torch.no_grad():
        if isinstance(original, torch.nn.Module) and isinstance(after, dict):
            state = original.state_dict()
            for name, value in after.items():
                if name in state and isinstance(value, torch.Tensor) and value.shape == state[name].shape:
                    state[name].copy_(value.to(state[name].device, state[name].dtype))
        elif isinstance(original, torch.Tensor) and isinstance(after, torch.Tensor):
            if after.shape == original.shape and after.dtype == original.dtype:
                original.copy_(after.to(original.device))
            else:  # the function changed the input's shape or dtype in place: make the check see it
                original.data = after.to(original.device)
        elif isinstance(original, list | tuple) and isinstance(after, list | tuple):
            for old, new in zip(original, after, strict=False):
                write_back(old, new)
        elif isinstance(original, dict) and isinstance(after, dict):
            for key, new in after.items():
                if key in original:
                    write_back(original[key], new)


def _call_recorders() -> list:
    """The checker's torch-call recorders active in this (the grading) process."""
    from torch.overrides import _get_current_function_mode_stack
    return [mode for mode in _get_current_function_mode_stack() if hasattr(mode, "calls")]


REPLY_LIMIT = 64 * 2**20  # bytes of one reply the grader reads from a caller process
# The kinds a graded function's exception is named by in feedback: Python's own and torch's. Any other
# name is the student's to choose (a class named after the graded inputs), so it is told as "Exception".
ERROR_KINDS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | {"OutOfMemoryError", "LinAlgError", "AcceleratorError", "KernelStopped", "MemoryLimit", "TimeLimit",
     "RefusedCall"}  # torch's, and the guard's own
NAMES_SHOWN = 10  # torch names a reply may list as replaced


def error_kind(type_name: str) -> str:
    """The exception's kind as feedback names it: its name if Python or torch defines it, else "Exception"."""
    return type_name if type_name in ERROR_KINDS else "Exception"


def _plain_name(text) -> str | None:
    """`text` if it is a short name without digits (beyond the package's own name), else None.

    A caller's reply is written by a process the student's code runs in: any text it holds could
    carry the graded inputs, so only names that cannot encode numbers reach the feedback.
    """
    text = str(text)
    return text if len(text) <= 100 and not re.search(r"\d", text.replace("d2lmini", "")) else None


def _named_plainly(data, depth: int = 0):
    """Wire `data` with each unreadable value's type name kept only if `_plain_name` lets it through
    (a class the student named after the graded inputs would be shown as "a NAME object")."""
    kind = data.get("t") if isinstance(data, dict) else None
    if kind == "unreadable" or (kind in ("list", "tuple", "dict") and depth >= 8):
        return {"t": "unreadable", "type": _plain_name(data.get("type", "")) or "object"}
    if kind in ("list", "tuple") and isinstance(data.get("v"), list):
        return data | {"v": [_named_plainly(v, depth + 1) for v in data["v"]]}
    if kind == "dict" and isinstance(data.get("v"), dict):
        return data | {"v": {k: _named_plainly(v, depth + 1) for k, v in data["v"].items()}}
    return data


def _torch_names(names) -> list[str]:
    """The entries of `names` that name something in torch (what a caller says its function replaced)."""
    found = []
    for name in list(names)[:NAMES_SHOWN] if isinstance(names, list) else ():
        parts, space = str(name).split("."), torch
        if parts[0] != "torch" or not all(p.isidentifier() for p in parts[1:]):
            continue
        for part in parts[1:]:
            space = getattr(space, part, None)
        if space is not None:
            found.append(str(name))
    return found


def _ban_names() -> dict:
    from d2lmini.exercises.guard import refusals

    return {name: value for name, value in vars(refusals).items() if isinstance(value, refusals.Ban)}


def _active_rules() -> tuple[list[str], list[str]]:
    """The bans and allowed package files of the check's guard now running here, by name.

    The check calls this function under its own guard (`run_guarded`, as in the self-check):
    the same bans are then applied to the student's function in the caller process.
    """
    from d2lmini.exercises.guard import refusals

    hook = sys.getprofile()
    if not isinstance(hook, refusals.Refuser):
        return [], []
    names = {id(ban): name for name, ban in _ban_names().items()}
    unknown = [ban.what for ban in hook.bans if id(ban) not in names]
    if unknown:
        raise RuntimeError(_("the grader cannot name the ban {ban!r} for the caller process").format(
            ban=unknown[0]))
    package = str(refusals.PACKAGE) + os.sep
    allowed = sorted(f.removeprefix(package) for f in hook.allowed - refusals.MACHINERY
                     if f.startswith(package))
    return [names[id(ban)] for ban in hook.bans], allowed


# What a pipe gave after the line read_line returned: a process may write two lines in one go (the
# caller's "started", then its answer), and one read takes both.
_PENDING: "weakref.WeakKeyDictionary[object, bytes]" = weakref.WeakKeyDictionary()


def read_line(stream, seconds: float, limit: int = REPLY_LIMIT) -> bytes | None:
    """One line from the pipe `stream` within `seconds` (None: none came, the process ended, too long).

    What came after the line is kept for the next call on the same pipe."""
    deadline, data = time.monotonic() + seconds, bytearray(_PENDING.pop(stream, b""))
    descriptor = stream.fileno()
    while b"\n" not in data and len(data) <= limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([descriptor], [], [], left)[0]:
            return None
        chunk = os.read(descriptor, 1 << 20)
        if not chunk:
            return None
        data += chunk
    if b"\n" not in data:
        return None
    line, _, rest = bytes(data).partition(b"\n")
    if rest:
        _PENDING[stream] = rest
    return line


class RemoteFunction(TimedElsewhere):
    """A student's function, called from the grading process in a fresh sandboxed process.

    `process` runs `d2lmini.grading.run.caller` (already "ready", holding the function as `slot`;
    `state` is shared by the functions of one process): calling this object sends it the
    arguments and the check's bans, waits up to `seconds` for its reply, and brings back the
    result, what it printed, the torch functions it called, and the inputs as the function
    left them. So the expected values stay in the grading process, and no verdict depends on
    code the student's process could replace. Under a check's guard, the check's time limit is
    kept there (`timed_there`); called directly, the call may take `CALL_SECONDS`.
    """

    def __init__(self, process, seconds: float, name: str, slot: str = "function",
                 state: dict | None = None):
        self.process, self.seconds, self.__name__, self.slot = process, seconds, name, slot
        self.state = {"broken": False} if state is None else state  # shared by the functions of one process
        self.calls: Counter = Counter()  # every torch function the caller process reported, for evidence

    def __repr__(self) -> str:
        # TRANSLATORS: how the student's function is shown in a message (keep the angle brackets).
        return _("<your function {name}>").format(name=self.__name__)

    def timed_there(self, seconds: float) -> tuple:
        """(this function with a `seconds` limit kept in its process, how long the guard waits for its reply;
        past that, the guard stops the wait and the call counts as too long)."""
        wait = min(self.seconds, THERE_FACTOR * seconds + THERE_MARGIN)
        return lambda *args: self._call(args, seconds), wait

    def __call__(self, *args):
        return self._call(args, CALL_SECONDS)

    def _call(self, args: tuple, seconds: float):
        if self.state["broken"]:
            raise named_error("KernelStopped")(
                _("the process running your function stopped during an earlier call"))
        bans, allowed = _active_rules()
        payload = json.dumps({"function": self.slot, "args": [_encode(a, 0) for a in args], "bans": bans,
                              "allowed": allowed, "seconds": seconds})
        try:
            self.process.stdin.write((payload + "\n").encode())
            self.process.stdin.flush()
            line = read_line(self.process.stdout, self.seconds)
        except BaseException:  # the check's time limit stopped the wait: this process is spent
            self.state["broken"] = True
            raise
        reply = _parse(line)
        if reply is None:
            self.state["broken"] = True
            raise named_error("KernelStopped")(
                _("the process running your function stopped or stopped answering during this call "
                  "(os._exit, a crash, or more memory than allowed)"))
        # What the function printed is not passed on: printing the graded inputs would show them.
        calls = Counter({str(k): v for k, v in dict(reply.get("calls", {})).items() if isinstance(v, int)})
        self.calls.update(calls)
        for recorder in _call_recorders():
            recorder.calls.update(calls)
        for original, after in zip(args, reply.get("args_after", []) or [], strict=False):
            write_back(original, decode(after, local_device))
        _raise_problem(reply)
        return decode(_named_plainly(reply.get("value")), local_device)


def _parse(line: bytes | None) -> dict | None:
    try:
        reply = json.loads(line) if line is not None else None
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _raise_problem(reply: dict) -> None:
    """Raise what the reply says went wrong, in the course's own words: no text of the student's process
    but a kind, a torch name or a name without digits reaches the feedback (`error_kind`)."""
    if reply.get("replaced"):
        # TRANSLATORS: {names} lists torch functions (keep them); "put back": the grader restored them.
        raise ReplacedTorchFunction(
            _("it replaced {names} (put back). Compute with torch's functions; do not assign to "
              "them.").format(names=", ".join(_torch_names(reply["replaced"])) or "torch"))
    if reply.get("refused"):
        # TRANSLATORS: {what} names what the student's function called (torch's gradient clipping, ...).
        raise RefusedInKernel(
            _("it calls {what}. The exercise asks you to write it yourself, so that call is refused.").format(
                what=_plain_name(reply["refused"]) or _("a function it may not use")))
    if reply.get("timed_out"):
        raise RanPastItsLimit(_("it was still running after its time limit: look for a loop that never ends "
                             "(a `while` whose condition stays true, an endless generator)."))
    if reply.get("error"):
        error = reply["error"] if isinstance(reply["error"], dict) else {}
        raise named_error(error_kind(str(error.get("type", "Exception"))))(
            _("its message is not shown when graded, since it could carry the graded inputs; run the check "
              "in your notebook to read it"))


def named_error(type_name: str) -> type:
    """An exception class called as the student's exception was (so the verdict names it)."""
    name = type_name if type_name.isidentifier() else "Exception"
    return type(name, (RemoteError,), {"__init__": Exception.__init__})
