"""What the grader reports to the instructor but does not enforce: evidence about a graded function.

Two kinds, per student and coding exercise, written to results.json (`stats["evidence"]`):

- **calls** into torch's RNN, cross-entropy or gradient clipping that the caller process saw
  while the student's function ran for the check (the check's bans refuse them where the
  exercise bans them; this lists them wherever they happened, and a student's code could hide
  them, so they are evidence, not proof);
- **similarity** of the graded function's source (its `def` in the submitted notebook) to the
  package's functions and to `solutions/`: a ratio at or above `SIMILAR` is listed.

And, in the student's record (`stats["sources"]`), the source of each graded function the student
attempted (`graded_sources`: not the released stub, not a body that does nothing), which
`d2lmini.grading.judging.similarity` compares among classmates. `gather` takes all three for one
judged exercise.

Similarity (here and among classmates, `d2lmini.grading.judging.similarity`) is measured on the body's
Python tokens with every name the function binds written `_` (`canonical_tokens`), by copydetect's
winnowing fingerprints: every run of `KGRAM` tokens is hashed once per function (`fingerprint`),
and `likeness` is the share of the two bodies' tokens that lie in runs both have (each run matched
as often as it occurs in the other). So a reordered, re-spaced or renamed copy, or one with a dead
statement or a split expression, keeps most of its runs, while two unrelated functions share only
runs shorter than `KGRAM`, however long they are. A pair costs a set intersection: linear, where
`difflib` was quadratic in the functions' length.
"""

import ast
import functools
import io
import json
import tokenize
import zlib
from dataclasses import dataclass

from d2lmini.grading.assignment.manifest import Exercise
from d2lmini.grading.run.sandbox import PACKAGE

SIMILAR = 0.8  # the likeness from which a function is reported as similar
KGRAM = 10  # tokens per fingerprinted run: `_ = torch . zeros ( _ , _ )` is 10
MIN_TOKENS = 20  # a body shorter than this is not compared (e.g. `return W[X]`, one line of torch)
SKIPPED = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER}
NAMED = {tokenize.INDENT, tokenize.DEDENT}  # tokens written by their kind, not their text
FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef
BINDING = FUNCTION | ast.ClassDef
NOTEBOOKS = PACKAGE.parent / "notebooks"  # the released notebooks, whose stubs every student got
FLAGGED_CALLS = ("rnn", "lstm", "gru", "cross_entropy", "nll_loss", "log_softmax", "clip_grad")


def _functions(source: str) -> dict[str, str]:
    """Each function defined in `source`, as normalised source (no comments, no docstrings)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) and isinstance(
                getattr(node.body[0], "value", None), ast.Constant) else node.body
            copy = ast.FunctionDef(name="f", args=node.args, body=body or [ast.Pass()], decorator_list=[],
                                   returns=None, type_params=[])
            found[node.name] = ast.unparse(ast.fix_missing_locations(copy))
    return found


@functools.cache
def known_functions() -> dict[str, str]:
    """The package's and the solutions' functions, named "d2lmini/rnn.py:rnn_forward"."""
    known = {}
    folders = [PACKAGE, PACKAGE.parent / "solutions"]
    for folder in folders:
        for path in sorted(folder.rglob("*.py")) if folder.is_dir() else ():
            name = path.relative_to(PACKAGE.parent)
            for function, text in _functions(path.read_text("utf-8", errors="replace")).items():
                known[f"{name}:{function}"] = text
    return known


def submitted_function(cells: list[str], name: str) -> str | None:
    """The normalised source of the last `def name` in the submission's cells, or None."""
    found = None
    for source in cells:
        found = _functions(source).get(name, found)
    return found


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
        _anonymise(function)
        text = ast.unparse(ast.Module(body=function.body, type_ignores=[]))
        return tuple(tokenize.tok_name[t.type] if t.type in NAMED else t.string
                     for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in SKIPPED)
    except (SyntaxError, ValueError, RecursionError, StopIteration, tokenize.TokenError):
        return ()


def idle(tokens: tuple[str, ...]) -> bool:
    """True if a body of these tokens does nothing: only `pass`, `...` or `return None`."""
    return not set(tokens) - {"pass", "...", "return", "None"}


@dataclass(frozen=True)
class Fingerprint:
    """A body's runs of `KGRAM` tokens: `where[h]` lists where the run hashed `h` starts."""

    tokens: tuple[str, ...]
    where: dict[int, list[int]]


def _letters(tokens: tuple[str, ...]) -> str:
    """The tokens as one character each, so copydetect's k-grams of characters are k-grams of tokens.

    crc32, not `hash`: the same token is the same character in every process.
    """
    return "".join(chr(0x10000 + zlib.crc32(t.encode("utf-8", "surrogatepass")) % 0x100000) for t in tokens)


@functools.lru_cache(maxsize=4096)
def fingerprint(tokens: tuple[str, ...]) -> Fingerprint | None:
    """The fingerprint of a body of `tokens`, or None if it is not compared (idle or too short)."""
    if len(tokens) < max(MIN_TOKENS, KGRAM) or idle(tokens):
        return None
    from copydetect.utils import get_document_fingerprints  # its package imports matplotlib.pyplot: 1 s

    # Window 1 keeps every k-gram, as copydetect does by default: a wider window would keep the
    # k-grams of least `hash`, which Python salts per process, and the ratios would change per run.
    _, where = get_document_fingerprints(_letters(tokens), KGRAM, 1)
    return Fingerprint(tokens, {int(h): starts for h, starts in where.items()})


def _covered(starts: list[int]) -> int:
    """How many tokens the runs of `KGRAM` tokens starting at `starts` cover together."""
    from copydetect.utils import get_copied_slices

    if not starts:
        return 0
    slices = get_copied_slices(starts, KGRAM)
    return int((slices[1] - slices[0]).sum())


def likeness(a: Fingerprint, b: Fingerprint) -> float:
    """The share of the tokens of `a` and `b` in runs the other has too, each run matched at most as
    often as the other has it (so a run repeated in a long function counts once per match), in [0, 1]."""
    if a.tokens == b.tokens:
        return 1.0
    shared = a.where.keys() & b.where.keys()
    starts_a = [i for h in shared for i in a.where[h][:len(b.where[h])]]
    starts_b = [i for h in shared for i in b.where[h][:len(a.where[h])]]
    return (_covered(starts_a) + _covered(starts_b)) / (len(a.tokens) + len(b.tokens))


def similar(text: str, others: dict[str, str]) -> list[tuple[str, float]]:
    """The entries of `others` whose source is at least `SIMILAR` alike to `text`, most alike first."""
    mine = fingerprint(canonical_tokens(text))
    if mine is None:
        return []
    hits = []
    for where, other in others.items():
        theirs = fingerprint(canonical_tokens(other))
        ratio = likeness(mine, theirs) if theirs is not None else 0.0
        if ratio >= SIMILAR:
            hits.append((where, round(ratio, 3)))
    return sorted(hits, key=lambda hit: -hit[1])[:5]


def flagged_calls(calls: dict[str, int]) -> dict[str, int]:
    """The calls among `calls` (torch function name -> count) into an RNN, cross-entropy or clipping."""
    return {name: count for name, count in calls.items()
            if any(word in name.lower() for word in FLAGGED_CALLS)}


def report(exercise: str, cells: list[str], name: str, calls: dict[str, int]) -> dict | None:
    """The evidence for one graded function (None when there is none)."""
    text = submitted_function(cells, name)
    matches = similar(text, known_functions()) if text is not None else []
    seen = flagged_calls(calls)
    if not matches and not seen:
        return None
    return {"exercise": exercise, "function": name, "similar_to": matches, "calls": seen}


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


def gather(exercise: Exercise, cells: list[str] | None, functions: list, names: dict[str, str],
           found: list | None, stats: dict | None) -> None:
    """Gather the evidence about one judged exercise's functions: a `report` for each function the check
    called (`functions`, each with its `__name__` and the `calls` seen) into `found`, and in
    `stats["sources"]` the graded functions the student attempted (`names`: slot -> their `def`), to
    compare classmates (`d2lmini.grading.judging.similarity`)."""
    if found is not None and cells is not None:
        for function in functions:
            entry = report(exercise.id, cells, function.__name__, dict(function.calls))
            if entry is not None:
                found.append(entry)
    if stats is None or not cells:
        return
    sources = graded_sources(exercise.notebook, cells, names)
    if sources:
        stats.setdefault("sources", {})[exercise.id] = sources
