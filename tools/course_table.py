"""The course table, tests/course.py's COURSE: the declaration of every notebook, read and extended.

Read with `ast`, not imported, so that tools/new_notebook.py works on any copy of the repository.
"""

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
COURSE_FILE = ROOT / "tests" / "course.py"
STEM = re.compile(r"^\d\d[a-z]?_[a-z0-9_]+$")


@dataclass(frozen=True)
class Declaration:
    """What a contributor says about a new notebook; everything else is derived from it."""

    stem: str  # "10_demo"
    title: str = ""  # "A demo": the course map's, README's and the links' name of it
    title_zh: str = ""
    idea: str = ""  # one sentence: the course map's "big idea" and README's "what it teaches"
    idea_zh: str = ""
    exercises: str | None = None  # its d2lmini.exercises module
    optional: bool = False

    @property
    def number(self) -> str:
        """ "10", or "05b"."""
        return self.stem.split("_", 1)[0]

    @property
    def path(self) -> Path:
        """notebooks/<stem>.ipynb."""
        return NOTEBOOKS / f"{self.stem}.ipynb"

    def link(self, zh: bool = False) -> str:
        """Its Markdown link with its number and title."""
        return f"[{self.number} · {self.title_zh if zh else self.title}]({self.stem}.ipynb)"


def course_rows() -> list[tuple[str, bool]]:
    """(stem, optional) of every row of tests/course.py's COURSE, in order, read without importing it."""
    tree = ast.parse(COURSE_FILE.read_text(encoding="utf-8"))
    rows = []
    for element in _course_elements(tree):
        stem = element.args[0].value
        optional = any(k.arg == "optional" and k.value.value for k in element.keywords)
        rows.append((stem, optional))
    return rows


def _course_elements(tree) -> list[ast.Call]:
    for node in tree.body:
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if getattr(target, "id", None) == "COURSE":
            return list(node.value.elts)
    raise SystemExit(f"{COURSE_FILE}: no COURSE table")


def add_course_row(spec: Declaration) -> bool:
    """Insert the notebook's row into COURSE after the row of the notebook before it (file-name order)."""
    stems = [stem for stem, _ in course_rows()]
    if spec.stem in stems:
        return False
    text = COURSE_FILE.read_text(encoding="utf-8")
    elements = _course_elements(ast.parse(text))
    before = [e for e in elements if e.args[0].value < spec.stem]
    lines = text.splitlines(keepends=True)
    at = before[-1].end_lineno if before else elements[0].lineno - 1
    arguments = [f'"{spec.stem}"'] + ([f'"{spec.exercises}"'] if spec.exercises else [])
    arguments += ["optional=True"] if spec.optional else []
    comment = "  # its panels' keyboard steps: keyboard=(...), see tests/browser/keyboard.py"
    lines.insert(at, f"    Notebook({', '.join(arguments)}),{comment}\n")
    COURSE_FILE.write_text("".join(lines), encoding="utf-8")
    return True


def declaration_from_course(stem: str) -> Declaration:
    """A later run's declaration: the row of tests/course.py (the titles are in the files already)."""
    tree = ast.parse(COURSE_FILE.read_text(encoding="utf-8"))
    for element in _course_elements(tree):
        if element.args[0].value == stem:
            exercises = element.args[1].value if len(element.args) > 1 else None
            exercises = next((k.value.value for k in element.keywords if k.arg == "exercises"), exercises)
            optional = any(k.arg == "optional" and k.value.value for k in element.keywords)
            return Declaration(stem, exercises=exercises, optional=optional)
    raise SystemExit(f"{stem} has no row in {COURSE_FILE.relative_to(ROOT)}: give --title and the rest")
