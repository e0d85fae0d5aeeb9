"""What the grader writes for the instructor: CSV a spreadsheet cannot run, folders no run erases, a rubric read
with a clear message for every fault (issue #43, items 5, 7 and 9).

The class is graded with the stand-in grader of test_grading_cli (no kernel), so each test takes milliseconds.
"""

import csv
import io
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmini.grading.export import canvas_text, moodle_text, rubric_template
from d2lmini.grading.files import csv_text, student_key
from d2lmini.grading.gradebook import StudentResult
from d2lmini.grading.judge import Mark
from d2lmini.grading.report import gradebook_text
from d2lmini.grading.similarity import Pair
from d2lmini.grading.similarity import csv_text as similarity_csv
from test_grading_cli import EXERCISES, IDS, config, grade, gradebook, write

FORMULA = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
ATTACKS = ["=cmd|' -C calc'!A0", "+SUM(1,2)", "@cmd", "-2+3", "\t=1+1", " =1", "a;=1+1", 'a"b,=c', "x\n-1+1"]
NUMBER = r"-?\d+(\.\d+)?(e[-+]\d+)?"


def formula_cells(text: str) -> list[str]:
    """Every cell of the CSV `text` that a spreadsheet could read as a formula, whatever separator it splits at.

    A cell is a formula when, after any white space (a tab, a line break), it starts with one of `FORMULA`;
    a cell that is a plain number ("-2", "4.5") is a number, not a formula.
    """
    found = []
    for delimiter in ",;\t|":
        for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter):
            found += [cell for cell in row
                      if cell.lstrip().startswith(FORMULA) and not re.fullmatch(NUMBER, cell)]
    return found


# -- 5. CSV written for spreadsheets --------------------------------------------------------------------


def test_a_student_named_as_a_formula_is_text_in_every_csv_and_as_submitted_elsewhere(tmp_path):
    subs = write(tmp_path / "subs", {f"{name}.ipynb": IDS[0] for name in ATTACKS})
    write(subs, {"=HYPERLINK(x)/a.ipynb": IDS[0], ".=hidden": ""})
    out = tmp_path / "out"
    grade(subs, out)
    for name in ("gradebook.csv", "not_graded.csv", "similarity.csv"):
        text = (out / name).read_text("utf-8")
        assert formula_cells(text) == [], name
    rows = gradebook(out)
    assert rows["'=cmd|' -C calc'!A0"]["total"] == "1" and "'-2+3" in rows and "'=HYPERLINK(x)" in rows
    feedback = (out / "feedback" / f"{student_key(ATTACKS[0])}.md").read_text("utf-8")
    assert ATTACKS[0] in feedback.splitlines()[0] and "'" + ATTACKS[0] not in feedback


def test_numbers_stay_numbers_and_text_that_looks_like_one_is_text():
    text = csv_text([["student", "points"], ["ada", -2], ["-2", 4.5], ["bob", 0.1 + 0.2], ["", None]])
    assert text.splitlines() == ["student,points", "ada,-2", "\"'-2\",4.5", "bob,0.3", ","]
    assert formula_cells(text) == []


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4, unique=True),
       points=st.floats(0, 100), item=st.text(max_size=8))
def test_no_cell_the_grader_writes_can_start_a_formula(names, points, item):
    cfg = config()
    results = [StudentResult(n, [Mark(IDS[0], points, 100, "")], rubric={}) for n in names]
    pairs = [Pair(IDS[0], "f", names[0], names[-1], 0.9)]
    texts = [
        gradebook_text(results, EXERCISES, cfg),
        moodle_text(results, cfg, item or "HW"),
        rubric_template(results, cfg),
        similarity_csv(pairs),
        csv_text([("entry", "reason"), *((n, n) for n in names)]),
    ]
    for text in texts:
        assert formula_cells(text) == [], text
    written = {row["student"] for row in csv.DictReader(io.StringIO(texts[0], newline=""))}
    assert all(not cell.lstrip().startswith(FORMULA) for cell in written)
    assert len(written) == len(names) and {n for n in names if not re.search(r"[=+@\s;|-]", n)} <= written


@settings(max_examples=100, deadline=None)
@given(names=st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=3, unique=True))
def test_a_canvas_export_whose_cells_start_formulas_is_written_back_as_text(tmp_path_factory, names):
    export = tmp_path_factory.mktemp("canvas") / "export.csv"
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]]
    rows += [[n, f"={i}+1", "@x", n, "-Sec"] for i, n in enumerate(names)]
    with export.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    results = [StudentResult(n, [Mark(IDS[0], 1, 1, "")]) for n in names]
    text, _ = canvas_text(results, config(), export, "=HW (1)")
    assert formula_cells(text) == []

