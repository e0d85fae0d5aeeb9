"""Recognise a graded function that is a copy of the package's or the solutions' code, by its bytecode.

A student's function reaches the judge's caller process by value, so a copy of the package's
code made at run time (`exec(inspect.getsource(d2lmini.rnn.rnn_step))`, renamed, its docstring
replaced, compiled with `optimize=2`) would run there although the package is not. The grader
fingerprints every function of the package and of `solutions/` (`known_fingerprints`, in its
own process) and the caller compares the loaded function, and the functions it reaches through
its globals and closures, before the first call. A fingerprint is the function's operations,
constants (not its docstring) and global names: not its name, file, lines or local names.
"""

import dis
import hashlib
import types
from collections import deque
from collections.abc import Iterator
from pathlib import Path

# The compiler writes `module.f(x)` as LOAD_ATTR or LOAD_METHOD depending on where it compiles it.
SAME_OPERATION = {"LOAD_METHOD": "LOAD_ATTR"}
SKIPPED = ("CACHE", "PUSH_NULL", "PRECALL", "RESUME", "NOP")
SMALLEST = 30  # operations: a shorter function (a one-line formula) is what anyone would write


def fingerprint(code: types.CodeType) -> str | None:
    """The fingerprint of one code object (None for one too short to tell)."""
    operations = [SAME_OPERATION.get(i.opname, i.opname) for i in dis.get_instructions(code)
                  if i.opname not in SKIPPED]
    if len(operations) < SMALLEST:
        return None
    consts = list(code.co_consts)
    if consts and isinstance(consts[0], str) and code.co_flags & 0x20 == 0:  # a docstring (not a generator's)
        consts = consts[1:]
    consts = [c.co_name if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)) for c in consts
              if c is not None]
    text = repr((operations, consts, code.co_names, code.co_argcount))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def named_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and every function compiled inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from named_codes(const)


def known_fingerprints(folders: list[Path]) -> dict[str, str]:
    """fingerprint -> "d2lmini/rnn.py:rnn_step" for every function in the Python files of `folders`."""
    known = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else ():
            try:
                module = compile(path.read_text("utf-8"), str(path), "exec", dont_inherit=True)
            except (OSError, SyntaxError, ValueError):
                continue
            for code in named_codes(module):
                if code is not module and (mark := fingerprint(code)) is not None:
                    known.setdefault(mark, f"{path.relative_to(folder.parent)}:{code.co_qualname}")
    return known


def reached_codes(function, depth: int = 3) -> Iterator[types.CodeType]:
    """The code of `function` and of the functions it reaches through its globals and closure.

    Nearest first (breadth first, names in order, the same each run), so `copied_from` names the
    copied function the student's code reaches itself before one that only a function it uses
    reaches (a copied module's globals hold the package's `d2lmini.i18n._`, whose globals hold
    the rest of `d2lmini.i18n`).
    """
    seen, queue = set(), deque([(function, 0)])
    while queue:
        current, level = queue.popleft()
        code = getattr(current, "__code__", None)
        if not isinstance(code, types.CodeType) or id(code) in seen:
            continue
        seen.add(id(code))
        yield from named_codes(code)
        if level >= depth:
            continue
        names = sorted({n for c in named_codes(code) for n in c.co_names})
        globals_ = getattr(current, "__globals__", {}) or {}
        queue += [(globals_[n], level + 1) for n in names if isinstance(globals_.get(n), types.FunctionType)]
        for cell in getattr(current, "__closure__", None) or ():
            try:
                queue.append((cell.cell_contents, level + 1))
            except ValueError:  # an empty cell
                continue


def copied_from(function, known: dict[str, str]) -> str | None:
    """The package or solutions function that `function` (or one it reaches) is a copy of, or None."""
    for code in reached_codes(function):
        mark = fingerprint(code)
        if mark is not None and mark in known:
            return known[mark]
    return None
