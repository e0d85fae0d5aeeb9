"""README's module table is the package's map: every module has a row, and imports run one way.

README ("The package") says a module imports only modules in its own row or above it; this
checks that claim on the source, so a new module without a row or an import up the table fails.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "d2lmini"


def table_rows() -> list[set[str]]:
    """The modules named in each row of README's module table, top to bottom ("widgets/<topic>": widgets)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| module | holds |"):].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        first_cell = line.split("|")[1]
        rows.append({name.split("/")[0] for name in re.findall(r"`([\w/<>]+)`", first_cell)})
    return rows


def top_level(path: Path) -> str:
    """The unit a file belongs to: its module, or its subpackage ("widgets" for widgets/lab.py)."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_units(path: Path) -> set[str]:
    """The d2lmini units (modules or subpackages) that the file at `path` imports."""
    units = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "d2lmini":
                units |= {parts[1]} if len(parts) > 1 else {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            units |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("d2lmini.")}
    return units


def package_files() -> list[Path]:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "__init__.py"]


def test_every_module_of_the_package_has_a_row():
    listed = set().union(*table_rows())
    units = {top_level(path) for path in package_files()}
    assert units - listed == set(), "give these modules a row in README's module table"
    assert listed - units == set(), "README's module table names modules that do not exist"


def test_a_module_imports_only_its_own_row_and_the_rows_above():
    rows = table_rows()
    row_of = {name: number for number, names in enumerate(rows) for name in names}
    upward = []
    for path in package_files():
        unit = top_level(path)
        if unit not in row_of:  # no row: the test above names it
            continue
        for imported in imported_units(path) - {unit}:
            if row_of.get(imported, -1) > row_of[unit]:
                upward.append(f"{path.relative_to(ROOT)} imports {imported}, which is below it")
    assert upward == []


# The grader's wings, lowest first (d2lmini/grading/__init__.py): each imports only its own and those
# before it; the ways in (`__main__`, `gradescope`) stand above them all, directly in grading/.
GRADING = PACKAGE / "grading"
GRADING_WINGS = ("base", "assignment", "run", "judging", "gradebook")
WAYS_IN = {"__init__.py", "__main__.py", "gradescope.py"}


def grading_wing(module: str) -> int:
    """The rank of the wing of the module `d2lmini.grading.WING.NAME` (past every wing: a way in)."""
    parts = module.split(".")
    return GRADING_WINGS.index(parts[2]) if len(parts) > 2 and parts[2] in GRADING_WINGS \
        else len(GRADING_WINGS)


def grading_imports(path: Path) -> set[str]:
    """The d2lmini.grading modules the file at `path` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("d2lmini.grading."):
            found |= {f"{node.module}.{alias.name}" if node.module.count(".") == 2 else node.module
                      for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("d2lmini.grading.")}
    return found


def test_the_grader_lies_in_wings_that_import_only_downward():
    loose = sorted(p.name for p in GRADING.iterdir() if p.is_file() and p.suffix == ".py")
    assert set(loose) <= WAYS_IN, f"put these in a wing of grading/: {set(loose) - WAYS_IN}"
    assert sorted(p.name for p in GRADING.iterdir() if p.is_dir() and p.name != "__pycache__") == \
        sorted(GRADING_WINGS)
    upward = []
    for path in sorted(GRADING.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        upward += [f"{path.relative_to(ROOT)} imports {name}" for name in grading_imports(path)
                   if grading_wing(name) > grading_wing(module)]
    assert upward == [], "a wing imports only its own and those below it (grading/__init__.py)"
