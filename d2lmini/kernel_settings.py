"""The process-wide settings a kernel keeps between cells, recorded and put back (the ground floor).

torch keeps some settings for the whole process or thread, not per call: gradient mode,
inference mode, the default dtype and device, deterministic algorithms, its thread counts,
anomaly detection; the interpreter keeps the handler of ■ (SIGINT). A student's function
that changes one, or an interrupt that lands between a `torch.no_grad()` and its end, leaves
it changed for every later cell. `snapshot()` records them in a `KernelSettings`;
`restore(before)` puts back what changed and returns a `Change` for each, saying whether it
could be put back (`put_back`), so that no message claims what was not done. Used by
`d2lmini.interrupt`, `d2lmini.train`, `d2lmini.lab` and the self-check's guard.
"""

import contextlib
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields

import torch

from d2lmini.held import interrupts_held
from d2lmini.i18n import N_, _


@dataclass(frozen=True)
class KernelSettings:
    """torch's and the interpreter's process-wide settings at one moment (see `snapshot`).

    `anomaly` and `deterministic` are (enabled, its option) pairs; `sigint` is the handler.
    """

    inference: bool
    grad: bool
    dtype: torch.dtype
    device: torch.device
    deterministic: tuple[bool, bool]
    threads: int
    interop_threads: int
    anomaly: tuple[bool, bool]
    sigint: object


def _default_device() -> torch.device:
    reader = getattr(torch, "get_default_device", None)  # not in every torch this package supports
    try:
        return reader() if reader is not None else torch.empty(()).device
    except AttributeError:  # torch 2.3's reader fails once set_default_device(None) has run
        return torch.empty(()).device


def _anomaly() -> tuple[bool, bool]:
    check_nan = getattr(torch, "is_anomaly_check_nan_enabled", lambda: True)
    return torch.is_anomaly_enabled(), check_nan()


def snapshot() -> KernelSettings:
    """Return the settings as they are now, in this thread (grad and inference mode are per thread)."""
    return KernelSettings(
        inference=torch.is_inference_mode_enabled(), grad=torch.is_grad_enabled(),
        dtype=torch.get_default_dtype(), device=_default_device(),
        deterministic=(torch.are_deterministic_algorithms_enabled(),
                       torch.is_deterministic_algorithms_warn_only_enabled()),
        threads=torch.get_num_threads(), interop_threads=torch.get_num_interop_threads(),
        anomaly=_anomaly(), sigint=signal.getsignal(signal.SIGINT))


@dataclass(frozen=True)
class Change:
    """One setting found changed: `setting` (a `KernelSettings` field), what was done to it in
    words (`said`, e.g. "switched gradients off"), and whether `restore` could put it back."""

    setting: str
    said: str
    put_back: bool


def _said_deterministic(now) -> str:
    if not now[0]:
        return _("switched deterministic algorithms off (torch.use_deterministic_algorithms)")
    if now[1]:
        return _("switched deterministic algorithms on (warn only) (torch.use_deterministic_algorithms)")
    return _("switched deterministic algorithms on (torch.use_deterministic_algorithms)")


# What a change of each setting is called, from its value after the change (a clause whose subject is
# `describe`'s `who`: "Your function switched gradients off ..."), in the language d2lmini speaks then.
SAID: dict[str, Callable[[object], str]] = {
    "inference": lambda now: (_("switched inference mode on (torch.inference_mode)") if now
                              else _("switched inference mode off (torch.inference_mode)")),
    "grad": lambda now: (_("switched gradients on (torch.set_grad_enabled)") if now
                         else _("switched gradients off (torch.set_grad_enabled)")),
    "dtype": lambda now: _("set the default dtype to {dtype} (torch.set_default_dtype)").format(dtype=now),
    "device": lambda now: _("set the default device to {device} (torch.set_default_device)").format(
        device=now),
    "deterministic": _said_deterministic,
    "threads": lambda now: _("set torch's thread count to {count} (torch.set_num_threads)").format(count=now),
    "interop_threads": lambda now: _("set torch's inter-op thread count to {count} "
                                     "(torch.set_num_interop_threads)").format(count=now),
    "anomaly": lambda now: (_("switched anomaly detection on (torch.autograd.set_detect_anomaly)") if now[0]
                            else _("switched anomaly detection off (torch.autograd.set_detect_anomaly)")),
    "sigint": lambda now: _("replaced the handler of ■ (SIGINT, Ctrl-C; signal.signal)"),
}
# Who changed the settings, unless `describe` is told (translated where it is shown).
YOUR_FUNCTION = N_("Your function")

# Kept for the life of the process: each holds inference mode off over a guard a student left on.
_INFERENCE_OFF: list = []


def _put_inference(enabled: bool) -> None:
    """Inference mode is a stack of guards, not a flag: a guard left entered is undone by entering
    the opposite guard and keeping it (it sets gradient mode too, which `restore` sets after)."""
    guard = torch._C._InferenceMode(enabled)
    guard.__enter__()
    _INFERENCE_OFF.append(guard)


def _put_device(device: torch.device) -> None:
    # None removes the default device (no torch function pays for a device mode), as for the CPU.
    torch.set_default_device(None if device.type == "cpu" else device)


def _put_interop_threads(count: int) -> None:
    try:  # torch allows it once, before any inter-op work: afterwards it cannot be put back
        torch.set_num_interop_threads(count)
    except RuntimeError:
        pass


def _put_sigint(handler) -> None:
    if threading.current_thread() is threading.main_thread():  # only the main thread may set it
        signal.signal(signal.SIGINT, signal.default_int_handler if handler is None else handler)


# How each setting is put back, in this order (inference mode first: leaving it sets gradient mode).
PUT: dict[str, Callable[[object], None]] = {
    "inference": _put_inference,
    "grad": torch._C._set_grad_enabled,
    "dtype": torch.set_default_dtype,
    "device": _put_device,
    "deterministic": lambda value: torch.use_deterministic_algorithms(value[0], warn_only=value[1]),
    "threads": torch.set_num_threads,
    "interop_threads": _put_interop_threads,
    "anomaly": lambda value: torch.autograd.set_detect_anomaly(*value),
    "sigint": _put_sigint,
}


def changed(before: KernelSettings, now: KernelSettings | None = None) -> list[str]:
    """Return the names of the settings that differ between `before` and `now` (default: now)."""
    now = snapshot() if now is None else now
    return [f.name for f in fields(KernelSettings) if getattr(before, f.name) != getattr(now, f.name)]


def restore(before: KernelSettings, ignore: tuple[str, ...] = ()) -> list[Change]:
    """Put back every setting that changed since `before` (but those in `ignore`); return the changes.

    Each `Change` says whether the setting now equals its value in `before` (`put_back`):
    one torch allows once (inter-op threads), a default device held by a `with` block, or
    the SIGINT handler outside the main thread may not be.
    """
    now = snapshot()
    names = [name for name in changed(before, now) if name not in ignore]
    # leaving inference mode also sets gradient mode: set that again after it, changed or not
    for name in [n for n in PUT if n in names or (n == "grad" and "inference" in names)]:
        PUT[name](getattr(before, name))
    after = snapshot()
    return [Change(name, SAID[name](getattr(now, name)), getattr(after, name) == getattr(before, name))
            for name in names]


def describe(changes: list[Change], who: str = YOUR_FUNCTION) -> str:
    """Return one sentence for `changes` (empty string for none): what `who` changed, what was put back.

    `who` is shown translated where a catalog has it (callers may also pass it translated).
    """
    if not changes:
        return ""
    who = _(who) if who else who
    done = [c.said for c in changes if c.put_back]
    left = [c.said for c in changes if not c.put_back]
    said = ""
    if done:
        # TRANSLATORS: {who} changed a setting ("Your function"); {changes} says what it did ("switched
        # gradients off (torch.set_grad_enabled)").
        template = (_("{who} {changes}; that was put back.") if len(done) == 1
                    else _("{who} {changes}; each was put back."))
        said = template.format(who=who, changes=_listed(done))
    if left and done:
        # TRANSLATORS: {said} is the sentence before ("Your function switched gradients off (...); that was
        # put back."); {changes} says what else it did, as there.
        said = _("{said} It also {changes}, which could not be put back: restart the kernel (Kernel > "
                 "Restart) to undo it.").format(said=said, changes=_listed(left))
    elif left:
        said = _("{who} {changes}, which could not be put back: restart the kernel (Kernel > Restart) to "
                 "undo it.").format(who=who, changes=_listed(left))
    return said


def _listed(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    # TRANSLATORS: the separator between changes in a list ("A, B and C"), before the last one's "and".
    separator = _(", ")
    # TRANSLATORS: the last of several changes joined on: "{items} and {last}" ("A, B and C").
    return _("{items} and {last}").format(items=separator.join(items[:-1]), last=items[-1])


@contextlib.contextmanager
def put_back_after(who: str, ended: str) -> Iterator[None]:
    """Record the settings, run the block, then put them back on every exit and warn what changed.

    `who` names the run in the warning ("Training (its callback, or an interrupt)"); ■ is held
    while the settings are put back, so it can neither cut that in half nor, the run being over,
    lose its result: one that arrives then is named (`ended` says when: "the run ended").
    Used by `train()` and `run_lab`.
    """
    before = snapshot()
    try:
        yield
    finally:
        with interrupts_held(deliver=False) as arrived:
            changes = restore(before, ignore=("sigint",))
        # TRANSLATORS: ■ is the interrupt button; {ended} says when it arrived ("the run ended").
        arrival = _("■ arrived as {ended}: nothing was stopped.").format(ended=ended) if arrived else ""
        message = describe(changes, who) + (" " + arrival if arrived else "")
        if message:
            warnings.warn(message.strip(), RuntimeWarning, stacklevel=4)
