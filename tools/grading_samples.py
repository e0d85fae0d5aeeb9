"""Sample submissions for the grader's tests and benchmark: the released notebooks, filled in.

`solved(notebook)` is a released notebook (notebooks/NN_x.ipynb) with the instructors' answers
(solutions/notebook_NN.py's `ANSWERS`) in its question cells and their functions in place of
its stubs (the capstone's from solutions/capstone.py); `untouched(notebook)` is the notebook as
released. `bad_class(notebook)` builds the bad submissions the grader must survive, each with
the exercises it must lose. Used by tests/test_grading*.py and benchmarks/grading.py.

    python tools/grading_samples.py OUT_FOLDER [--students 30] [--notebooks 01,02]
"""

import argparse
import ast
import copy
import importlib.util
import inspect
import math
import re
import sys
from pathlib import Path

import nbformat

from d2lmini.grading.assignment import manifest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS, SOLUTIONS = ROOT / "notebooks", ROOT / "solutions"
STUB = re.compile(r"^def (\w+)\(", re.MULTILINE)


# A cell that asks a question, holds a stub or calls an exercise's check (what grading needs of a notebook).
CHECKS = sorted({exercise.check for exercise in manifest.load()})
EXERCISE_CELL = re.compile(rf"answer = |\b(?:{'|'.join(CHECKS)})\(|^def \w+\((?s:.*)return None")


def released(notebook: str, folder: Path = NOTEBOOKS, whole: bool = True) -> nbformat.NotebookNode:
    """The released notebook whose file name starts with `notebook` ("01" or "01_hidden_state"), from
    `folder` (the course's notebooks, or a folder written by `python -m d2lmini.grading release`);
    with `whole=False`, only the cells its exercises need (`exercise_cells_only`)."""
    path = next(iter(sorted(Path(folder).glob(f"{notebook}*.ipynb"))))
    result = nbformat.read(path, as_version=4)
    return result if whole else exercise_cells_only(result)


def exercise_cells_only(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`notebook` with its first two code cells (the install and the setup cell) and every code cell
    that asks a question, holds a stub or calls a check, in order.

    The class tests grade many copies of one notebook (bad, cheating, shortcut submissions); its
    demonstrations (timings, plots, panels) are graded whole once, in the solutions' class and the
    Gradescope check, not again with every copy.
    """
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    result = copy.deepcopy(notebook)
    result.cells = copy.deepcopy(code[:2] + [cell for cell in code[2:] if EXERCISE_CELL.search(cell.source)])
    return result


def notebook_path(notebook: str) -> Path:
    """The path of the released notebook `notebook` ("01")."""
    return next(iter(sorted(NOTEBOOKS.glob(f"{notebook}*.ipynb"))))


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"grading_sample_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _imports(path: Path) -> str:
    """The import lines of a solutions file (a filled-in stub cell starts with them)."""
    tree = ast.parse(path.read_text("utf-8"))
    return "".join(ast.get_source_segment(path.read_text("utf-8"), node) + "\n" for node in tree.body
                   if isinstance(node, ast.Import | ast.ImportFrom))


def _literal(value) -> str:
    """Python source for an answer (math.inf as float('inf'), so the cell needs no import)."""
    if isinstance(value, float) and math.isinf(value):
        return "float('inf')" if value > 0 else "-float('inf')"
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _solution_source(name: str, solution_path: Path, capstone_path: Path) -> str | None:
    """A solution function's source under the name `name` (my_clip -> capstone's clip), or None."""
    for path, wanted in ((solution_path, name), (capstone_path, name.removeprefix("my_"))):
        if not path.exists():
            continue
        function = getattr(_module(path), wanted, None)
        if inspect.isfunction(function):
            source = inspect.getsource(function)
            return _imports(path) + source.replace(f"def {wanted}(", f"def {name}(", 1)
    return None


def solved(notebook: str, folder: Path = NOTEBOOKS, answers: dict | None = None,
           whole: bool = True) -> nbformat.NotebookNode:
    """The released notebook with the instructors' answers and functions filled in; `answers` (check
    name -> answer) replace the solutions' own (a release's numbers ask for other answers); `whole=False`:
    only the cells its exercises need."""
    number = notebook[:2]
    result = copy.deepcopy(released(notebook, folder, whole))
    solution_path, capstone_path = SOLUTIONS / f"notebook_{number}.py", SOLUTIONS / "capstone.py"
    answers = (_module(solution_path).ANSWERS if solution_path.exists() else {}) | (answers or {})
    for cell in result.cells:
        if cell.cell_type != "code":
            continue
        if "answer = None" in cell.source:
            for check, value in answers.items():
                if re.search(rf"\b{check}\(\s*answer\b", cell.source):
                    cell.source = cell.source.replace("answer = None", f"answer = {_literal(value)}", 1)
        elif "return None" in cell.source and STUB.search(cell.source):
            parts = [_solution_source(name, solution_path, capstone_path)
                     for name in STUB.findall(cell.source)]
            if all(parts):
                cell.source = "\n\n".join(parts)
    return result


# The answers to notebook 02's computed questions from the numbers a release drew for them (the
# released check's keyword arguments, `Exercise.instructor_arguments()`).
RELEASED_ANSWERS = {
    "check_stacked_weight_shape": lambda a: (a["num_inputs"] + a["num_hiddens"], a["num_hiddens"]),
    "check_multiplication_count":
        lambda a: a["batch"] * a["num_hiddens"] * (a["num_inputs"] + a["num_hiddens"]),
    "check_gru_weight_shape": lambda a: (3 * a["num_hiddens"], a["num_inputs"]),
}


def released_answers(notebook: str, exercises: list) -> dict:
    """Check name -> the right answer to each computed question of `notebook` in a release's `exercises`."""
    return {e.check: RELEASED_ANSWERS[e.check](e.instructor_arguments()) for e in exercises
            if e.notebook.startswith(notebook) and e.check in RELEASED_ANSWERS}


def untouched(notebook: str, whole: bool = True) -> nbformat.NotebookNode:
    """The released notebook as it is (every exercise unanswered); `whole=False`: only the cells its
    exercises need."""
    return copy.deepcopy(released(notebook, whole=whole))


def _cell_index(notebook: nbformat.NotebookNode, pattern: str) -> int:
    return next(i for i, c in enumerate(notebook.cells)
                if c.cell_type == "code" and re.search(pattern, c.source))


def _with_cell(notebook, index: int, source: str, before: bool = True) -> nbformat.NotebookNode:
    """`notebook` with a new code cell `source` inserted before (or after) cell `index`."""
    result = copy.deepcopy(notebook)
    result.cells.insert(index if before else index + 1, nbformat.v4.new_code_cell(source))
    return result


def bad_class(notebook: str) -> dict[str, tuple[object, dict[str, str]]]:
    """Bad submissions of `notebook`: name -> (notebook or bytes, {exercise id: text its reason holds}).

    Exercises not named score full marks. Built on the solved notebook's exercise cells
    (`exercise_cells_only`), on its first question (`first`) and first coding exercise (`coding`).
    """
    good = solved(notebook, whole=False)
    number = notebook[:2]
    question = _cell_index(good, r"answer = (?!None)")
    check_name = re.search(r"(check_\w+)\(", good.cells[question].source).group(1)
    first = f"{number}:{check_name.removeprefix('check_')}"
    stub = _cell_index(released(notebook, whole=False), r"(?s)^def \w+\(.*return None")
    function = STUB.search(good.cells[stub].source).group(1)
    check = _cell_index(good, rf"check_\w+\({function}")
    coding_name = re.search(r"(check_\w+)\(", good.cells[check].source).group(1)
    coding = f"{number}:{coding_name.removeprefix('check_')}"
    samples: dict[str, tuple[object, dict[str, str]]] = {}

    def question_cell(prefix: str) -> nbformat.NotebookNode:
        result = copy.deepcopy(good)
        result.cells[question].source = prefix.rstrip("\n") + "\n" + result.cells[question].source
        return result

    samples["not_a_notebook"] = (b"%PDF-1.4 this is not a notebook\n",
                                 {"*": "could not be read as a Jupyter notebook"})
    deleted = copy.deepcopy(good)
    del deleted.cells[check]
    samples["deleted_check_cell"] = (deleted, {coding: "is not in your notebook"})
    duplicated = copy.deepcopy(good)
    duplicated.cells.insert(check, nbformat.v4.new_code_cell(duplicated.cells[check].source))
    duplicated.cells.insert(question, nbformat.v4.new_code_cell(duplicated.cells[question].source))
    samples["duplicated_cells"] = (duplicated, {})
    reordered = copy.deepcopy(good)
    reordered.cells.insert(stub, reordered.cells.pop(check))
    samples["reordered_cells"] = (reordered, {coding: "NameError"})
    renamed = copy.deepcopy(good)
    renamed.cells[stub].source = renamed.cells[stub].source.replace(f"def {function}(",
                                                                    f"def {function}_v2(", 1)
    samples["renamed_function"] = (renamed, {coding: "NameError"})
    syntax = copy.deepcopy(good)
    syntax.cells[stub].source += "\n    return (\n"
    samples["syntax_error"] = (syntax, {coding: "NameError"})
    samples["endless_loop"] = (question_cell("while True:\n    pass\n"), {first: "still running"})
    endless = copy.deepcopy(good)
    endless.cells[stub].source = f"def {function}(*args):\n    while True:\n        pass\n"
    samples["endless_function"] = (endless, {coding: "still running"})
    samples["huge_allocation"] = (question_cell("import torch\nbig = torch.ones(10**10, dtype=torch.uint8)"),
                                  {first: "more memory than"})
    samples["os_exit"] = (question_cell("import os\nos._exit(0)\n"), {first: "ended the notebook's kernel"})
    samples["sys_exit"] = (question_cell("import sys\nsys.exit('done')\n"), {first: "SystemExit"})
    samples["printing_100_mb"] = (question_cell("for _ in range(1_000_000):\n    print('x' * 99)\n"),
                                  {first: "printed more than"})
    samples["pip_install"] = (question_cell("%pip install d2lmini-helper-answers\n"
                                            "import d2lmini_helper_answers\n"),
                              {first: "ModuleNotFoundError"})
    samples["network_call"] = (question_cell(
        "import urllib.request\nurllib.request.urlopen('https://example.com/answers', timeout=30)\n"),
        {first: "URLError"})
    samples["writes_files"] = (question_cell(
        "import os\nopen('answers.txt', 'w').write('x')\n"
        "open(os.path.expanduser('~/.answers'), 'w').write('x')\n"
        "open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'answers'), 'w').write('x')\n"), {})
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_markdown_cell("# Homework 3 (another course)"),
                   nbformat.v4.new_code_cell("def check_answer(x):\n    return x == 42\n\ncheck_answer(42)")]
    samples["another_course"] = (other, {"*": "has none of this course's check cells"})
    return samples


FALLBACK = "    return torch.zeros(X.shape[0], W_hh.shape[1])\n"
# Ways to pass notebook 02's fused_step in the student's own process, none of which may pass the grader.
SHORTCUTS = {
    "frames": "import sys\nimport torch\n\ndef fused_step(X, H, W_xh, W_hh, b_h):\n"
              "    frame = sys._getframe(1)\n    while frame is not None:\n"
              "        for value in list(frame.f_locals.values()):\n"
              "            if isinstance(getattr(value, 'expected', None), torch.Tensor):\n"
              "                return value.expected.clone()\n"
              "        frame = frame.f_back\n" + FALLBACK,
    "gc": "import gc\nimport torch\n\ndef fused_step(X, H, W_xh, W_hh, b_h):\n"
          "    for obj in gc.get_objects():\n"
          "        if type(obj).__name__ == 'Case' and torch.is_tensor(getattr(obj, 'expected', None)) \\\n"
          "                and obj.expected.shape == (X.shape[0], W_hh.shape[1]):\n"
          "            return obj.expected.clone()\n" + FALLBACK,
    "patched_checker": "import torch\nimport d2lmini.exercises.coding as coding\n\n"
                       "def fused_step(X, H, W_xh, W_hh, b_h):\n"
                       "    coding.first_difference = lambda *a, **k: None\n" + FALLBACK,
    "table_of_self_check_values": (
        "import torch\nfrom d2lmini.exercises.hidden_state import rnn_step_cases\n\n"
        "TABLE = [(c.args, c.expected) for c in rnn_step_cases(torch.device('cpu'))]\n\n"
        "def fused_step(X, H, W_xh, W_hh, b_h):\n"
        "    for args, expected in TABLE:\n"
        "        if all(torch.equal(a, b) for a, b in zip(args, (X, H, W_xh, W_hh, b_h))):\n"
        "            return expected.clone()\n" + FALLBACK),
    "package_function": "from d2lmini.rnn import rnn_step\n\ndef fused_step(X, H, W_xh, W_hh, b_h):\n"
                        "    return rnn_step(X, H, W_xh, W_hh, b_h)\n",
}


def shortcut_class() -> dict[str, nbformat.NotebookNode]:
    """Notebook 02's exercise cells solved, but for its fused_step: one of `SHORTCUTS` (each must score 0
    there)."""
    good = solved("02", whole=False)
    stub = _cell_index(released("02", whole=False), r"(?s)^def fused_step\(.*return None")
    samples = {}
    for name, source in SHORTCUTS.items():
        samples[name] = copy.deepcopy(good)
        samples[name].cells[stub].source = source
    return samples


def write(notebook, path: Path) -> None:
    """Write a sample (a notebook, or bytes for a file that is not one) to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(notebook, bytes):
        path.write_bytes(notebook)
    else:
        nbformat.write(notebook, path)


def main(argv: list[str]) -> None:
    """Write a class of sample submissions: solved, untouched and bad ones, in turn."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--notebooks", default="01")
    args = parser.parse_args(argv)
    for number in args.notebooks.split(","):
        name = notebook_path(number).name
        kinds = [("solved", solved(number)), ("untouched", untouched(number))]
        if args.students > len(kinds):  # bad submissions need a question and a coding exercise
            kinds += [(k, v) for k, (v, _) in bad_class(number).items()]
        for i in range(args.students):
            kind, sample = kinds[i % len(kinds)]
            write(sample, args.out / f"student{i + 1:02d}_{kind}" / name)


if __name__ == "__main__":
    main(sys.argv[1:])
