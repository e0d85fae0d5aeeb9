"""What the grader reports to the instructor but does not enforce: evidence about a graded function.

Two kinds, per student and coding exercise, written to results.json (`stats["evidence"]`):

- **calls** into torch's RNN, cross-entropy or gradient clipping that the caller process saw
  while the student's function ran for the check (the check's bans refuse them where the
  exercise bans them; this lists them wherever they happened, and a student's code could hide
  them, so they are evidence, not proof);
- **similarity** of the graded function's source (its `def` in the submitted notebook) to the
  package's functions and to `solutions/`, by `difflib.SequenceMatcher` on the source text
  with comments and docstrings removed (`ast.unparse`): a ratio at or above `SIMILAR` is listed.
"""

import ast
import difflib
import functools

from d2lmini.grading.sandbox import PACKAGE

SIMILAR = 0.85  # the ratio from which a function is reported as similar
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


def similar(text: str, others: dict[str, str]) -> list[tuple[str, float]]:
    """The entries of `others` whose source is at least `SIMILAR` alike to `text`, most alike first."""
    hits = []
    for where, other in others.items():
        matcher = difflib.SequenceMatcher(None, text, other, autojunk=False)
        if matcher.real_quick_ratio() >= SIMILAR and matcher.quick_ratio() >= SIMILAR:
            ratio = matcher.ratio()
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
