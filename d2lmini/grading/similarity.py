"""Classmates' graded functions compared pair by pair: evidence for the instructor, never a verdict.

Each student's record keeps the source of every graded function they attempted (`graded_sources`,
taken from the submitted notebook as `evidence` normalises it: no comments, no docstrings).
After every grading run, and whenever the outputs are made again, `alike_pairs` compares, for
each coding exercise and function, every two students of all the records in OUT, and the grader
writes the pairs at least `SIMILAR` alike to `similarity.csv`, most alike first. No points change.

What is compared is the function's body as Python tokens, with every name the function binds (its
parameters, variables, loop variables, inner functions) written `_`: renaming, spacing,
comments and docstrings do not hide a copy, while the names it takes from outside (`torch`,
methods, keyword arguments) are kept. The ratio is `difflib.SequenceMatcher.ratio` on those
tokens (2 * matches / total), its cheap upper bounds first. Not compared: a function that does
nothing (`return None`, `pass`), one whose tokens are those of the released notebook's stub (what
every student got), and one shorter than `MIN_TOKENS`, which has too few ways to be written for
likeness to say anything.
"""

import ast
import csv
import functools
import io
import json
import tokenize
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from d2lmini.grading.evidence import SIMILAR, submitted_function
from d2lmini.grading.files import csv_text as spreadsheet_csv
from d2lmini.grading.sandbox import PACKAGE
from d2lmini.i18n import _

MIN_TOKENS = 20  # a body shorter than this is not compared (e.g. `return W[X]`, one line of torch)
NOTEBOOKS = PACKAGE.parent / "notebooks"  # the released notebooks, whose stubs every student got
HEADER = ("exercise", "function", "student_a", "student_b", "ratio")
SKIPPED = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER}
NAMED = {tokenize.INDENT, tokenize.DEDENT}  # tokens written by their kind, not their text
FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef
BINDING = FUNCTION | ast.ClassDef


@dataclass(frozen=True)
class Pair:
    """Two students whose function `function` of `exercise` is `ratio` alike (`a` sorts before `b`)."""

    exercise: str
    function: str
    a: str
    b: str
    ratio: float


def _bound_names(function: ast.AST) -> set[str]:
    """The names that `function` binds: parameters, assigned and loop variables, inner definitions
    (not its imports: `import torch` inside it still reads `torch`)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, BINDING):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _anonymise(function: ast.AST) -> None:
    """Write every name that `function` binds as `_`, wherever it occurs (annotations dropped)."""
    bound = _bound_names(function)
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in bound:
            node.id = "_"
        elif isinstance(node, ast.arg):
            node.arg, node.annotation = "_", None
        elif isinstance(node, BINDING):
            node.name = "_"
        elif isinstance(node, ast.ExceptHandler) and node.name:
            node.name = "_"


@functools.lru_cache(maxsize=4096)
def canonical_tokens(source: str) -> tuple[str, ...]:
    """The tokens of the body of the (first) function in `source`, its own names written `_`.

    () if `source` defines no function Python can read.
    """
    try:
        function = next(n for n in ast.parse(source).body if isinstance(n, FUNCTION))
    except (SyntaxError, ValueError, RecursionError, StopIteration):
        return ()
    _anonymise(function)
    text = ast.unparse(ast.Module(body=function.body, type_ignores=[]))
    return tuple(tokenize.tok_name[t.type] if t.type in NAMED else t.string
                 for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in SKIPPED)


def idle(tokens: tuple[str, ...]) -> bool:
    """True if a body of these tokens does nothing: only `pass`, `...` or `return None`."""
    return not set(tokens) - {"pass", "...", "return", "None"}


@functools.cache
def stub_source(notebook: str, name: str) -> str | None:
    """The released notebook's own `def name` (the stub every student got), or None if not found."""
    try:
        cells = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text("utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sources = ["".join(c["source"]) if isinstance(c.get("source"), list) else str(c.get("source", ""))
               for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    return submitted_function(sources, name)


def attempted(source: str, stub: str | None = None) -> bool:
    """True if `source` is worth comparing: it does something and is not the stub `stub`."""
    tokens = canonical_tokens(source)
    return bool(tokens) and not idle(tokens) and (stub is None or tokens != canonical_tokens(stub))


def graded_sources(notebook: str, cells: list[str], names: dict[str, str]) -> dict[str, str]:
    """The sources of the graded functions a student attempted, by slot (`names`: slot -> their `def`)."""
    kept = {}
    for slot, name in names.items():
        source = submitted_function(cells, name)
        if source is not None and attempted(source, stub_source(notebook, name)):
            kept[slot] = source
    return kept


def _items(table) -> list[tuple]:
    """The items of `table`, or none if a record holds something else there."""
    return list(table.items()) if isinstance(table, dict) else []


def _groups(sources: dict[str, dict[str, dict[str, str]]]) -> dict[tuple[str, str], dict[str, tuple]]:
    """(exercise, function) -> student -> canonical tokens, for the functions long enough to compare."""
    groups: dict[tuple[str, str], dict[str, tuple]] = defaultdict(dict)
    for student, exercises in sources.items():
        for exercise, functions in _items(exercises):
            for function, source in _items(functions):
                tokens = canonical_tokens(source) if isinstance(source, str) else ()
                if len(tokens) >= MIN_TOKENS and not idle(tokens):
                    groups[(exercise, function)][student] = tokens
    return groups


def _alike_in(group: dict[str, tuple], threshold: float) -> Iterator[tuple[str, str, float]]:
    """The pairs of students in `group` whose tokens are at least `threshold` alike, with the ratio."""
    students = sorted(group)
    matcher = SequenceMatcher(None, autojunk=False)
    for index, b in enumerate(students):
        matcher.set_seq2(group[b])  # SequenceMatcher caches what it learns of its second sequence
        for a in students[:index]:
            if group[a] == group[b]:
                yield a, b, 1.0
                continue
            matcher.set_seq1(group[a])
            if matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold:
                ratio = matcher.ratio()
                if ratio >= threshold:
                    yield a, b, round(ratio, 3)


def alike_pairs(sources: dict[str, dict[str, dict[str, str]]], threshold: float = SIMILAR) -> list[Pair]:
    """Every pair of students whose graded function is at least `threshold` alike, most alike first.

    `sources`: student -> exercise -> function (the check's slot) -> source, as records keep them.
    """
    pairs = [Pair(exercise, function, a, b, ratio)
             for (exercise, function), group in _groups(sources).items()
             for a, b, ratio in _alike_in(group, threshold)]
    return sorted(pairs, key=lambda p: (-p.ratio, p.exercise, p.function, p.a, p.b))


def csv_text(pairs: list[Pair]) -> str:
    """`similarity.csv`: a header, then a row per pair (a header alone when none is alike)."""
    return spreadsheet_csv([HEADER, *((p.exercise, p.function, p.a, p.b, f"{p.ratio:.3f}") for p in pairs)])


def summary(path: Path) -> str:
    """One line for the instructor about the similarity.csv at `path`."""
    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            rows = max(sum(1 for _ in csv.reader(handle)) - 1, 0)
    except OSError:
        # TRANSLATORS: {name} is a file's name (similarity.csv), which is missing.
        return _("no {name}").format(name=Path(path).name)
    if not rows:
        return _("no two students' graded functions are {similar:.0%} alike ({path})").format(
            similar=SIMILAR, path=path)
    return _("{rows} pair(s) of students' graded functions at least {similar:.0%} alike, as evidence to "
             "read, not a verdict: {path}").format(rows=rows, similar=SIMILAR, path=path)
