"""Mistakes that fit many exercises, recognised by how a wrong result relates to the right one, or
by what went wrong while the function ran.

An exercise's own mistakes are computed from its inputs (`Mistake.gives`); these are recognised
from the student's result and the reference's alone (`Mistake.shows(got, expected, rtol, atol)`):
the right numbers with the axes in another order, in another shape, with the opposite sign, scaled
by a constant, in another kind of container, with another dtype, the outputs in another order, one
output alone, or the result with something more. `fallbacks(section)` gives them for one exercise:
they are tried after its own mistakes, which say more precisely what went wrong. Their words say
how the result relates to the right one and where to look, never a number of the right result.

`incidents(section)` gives the mistakes seen in how a function failed (`Mistake.happens`, on a
`coding.Incident`): the kind of exception it raised (shapes that do not fit a product or a
reshape, an index past the end, a fixed dtype, a split into the wrong number of parts, a loss
autograd never recorded), an input changed in place, a route the exercise forbids, an input
returned where a new tensor is asked, a tensor where a number is. They are recognised from the
exception's class and the words torch itself uses in such errors; the text of the exception is
never shown (a student's code may have written it).
"""

import itertools
import math
import numbers

import torch

from d2lmini.exercises.coding import Incident, Mistake, new_tensors, python_number
from d2lmini.i18n import N_

TRANSPOSED = N_(
    "your result holds the right numbers with its dimensions in another order (transposed, or stacked "
    "along another dimension): compare the order of the dimensions with the shape the exercise asks for."
)
RESHAPED = N_(
    "your result holds the right numbers, in order, but in another shape (flattened, squeezed, or "
    "concatenated where the exercise keeps a dimension of its own): return the shape the exercise asks for."
)
NEGATED = N_(
    "your result is the right one with the opposite sign: look for a minus sign missing or one too many, "
    "or a difference taken the wrong way round."
)
SCALED = N_(
    "your result is the right one times a constant factor: look for a mean where a sum belongs (or a sum "
    "where a mean belongs), a division by the wrong count, or a factor applied twice or left out."
)
CONTAINER = N_(
    "your result holds the right values in another kind of container (a list, a dict, nested Python "
    "lists, one tensor for many): return the kind of result the exercise's signature asks for."
)
DTYPE = N_(
    "your result has the right values with another dtype: convert it to the dtype the exercise asks for "
    "(the inputs' dtype, unless its text says otherwise)."
)
ORDER = N_(
    "your function returns the right outputs in another order: return them in the order the exercise's "
    "signature gives."
)
PART = N_(
    "your function returns only one of the outputs the exercise asks for: return all of them, in the "
    "order its signature gives."
)
MORE = N_(
    "your function returns the right result together with something more: return only what the "
    "exercise asks for."
)
NOT_FINITE = N_(
    "your result holds nan or inf where the right one is finite: look for a division by something "
    "that can be 0 (a norm of gradients that are all zero, a count of nothing), the log of 0, or exp "
    "of a large number."
)
COUNT = N_(
    "your function gives another number of items than the exercise asks for: look at the bounds of "
    "your loop (one step too many or too few), a last short part kept or dropped against the "
    "exercise's words, or a loop that does not stop when the data runs out."
)

# Seen in how a function failed (`incidents`), never in its value.
PRODUCT_SHAPES = N_(
    "a matrix product whose inner sizes do not fit: a weight used transposed, the two factors in the "
    "wrong order, or a product where an elementwise one belongs (or the other way round)."
)
RESHAPE_SIZE = N_(
    "a reshape (or view) to a size the tensor does not have: a length computed off by one, rounded "
    "where it should be floored, or taken from the wrong dimension."
)
MISMATCHED_SHAPES = N_(
    "your function combines tensors whose shapes do not fit together on the check's inputs: one axis "
    "taken for another (batch for time, rows for columns), a tensor used transposed, or code that "
    "works only for the shapes of one example (a 1-D input, equal sizes). Print the shapes on the "
    "line that fails."
)
INDEX_PAST_END = N_(
    "an index past the end of a dimension: rows picked where columns belong (or the other way "
    "round), or a loop that runs one step too far."
)
FIXED_DTYPE = N_(
    "a tensor made with a fixed dtype (float32 by default) meets inputs of another dtype: create new "
    "tensors with the inputs' dtype and device (`dtype=X.dtype`, `torch.zeros_like`, `new_zeros`)."
)
UNPACKED = N_(
    "a value unpacked into another number of names than it holds: a tensor split (`chunk`, `split`, "
    "`unbind`) along another axis than the one that holds its parts, or a result unpacked wrongly."
)
NO_GRAPH = N_(
    "backward on a loss autograd did not record: the forward pass ran under `torch.no_grad()`, or a "
    "tensor was detached (`.detach()`, `.item()`, `.data`) on its way to the loss."
)
IN_PLACE = N_(
    "an in-place operation on an input (`+=`, `-=`, `sub_`, `mul_`, a write through `.data` or into "
    "a slice) where the exercise asks for new tensors: compute a new tensor from the input, and leave "
    "the input as it was."
)
ROUTE = N_(
    "your function leaves to something else (a torch built-in, autograd, the package's own code, or "
    "more products than the exercise allows) the work the exercise asks you to write: even where "
    "its numbers are right, that route is not the exercise."
)
INPUT_RETURNED = N_(
    "an input returned as it is (or a view of it) on a path where nothing needs changing: the exercise "
    "asks for new tensors on every path, that one too."
)
TENSOR_FOR_NUMBER = N_(
    "the result is left as a tensor, even of one entry, where the exercise asks for a Python number."
)


def _close(got, expected, rtol: float, atol: float) -> bool:
    """True if `got` equals `expected` within the tolerances: tensors of one shape, numbers, or
    sequences of them, item by item (a dtype may differ)."""
    if isinstance(expected, torch.Tensor):
        return (isinstance(got, torch.Tensor) and got.shape == expected.shape
                and got.device.type == expected.device.type
                and bool(torch.isclose(got.detach().double(), expected.detach().double(), rtol=rtol,
                                       atol=atol, equal_nan=True).all()))
    if isinstance(expected, list | tuple):
        return (type(got) in (list, tuple) and len(got) == len(expected)
                and all(_close(g, e, rtol, atol) for g, e in zip(got, expected, strict=True)))
    if isinstance(expected, numbers.Real) and not isinstance(expected, bool):
        value = _number(got)
        return value is not None and abs(value - expected) <= rtol * abs(expected) + atol
    return False


def _number(value) -> float | None:
    """`value` as a float when it is a real number or a one-entry tensor, else None."""
    if isinstance(value, torch.Tensor):
        return float(value.detach()) if value.numel() == 1 and value.dtype.is_floating_point else None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


def _right(got, expected, rtol: float, atol: float) -> bool:
    """`got` is `expected` within the tolerances, and a tensor has its dtype (one in another is wrong)."""
    same_dtype = not isinstance(expected, torch.Tensor) or getattr(got, "dtype", None) == expected.dtype
    return same_dtype and _close(got, expected, rtol, atol)


def _each_wrong_leaf(got, expected, rtol: float, atol: float, related) -> bool:
    """True if every output of `got` is right or `related(output, expected output)`, and one is related:
    a relation may hold in one output of several (a gradient scaled, its loss right)."""
    if isinstance(expected, list | tuple) and type(got) in (list, tuple) and len(got) == len(expected):
        verdicts = [None if _right(g, e, rtol, atol) else _each_wrong_leaf(g, e, rtol, atol, related)
                    for g, e in zip(got, expected, strict=True)]
        wrong = [v for v in verdicts if v is not None]
        return bool(wrong) and all(wrong)
    return bool(related(got, expected))


def _permuted(got, expected, rtol: float, atol: float) -> bool:
    """`got` is the tensor `expected` with its dimensions in another order (2 to 4 dimensions)."""
    if not (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return False
    if got.shape == expected.shape:
        return _square_transposed(got, expected, rtol, atol)
    if not 2 <= expected.dim() <= 4 or sorted(got.shape) != sorted(expected.shape):
        return False
    return any(_close(got, expected.permute(order), rtol, atol)
               for order in itertools.permutations(range(expected.dim())) if list(order) != sorted(order))


def _square_transposed(got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> bool:
    """`got` is the square matrix (or stack of them) `expected` transposed, `expected` not symmetric."""
    if expected.dim() < 2 or expected.shape[-1] != expected.shape[-2] or expected.shape[-1] < 2:
        return False
    flipped = expected.transpose(-1, -2)
    return not _close(flipped, expected, rtol, atol) and _close(got, flipped, rtol, atol)


def _reshaped(got, expected, rtol: float, atol: float) -> bool:
    """`got` is the tensor `expected`'s entries, in order, in another shape."""
    return (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor) and expected.numel() > 1
            and got.shape != expected.shape and got.numel() == expected.numel()
            and _close(got.reshape(-1), expected.reshape(-1), rtol, atol))


def _significant(expected: torch.Tensor, atol: float) -> torch.Tensor:
    """The entries of `expected` far from 0, as float64, flattened."""
    values = expected.detach().double().reshape(-1)
    return values[values.abs() > max(100 * atol, 1e-6)]


def _negated(got, expected, rtol: float, atol: float) -> bool:
    """`got` is -`expected` (a tensor with entries away from 0, or a number)."""
    if isinstance(expected, torch.Tensor):
        return len(_significant(expected, atol)) > 0 and _close(got, -expected, rtol, atol)
    value = _number(got)
    return isinstance(expected, numbers.Real) and abs(expected) > 1e-6 and value is not None and (
        abs(value + expected) <= rtol * abs(expected) + atol)


def _ratio(got, expected, rtol: float, atol: float) -> float | None:
    """The constant c (not 1, not -1) with `got` = c * `expected`, for tensors with at least two entries
    away from 0; None when there is none."""
    if not (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return None
    if got.shape != expected.shape:
        return None
    big = _significant(expected, atol)
    if len(big) < 2:
        return None
    mask = expected.detach().double().reshape(-1).abs() > max(100 * atol, 1e-6)
    ratio = float((got.detach().double().reshape(-1)[mask] / big).median())
    if not math.isfinite(ratio) or ratio == 0 or abs(abs(ratio) - 1) <= 10 * rtol:
        return None
    return ratio if _close(got, expected * ratio, 10 * rtol, atol) else None


def _flat_pairs(got, expected) -> list[tuple] | None:
    """(got's output, expected's output) for every output, nested sequences flattened, or None when `got`
    is not shaped like `expected`."""
    if isinstance(expected, list | tuple):
        if type(got) not in (list, tuple) or len(got) != len(expected):
            return None
        pairs = [_flat_pairs(g, e) for g, e in zip(got, expected, strict=True)]
        return None if any(p is None for p in pairs) else [pair for part in pairs for pair in part]
    return [(got, expected)]


def _scaled(got, expected, rtol: float, atol: float) -> bool:
    """`got` is `expected` times a constant, output by output; a number among the outputs is scaled by
    the constant of a tensor beside it (a loss and its gradient averaged over the wrong count)."""
    pairs = _flat_pairs(got, expected)
    if pairs is None:
        return False
    ratios = {r for g, e in pairs if (r := _ratio(g, e, rtol, atol)) is not None}
    if not ratios:
        return False
    for g, e in pairs:
        if _close(g, e, rtol, atol) or _ratio(g, e, rtol, atol) is not None:
            continue
        value = _number(g)
        if not (isinstance(e, numbers.Real) and value is not None
                and any(abs(value - r * e) <= 10 * rtol * abs(r * e) + atol for r in ratios)):
            return False
    return True


def _as_tensor(got, like: torch.Tensor) -> torch.Tensor | None:
    """`got` (a list or tuple of tensors, nested Python numbers, a dict of them) as one tensor shaped like
    `like`, or None when it is not such a container."""
    if isinstance(got, dict):
        got = list(got.values())
    if type(got) not in (list, tuple) or not got:
        return None
    if all(isinstance(item, torch.Tensor) for item in got):
        items = [item.to(like.device) for item in got]
        if all(item.shape == items[0].shape for item in items):
            stacked = torch.stack(items)
            if stacked.shape == like.shape:
                return stacked
        joined = torch.cat([item.reshape(-1) for item in items])
        return joined.reshape(like.shape) if joined.numel() == like.numel() else None
    values = torch.tensor(got, dtype=torch.float64, device=like.device)
    return values if values.shape == like.shape else None


def _container(got, expected, rtol: float, atol: float) -> bool:
    """`got` holds `expected`'s values in another kind of container: a list (or dict, or nested lists)
    where a tensor belongs, one tensor where a list of tensors belongs, a dict where a list belongs."""
    if isinstance(expected, torch.Tensor):
        joined = _as_tensor(got, expected)
        return joined is not None and _close(joined, expected, rtol, atol)
    if isinstance(expected, list | tuple):
        if isinstance(got, dict):
            return _close(list(got.values()), expected, rtol, atol)
        tensors = [e for e in expected if isinstance(e, torch.Tensor)]
        if isinstance(got, torch.Tensor) and len(tensors) == len(expected) > 1:
            flat = torch.cat([e.detach().reshape(-1) for e in tensors])
            return got.numel() == flat.numel() and _close(got.reshape(-1), flat, rtol, atol)
    return False


def _dtype(got, expected, rtol: float, atol: float) -> bool:
    """`got` is the tensor `expected` with another dtype."""
    return (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor)
            and got.dtype != expected.dtype and _close(got, expected, rtol, atol))


def _reordered(got, expected, rtol: float, atol: float) -> bool:
    """`got` holds `expected`'s outputs (two or more) in another order."""
    if not (isinstance(expected, tuple) and type(got) in (list, tuple) and len(got) == len(expected) > 1):
        return False
    return any(_close(list(got), [expected[i] for i in order], rtol, atol)
               for order in itertools.permutations(range(len(expected))) if list(order) != sorted(order))


def _one_output(got, expected, rtol: float, atol: float) -> bool:
    """`got` is one of the outputs of `expected` (a tuple of two or more) on its own."""
    return (isinstance(expected, tuple) and len(expected) > 1
            and any(_close(got, item, rtol, atol) for item in expected))


def _with_more(got, expected, rtol: float, atol: float) -> bool:
    """`got` is a tuple or list of two or more items holding the whole of `expected` and more: `expected`
    as one of its items, or `expected`'s outputs followed by more."""
    if type(got) not in (list, tuple) or len(got) < 2 or _close(got, expected, rtol, atol):
        return False
    if any(_close(item, expected, rtol, atol) for item in got):
        return True
    return (isinstance(expected, tuple) and len(got) > len(expected)
            and _close(tuple(got[: len(expected)]), expected, rtol, atol))


def _not_finite(value) -> bool:
    """True if `value` (a tensor, a number, or a sequence of them) holds inf or nan."""
    if isinstance(value, torch.Tensor):
        return value.dtype.is_floating_point and not bool(torch.isfinite(value.detach()).all())
    if isinstance(value, list | tuple):
        return any(_not_finite(item) for item in value)
    return isinstance(value, numbers.Real) and not math.isfinite(value)


def _overflowed(got, expected, rtol: float, atol: float) -> bool:
    """`got` holds inf or nan where `expected` is finite."""
    return _not_finite(got) and not _not_finite(expected)


def _miscounted(got, expected, rtol: float, atol: float) -> bool:
    """`got` is a sequence of tensors, like `expected` (two or more), but with another number of them."""
    return (isinstance(expected, list | tuple) and type(got) in (list, tuple) and len(expected) > 1
            and len(got) != len(expected)
            and all(isinstance(item, torch.Tensor) for item in [*got, *expected]))


def _leafwise(relation):
    """`relation(got, expected)` held by every wrong output of a result (see `_each_wrong_leaf`)."""
    return lambda got, expected, rtol, atol: _each_wrong_leaf(
        got, expected, rtol, atol, lambda g, e: relation(g, e, rtol, atol))


# (cause, relation): tried in this order, after the exercise's own mistakes.
RELATIONS = (
    (ORDER, _reordered),
    (PART, _one_output),
    (MORE, _with_more),
    (DTYPE, _leafwise(_dtype)),
    (TRANSPOSED, _leafwise(_permuted)),
    (RESHAPED, _leafwise(_reshaped)),
    (CONTAINER, _leafwise(_container)),
    (NEGATED, _leafwise(_negated)),
    (SCALED, _scaled),
    (NOT_FINITE, _overflowed),
    (COUNT, _miscounted),
)


def _raised(kinds: tuple[str, ...], *phrases: str):
    """happens(incident): the function raised an exception of a class named in `kinds` whose text holds
    one of `phrases` (words of torch's own messages, compared in lower case)."""
    def happened(incident: Incident) -> bool:
        error = incident.error
        if error is None or type(error).__name__ not in kinds:
            return False
        text = str(error).lower()
        return any(phrase in text for phrase in phrases)
    return happened


RUNTIME = ("RuntimeError",)
# (cause, happens): tried in this order, after the exercise's own mistakes.
INCIDENTS = (
    (PRODUCT_SHAPES, _raised(RUNTIME, "cannot be multiplied", "size mismatch, m1",
                             "inconsistent tensor size")),
    (RESHAPE_SIZE, _raised(RUNTIME, "is invalid for input of size")),
    (MISMATCHED_SHAPES, _raised(
        ("RuntimeError", "IndexError"), "must match the size of tensor", "must match the existing size",
        "sizes of tensors must match", "expects each tensor to be equal size", "number of sizes provided",
        "size does not match at dimension", "could not be broadcast", "shape mismatch")),
    (INDEX_PAST_END, _raised(("IndexError", "RuntimeError"), "out of bounds", "out of range",
                             "out of data bounds")),
    (FIXED_DTYPE, _raised(RUNTIME, "same dtype", "expected scalar type", "found dtype")),
    (UNPACKED, _raised(("ValueError",), "values to unpack")),
    (NO_GRAPH, _raised(RUNTIME, "does not require grad")),
    (IN_PLACE, lambda incident: incident.changed_input),
    (ROUTE, lambda incident: incident.refused),
    (INPUT_RETURNED, lambda incident: incident.form is new_tensors),
    (TENSOR_FOR_NUMBER, lambda incident: incident.form is python_number),
)


def fallbacks(section: str) -> tuple[Mistake, ...]:
    """The shared mistakes for an exercise whose cell to re-read is `section` (English, marked with N_)."""
    return tuple(Mistake(cause, section=section, shows=relation) for cause, relation in RELATIONS)


def incidents(section: str) -> tuple[Mistake, ...]:
    """The shared mistakes seen in how a function failed, for an exercise whose cell to re-read is
    `section` (English, marked with N_; "" for none)."""
    return tuple(Mistake(cause, section=section, happens=happens) for cause, happens in INCIDENTS)
