"""What a student's function may not call while it is checked, and how a copy of it is recognised.

A profile hook (`Refuser`) refuses the package's own code (any `d2lmini` module but the
exercise machinery), a copy of it compiled anywhere (`exec(compile(inspect.getsource(d2lmini.bptt),
...))`, at any optimisation level, renamed with `code.replace`, carried in a default, a closure
or a global: it is recognised when it runs, by its code without file, lines and names; a
function shorter than `SMALLEST` operations is recognised only with its docstring, since
without one it is what anyone would write), the instructors' solutions (`solutions/notebook_NN.py`
and `solutions/capstone.py`, imported or compiled anywhere with their lines), torch's built-in
version of what an exercise asks the student to write (`Ban`: under any alias, torch.ops.aten
and torch._VF included; `banned_call` finds an operator looked up afresh by name), and the C
functions no exercise needs (`DANGEROUS`: ending the kernel, starting a thread, switching
the hook off). Used by `d2lmini.exercises.guard`; introduced with notebook 01's coding exercises.
"""

import _thread
import dis
import importlib
import inspect
import os
import re
import sys
import sysconfig
import threading
import types
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
import torch.nn.modules.rnn
import torch.nn.utils.clip_grad

from d2lmini.i18n import N_, _

PACKAGE = Path(__file__).parents[2]  # as the code objects name it: not resolved
SOLUTIONS = PACKAGE.parent / "solutions"  # the instructors' answers, in a clone of the repository
# The exercise machinery the guarded call itself runs (converting a result, the hook, the guard).
MACHINERY = frozenset(str(PACKAGE / "exercises" / name) for name in
                      ("__init__.py", "coding.py", "guard/__init__.py", "guard/refusals.py",
                       "guard/kernel_state.py", "guard/limits.py", "guard/children.py",
                       "guard/overrides.py"))
# The grader's remote function (d2lmini.grading.base.remote) stands in for a student's function when grading.
MACHINERY |= {str(PACKAGE / "grading" / "base" / "remote.py")}
# The language module: a message worded while the guard runs (a result's `convert`, as the capstone's
# `as_run`) is translated by it. It holds no reference code.
MACHINERY |= {str(PACKAGE / "i18n.py")}
CLIPPING_HELPERS = torch.nn.utils.clip_grad.__file__
# Where Python's standard library and installed packages live (torch, sympy, ...).
LIBRARIES = tuple(sorted({path + os.sep for name in ("stdlib", "platstdlib", "purelib", "platlib")
                          if (path := sysconfig.get_paths().get(name))}))


@dataclass(frozen=True)
class Ban:
    """What an exercise that asks for one's own version refuses: torch's built-in one, by any name.

    `what` names it in English (marked with `N_`; a refusal names it translated); `files`: Python
    files of torch whose functions are refused; `codes`: single functions; `builtins`: C functions
    (reached under any alias: torch.rnn_tanh is torch._VF.rnn_tanh); `ops`: torch operators by
    name, however reached (`torch.ops.aten.gru_cell.default`, an operator looked up afresh): the
    names `coding.CallRecorder` records, "gru_cell" for "gru_cell.default" too (`banned_call`).
    """

    what: str
    files: frozenset[str] = frozenset()
    codes: frozenset = frozenset()
    builtins: tuple = ()
    ops: frozenset[str] = frozenset()


def _builtins(names: tuple[str, ...], *spaces) -> tuple:
    return tuple(getattr(space, name) for space in spaces for name in names if hasattr(space, name))


def _aten_builtins(names: tuple[str, ...]) -> tuple:
    """The C functions behind torch.ops.aten.NAME and each of its overloads (NAME.default, NAME.input)."""
    found = []
    for name in names:
        try:
            packet = getattr(torch.ops.aten, name)
            found += [packet._op, *(getattr(packet, overload)._op for overload in packet.overloads())]
        except (AttributeError, RuntimeError):  # an operator this torch does not have
            continue
    return tuple(found)


def _python_versions(module_name: str, pattern: str) -> frozenset:
    """The code of a torch module's functions whose name contains `pattern` (its decompositions)."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:  # not in this torch
        return frozenset()
    return frozenset(inspect.unwrap(f).__code__ for name, f in vars(module).items()
                     if re.search(pattern, name) and inspect.isfunction(inspect.unwrap(f)))


def _module_files(*names: str) -> frozenset[str]:
    files = set()
    for name in names:
        try:
            files.add(importlib.import_module(name).__file__)
        except ImportError:  # not in this torch
            continue
    return frozenset(files)


# torch's fused recurrent layers and cells, as its operators are named (torch.NAME, torch._VF.NAME,
# torch.ops.aten.NAME), the quantized and backend-specific ones included.
RECURRENT_OPS = ("rnn_tanh", "rnn_tanh_cell", "rnn_relu", "rnn_relu_cell", "lstm", "lstm_cell", "gru",
                 "gru_cell", "quantized_rnn_tanh_cell", "quantized_rnn_relu_cell", "quantized_lstm_cell",
                 "quantized_gru_cell", "quantized_lstm", "quantized_gru", "_thnn_fused_lstm_cell",
                 "_thnn_fused_gru_cell", "mkldnn_rnn_layer", "_cudnn_rnn", "miopen_rnn", "_lstm_mps")
# Their Python versions: torch's decompositions of them, and the modules of torch's RNN classes.
RECURRENT_CODES = _python_versions("torch._decomp.decompositions", "gru|lstm|rnn")
RECURRENT_FILES = _module_files(
    "torch.nn.modules.rnn", "torch.ao.nn.quantizable.modules.rnn", "torch.ao.nn.quantized.modules.rnn",
    "torch.ao.nn.quantized.dynamic.modules.rnn", "torch.ao.nn.quantized.reference.modules.rnn")

CLIPPING = Ban(N_("torch's gradient clipping (torch.nn.utils.clip_grad_norm_ and its helpers)"),
               files=frozenset({CLIPPING_HELPERS}))
RNN = Ban(N_("torch's built-in RNN (torch.nn.RNN, torch.rnn_tanh and their relatives)"),
          files=RECURRENT_FILES, codes=RECURRENT_CODES, ops=frozenset(RECURRENT_OPS),
          builtins=(*_builtins(RECURRENT_OPS, torch, torch._C._VariableFunctions),
                    *_aten_builtins(RECURRENT_OPS)))
GATED = Ban(N_("torch's built-in GRU and LSTM (torch.nn.GRU, torch.nn.LSTM, torch.gru, torch.lstm and "
               "their cells)"), files=RNN.files, codes=RNN.codes, builtins=RNN.builtins, ops=RNN.ops)
CROSS_ENTROPY = Ban(N_("torch's cross-entropy (F.cross_entropy, F.nll_loss and the functions behind them)"),
                    codes=frozenset({F.cross_entropy.__code__, F.nll_loss.__code__}),
                    builtins=_builtins(("cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d"),
                                       torch._C._nn) + _builtins(("nll_loss",), torch))
# C functions no exercise needs that would end the kernel, start a thread or switch the hook off, and
# why, in English (marked with N_; a refusal says it translated). What comes before the first comma
# names it (`_danger_name`).
A_NEW_THREAD = N_("a new thread, which could outlive the check")
DANGEROUS = {os._exit: N_("os._exit, which would end the notebook's kernel with no verdict"),
             os.abort: N_("os.abort, which would end the notebook's kernel with no verdict"),
             os.kill: N_("os.kill, which could end the notebook's kernel with no verdict"),
             _thread.start_new_thread: A_NEW_THREAD,
             sys.setprofile: N_("sys.setprofile, which would switch the checker's guard off"),
             sys.settrace: N_("sys.settrace, which could switch the checker's guard off")}
DANGEROUS.update({getattr(_thread, name): A_NEW_THREAD
                  for name in ("start_new", "start_joinable_thread") if hasattr(_thread, name)})
DANGEROUS_CODES = {threading.Thread.start.__code__: A_NEW_THREAD,
                   threading.setprofile.__code__: N_("threading.setprofile, which would switch the "
                                                     "checker's guard off")}


def _danger_name(danger: str) -> str:
    """What a `DANGEROUS` entry names: a function's name in the code, or a new thread (translated)."""
    name = danger.split(",")[0]
    # TRANSLATORS: what a student's function tried to start (a refusal names it).
    return _("a new thread") if danger == A_NEW_THREAD else name


class RefusedCall(Exception):
    """Raised inside a student's function that calls the package's reference code."""


_FINGERPRINTS: dict[int, tuple[types.CodeType, tuple]] = {}  # id(code) -> (code, its fingerprints)


def _fingerprints(code: types.CodeType) -> tuple[tuple, tuple | None, tuple | None]:
    """Three forms of a function's code, none with its file or line numbers (a copy compiled
    elsewhere has the same): `exact` (names and docstring included), for a function with a
    docstring `renamed` (its own and its local names left out: a copy renamed with `code.replace`;
    None without one) and, for a function of at least
    `SMALLEST` operations, `bare` (names and docstring left out: a copy compiled with `optimize=2`;
    None for a shorter one, which is what anyone would write)."""
    known = _FINGERPRINTS.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    fingerprints = _compute_fingerprints(code)
    if len(_FINGERPRINTS) < 100_000:
        _FINGERPRINTS[id(code)] = (code, fingerprints)
    return fingerprints


def _fingerprint(code: types.CodeType) -> tuple:
    """The `exact` form of `_fingerprints`."""
    return _fingerprints(code)[0]


# The compiler writes `module.f(x)` as LOAD_ATTR when `module` is imported in the same source,
# LOAD_METHOD when the function is compiled alone: the same code either way.
SAME_OPERATION = {"LOAD_METHOD": "LOAD_ATTR"}
SKIPPED = ("CACHE", "PUSH_NULL", "PRECALL", "RESUME", "NOP")  # no operation: a docstring dropped leaves a NOP
SMALLEST = 30  # operations of the shortest function whose `bare` form is compared (as the grader's copies)


def _has_docstring(code: types.CodeType) -> bool:
    """True for a named function whose first constant is its docstring (CPython 3.11-3.13 keep it there)."""
    return (not code.co_name.startswith("<") and bool(code.co_consts) and isinstance(code.co_consts[0], str)
            and not code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE))


def _compute_fingerprints(code: types.CodeType) -> tuple[tuple, tuple | None, tuple | None]:
    nested = [_fingerprints(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
              for c in code.co_consts]

    def consts(form: int) -> tuple:
        return tuple(n[form] if isinstance(c, types.CodeType) else n
                     for c, n in zip(code.co_consts, nested, strict=True))

    operations = tuple(SAME_OPERATION.get(i.opname, i.opname) for i in dis.get_instructions(code)
                       if i.opname not in SKIPPED)
    shape = (code.co_names, code.co_argcount, code.co_kwonlyargcount, code.co_flags & 0x3FF)  # no __future__
    exact = ("exact", code.co_name, operations, consts(0), code.co_varnames, code.co_freevars, *shape)
    renamed = None  # without its docstring, a function renamed is what anyone might write
    if _has_docstring(code):
        renamed = ("renamed", operations, consts(1), len(code.co_varnames), len(code.co_freevars), *shape)
    bare = None
    if len(operations) >= SMALLEST:
        body = consts(2)[1:] if _has_docstring(code) else consts(2)
        bare = ("bare", operations, tuple(c for c in body if c != ("NoneType", "None")),
                len(code.co_varnames), *shape)
    return exact, renamed, bare


def _named_functions(code: types.CodeType):
    """Every named function (not a lambda or comprehension) compiled into `code`, nested ones too."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if not const.co_name.startswith("<"):
                yield const
            yield from _named_functions(const)


def _compile(path: Path, optimize: int = 0) -> types.CodeType | None:
    try:
        return compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True,
                       optimize=optimize)
    except (OSError, SyntaxError, ValueError):  # a file being edited, an unreadable one: nothing to match
        return None


_PACKAGE_CODE: dict[tuple, tuple[str, str]] = {}  # any fingerprint -> (file, "d2lmini.bptt.hidden_gradients")
_SOLUTION_CODE: set[types.CodeType] = set()  # the solutions' code objects (equal wherever compiled)


def _load_known_code() -> None:
    """Fingerprint the package's functions and collect the solutions' code, once per process."""
    if _PACKAGE_CODE:
        return
    for path in sorted(PACKAGE.rglob("*.py")):
        for optimize in (0, 1):  # optimize=1 drops the asserts (2 also the docstring: the `bare` form)
            module = _compile(path, optimize)
            for code in _named_functions(module) if module is not None else ():
                for fingerprint in filter(None, _fingerprints(code)):
                    _PACKAGE_CODE.setdefault(fingerprint, (str(path), _readable_name(code)))
            if module is None or b"assert" not in path.read_bytes():
                break
    for path in sorted(SOLUTIONS.glob("*.py")) if SOLUTIONS.is_dir() else ():
        module = _compile(path)
        _SOLUTION_CODE.update(_named_functions(module) if module is not None else ())


def _is_solution_file(filename: str) -> bool:
    """True for a file of solutions/ in a clone (solutions/notebook_NN.py, solutions/capstone.py)."""
    path = Path(filename)
    return path.parent == SOLUTIONS and path.suffix == ".py"


def _readable_name(code) -> str:
    """'d2lmini.batching.sequential_batches' for the code of a package function."""
    try:
        module = Path(code.co_filename).relative_to(PACKAGE.parent).with_suffix("")
    except ValueError:  # compiled elsewhere (a copy)
        return code.co_qualname
    parts = module.parts[:-1] if module.name == "__init__" else module.parts  # a package: its own name
    return ".".join((*parts, code.co_qualname))


THREAD_START = threading.Thread.start.__code__
THREAD_STARTERS = tuple(f for f, why in DANGEROUS.items() if "thread" in why)


def _from_a_library(frame, up: int = 1) -> bool:
    """True when the call in `frame` (or its caller, `up` = 1) was made by an installed library's code."""
    caller = frame.f_back if up else frame
    return caller is not None and caller.f_code.co_filename.startswith(LIBRARIES)


class Refuser:
    """A profile hook that refuses the package's code (except `allowed` files), copies of it, the
    solutions, what `bans` name, and the C functions in `DANGEROUS`; records the first refusal."""

    def __init__(self, allowed: frozenset[str], bans: tuple[Ban, ...]):
        _load_known_code()
        self.allowed = MACHINERY | allowed
        self.bans = bans
        self.builtins = {id(b): ban for ban in bans for b in ban.builtins}
        self.watched = set(self.builtins) | {id(f) for f in DANGEROUS}
        self.refused: str | None = None
        self.refusal: str | None = None
        self.route = False  # the refusal is of a route the exercise forbids, not of a danger
        self.package = str(PACKAGE) + os.sep
        self.seen: dict[int, tuple[types.CodeType, tuple[str, str] | None]] = {}
        self.library_threads: list[threading.Thread] = []  # started by torch or Python itself: spared

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code is THREAD_START and _from_a_library(frame):
            self.library_threads.append(frame.f_locals.get("self"))
            return
        if event == "call":
            found = self._code(frame.f_code)
        elif event == "c_call" and id(arg) in self.watched:  # most C calls: one dict lookup
            found = self._builtin(arg, frame)
        else:
            return
        if found is not None:
            name, why = found
            if self.refused is None:
                self.refused, self.refusal = name, why
                self.route = not (frame.f_code in DANGEROUS_CODES or (event == "c_call" and arg in DANGEROUS))
            # raising here also removes the hook; `refused` keeps the verdict
            raise RefusedCall(_("{name} is refused here: write it yourself.").format(name=name))

    def _builtin(self, function, frame) -> tuple[str, str] | None:
        if frame.f_code.co_filename in MACHINERY:  # the guard's own calls (putting the hook back)
            return None
        if function in THREAD_STARTERS and _from_a_library(frame, 0):
            return None  # a thread torch or Python starts for its own work
        danger = DANGEROUS.get(function)
        if danger is not None:
            # TRANSLATORS: {danger} names a function and what it would do ("os._exit, which would end ...").
            return _danger_name(danger), _("Your function calls {danger}; it is refused here.").format(
                danger=_(danger))
        ban = self.builtins.get(id(function))
        if ban is not None:
            return _(ban.what), _refused_call(_(ban.what))
        return None

    def _code(self, code: types.CodeType) -> tuple[str, str] | None:
        known = self.seen.get(id(code))
        if known is None or known[0] is not code:
            known = (code, self._judge(code))
            self.seen[id(code)] = known
        return known[1]

    def _judge(self, code: types.CodeType) -> tuple[str, str] | None:
        filename = code.co_filename
        if code in DANGEROUS_CODES:
            # TRANSLATORS: what a student's function tried to start (a refusal names it).
            return _("a thread"), _("Your function starts {danger}; it is refused here.").format(
                danger=_(DANGEROUS_CODES[code]))
        for ban in self.bans:
            if filename in ban.files or code in ban.codes:
                return _(ban.what), _refused_call(_(ban.what))
        if filename.startswith(self.package) and filename not in self.allowed:
            name = _readable_name(code)
            # TRANSLATORS: {name} is a function of the package, e.g. d2lmini.bptt.hidden_gradients.
            return name, _("Your function calls {name}, the package's own code. The exercise asks you to "
                           "write it yourself, so that call is refused here.").format(name=name)
        if code in _SOLUTION_CODE or _is_solution_file(filename):
            # TRANSLATORS: {name} is a function's name in the instructors' solutions.
            why = _("Your function runs the instructors' solutions (solutions/, {name}). The exercise asks "
                    "you to write it yourself, so that call is refused here.").format(name=code.co_qualname)
            return _("the instructors' solutions"), why
        if code.co_name.startswith("<") or filename.startswith(LIBRARIES):
            return None  # installed libraries are not copies of ours: no need to fingerprint them
        twin = next((found for form in _fingerprints(code) if form is not None
                     and (found := _PACKAGE_CODE.get(form)) is not None), None)
        if twin is not None and twin[0] not in self.allowed:
            return twin[1], _("Your function runs a copy of {name}, the package's own code. The "
                              "exercise asks you to write it yourself, so that call is refused "
                              "here.").format(name=twin[1])
        return None


def banned_call(calls, bans: tuple[Ban, ...]) -> tuple[str, str] | None:
    """(What was called, why it is refused) if one of `calls` (the torch functions a student's function
    called, by the names `coding.CallRecorder` gives them) is an operator one of `bans` refuses."""
    for ban in bans:
        if ban.ops and any(str(name).split(".")[0] in ban.ops for name in calls):
            return _(ban.what), _refused_call(_(ban.what))
    return None


def _refused_call(name: str) -> str:
    """Why a call of torch's own version of what the exercise asks for (`name`, translated) is refused."""
    # TRANSLATORS: {name} is what the function called (a function's name, or e.g. "torch's built-in RNN").
    return _("Your function calls {name}. The exercise asks you to write it yourself, so that call is "
             "refused here.").format(name=name)


# --- time and memory ------------------------------------------------------------------------------
