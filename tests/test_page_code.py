"""The code a notebook teaches is defined on its page, and the package's copy is identical.

A code cell whose first line is a marker such as `# d2lmini.batching.sequential_batches`
defines that function (or class) on the page; the rest of the cell must equal
`inspect.getsource` of the package's object, trailing whitespace aside. So what a student
reads is what later notebooks, the lab and the tests run (CONTRIBUTING.md, "Code on the page").
"""

import ast
import importlib
import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
MARKER = re.compile(r"# (d2lmini(?:\.\w+)+)\s*$")

# What each notebook must show: the algorithms it teaches (issue #17; 05's plain loop, issue #27).
REQUIRED = {
    "03_one_hot.ipynb": {"d2lmini.batching.random_batches", "d2lmini.batching.sequential_batches",
                         "d2lmini.text.Vocab"},
    "04_rnn_scratch.ipynb": {
        "d2lmini.rnn.init_rnn_params", "d2lmini.rnn.init_rnn_state", "d2lmini.rnn.rnn_step",
        "d2lmini.rnn.rnn_forward_one_hot", "d2lmini.rnn.rnn_forward", "d2lmini.rnn.RNNScratch",
        "d2lmini.train.train_step", "d2lmini.train.evaluate_perplexity",
        "d2lmini.rnn.next_token", "d2lmini.rnn.predict",  # sampling and the generation loop (issue #27)
    },
    "05_bptt.ipynb": {
        "d2lmini.bptt.plain_forward", "d2lmini.bptt.step_backward", "d2lmini.bptt.plain_backward",
        "d2lmini.gradcheck.loss_value", "d2lmini.gradcheck.finite_difference_gradients",
    },
    "05b_bptt_fast.ipynb": {  # the fast paths, shown in the optional notebook (issue #36)
        "d2lmini.bptt.hidden_gradients", "d2lmini.bptt.weight_gradients", "d2lmini.bptt.bptt_backward",
        "d2lmini.bptt.hidden_states", "d2lmini.bptt.HandWrittenBPTT",
    },
    "06_gradient_clipping.ipynb": {"d2lmini.clipping.clip_gradients"},
    "07_perplexity.ipynb": {
        "d2lmini.metrics.perplexity_from_logits", "d2lmini.ngram.gram_codes", "d2lmini.ngram.lookup",
        "d2lmini.ngram.count_tables", "d2lmini.ngram.interpolated_probs",
    },
}


def normalise(source: str) -> str:
    """Strip trailing whitespace from every line and trailing blank lines; nothing else."""
    return "\n".join(line.rstrip() for line in source.splitlines()).rstrip("\n")


def resolve(dotted: str):
    """Return the object a marker names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def page_definitions(path: Path) -> dict[str, str]:
    """Return {marker: the cell's source after the marker line} for every marked code cell."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        first, _, rest = "".join(cell["source"]).partition("\n")
        match = MARKER.fullmatch(first)
        if match:
            assert match.group(1) not in found, f"{path.name}: {match.group(1)} is defined twice"
            found[match.group(1)] = rest
    return found


def mismatches(path: Path) -> list[str]:
    """Return one message per marked cell whose code differs from the package's source."""
    problems = []
    for dotted, shown in page_definitions(path).items():
        running = inspect.getsource(resolve(dotted))
        if normalise(shown) != normalise(running):
            problems.append(f"{path.name}: the cell marked {dotted} differs from the package's source")
    return problems


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9]*.ipynb")), ids=lambda p: p.name)
def test_page_code_is_the_package_code(path):
    assert mismatches(path) == []


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_notebook_shows_what_it_teaches(name):
    shown = set(page_definitions(NOTEBOOKS / name))
    assert REQUIRED[name] <= shown, f"{name} does not define {sorted(REQUIRED[name] - shown)}"


def imported_from_package(path: Path) -> set[str]:
    """Return the names a notebook imports from d2lmini (`from d2lmini... import name`)."""
    names = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        try:
            tree = ast.parse("".join(cell["source"])) if cell["cell_type"] == "code" else None
        except SyntaxError:  # the install cell's %pip line
            continue
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("d2lmini"):
                names |= {alias.asname or alias.name for alias in node.names}
    return names


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9]*.ipynb")), ids=lambda p: p.name)
def test_what_the_page_defines_is_not_also_imported(path):
    """Later cells run the page's definition, not a package copy imported under the same name."""
    defined = {dotted.rsplit(".", 1)[1] for dotted in page_definitions(path)}
    assert not defined & imported_from_package(path)


def test_no_second_mechanism():
    for path in NOTEBOOKS.glob("[0-9]*.ipynb"):
        assert "getsource" not in path.read_text(encoding="utf-8"), path.name


def plant(path: Path, tmp_path: Path, change) -> Path:
    """Copy notebook `path` into tmp_path with `change` applied to its first marked cell."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "code"
                and MARKER.fullmatch("".join(c["source"]).partition("\n")[0]))
    cell["source"] = change("".join(cell["source"]))
    copy = tmp_path / path.name
    copy.write_text(json.dumps(notebook), encoding="utf-8")
    return copy


@pytest.mark.parametrize("name", sorted(REQUIRED))
@pytest.mark.parametrize("change", [
    lambda s: s.replace("def ", "def  ", 1),            # one space more
    lambda s: s.rstrip("\n") + "\n    return None\n",  # one line more
    lambda s: s.replace("\n", "\n\n", 2),               # a blank line inside
], ids=["space", "line", "blank"])
def test_a_planted_difference_is_found(name, change, tmp_path):
    path = NOTEBOOKS / name
    assert mismatches(path) == []
    assert len(mismatches(plant(path, tmp_path, change))) == 1


def test_trailing_whitespace_is_all_that_is_ignored(tmp_path):
    path = NOTEBOOKS / "03_one_hot.ipynb"
    assert mismatches(plant(path, tmp_path, lambda s: s.replace("\n", "   \n") + "\n\n")) == []


def test_an_import_of_a_page_definition_is_found(tmp_path):
    path = NOTEBOOKS / "03_one_hot.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                              "source": "from d2lmini.batching import validate_fits, random_batches\n"})
    copy = tmp_path / path.name
    copy.write_text(json.dumps(notebook), encoding="utf-8")
    assert "random_batches" in imported_from_package(copy)
    with pytest.raises(AssertionError):
        test_what_the_page_defines_is_not_also_imported(copy)


def test_the_sync_tool_repairs_a_planted_difference(tmp_path):
    spec = importlib.util.spec_from_file_location("page_code", NOTEBOOKS.parent / "tools" / "page_code.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    path = NOTEBOOKS / "06_gradient_clipping.ipynb"
    assert tool.sync(path, write=False) == []
    copy = plant(path, tmp_path, lambda s: s.replace("def ", "def  ", 1))
    assert tool.sync(copy, write=True) == ["d2lmini.clipping.clip_gradients"]
    assert mismatches(copy) == [] and tool.sync(copy, write=False) == []
