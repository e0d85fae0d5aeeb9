"""Check a function that a student wrote against the package's reference.

The student's function runs under `d2lmini.exercises.guard` (time and memory limits, no
calls into the package's own code or a copy of it, the kernel restored afterwards, printing
capped), and whatever it returns is compared without raising. No expected value is within
reach while it runs: a `Case` holds its inputs and the reference *function*, whose call is
refused inside the guard; before the student's function first runs, each reference result
is computed and only a digest of it kept, and after the call the reference is computed again
from a pristine copy of the inputs (and, on the CPU, checked against that digest). So a
function that walks up the stack (`sys._getframe`) or through `gc.get_objects()` finds no
answer to copy. In-process this is a deterrent, not a wall: a grade rests on the grader,
which judges in a separate process.

A coding exercise gives the student a stub that returns None; `check_function` then says
"not attempted yet" and nothing else, so a stored notebook never shows a solution. Once
the student writes the function, the check runs it on the exercise's cases (random
inputs, several shapes, edge cases; on a GPU too when there is one) and reports the first
thing that is wrong: an exception, a changed input, a forbidden operation, a wrong type,
shape, device or value, naming the case and the output. It never prints the reference's
code or its values: a message says what is wrong and where, not the expected number. An
exercise may list its typical mistakes (`Mistake`): a wrong result that one of them gives is
told that mistake as its likely cause.
"""

import contextlib
import contextvars
import copy
import hashlib
import inspect
import itertools
import math
import numbers
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import torch
from torch.overrides import TorchFunctionMode

from d2lmini.exercises import Verdict, correct_message
from d2lmini.exercises.guard import Ban, CappedText, Outcome, is_memory_error, run_guarded
from d2lmini.exercises.guard.overrides import unjudgeable
from d2lmini.exercises.guard.refusals import banned_call
from d2lmini.i18n import N_, _
from d2lmini.kernel_settings import describe

# Messages kept in English (compared by code, e.g. `problem == NOT_ATTEMPTED`) and shown with `_`.
NOT_ATTEMPTED = N_("Not attempted yet: write your code in the cell above in place of `return None`, run "
                   "that cell, then run this one.")
RETURNED_NONE = N_("Your function returned None, although its body is written: it computes something but "
                   "never returns it. Check that it ends with `return ...` on every path (a forgotten "
                   "`return`, or one indented inside a loop or an `if` that did not run).")

# Every torch function that multiplies matrices (or vectors), under the names torch gives them.
MATMUL_NAMES = frozenset({
    "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "addmm_", "addbmm", "baddbmm",
    "mv", "addmv", "linear", "einsum", "tensordot", "multi_dot", "chain_matmul", "inner", "dot",
    "vdot", "outer", "ger", "bilinear", "kron",
})
# Elementwise products: one whose result is larger than each of its inputs broadcasts an outer
# product, and summing that is a matrix product in disguise, so the recorder counts it as one.
ELEMENTWISE_PRODUCTS = frozenset({
    "mul", "mul_", "__mul__", "__rmul__", "__imul__", "multiply", "where", "addcmul", "div",
    "true_divide", "__truediv__", "__rtruediv__", "masked_fill", "logical_and", "__and__",
})
BROADCAST_PRODUCT = "a broadcast product"


@dataclass
class Case:
    """One input for the student's function and how to compute what it should return.

    `label` says what the input is in words ("batch 3, 4 inputs, 2 hidden units");
    `reference(*args)` computes the expected result (a package function: calling it from the
    student's code is refused), so the expected value is not stored while the student's code
    runs; `expected` is the older form, a value held in the case (reachable, avoid it).
    `names` names the outputs when the function returns several; `convert` turns the
    student's result into the form of the expected one (e.g. `list` for a generator).
    """

    label: str
    args: tuple
    expected: object = None
    names: Sequence[str] = ()
    convert: Callable | None = None
    locate: Callable[[str, tuple], str] | None = None  # (output name, index) -> " at step 2, sequence 1"
    reference: Callable | None = None
    digest: bytes | None = None  # of the reference's result, computed before any student code runs
    outputs: Sequence[str] = ()  # names of every output, nested ones flattened: each judged and reported


@dataclass(frozen=True)
class Incident:
    """What went wrong while a student's function ran, other than a wrong value: the exception it
    raised (`error`), a call or route the exercise refuses (`refused`), an input it changed in place
    (`changed_input`), or right values in a form the exercise does not ask for (`form`, the form
    check that refused them: `new_tensors`, `python_number`)."""

    error: BaseException | None = None
    refused: bool = False
    changed_input: bool = False
    form: Callable | None = None


@dataclass(frozen=True)
class Mistake:
    """A known mistake in an exercise, recognised by what it returns, and its cause in words.

    `gives(*args)` computes what a function with the mistake returns for a case's inputs (in
    the form of the reference's result, before the case's `convert`); without `gives`, the
    mistake is recognised by `shows(got, expected, rtol, atol)`, how the wrong result relates to
    the right one (`mistakes.shared`: the right numbers transposed, with the opposite sign...),
    or by `happens(incident)`, what went wrong while the function ran (`Incident`: an exception
    of a kind, an input changed in place), or, without any, it is a result with inf or nan where
    the reference's is finite (an overflow). `cause` is English, marked with `N_`, and shown
    translated (`_`).
    """

    cause: str
    gives: Callable | None = None
    section: str = ""  # the notebook's section to re-read, English, marked with N_ ("" for none)
    fields: tuple[tuple[str, str], ...] = ()  # (field, value): the {field}s of `cause` (a weight's name)
    shows: Callable[[object, object, float, float], bool] | None = None
    happens: Callable[[Incident], bool] | None = None

    def said(self) -> str:
        """The words every feedback gives this mistake (self-check, grader, Gradescope): "Likely cause: ..."
        and the section to re-read, in the language d2lmini speaks."""
        words = _(self.cause).format(**dict(self.fields)) if self.fields else _(self.cause)
        # TRANSLATORS: {cause} is the known mistake that gives this result (a sentence without a capital).
        cause = _("Likely cause: {cause}").format(cause=words)
        if not self.section:
            return cause
        # TRANSLATORS: {section} names a notebook's section ("notebook 09, section 1 (The GRU)").
        return cause + " " + _("Re-read {section}.").format(section=_(self.section))


@dataclass(frozen=True)
class Rule:
    """A structural demand: `broken(calls)` is True when the recorded torch calls break it.

    `message` is English, marked with `N_` where the rule is made, and shown translated (`_`)."""

    broken: Callable[[Counter], bool]
    message: str


def count_matmuls(calls: Counter) -> int:
    """How many matrix products the recorded calls contain (broadcast products included)."""
    return sum(n for name, n in calls.items() if name in MATMUL_NAMES or name == BROADCAST_PRODUCT)


def at_most_matmuls(limit: int, what: str) -> Rule:
    """The function may multiply matrices at most `limit` times (`what` says why, to the student)."""
    return Rule(lambda calls: count_matmuls(calls) > limit, what)


def never(names: Iterable[str], what: str) -> Rule:
    """The function may not call any torch function in `names` (e.g. "one_hot", "data")."""
    names = frozenset(names)
    return Rule(lambda calls: any(name in names for name in calls), what)


class CallRecorder(TorchFunctionMode):
    """Record the name of every torch function called inside a `with` block.

    Reading `.data` is recorded as "data" (it reaches torch as the getter of that property).
    An elementwise product whose result is larger than every tensor it multiplies is also
    recorded as `BROADCAST_PRODUCT`.
    """

    def __init__(self):
        super().__init__()
        self.calls = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name == "__get__":
            name = getattr(getattr(func, "__self__", None), "__name__", name)
        self.calls[name] += 1
        result = func(*args, **(kwargs or {}))
        if name in ELEMENTWISE_PRODUCTS and _grows(result, args):
            self.calls[BROADCAST_PRODUCT] += 1
        return result


def _grows(result, args) -> bool:
    """True if the tensor `result` has more entries than each tensor among `args`."""
    sizes = [a.numel() for a in args if isinstance(a, torch.Tensor)]
    return isinstance(result, torch.Tensor) and bool(sizes) and result.numel() > max(sizes)


def available_devices() -> list[torch.device]:
    """The CPU, and the GPU when CUDA is available (the cases are run on each)."""
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    return devices


@dataclass
class Tally:
    """The cases that `check_function` counted inside `counted_cases` (the grader's partial credit).

    `passed` of `total` cases passed; `refused` is set by a case refused or that broke a rule of
    the exercise, `unattempted` by a stub; `checks` counts the `check_function` calls that ran
    cases, and `verdict` is the last one's verdict.
    """

    passed: int = 0
    total: int = 0
    refused: bool = False
    unattempted: bool = False
    checks: int = 0
    verdict: Verdict | None = None


_TALLY = contextvars.ContextVar("d2lmini_case_tally", default=None)


@contextlib.contextmanager
def counted_cases():
    """Within the block, `check_function` runs every case, not only up to the first that fails,
    and counts them in the `Tally` this yields (for `d2lmini.grading`). Verdicts are unchanged."""
    tally = Tally()
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def _note_refused() -> None:
    """Mark the counting tally, if any, refused: a refused case earns no partial credit."""
    tally = _TALLY.get()
    if tally is not None:
        tally.refused = True


def _is_refusal(outcome: Outcome) -> bool:
    """True if the call was refused or replaced torch functions (here, or in the grader's caller process)."""
    return bool(outcome.refused or outcome.replaced or getattr(outcome.error, "refused_call", False))


# The grader's hook: moves every case's seed, so that graded inputs differ from the self-checks'.
_SEED_SHIFT = contextvars.ContextVar("d2lmini_case_seed_shift", default=0)


@contextlib.contextmanager
def shifted_seeds(shift: int):
    """Within the block, `sampler` draws from seeds moved by `shift` (for `d2lmini.grading`)."""
    token = _SEED_SHIFT.set(int(shift))
    try:
        yield
    finally:
        _SEED_SHIFT.reset(token)


def sampler(seed: int, device: torch.device, dtype: torch.dtype = torch.float32) -> Callable:
    """Return rand(*shape): normal samples drawn on the CPU (the same on every machine), moved to `device`."""
    generator = torch.Generator().manual_seed(seed + _SEED_SHIFT.get())
    return lambda *shape: torch.randn(*shape, generator=generator, dtype=dtype).to(device)


def _shape(value) -> str:
    return str(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__


def _where(index: tuple[int, ...]) -> str:
    """Where a wrong entry is (" at row 2, column 3"): the {where} of a message, "" for a 0-d tensor."""
    if not index:
        return ""
    if len(index) == 2:
        # TRANSLATORS: {where} of "the result is wrong{where}", with its leading space in English.
        return _(" at row {row}, column {column}").format(row=index[0], column=index[1])
    # TRANSLATORS: {where} of "the result is wrong{where}", with its leading space in English.
    return _(" at index {index}").format(index=index[0] if len(index) == 1 else index)


def nested_name(what: str, name: str) -> str:
    """How an item of a result is named ("the result, the outputs,"): `what` and the item's `name`."""
    # TRANSLATORS: an item of a result: "the result, the outputs," in "the result, the outputs, is wrong".
    return _("{what}, {name},").format(what=what, name=name)


def _unreadable_tensor(got, expected: torch.Tensor, what: str) -> str | None:
    """What makes `got` no tensor like `expected` at all (type, layout, shape, device, dtype), or None."""
    if not isinstance(got, torch.Tensor):
        # TRANSLATORS: {what} names the output ("the result"), {type_name} a Python type.
        return _("{what} should be a tensor of shape {shape}, not a {type_name}.").format(
            what=what, shape=_shape(expected), type_name=type(got).__name__)
    if type(got) not in (torch.Tensor, torch.nn.Parameter) or got.layout != torch.strided:
        return _("{what} should be an ordinary (dense) tensor, not a {type_name} of layout {layout}.").format(
            what=what, type_name=type(got).__name__, layout=got.layout)
    if got.shape != expected.shape:
        return _("{what} has shape {shape}; expected {expected}.").format(
            what=what, shape=_shape(got), expected=_shape(expected))
    if got.device.type != expected.device.type:
        return _("{what} is on {device}, but the inputs were on {expected}: create new tensors on the "
                 "device of the inputs.").format(what=what, device=got.device, expected=expected.device)
    if got.dtype != expected.dtype:
        return _("{what} has dtype {dtype}; expected {expected}.").format(
            what=what, dtype=got.dtype, expected=expected.dtype)
    return None


def _compare_tensor(got, expected: torch.Tensor, what: str, rtol: float, atol: float,
                    where: Callable[[tuple], str] = _where) -> str | None:
    problem = _unreadable_tensor(got, expected, what)
    if problem:
        return problem
    got_values, expected_values = got.detach().double(), expected.detach().double()
    if not torch.isfinite(got_values).all() and torch.isfinite(expected_values).all():
        # TRANSLATORS: {where} says where (" at row 2, column 3"), or is empty.
        return _("{what} contains nan or inf{where}.").format(
            what=what, where=where(_first(~torch.isfinite(got_values))))
    wrong = ~torch.isclose(got_values, expected_values, rtol=rtol, atol=atol, equal_nan=True)
    if wrong.any():
        index = _first(wrong)
        # TRANSLATORS: {where} says where the first wrong entry is (" at row 2, column 3"), or is empty.
        return _("{what} is wrong{where} ({wrong} of {total} entries differ).").format(
            what=what, where=where(index), wrong=int(wrong.sum()), total=wrong.numel())
    return None


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in mask.nonzero()[0]) if mask.dim() else ()


def _as_float(got, what: str) -> float | str:
    """`got` (any real number: Python, numpy, Fraction, Decimal, a one-entry tensor) as a float,
    or what is wrong with it."""
    if isinstance(got, torch.Tensor):
        if got.numel() != 1 or got.device.type == "meta" or got.layout != torch.strided:
            return _("{what} should be a number, not a tensor of shape {shape} on {device}.").format(
                what=what, shape=_shape(got), device=got.device.type)
        if got.dtype.is_complex or got.dtype == torch.bool:
            return _("{what} should be a real number, not a tensor of dtype {dtype}.").format(
                what=what, dtype=got.dtype)
        got = got.item()
    real = isinstance(got, numbers.Real | Decimal) and not isinstance(got, bool)
    numpy_number = type(got).__module__ == "numpy" and getattr(got, "dtype", None) is not None and (
        getattr(got, "shape", None) == () and got.dtype.kind in "iuf")
    if not (real or numpy_number):
        return _("{what} should be a number, not a "
                 "{type_name}.").format(what=what, type_name=type(got).__name__)
    try:
        return float(got.item() if numpy_number else got)
    except OverflowError:
        return _("{what} is a whole number too large to be a probability or a perplexity.").format(what=what)


def _compare_number(got, expected: float, what: str, rtol: float) -> str | None:
    value = _as_float(got, what)
    if isinstance(value, str):
        return value
    exact = Fraction(got) if isinstance(got, Fraction | Decimal | int) and not isinstance(got, bool) else None
    if exact is not None and math.isfinite(expected):  # bound included, compared exactly
        bound = Fraction(str(rtol)) * abs(Fraction(expected)) + Fraction(1, 10**12)
        right = abs(exact - Fraction(expected)) <= bound
    else:
        right = abs(value - expected) <= rtol * abs(expected) + 1e-12
    if not right:
        # TRANSLATORS: {rtol} is a relative tolerance such as 1e-05.
        return _("{what} is {value:.6g}, which is not the right value (it differs by more than {rtol:.0e} "
                 "relative).").format(what=what, value=value, rtol=rtol)
    return None


def first_difference(got, expected, what: str, names: Sequence[str] = (),
                     rtol: float = 1e-5, atol: float = 1e-6, locate=None) -> str | None:
    """Describe the first way `got` differs from `expected` (tensors, numbers, or sequences of them).

    `locate(name, index)`, if given, words the position of a wrong entry of the output `name`.
    Any `got` at all gives a description or None; this function never raises. The description
    never quotes `expected`'s values (only its shape, dtype and device).
    """
    try:
        return _difference(got, expected, what, names, rtol, atol, locate)
    except Exception as error:  # a result no comparison can read: say so rather than fail
        # TRANSLATORS: {error} is the class name of a Python exception.
        return _("{what} could not be read as the expected kind of value ({error}).").format(
            what=what, error=type(error).__name__)


def _difference(got, expected, what, names, rtol, atol, locate) -> str | None:
    if isinstance(expected, torch.Tensor):
        where = _where if locate is None else (lambda index: locate(what, index))
        return _compare_tensor(got, expected, what, rtol, atol, where)
    if isinstance(expected, int | float):
        return _compare_number(got, expected, what, rtol)
    if isinstance(expected, list | tuple):
        if type(got) not in (list, tuple) or len(got) != len(expected):
            size = len(got) if type(got) in (list, tuple) else type(got).__name__
            # TRANSLATORS: {size} is how many items came back, or the Python type that came instead.
            return _("{what} should be a sequence of {count} items; got {size}.").format(
                what=what, count=len(expected), size=size)
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            name = names[i] if i < len(names) else item_name(i)
            problem = _difference(g, e, nested_name(what, name), (), rtol, atol, locate)
            if problem:
                return problem
        return None
    return None if type(got) is type(expected) and got == expected else (
        _("{what} is {got}, which is not the right value.").format(what=what, got=repr(got)[:60]))


def item_name(i: int) -> str:
    """How an unnamed item of a result is named ("item 2")."""
    # TRANSLATORS: an unnamed item of a result (numbered from 0).
    return _("item {i}").format(i=i)


def is_stub(fn: Callable) -> bool:
    """True if `fn`'s body does nothing: no name used, no local variable, no constant but None or a
    docstring (`return None`, `pass`, `...`). A body that computes and forgets to return is no stub."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    varargs, varkw = bool(code.co_flags & inspect.CO_VARARGS), bool(code.co_flags & inspect.CO_VARKEYWORDS)
    arguments = code.co_argcount + code.co_kwonlyargcount + varargs + varkw
    constants_only = all(c is None or c is Ellipsis or isinstance(c, str) for c in code.co_consts)
    return not code.co_names and code.co_nlocals == arguments and constants_only


def _same_structure(got, expected) -> bool:
    if isinstance(expected, list | tuple):
        return (type(got) in (list, tuple) and len(got) == len(expected)
                and all(_same_structure(g, e) for g, e in zip(got, expected, strict=True)))
    # A sequence where one value is expected (a list of norms for the norm) is not this structure: its
    # leaves would outnumber the outputs' names (#45: this raised in 08's check_clip).
    return not isinstance(got, list | tuple)


def _leaves(value) -> list:
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def output_report(got, expected, names: Sequence[str], rtol: float, atol: float,
                  locate=None) -> tuple[str, frozenset[str]] | None:
    """Judge every output of `got` against `expected` (nested sequences flattened, named by `names`).

    Returns (a report that says, for each output, whether it is right, and what is wrong with each
    wrong one; the names of the wrong ones), or None when every output is right or when `got` is not
    shaped like `expected` at all (then `first_difference` words what is missing).
    """
    if not _same_structure(got, expected) or len(_leaves(expected)) != len(names):
        return None
    problems = {name: first_difference(g, e, name, (), rtol, atol, locate)
                for name, g, e in zip(names, _leaves(got), _leaves(expected), strict=True)}
    wrong = [name for name in names if problems[name]]
    if not wrong:
        return None
    right = [name for name in names if not problems[name]]
    # TRANSLATORS: the report on a function with several outputs: {wrong} of {total} are wrong.
    head = _("{wrong} of {total} outputs are wrong.").format(wrong=len(wrong), total=len(names))
    # TRANSLATORS: one wrong output; {problem} says what is wrong with it.
    problems_said = " ".join(_("Wrong: {problem}").format(problem=problems[name]) for name in wrong)
    # TRANSLATORS: {names} lists the outputs that are right, separated by ", ".
    tail = _("Right: {names}.").format(names=", ".join(right)) if right else _("None of them is right.")
    report = f"{head} {problems_said} {tail}"
    return report, frozenset(wrong)


def _not_finite(value) -> bool:
    """True if any number or tensor entry in `value` (nested sequences too) is inf or nan."""
    try:
        if isinstance(value, torch.Tensor):
            return value.dtype.is_floating_point and not bool(torch.isfinite(value.detach()).all())
        if isinstance(value, list | tuple):
            return any(_not_finite(item) for item in value)
        return isinstance(value, numbers.Real) and not math.isfinite(value)
    except Exception:  # a value no test can read is not recognised as an overflow
        return False


def recognised_mistake(got, expected, case: Case, pristine: tuple, mistakes: Sequence[Mistake],
                       rtol: float, atol: float, partly: bool = True) -> Mistake | None:
    """The first of `mistakes` that `got` (a wrong result for `case`) shows, or None.

    Each mistake's result is computed from a copy of the `pristine` inputs, after the student's
    function ran, and compared with the check's tolerances. A mistake whose whole result is
    `got` is named first; else (if `partly`), for a result of several outputs, the first whose
    result accounts for every wrong output while the others are right (the mistake made in one
    output only: a loss without its mask beside a right gradient), then the first mistake recognised
    by how `got` relates to `expected` (`Mistake.shows`: the shared fallbacks, which may also hold in
    some outputs only, so they too give way to a hint on the pattern of wrong outputs).
    """
    results, relations = [], []
    for mistake in mistakes:
        if mistake.happens is not None:
            continue
        if mistake.shows is not None:
            relations.append(mistake)
            continue
        if mistake.gives is None:
            if _not_finite(got) and not _not_finite(expected):
                return mistake
            continue
        try:
            wrong = mistake.gives(*copy.deepcopy(pristine))
            wrong = case.convert(wrong) if case.convert is not None else wrong
        except Exception:  # a mistake that cannot occur on these inputs is not the one: a check never raises
            continue
        if first_difference(got, wrong, "", case.names, rtol, atol) is None:
            return mistake
        results.append((mistake, wrong))
    if not partly:
        return None
    return next((mistake for mistake, wrong in results if _accounts_for(got, wrong, expected, rtol, atol)),
                None) or next((m for m in relations if _shows(m, got, expected, rtol, atol)), None)


def _shows(mistake: Mistake, got, expected, rtol: float, atol: float) -> bool:
    """True if `got` relates to `expected` as `mistake.shows` says; False when the relation cannot be
    judged on these values (a check never raises)."""
    try:
        return bool(mistake.shows(got, expected, rtol, atol))
    except Exception:  # a result no relation can read is not recognised
        return False


def _accounts_for(got, wrong, expected, rtol: float, atol: float) -> bool:
    """True if each output of `got` is right or is what the mistake gives (`wrong`), and one is the latter."""
    if not (_same_structure(got, expected) and _same_structure(wrong, expected)):
        return False
    leaves = _leaves(got), _leaves(wrong), _leaves(expected)
    if len({len(part) for part in leaves}) != 1 or len(leaves[2]) < 2:
        return False
    pairs = list(zip(*leaves, strict=True))
    explained = False
    for g, w, e in pairs:
        if first_difference(g, e, "", (), rtol, atol) is None:
            continue
        if first_difference(g, w, "", (), rtol, atol) is not None:
            return False
        explained = True
    return explained


def _changed_input(before: tuple, after: tuple) -> int | None:
    for i, (old, new) in enumerate(zip(before, after, strict=True)):
        if isinstance(old, torch.Tensor) and not _same_tensor(old, new):
            return i
        if isinstance(old, list | tuple) and _changed_input(tuple(old), tuple(new)) is not None:
            return i
    return None


def _same_tensor(old: torch.Tensor, new: torch.Tensor) -> bool:
    return old.shape == new.shape and old.dtype == new.dtype and torch.equal(old, new)


# A form check (`check_function(form=...)`): form(result, case) says what is wrong with the form of a
# result whose values are right (for the exercise's words: "new tensors", "a Python number"), or None.
Form = Callable[[object, Case], str | None]


def _memory(tensor) -> tuple[str, int] | None:
    """Where `tensor`'s values live (its device and storage address), or None when it has no storage."""
    try:
        address = tensor.untyped_storage().data_ptr()
    except Exception:  # sparse, meta, a subclass without storage: no memory to share
        return None
    return (tensor.device.type, address) if address else None


def _shares_memory(got, args) -> int | None:
    """The position among `got`'s tensors (nested sequences flattened) of the first whose memory is an
    input tensor's (the input itself or any view of it), or None."""
    inputs = {memory for arg in _flat(args) if isinstance(arg, torch.Tensor) and (memory := _memory(arg))}
    for i, leaf in enumerate(_leaves(got)):
        if isinstance(leaf, torch.Tensor) and _memory(leaf) in inputs:
            return i
    return None


def new_tensors(got, case: Case) -> str | None:
    """A form check: every tensor `got` holds is new, neither an input tensor nor a view of one's memory."""
    i = _shares_memory(got, case.args)
    if i is None:
        return None
    names = case.outputs or case.names
    name = names[i] if i < len(names) else item_name(i)
    # TRANSLATORS: {case} describes the input; {name} names one tensor of the result ("item 0").
    return _("For {case} your function returns an input tensor itself as {name} of its result, or a "
             "view that shares an input's memory (such as `g.detach()`, `g.view(...)` or `g[:]`): the "
             "exercise asks for new tensors, which a later in-place change to the inputs leaves "
             "alone.").format(case=case.label, name=name)


def python_number(got, case: Case) -> str | None:
    """A form check: the result is a number, not a tensor (which `_compare_number` accepts for its value)."""
    if not isinstance(got, torch.Tensor):
        return None
    # TRANSLATORS: {case} describes the input; {shape} is a tensor's shape, such as ().
    return _("For {case} your function returns a tensor of shape {shape}, although its value is right; "
             "the exercise asks for a Python number. A tensor of one entry gives its number with "
             "`.item()` or `float(...)`.").format(case=case.label, shape=_shape(got))


def digest(value) -> bytes:
    """A hash of a reference result (tensors, numbers, sequences): kept instead of the result itself."""
    hashed = hashlib.blake2b(digest_size=16)
    _feed(hashed, value)
    return hashed.digest()


def _feed(hashed, value) -> None:
    if isinstance(value, torch.Tensor):
        hashed.update(f"T{value.dtype}{tuple(value.shape)}".encode())
        hashed.update(_tensor_bytes(value.detach()))
    elif isinstance(value, list | tuple):
        hashed.update(f"L{len(value)}".encode())
        for item in value:
            _feed(hashed, item)
    else:
        hashed.update(f"V{value!r}".encode())


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The bytes of `tensor`'s values in row-major order, whatever its strides, layout or conj/neg view."""
    if tensor.device.type == "meta" or not tensor.numel():  # no values to hash
        return b""
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()
    flat = torch.empty(tensor.numel(), dtype=tensor.dtype)  # fresh, stride 1: `view` needs it (#44)
    flat.copy_(tensor.cpu().reshape(-1))  # copy_ resolves a conjugate or negative view
    return flat.view(torch.uint8).numpy().tobytes()


def take_pairs(limit: int) -> Callable:
    """Return convert(batches): the first `limit` (X, Y) pairs of `batches` as a list X0, Y0, X1, Y1, ...

    Reading at most `limit` pairs (one more than expected) makes an endless generator a wrong
    answer, not a hang. A pair that is not two items is kept as it is, for the comparison to name.
    """
    def convert(batches) -> list:
        flat = []
        for pair in itertools.islice(iter(batches), limit):
            flat.extend(pair if type(pair) in (tuple, list) and len(pair) == 2 else [pair])
        return flat
    return convert


def outcome_problem(outcome: Outcome, label: str) -> str | None:
    """What went wrong while the student's function ran on `label` (apart from its value), or None."""
    if outcome.refused:
        # TRANSLATORS: {name} is what the function called (a function's name, or e.g. "torch's built-in RNN").
        return outcome.refusal or _("Your function calls {name}. The exercise asks you to write it "
                                    "yourself, so that call is refused here.").format(name=outcome.refused)
    if outcome.replaced:
        # TRANSLATORS: {names} lists Python names, such as torch.tanh.
        return _("Your function replaced {names} (now put back). Compute with torch's functions; do not "
                 "assign to them.").format(names=", ".join(outcome.replaced))
    if outcome.changed:
        # TRANSLATORS: {changes} says which process-wide settings the function changed (sentences).
        return _("{changes} A later cell would have run differently. Use a `with` block (e.g. `with "
                 "torch.no_grad():`) for a change that should last only inside your function.").format(
                     changes=describe(outcome.changed))
    if outcome.threads:
        return _("Your function left {count} thread(s) running (now stopped): a thread that "
                 "outlives the check could change the notebook later. The exercises need no "
                 "threads.").format(count=outcome.threads)
    if outcome.processes:
        # TRANSLATORS: {processes} lists processes, e.g. "process 1234 (sleep 100)".
        return _("Your function left {processes} running (now ended): a process that "
                 "outlives the check could change the notebook later. The exercises need "
                 "none.").format(processes=", ".join(outcome.processes))
    if outcome.out_of_memory or is_memory_error(outcome.error):
        # TRANSLATORS: {case} describes the input the function was given ("batch=3, inputs=4, hiddens=2").
        return _("For {case} your function used more memory than the check allows ({memory:.3g} GB more "
                 "than before it ran): look for a tensor far larger than the inputs, or a list that grows "
                 "without end.").format(case=label, memory=outcome.memory / 2**30)
    if outcome.timed_out:
        return _("For {case} your function was still running after {seconds:g} seconds: look for a loop "
                 "that never ends (a `while` whose condition stays true, an endless generator) or a long "
                 "wait.").format(
                     case=label, seconds=outcome.seconds)
    if outcome.error is not None:
        error = outcome.error
        # TRANSLATORS: {error} is the class name of a Python exception, {message} its message (from Python).
        return _("For {case} your function raised {error}: {message}").format(
            case=label, error=type(error).__name__, message=_short(error))
    return None


def _short(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # an exception whose message itself fails
        text = ""
    return text[:300] + ("..." if len(text) > 300 else "")


def seal(case: Case) -> Case:
    """Keep only a digest of `case`'s reference result (computed now, before any student code runs)."""
    if case.reference is not None and _on_cpu(case.args):
        case.digest = digest(case.reference(*copy.deepcopy(case.args)))
    return case


def _on_cpu(args) -> bool:
    tensors = [a for a in _flat(args) if isinstance(a, torch.Tensor)]
    return all(t.device.type == "cpu" for t in tensors)


def _flat(args):
    for arg in args:
        if isinstance(arg, list | tuple):
            yield from _flat(arg)
        else:
            yield arg


def expected_of(case: Case, pristine: tuple) -> tuple[object, str | None]:
    """The reference result for `case`, computed now from `pristine` inputs, and a problem if it
    differs from the one computed before the student's code ran (something it depends on changed)."""
    if case.reference is None:
        return case.expected, None
    expected = case.reference(*copy.deepcopy(pristine))
    if case.digest is not None and digest(expected) != case.digest:
        return expected, _("Your function changed something the check itself relies on (a setting or a "
                           "function outside torch's namespaces), so it cannot be judged: restart the "
                           "kernel and run your cell again without that change.")
    return expected, None


def run_case(fn: Callable, case: Case, rules: Sequence[Rule], rtol: float, atol: float,
             output: CappedText | None = None, allowed: frozenset[str] = frozenset(),
             bans: tuple[Ban, ...] = (),
             diagnose: Callable[[frozenset[str]], str | None] | None = None,
             mistakes: Sequence[Mistake] = (), form: Form | None = None) -> str | None:
    """Run `fn` on one case under the guard; return what is wrong (None if nothing).

    A case that names its `outputs` reports each of them right or wrong, and `diagnose(wrong
    names)` adds a hint keyed to that pattern. A wrong result that one of `mistakes` gives is
    told that mistake's cause instead. A result whose values are right is then judged by
    `form(result, case)`, if given. None returned by a stub is `NOT_ATTEMPTED` (in English,
    for the caller to compare; `check_on_devices` translates it); by a written body, `RETURNED_NONE`.
    """
    saved = copy.deepcopy(case.args)
    recorder = CallRecorder()

    def recorded(*args):
        with recorder:
            return fn(*args)

    outcome = run_guarded(recorded, case.args, case.convert, output, allowed, bans=bans)
    if outcome.refused is None and (banned := banned_call(recorder.calls, bans)) is not None:
        outcome.refused, outcome.refusal = banned  # an operator looked up afresh, past the guard's hook
        outcome.route = True
    problem = outcome_problem(outcome, case.label) or unjudgeable()  # a mode the function left on
    if problem:
        if _is_refusal(outcome):
            _note_refused()
        return with_incident_cause(problem, incident_of(outcome), mistakes)
    if outcome.value is None:
        # TRANSLATORS: {case} describes the input; {problem} says what is wrong.
        if is_stub(fn):
            return NOT_ATTEMPTED
        return _("For {case}: {problem}").format(case=case.label, problem=_(RETURNED_NONE))
    changed = _changed_input(saved, case.args)
    if changed is not None:
        # TRANSLATORS: {number} counts the function's arguments from 1.
        problem = _("For {case} your function changed its input number {number} in place; "
                    "compute new tensors instead (no `+=`, `mul_`, `[...] =` on the "
                    "inputs).").format(case=case.label, number=changed + 1)
        return with_incident_cause(problem, Incident(changed_input=True), mistakes)
    for rule in rules:
        if rule.broken(recorder.calls):
            _note_refused()
            return with_incident_cause(_(rule.message), Incident(refused=True), mistakes)
    expected, problem = expected_of(case, saved)
    if problem:
        _note_refused()
        return problem
    report, wrong = _value_report(outcome.value, expected, case, rtol, atol)
    if report is None:
        problem = form(outcome.value, case) if form is not None else None
        return problem and with_incident_cause(problem, Incident(form=form), mistakes)
    hint = diagnose(wrong) if diagnose is not None and wrong else None
    mistake = recognised_mistake(outcome.value, expected, case, saved, mistakes, rtol, atol)
    if mistake and hint:
        # TRANSLATORS: {report} says what is wrong; {cause} names the known mistake ("Likely cause: ...");
        # {hint} says what the pattern of wrong outputs points at.
        return _("For {case}: {report} {cause} Hint: {hint}").format(
            case=case.label, report=report, cause=mistake.said(), hint=hint)
    if mistake:
        # TRANSLATORS: {report} says what is wrong; {cause} names the known mistake ("Likely cause: ...").
        return _("For {case}: {report} {cause}").format(case=case.label, report=report, cause=mistake.said())
    if hint:
        return _("For {case}: {report} Hint: {hint}").format(case=case.label, report=report, hint=hint)
    return _("For {case}: {problem}").format(case=case.label, problem=report)


def incident_of(outcome: Outcome) -> Incident:
    """The `Incident` of a call that went wrong before its value could be judged: its exception, or a
    refused route, here or in the grader's caller process (a call that endangers the kernel is no route
    of the exercise's)."""
    route = outcome.route or bool(getattr(outcome.error, "route", False))
    return Incident(error=outcome.error, refused=route and not outcome.replaced)


def with_incident_cause(problem: str, incident: Incident, mistakes: Sequence[Mistake]) -> str:
    """`problem`, followed by the cause of the first of `mistakes` that `incident` shows, if any."""
    mistake = next((m for m in mistakes if m.happens is not None and _happens(m, incident)), None)
    return problem if mistake is None else f"{problem} {mistake.said()}"


def _happens(mistake: Mistake, incident: Incident) -> bool:
    """True if `incident` is the one `mistake.happens` says; False when it cannot be judged (a check
    never raises, whatever exception a student's function raised)."""
    try:
        return bool(mistake.happens(incident))
    except Exception:  # an exception whose text cannot be read is not recognised
        return False


def _value_report(got, expected, case: Case, rtol: float, atol: float) -> tuple[str | None, frozenset[str]]:
    """(What is wrong with the value `got`, or None; the names of the wrong outputs, when the case
    names them and `got` is shaped like `expected`)."""
    if case.outputs:
        judged = output_report(got, expected, case.outputs, rtol, atol, case.locate)
        if judged is not None:
            return judged
    # TRANSLATORS: what a student's function returned, as the subject of a sentence ("the result is wrong").
    return first_difference(got, expected, _("the result"), case.names, rtol, atol, case.locate), frozenset()


def check_on_devices(fn, problem_on: Callable[[torch.device], str | None], success: str,
                     signature: str, output: CappedText | None = None) -> Verdict:
    """Check the student's `fn` with `problem_on(device)` on each available device; return a Verdict.

    `problem_on` returns what is wrong on that device, or None (`NOT_ATTEMPTED` in English, the
    rest in the language d2lmini speaks). `fn` None is "not attempted"; something that is not a
    function is told so, naming `signature`. What `fn` printed into `output` is kept (capped) in
    the verdict, which shows it before its message.
    """
    if fn is None:
        problem = NOT_ATTEMPTED
    elif not callable(fn):
        # TRANSLATORS: {signature} is code ("fused_step(X, H, W_xh, W_hh, b_h)"); {type_name} a Python type.
        problem = _("Pass your function itself, {signature}, not a {type_name}.").format(
            signature=signature, type_name=type(fn).__name__)
    else:
        problem = next((p for device in available_devices() if (p := problem_on(device))), None)
    printed = output.shown() if output is not None and output.kept else ""
    if problem is None:
        return Verdict(True, correct_message(success), printed)
    if problem == NOT_ATTEMPTED:
        return Verdict(False, _(NOT_ATTEMPTED), printed)
    return Verdict.not_yet(problem, printed)


def check_function(fn, make_cases: Callable[[torch.device], Iterable[Case]], success: str,
                   rules: Sequence[Rule] = (), signature: str = "a function",
                   rtol: float = 1e-5, atol: float = 1e-6, bans: tuple[Ban, ...] = (),
                   diagnose: Callable[[frozenset[str]], str | None] | None = None,
                   mistakes: Sequence[Mistake] = (), form: Form | None = None) -> Verdict:
    """Run the student's `fn` on every case of `make_cases(device)` for each available device.

    Every case is built, and its reference result computed (and kept only as a digest), before
    `fn` first runs. Returns a Verdict: `success` when every case passes, else the first problem
    found. `signature` ("fused_step(X, H, W_xh, W_hh, b_h)") is named when `fn` is not a function;
    `bans` (`d2lmini.exercises.guard.Ban`) names torch's built-ins the exercise refuses;
    `diagnose(names of the wrong outputs)` returns a hint for that pattern (cases that name their
    `outputs` report every one of them); a wrong result that one of `mistakes` gives is told its
    cause instead of that hint; `form` (`new_tensors`, `python_number`) judges the form of a result
    whose values are right, for an exercise whose text asks for new tensors or for a number.
    """
    ready = callable(fn)
    cannot = unjudgeable() if ready else None  # a mode or a torch.library kernel left on in the kernel
    if cannot is not None:
        return Verdict(False, cannot)
    cases = {device: [seal(case) for case in make_cases(device)] if ready else []
             for device in available_devices()}
    output, tally = CappedText(), _TALLY.get()

    def problem_on(device: torch.device) -> str | None:
        problems = (run_case(fn, case, rules, rtol, atol, output, bans=bans, diagnose=diagnose,
                             mistakes=mistakes, form=form) for case in cases[device])
        return first_problem(problems, len(cases[device]), tally)

    result = check_on_devices(fn, problem_on, success, signature, output)
    if tally is not None and ready:
        tally.checks, tally.verdict = tally.checks + 1, result
    return result


def first_problem(problems: Iterable[str | None], count: int, tally: Tally | None) -> str | None:
    """The first of the cases' `problems` that is not None (None if every case passed).

    Without a tally it stops at the first problem. With one, it runs on through the `count`
    cases and counts those that pass, stopping only at a stub's "not attempted" or a refused case
    (which earn nothing).
    """
    if tally is None:
        return next((p for p in problems if p), None)
    tally.total += count
    first = None
    for problem in problems:
        if problem is None:
            tally.passed += 1
            continue
        first = first or problem
        tally.unattempted = tally.unattempted or problem == NOT_ATTEMPTED
        if tally.unattempted or tally.refused:
            break
    return first
