"""The course map's study times come from tools/study_time.py; the core path fits a two-week unit (#36)."""

import json
import sys
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import study_time  # noqa: E402 - a tool script, imported from tools/

CORE_PATH_LIMIT_HOURS = 15.5  # issue #36: a core path of about 15 hours


def test_the_map_and_the_readme_state_the_computed_times():
    entries = study_time.course_times()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert study_time.stale_statements(entries, study_time.map_text(), readme) == []


def test_the_core_path_fits_the_unit():
    core, optional = study_time.totals(study_time.course_times())
    assert core / 60 <= CORE_PATH_LIMIT_HOURS and optional > 0


def test_a_changed_time_is_caught():
    entries = study_time.course_times()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    doctored = study_time.map_text().replace(study_time.map_time(entries[0]), "9.9 h", 1)
    problems = study_time.stale_statements(entries, doctored, readme)
    assert any(entries[0].name in problem for problem in problems)


def _notebook(tmp_path, cells) -> Path:
    path = tmp_path / "09_probe.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = cells
    nbformat.write(notebook, path)
    return path


def test_the_formula_counts_core_and_optional(tmp_path):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    path = _notebook(tmp_path, [
        md("# 09 · Probe\n\n" + "word " * 196),                       # 200 words: 1 minute
        code("x = 1"),                                                # a code cell
        md("## 1. Extra (optional)\n\n" + "word " * 196),             # 200 optional words
        code("panel = make_probe_panel(x)"),                          # an optional panel
        md("### 1b. still inside the optional section"),
        code("y = 2"),
        md("## Exercises\n\n**Exercise 1.** A question.\n\n**Exercise 2 (explore, no self-check).** Try."),
        code("answer = None  # your answer: a number"),
        code("def f(x):\n    # your code here\n    return None"),
    ])
    entry = study_time.notebook_time(path)
    core, optional = entry.core, entry.optional
    assert (core.code_cells, core.questions, core.coding, core.panels) == (1, 1, 1, 0)
    assert (optional.code_cells, optional.panels, optional.explore) == (2, 1, 1)
    assert optional.words == 200 + 7 and core.minutes() == pytest.approx(
        core.words / study_time.READING_WPM + study_time.CODE_CELL_MINUTES + study_time.QUESTION_MINUTES
        + study_time.CODING_MINUTES)


def test_an_optional_notebook_is_optional_throughout(tmp_path):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    path = _notebook(tmp_path, [md("# 09b · Extra (optional)\n\nText."), md("## 1. Part"), code("x = 1")])
    entry = study_time.notebook_time(path)
    assert entry.core.minutes() == 0 and entry.optional.code_cells == 1
    assert study_time.map_time(entry).startswith("optional")


def _course_copy(tmp_path) -> Path:
    """A copy of the course's notebooks and README in `tmp_path`, for doctoring."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb"))[:3]:
        (folder / path.name).write_bytes(path.read_bytes())
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def _run(capsys, *arguments) -> tuple[int, str]:
    status = study_time.main([str(argument) for argument in arguments])
    return status, capsys.readouterr().err


@pytest.mark.parametrize("damage, says", [
    (b"{not json", "not a notebook (not JSON"),
    (b'{"cells": 3}', "not a valid notebook"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "poem"}]}',
     "not a valid notebook"),
    (b"\xff\xfe\x00 binary", "not a notebook"),
    (b"[1, 2]", "not a notebook (its JSON is a list"),
    (b'{"nbformat": 5, "nbformat_minor": 0, "metadata": {}, "cells": []}',
     "not a valid notebook (Unsupported"),
    (b"[" * 100_000, "nested too deeply"),  # was a RecursionError traceback
    (b'{"nbformat": 1, "cells": [{"cell_type": "poem"}]}', "not a valid notebook"),  # was UnboundLocalError
])
def test_a_broken_notebook_is_named_with_its_problem_not_a_traceback(tmp_path, capsys, damage, says):
    folder = _course_copy(tmp_path)
    broken = sorted(folder.glob("0[1-9]*.ipynb"))[0]
    broken.write_bytes(damage)
    status, err = _run(capsys, "--notebooks", folder, "--readme", tmp_path / "README.md")
    assert status == 2 and err.startswith(f"study_time: {broken}") and says in err
    assert "Traceback" not in err


def test_a_missing_map_readme_or_folder_is_named(tmp_path, capsys):
    folder = _course_copy(tmp_path)
    status, err = _run(capsys, "--check", "--notebooks", folder, "--readme", tmp_path / "nothing.md")
    assert status == 2 and "nothing.md: no such file" in err
    (folder / "00_start_here.ipynb").unlink()
    status, err = _run(capsys, "--check", "--notebooks", folder, "--readme", tmp_path / "README.md")
    assert status == 2 and "00_start_here.ipynb: no such notebook" in err
    status, err = _run(capsys, "--notebooks", tmp_path / "gone")
    assert status == 2 and "no such folder" in err
    status, err = _run(capsys, "--notebooks", tmp_path)
    assert status == 2 and "no course notebooks" in err


def test_a_readme_that_cannot_be_written_is_named(tmp_path, capsys):
    folder = _course_copy(tmp_path)
    unwritable = tmp_path / "README-folder.md"
    unwritable.mkdir()  # a folder: no one, root included, can write it as a file
    status, err = _run(capsys, "--write", "--notebooks", folder, "--readme", unwritable)
    assert status == 2 and "README-folder.md" in err and "Traceback" not in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_in_a_notebook_give_a_table_or_a_clear_message(tmp_path, capsys, data):
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    (folder / "01_probe.ipynb").write_bytes(data)
    status, err = _run(capsys, "--notebooks", folder)
    assert status == 0 or (status == 2 and err.startswith("study_time: ") and err.count("\n") == 1)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3),
                    max_leaves=10)
CELL = st.fixed_dictionaries(
    {"cell_type": st.sampled_from(["markdown", "code", "raw", "poem"]) | JSON,
     "source": st.text(max_size=30) | st.lists(st.text(max_size=10), max_size=3) | JSON,
     "metadata": st.just({}) | JSON},
    optional={"id": st.text(max_size=8) | JSON, "outputs": st.just([]) | JSON,
              "execution_count": st.none() | JSON, "attachments": JSON})
NOTEBOOKISH = st.fixed_dictionaries(
    {"nbformat": st.sampled_from([1, 2, 3, 4, 5]) | JSON, "nbformat_minor": st.integers(0, 6) | JSON,
     "metadata": st.just({}) | JSON, "cells": st.lists(CELL, max_size=3) | JSON},
    optional={"worksheets": st.lists(st.fixed_dictionaries({"cells": st.lists(CELL, max_size=2) | JSON}),
                                     max_size=2) | JSON})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["01_probe.ipynb", "00_start_here.ipynb"]), NOTEBOOKISH | JSON,
       st.sampled_from([[], ["--check"], ["--write"]]))
def test_any_json_as_a_notebook_or_the_map_gives_a_result_or_one_clear_line(tmp_path, capsys, name, value,
                                                                            options):
    """Every option on any JSON (a near-notebook or not) in a notebook or the course map: the table (and
    --check's verdict) or one line naming the file, exit 2; never a traceback (#43 item 9)."""
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    for path in folder.iterdir():
        path.unlink()
    (folder / "01_probe.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()), encoding="utf-8")
    (folder / "00_start_here.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()), encoding="utf-8")
    (folder / name).write_text(json.dumps(value), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("core path 0.0 h, optional parts 0.0 h more\n", encoding="utf-8")
    status, err = _run(capsys, *options, "--notebooks", folder, "--readme", readme)
    if status == 2:
        assert err.startswith(f"study_time: {folder / name}: ") and err.count("\n") == 1
    else:
        assert status in ((0, 1) if options == ["--check"] else (0,)), err
        assert "Traceback" not in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode),
       st.sampled_from(["--check", "--write"]))
def test_any_bytes_in_the_readme_give_a_result_or_one_clear_line(tmp_path, capsys, data, option):
    folder = _course_copy(tmp_path) if not (tmp_path / "notebooks").exists() else tmp_path / "notebooks"
    readme = tmp_path / "README-probe.md"
    readme.write_bytes(data)
    status, err = _run(capsys, option, "--notebooks", folder, "--readme", readme)
    if status == 2:
        assert err.startswith(f"study_time: {readme}: ") and err.count("\n") == 1
    else:
        assert status in (0, 1) and "Traceback" not in err
