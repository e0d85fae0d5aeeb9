"""The exercises a grader looks for, discovered from the released notebooks.

Every call in a released notebook to a `check_*` function of a `d2lmini.exercises` module is
an exercise. Its id is the notebook's number and the check's name without `check_`
("01:ngram_order"). The arguments the released call writes as constants (`vocab_size=100`)
are the instructor's and are kept here; the others (`answer`, `all_states`) are the student's,
recorded from the student's kernel. `d2lmini/grading/assignment/exercises.json` is this list for the
course's notebooks (`python -m d2lmini.grading --discover notebooks/` writes it).
"""

import ast
import importlib
import inspect
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

from d2lmini.grading.base.remote import decode, encode
from d2lmini.i18n import N_, _

MANIFEST = Path(__file__).with_name("exercises.json")
EXERCISES_PACKAGE = "d2lmini.exercises"
# Each kind of exercise (`Exercise.kind`, a value the code compares) as a person reads it: the
# feedback's headings, Gradescope's test names, points.toml's comments.
KINDS = {
    # TRANSLATORS: a kind of exercise: a question answered with a value.
    "question": N_("question"),
    # TRANSLATORS: a kind of exercise: a function the student writes.
    "coding": N_("coding"),
    # TRANSLATORS: an exercise whose kind is not known (no longer in the course's list).
    "exercise": N_("exercise"),
}


@dataclass
class Exercise:
    """One exercise: where it is, which check judges it and with which of its arguments."""

    id: str  # "01:ngram_order"
    notebook: str  # "01_hidden_state"
    module: str  # "d2lmini.exercises.hidden_state"
    check: str  # "check_ngram_order"
    parameters: list[str]  # the check's parameter names, in order
    slots: list[str]  # the arguments the student gives ("answer", or the function's parameter)
    fixed: dict = field(default_factory=dict)  # the instructor's arguments, as `encode` writes them
    kind: str = "question"  # or "coding": a slot is a function the notebook's stub defines

    def instructor_arguments(self) -> dict:
        """The released call's own arguments (vocab_size=100, ...), decoded."""
        return {name: decode(value) for name, value in self.fixed.items()}

    def checker(self):
        """The check function itself (imported in the grading process only)."""
        return getattr(importlib.import_module(self.module), self.check)


def kind_label(kind: str) -> str:
    """How `kind` ("question", "coding") is named for a person, in the language d2lmini speaks now."""
    return _(KINDS[kind]) if kind in KINDS else kind


def python_of(source: str) -> str:
    """A cell's source as the Python IPython runs (magics and shell escapes turned into calls)."""
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # a cell IPython itself cannot read: run it as written, to fail there
        return source


def check_calls(tree: ast.AST, names) -> list[ast.Call]:
    """The calls in `tree` to a function named (or an attribute named) one of `names`."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in names:
                calls.append(node)
    return calls


def _exercise_modules(trees) -> list:
    """The `d2lmini.exercises` modules a notebook imports."""
    names = []
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == EXERCISES_PACKAGE:
                names += [f"{EXERCISES_PACKAGE}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(EXERCISES_PACKAGE + "."):
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names += [a.name for a in node.names if a.name.startswith(EXERCISES_PACKAGE + ".")]
    modules = []
    for name in dict.fromkeys(names):
        try:
            modules.append(importlib.import_module(name))
        except ImportError:  # `from d2lmini.exercises import Verdict`: not a module
            continue
    return modules


def _constant(node: ast.expr):
    """The value of an argument written as a constant expression (10**9, (3, 4)), else a marker."""
    if any(isinstance(n, ast.Name | ast.Call | ast.Attribute) for n in ast.walk(node)):
        return _STUDENT
    try:  # the released notebook is the instructor's own text
        return eval(compile(ast.Expression(node), "<release>", "eval"), {"__builtins__": {}}, {})
    except Exception:
        return _STUDENT


_STUDENT = object()


def discover_notebook(path: Path) -> list[Exercise]:
    """The exercises of the released notebook at `path`, in the order of their check cells."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    trees = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            try:
                trees.append(ast.parse(python_of(cell.source)))
            except SyntaxError:
                continue
    modules = _exercise_modules(trees)
    defined = {n.name for tree in trees for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    prefix, stem = path.stem.split("_")[0], path.stem
    exercises = []
    for tree in trees:
        for call in check_calls(tree, {n for m in modules for n in dir(m) if n.startswith("check_")}):
            name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
            module = next(m for m in modules if hasattr(m, name))
            exercises.append(_exercise(prefix, stem, module, name, call, defined))
    return exercises


def _exercise(prefix, stem, module, name, call: ast.Call, defined: set[str]) -> Exercise:
    check = getattr(module, name)
    parameters = [p for p in inspect.signature(check).parameters if p != "quiet"]
    given = dict(zip(parameters, call.args, strict=False)) | {k.arg: k.value for k in call.keywords if k.arg}
    fixed, slots, kind = {}, [], "question"
    for parameter, node in given.items():
        value = _constant(node)
        if value is _STUDENT:
            slots.append(parameter)
            if isinstance(node, ast.Name) and node.id in defined:
                kind = "coding"
        else:
            fixed[parameter] = encode(value)
    return Exercise(f"{prefix}:{name.removeprefix('check_')}", stem, module.__name__, name, parameters,
                    slots, fixed, kind)


def discover(folder: Path) -> list[Exercise]:
    """The exercises of every notebook in `folder` (sorted by file name)."""
    return [e for path in sorted(Path(folder).glob("*.ipynb")) for e in discover_notebook(path)]


def save(exercises: list[Exercise], path: Path = MANIFEST) -> None:
    """Write the list of exercises as JSON."""
    path.write_text(json.dumps([asdict(e) for e in exercises], indent=1) + "\n", "utf-8")


def load(path: Path = MANIFEST) -> list[Exercise]:
    """Read a list of exercises written by `save`."""
    return [Exercise(**data) for data in json.loads(Path(path).read_text("utf-8"))]
