"""What the grader writes for the instructor: CSV a spreadsheet cannot run, folders no run erases, a
rubric read with a clear message for every fault (issue #43, items 5, 7 and 9).

The class is graded with the stand-in grader of test_grading_cli (no kernel), so each test takes milliseconds.
"""

import csv
import io
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_grading_cli import EXERCISES, IDS, ROOT, config, grade, gradebook, write

from d2lmini.grading.__main__ import main
from d2lmini.grading.assignment.config import DEFAULT_CONFIG, load_config, validate_config
from d2lmini.grading.base.files import csv_text, student_key
from d2lmini.grading.gradebook.export import canvas_text, moodle_text, read_rubric, rubric_template
from d2lmini.grading.gradebook.gradebook import StudentResult
from d2lmini.grading.gradebook.outfolder import MARKER
from d2lmini.grading.gradebook.report import gradebook_text
from d2lmini.grading.judging.marks import Mark
from d2lmini.grading.judging.similarity import Pair
from d2lmini.grading.judging.similarity import csv_text as similarity_csv

FORMULA = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
ATTACKS = ["=cmd|' -C calc'!A0", "+SUM(1,2)", "@cmd", "-2+3", "\t=1+1", " =1", "a;=1+1", 'a"b,=c', "x\n-1+1"]
NUMBER = r"-?\d+(\.\d+)?(e[-+]\d+)?"


def formula_cells(text: str) -> list[str]:
    """Every cell of the CSV `text` a spreadsheet could read as a formula, whatever separator it splits at.

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
    plain = {n for n in names if not re.search(r"[=+@\s;|\uff1d\uff0b\uff0d\uff20-]", n)}
    assert len(written) == len(names) and plain <= written


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



# -- 9. the rubric CSV: a result or a clear message ------------------------------------------------------


def graded_class_with_rubric(tmp_path) -> tuple[Path, Path]:
    subs = write(tmp_path / "subs", {"ada.ipynb": IDS[0], "bob.ipynb": IDS[1]})
    path = tmp_path / "points.toml"
    points = "".join(f'"{i}" = 1\n' for i in IDS)
    path.write_text(f'[grading]\nseed = 7\n[points]\n{points}[rubric]\n"08:explore" = 3\n', "utf-8")
    grade(subs, tmp_path / "out", cfg=load_config(path, EXERCISES))
    return tmp_path / "out", path


@pytest.mark.parametrize("content, words", [
    (b"student,08:explore\nada,1,2\n", "rubric.csv, line 2: 3 cells, but the header has 2 columns"),
    (b"student,08:explore\nada,1\nbob,2\nada,3\n", "rubric.csv, line 4: a second row for 'ada' (the"),
    (b"student,08:explore,08:explore\nada,1,2\n", "rubric.csv, line 1: the column(s) '08:explore' appear"),
    (b"", "rubric.csv: empty"),
    (b"\n\n", "rubric.csv: empty"),
    (b"student,08:explore\nada,1\nbob,three\n", "rubric.csv, line 3: 08:explore of bob must be a number"),
    (b"student,08:explore\nada,nan\n", "rubric.csv, line 2: 08:explore of ada must be a number"),
    (b"student,08:explore\nada,1\nbob,\xe9\n", "rubric.csv, line 3: not UTF-8 text"),
    (b"student,08:explore\nada,1\x00\n", "rubric.csv, line 2: 08:explore of ada must be a number"),
    (b'student,08:explore\nada,1\nbob,"' + b"9" * 200_000 + b'"\n', "rubric.csv, line 3: not CSV"),
])
def test_a_bad_rubric_is_one_line_naming_the_file_the_line_and_the_problem(tmp_path, capsys, content, words):
    out, config_path = graded_class_with_rubric(tmp_path)
    before = (out / "gradebook.csv").read_bytes()
    rubric = tmp_path / "rubric.csv"
    rubric.write_bytes(content)
    assert main(["--out", str(out), "--config", str(config_path), "--rubric", str(rubric)]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert (out / "gradebook.csv").read_bytes() == before


def test_a_short_row_is_not_yet_graded_and_a_good_rubric_is_merged(tmp_path):
    out, config_path = graded_class_with_rubric(tmp_path)
    rubric = tmp_path / "rubric.csv"
    rubric.write_bytes("\ufeffstudent,08:explore\r\nada,2.5\r\nbob\r\n".encode())
    assert main(["--out", str(out), "--config", str(config_path), "--rubric", str(rubric)]) == 0
    assert gradebook(out)["ada"]["08:explore"] == "2.5" and gradebook(out)["bob"]["08:explore"] == ""


RUBRIC_CONFIG = validate_config({"points": {IDS[0]: 1}, "rubric": {"08:explore": 3, "x": 1}}, EXERCISES, "t")


@settings(max_examples=400, deadline=None)
@given(content=st.one_of(
    st.binary(max_size=200),
    st.lists(st.lists(st.sampled_from(["student", "08:explore", "x", "ada", "bob", "1", "2.5", "-1", "", '"',
                                       "\n", ",", "é", "\x00", "nan", "4"]), max_size=5), max_size=5).map(
        lambda rows: "\n".join(",".join(row) for row in rows).encode()),
))
def test_any_rubric_file_gives_points_or_a_message_naming_it(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("rubric") / "rubric.csv"
    path.write_bytes(content)
    try:
        given_points = read_rubric(path, RUBRIC_CONFIG, {"ada", "bob"})
    except ValueError as error:
        assert str(error).startswith(str(path)) and "\n" not in str(error).replace(repr("\n"), "")
    else:
        assert set(given_points) <= {"ada", "bob"}
        assert all(0 <= v <= RUBRIC_CONFIG.rubric[i] for p in given_points.values() for i, v in p.items())


# -- 7. no run erases another, no two students share a record -------------------------------------------


def test_grading_another_assignment_into_a_class_folder_is_refused_and_keeps_its_gradebook(tmp_path, capsys):
    subs = write(tmp_path / "subs", {"ada.ipynb": " ".join(IDS), "bob.ipynb": IDS[0]})
    hw1, hw2 = (tmp_path / f"hw{i}.toml" for i in (1, 2))
    hw1.write_text(f'[grading]\nseed = 3\n[points]\n"{IDS[0]}" = 1\n"{IDS[1]}" = 1\n', "utf-8")
    hw2.write_text('[grading]\nseed = 3\n[points]\n"01:ngram_order" = 1\n', "utf-8")
    out = tmp_path / "out"
    grade(subs, out, cfg=load_config(hw1, EXERCISES))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(ValueError, match="holds the gradebook of another assignment"):
        grade(subs, out, cfg=load_config(hw2, EXERCISES))
    assert main([str(subs), "--out", str(out), "--config", str(hw2)]) == 2
    assert "another assignment (exercises 02:fused_step, 02:stacked_weight_shape)" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    grade(subs, out, cfg=load_config(hw1, EXERCISES), only=[IDS[1]])  # the same assignment: graded again
    assert gradebook(out)["ada"]["total"] == "2"


def test_an_existing_folder_the_grader_did_not_make_is_never_written_into(tmp_path, capsys):
    subs = write(tmp_path / "subs", {"ada.ipynb": IDS[0]})
    mine = write(tmp_path / "mine", {"gradebook.csv": "my own sheet", "results.json": "{}", "notes.md": "x"})
    assert main([str(subs), "--out", str(mine)]) == 2
    assert "is a folder the grader did not make" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["gradebook.csv", "notes.md", "results.json"]
    assert (mine / "gradebook.csv").read_text("utf-8") == "my own sheet"
    empty = tmp_path / "empty"
    empty.mkdir()
    grade(subs, empty)  # an empty folder is the grader's from now on
    assert gradebook(empty)["ada"]["total"] == "1" and (empty / MARKER).is_file()
    (empty / MARKER).unlink()  # a folder graded before the marker existed: only the grader's files
    grade(subs, empty)
    assert (empty / MARKER).is_file()


def test_a_student_and_a_folder_named_by_their_file_key_are_two_records(tmp_path):
    key = student_key("José")
    subs = write(tmp_path / "subs", {"José/a.ipynb": IDS[0], f"{key}/a.ipynb": " ".join(IDS)})
    out = tmp_path / "out"
    results = {r.student: r.total for r in grade(subs, out)}
    assert results == {"José": 1, key: 2}
    assert len(list((out / "records").glob("*.json"))) == 2
    assert {k: v["total"] for k, v in gradebook(out).items()} == {"José": "1", key: "2"}


def test_two_students_whose_records_would_be_one_file_are_refused_by_name(tmp_path):
    subs = write(tmp_path / "subs", {"Ada.ipynb": IDS[0], "ada.ipynb": IDS[0], "bob.ipynb": IDS[0]})
    with pytest.raises(ValueError, match="'Ada' and 'ada' would share one record"):
        grade(subs, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--write-config", "--manifest-out"])
def test_force_never_writes_into_the_installed_package(tmp_path, capsys, option):
    target = DEFAULT_CONFIG if option == "--write-config" else DEFAULT_CONFIG.with_name("exercises.json")
    before = target.read_bytes()
    extra = ["--discover", str(ROOT / "notebooks")] if option == "--manifest-out" else []
    assert main([*extra, option, str(target), "--force"]) == 2
    err = capsys.readouterr().err
    assert "lies inside the installed d2lmini package" in err and f"{option} {target.name}" in err
    assert target.read_bytes() == before


# -- 7. tools/build_site.py --out deletes only what it made ---------------------------------------------


def test_build_site_never_deletes_a_folder_it_did_not_make(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "tools"))
    import build_site  # a tool script, imported from tools/

    def refused(argv):  # a usage error (exit 2), checked before Sphinx is looked for (#43 item 9)
        with pytest.raises(SystemExit) as stopped:
            build_site.main(argv)
        return stopped.value.code == 2

    out = write(tmp_path / "mine", {"src/thesis.tex": "mine", "html/index.html": "mine", "notes.md": "x"})
    assert refused(["--out", str(out)])
    assert "holds src/, html/, which this tool did not make" in capsys.readouterr().err
    assert refused(["--out", str(out), "--update-catalogs"])
    assert {p.relative_to(out).as_posix() for p in out.rglob("*")} == {
        "src", "src/thesis.tex", "html", "html/index.html", "notes.md"}
    (tmp_path / "file").write_text("x", "utf-8")
    assert refused(["--out", str(tmp_path / "file")])
    fresh = write(tmp_path / "fresh", {"notes.md": "x"})
    build_site.claim(fresh)  # no folder of its own there yet: the tool's from now on
    write(fresh, {"src/en/conf.py": "", "html/index.html": ""})  # what a build leaves
    build_site.claim(fresh)  # its marker: its folders are its own to replace
    assert (fresh / build_site.MARKER).is_file() and (fresh / "notes.md").exists()
