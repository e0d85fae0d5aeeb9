"""The grading command's care for the instructor's files and its config, without a kernel.

A stand-in grader (`fake_grade`, a mark per exercise from the words in the student's file)
takes the place of the kernels, so each fault in the class run is tested in milliseconds.
"""

import csv
import json
import os
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmini.grading.__main__ import main
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import DEFAULT_CONFIG, config_text, load_config, validate_config
from d2lmini.grading.assignment.settings import JOBS, SETTINGS, Limits, literal, markdown_table
from d2lmini.grading.base.files import student_key
from d2lmini.grading.gradebook.export import canvas_text, moodle_text
from d2lmini.grading.gradebook.gradebook import GradingError, StudentResult, grade_class, grade_student
from d2lmini.grading.gradebook.roster import Student, folder_files
from d2lmini.grading.judging.marks import Mark
from d2lmini.grading.judging.similarity import summary

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = manifest.load()
IDS = ["02:stacked_weight_shape", "02:fused_step"]


def fake_grade(name, files, exercises, config, work):
    """Full points for each exercise id written in the student's files; 'crash' raises."""
    text = " ".join(p.read_text("utf-8", "replace") for p in files)
    if "crash" in text:
        raise RuntimeError("the grader broke on this file")
    assert work.is_dir()
    return StudentResult(
        name,
        [
            Mark(i, p if i in text else 0, p, "Correct!" if i in text else "Not yet.")
            for i, p in config.points.items()
        ],
    )


def config(**grading):
    return validate_config({"grading": grading, "points": {i: 1 for i in IDS}}, EXERCISES, "test")


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, "utf-8")
    return folder


def gradebook(out: Path) -> dict[str, dict]:
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def grade(submissions, out, calls=None, **keywords):
    def counted(*arguments):
        if calls is not None:
            calls.append(arguments[0])
        return fake_grade(*arguments)

    return grade_class(
        submissions,
        out,
        EXERCISES,
        keywords.pop("cfg", config()),
        progress=lambda _: None,
        grade=counted,
        **keywords,
    )


# -- one table of settings ------------------------------------------------------------------------


def test_the_shipped_config_and_the_docs_table_are_generated_from_the_settings():
    assert DEFAULT_CONFIG.read_text("utf-8") == config_text(EXERCISES), "python tools/grading_files.py"
    assert markdown_table() in (ROOT / "docs" / "instructors.md").read_text("utf-8")
    limits = Limits()
    for setting in SETTINGS:
        assert f"\n{setting.name} = " in DEFAULT_CONFIG.read_text("utf-8")
        if setting.limit:
            assert getattr(limits, setting.name) == setting.default
    help_text = subprocess.run(
        [sys.executable, "-m", "d2lmini.grading", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flat = " ".join(help_text.split())
    for s in SETTINGS:
        assert f"{s.name} (default {literal(s.default)}, {s.range_text()}): {s.help}" in flat


@pytest.mark.parametrize(
    "toml, words",
    [
        ("[grading]\nmemory_mb = inf\n[points]\n'01:ngram_order' = 1", "memory_mb must be a whole number"),
        ("[grading]\nnotebook_seconds = nan\n[points]\n'01:ngram_order' = 1", "notebook_seconds must be"),
        ("points = [1, 2]", r"\[points\] must be one table"),
        ("[points]\n'01:ngram_order' = inf", "the points of 01:ngram_order must be a number from 0"),
        ("[[grading]]\nseed = 3\n[points]\n'01:ngram_order' = 1", r"\[grading\] must be one table"),
        ("[grading]\nseed = true\n[points]\n'01:ngram_order' = 1", "seed must be a whole number"),
        ("[grading]\ncell_seconds = '9'\n[points]\n'01:ngram_order' = 1", "cell_seconds must be a number"),
        ("[grading]\npartial_credit = 1\n[points]\n'01:ngram_order' = 1", "partial_credit must be true or"),
        ("[grading]\npartial_credit = 'no'\n[points]\n'01:ngram_order' = 1", "partial_credit must be true"),
        ("[points]\n'01:ngram_order' = 1\n[late]\nbob = -1", "the days late of bob"),
        ("[points]\n'01:ngram_order' = 1\n[rubric]\n'01:ngram_order' = 2", "are graded exercises"),
        ("[points]\n'01:ngram_order' = 1\n[extra]\n", "unknown table"),
    ],
)
def test_a_wrong_config_gets_one_line_naming_the_setting(tmp_path, toml, words):
    path = tmp_path / "points.toml"
    path.write_text(toml, "utf-8")
    with pytest.raises(ValueError, match=words):
        load_config(path, EXERCISES)


def test_a_config_that_is_not_a_small_file_is_refused_without_reading_it(tmp_path):
    for path in (Path("/dev/zero"), tmp_path):
        with pytest.raises(ValueError, match="must be a file"):
            load_config(path, EXERCISES)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 2_000_000)
    with pytest.raises(ValueError, match="is not a config"):
        load_config(big, EXERCISES)


TOML_VALUES = st.recursive(
    st.none().map(lambda _: "x")
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.datetimes(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    table=st.sampled_from(["grading", "points", "rubric", "late", "top"]),
    key=st.sampled_from([s.name for s in SETTINGS] + ["01:ngram_order", "bob", "x"]),
    value=TOML_VALUES,
)
def test_any_toml_value_in_any_place_works_or_gets_a_clear_message(table, key, value):
    data = {"points": {"01:ngram_order": 1}}
    if table == "top":
        data[key] = value
    else:
        data.setdefault(table, {})[key] = value
    try:
        result = validate_config(data, EXERCISES, "points.toml")
    except ValueError as error:
        assert str(error).startswith("points.toml: ") and "\n" not in str(error)
        return
    for setting in SETTINGS:  # what is accepted is within its declared range
        got = getattr(result.limits, setting.name, None) if setting.limit else None
        assert got is None or setting.low <= got <= setting.high


def test_jobs_out_of_range_is_one_message(capsys):
    for jobs in (str(10**20), "0"):
        with pytest.raises(SystemExit) as stop:
            main(["subs", "--out", "o", "--jobs", jobs])
        assert stop.value.code == 2
        assert "jobs must be a whole number from 1 to" in capsys.readouterr().err
    assert JOBS.check(4, "--jobs") == 4


# -- the instructor's own files ---------------------------------------------------------------------


def package_files() -> dict[str, bytes]:
    folder = ROOT / "d2lmini" / "grading"
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_write_config_never_replaces_a_file_unless_forced(tmp_path, capsys):
    path = tmp_path / "points.toml"
    path.write_text("# my edited points\n", "utf-8")
    assert main(["--write-config", str(path)]) == 2
    assert "exists" in capsys.readouterr().err and path.read_text("utf-8") == "# my edited points\n"
    assert main(["--write-config", str(path), "--force"]) == 0
    written = load_config(path, EXERCISES)
    assert set(written.points) == {e.id for e in EXERCISES}
    assert "# my edited points" not in path.read_text("utf-8")


def test_discover_writes_only_where_told_and_never_an_empty_list(tmp_path, capsys):
    before = package_files()
    empty = tmp_path / "empty"
    empty.mkdir()
    target = tmp_path / "exercises.json"
    assert main(["--discover", str(empty), "--manifest-out", str(target)]) == 2
    assert "nothing was written" in capsys.readouterr().err and not target.exists()
    with pytest.raises(SystemExit):
        main(["--discover", str(ROOT / "notebooks")])
    assert "--manifest-out" in capsys.readouterr().err
    assert main(["--discover", str(ROOT / "notebooks"), "--manifest-out", str(target)]) == 0
    assert manifest.load(target) == EXERCISES
    assert main(["--discover", str(ROOT / "notebooks"), "--manifest-out", str(target)]) == 2
    assert package_files() == before


def test_folders_that_overlap_or_are_empty_are_refused_before_anything_is_written(tmp_path):
    subs = write(tmp_path / "subs", {"ada/a.ipynb": IDS[0]})
    cases = [
        (subs, subs / "graded", "lies inside SUBMISSIONS"),
        (subs, subs, "lies inside SUBMISSIONS"),
        (tmp_path / "typo", tmp_path / "out", "is not a folder"),
    ]
    for submissions, out, words in cases:
        with pytest.raises(GradingError, match=words):
            grade(submissions, out)
        assert not (subs / "graded").exists() and not (tmp_path / "out").exists()
    out = tmp_path / "out"
    grade(subs, out)
    before = (out / "gradebook.csv").read_bytes()
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty, {".DS_Store": ""})
    with pytest.raises(GradingError, match=r"holds no student.*\.DS_Store.*Nothing was written"):
        grade(empty, out)
    assert (out / "gradebook.csv").read_bytes() == before
    (out / "records" / "inbox").mkdir()
    with pytest.raises(GradingError, match="inside the grader's output"):
        grade(out / "records" / "inbox", out)


def test_the_command_says_what_is_wrong_with_the_folders_in_one_line(tmp_path, capsys):
    subs = write(tmp_path / "subs", {"ada/a.ipynb": IDS[0]})
    assert main([str(subs), "--out", str(subs / "graded")]) == 2
    err = capsys.readouterr().err
    assert "lies inside SUBMISSIONS" in err and "Traceback" not in err and not (subs / "graded").exists()
    assert main([str(tmp_path / "sbus"), "--out", str(tmp_path / "out")]) == 2
    assert "is not a folder" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main([str(subs), "--out", str(tmp_path / "out"), "--only", "01:ngram_order,99:nothing"]) == 2
    assert "--only 99:nothing: not an exercise the config grades" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_only_the_graders_own_scratch_folder_is_removed(tmp_path):
    out = tmp_path / "out"
    grade(write(tmp_path / "first", {"ada/a.ipynb": ""}), out)  # the grader's own folder, then yours in it
    notes = write(out / "work", {"notes.txt": "my notes"})
    subs = write(out / "work" / "subs", {"ada/a.ipynb": IDS[0]})  # the old clean-up deleted these
    grade(subs, out)
    assert (notes / "notes.txt").read_text("utf-8") == "my notes" and (subs / "ada" / "a.ipynb").exists()
    assert not list(out.glob(".work-*"))
    assert gradebook(out)["ada"]["total"] == "1"


def test_a_read_only_gradebook_stops_the_run_before_any_grading(tmp_path):
    subs, out, calls = write(tmp_path / "subs", {"ada.ipynb": IDS[0]}), tmp_path / "out", []
    grade(subs, out)
    (out / "gradebook.csv").chmod(stat.S_IRUSR)
    with pytest.raises(GradingError, match="read-only: .*gradebook.csv"):
        grade(write(subs, {"bob.ipynb": IDS[1]}), out, calls)
    assert calls == [] and "bob" not in gradebook(out)
    (out / "gradebook.csv").chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_every_roster_entry_is_graded_or_listed_and_similar_names_keep_their_own_files(tmp_path):
    long = "x" * 250
    subs = write(
        tmp_path / "subs",
        {
            "a b/n.ipynb": IDS[0],
            "a_b/n.ipynb": IDS[1],
            "José.ipynb": IDS[0],
            "Jos_.ipynb": "",
            "bob/n.ipynb": IDS[0],
            "bob.ipynb": IDS[1],
            f"{long}/n.ipynb": IDS[0],
            ".hidden/n.ipynb": IDS[0],
        },
    )
    (subs / "link").symlink_to(subs / "a b")
    os.mkfifo(subs / "pipe")
    out = tmp_path / "out"
    grade(subs, out)
    rows = gradebook(out)
    assert set(rows) == {"a b", "a_b", "José", "Jos_", "bob", long}
    assert [rows[n]["total"] for n in ("a b", "a_b", "José", "Jos_", "bob", long)] == [
        "1",
        "1",
        "1",
        "0",
        "2",
        "1",
    ]
    feedback = {p.name for p in (out / "feedback").iterdir()}
    assert len(feedback) == 6 and all(f"{student_key(n)}.md" in feedback for n in rows)
    assert "both belong to bob" in (out / "feedback" / "bob.md").read_text("utf-8")
    vanished = Student("eve")  # a folder that cannot be read (root reads all, so: one that is gone)
    folder_files(tmp_path / "eve", vanished)
    assert vanished.files == [] and vanished.notes[0].startswith("eve could not be read")
    with (out / "not_graded.csv").open(encoding="utf-8") as handle:
        refused = {row["entry"]: row["reason"] for row in csv.DictReader(handle)}
    assert set(refused) == {".hidden", "link", "pipe"} and "symbolic link" in refused["link"]


def test_students_graded_in_parallel_processes_get_the_same_gradebook(tmp_path):
    subs = write(tmp_path / "subs", {f"s{i}.ipynb": IDS[i % 2] for i in range(4)} | {"x.ipynb": "crash"})
    grade(subs, tmp_path / "one")
    grade_class(
        subs, tmp_path / "two", EXERCISES, config(), jobs=2, progress=lambda _: None, grade=fake_grade
    )
    assert (tmp_path / "one" / "gradebook.csv").read_text("utf-8") == (
        tmp_path / "two" / "gradebook.csv"
    ).read_text("utf-8")


def test_one_students_failure_costs_only_their_points(tmp_path):
    subs = write(tmp_path / "subs", {"ada.ipynb": IDS[0], "bob.ipynb": "crash", "cy.ipynb": IDS[1]})
    results = {r.student: r for r in grade(subs, tmp_path / "out")}
    assert (results["ada"].total, results["bob"].total, results["cy"].total) == (1, 0, 1)
    assert "Not graded: the grader failed" in results["bob"].marks[0].message


def test_a_cell_whose_source_is_a_number_is_a_note_not_a_traceback(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("ex.check_stacked_weight_shape(1)")])
    notebook.cells[0]["source"] = 5
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(notebook), "utf-8")
    result = grade_student("ada", [path], EXERCISES, config(), tmp_path / "work")
    assert result.total == 0 and "whose source is not text" in result.notes[0]


class Killed(BaseException):
    """Stands for the grader's process being killed."""


def test_a_killed_run_resumes_where_it_stopped(tmp_path):
    subs, out = write(tmp_path / "subs", {f"s{i}.ipynb": IDS[0] for i in range(4)}), tmp_path / "out"

    def dies_on_third(name, *rest):
        if name == "s2":
            raise Killed
        return fake_grade(name, *rest)

    with pytest.raises(Killed):
        grade_class(subs, out, EXERCISES, config(), progress=lambda _: None, grade=dies_on_third)
    assert sorted(p.stem for p in (out / "records").glob("*.json")) == ["s0", "s1"]
    assert not list(out.glob(".work-*"))
    calls = []
    grade(subs, out, calls)
    assert calls == ["s2", "s3"] and set(gradebook(out)) == {"s0", "s1", "s2", "s3"}
    write(subs, {"s0.ipynb": IDS[1]})  # a changed file is graded again
    calls.clear()
    grade(subs, out, calls)
    assert calls == ["s0"]
    calls.clear()  # and so is everyone, with another seed or another release's numbers
    grade(subs, out, calls, cfg=config(seed=99))
    assert len(calls) == 4
    released = [replace(e, fixed={**e.fixed, "num_hiddens": 7}) if e.id == IDS[0] else e for e in EXERCISES]
    calls.clear()
    grade_class(
        subs,
        out,
        released,
        config(seed=99),
        progress=lambda _: None,
        grade=lambda *arguments: calls.append(arguments[0]) or fake_grade(*arguments),
    )
    assert len(calls) == 4


def test_regrading_one_student_or_one_exercise_keeps_every_other_row_and_mark(tmp_path):
    subs, out = write(tmp_path / "subs", {f"s{i}.ipynb": IDS[0] for i in range(5)}), tmp_path / "out"
    grade(subs, out)
    again = write(tmp_path / "again", {"s3.ipynb": " ".join(IDS)})
    grade(again, out)
    rows = gradebook(out)
    assert len(rows) == 5 and rows["s3"]["total"] == "2" and rows["s0"]["total"] == "1"
    grade(write(tmp_path / "third", {"s3.ipynb": ""}), out, only=[IDS[1]])
    row = gradebook(out)["s3"]
    assert (row[IDS[0]], row[IDS[1]], row["total"]) == ("1", "0", "1")
    results = {r["student"]: r for r in json.loads((out / "results.json").read_text("utf-8"))}
    for name, row in gradebook(out).items():  # all three outputs come from the same records
        feedback = (out / "feedback" / f"{student_key(name)}.md").read_text("utf-8")
        assert float(row["total"]) == results[name]["total"] and f"**Total: {row['total']} /" in feedback


# -- the instructor's kit ---------------------------------------------------------------------------


LOOP = """def all_states(tokens, W_xh, W_hh, b_h):
    H = torch.zeros(tokens.shape[0], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)
    states = []
    for x_t in tokens.T:
        H = torch.tanh(W_xh[x_t] + H @ W_hh + b_h)
        states.append(H)
    return torch.stack(states)"""
FILLED = """def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    out = torch.empty(steps, batch, W_hh.shape[1])
    hidden = torch.zeros(batch, W_hh.shape[1])
    for t in range(steps):
        hidden = torch.tanh(W_xh[tokens[:, t]] + hidden @ W_hh + b_h)
        out[t] = hidden
    return out"""


def grade_with_sources(name, files, exercises, config, work):
    """`fake_grade`, keeping as the graded source of 02:fused_step the file's text, named by its words."""
    result = fake_grade(name, files, exercises, config, work)
    text = " ".join(p.read_text("utf-8") for p in files)
    sources = {"loop": LOOP, "filled": FILLED, "renamed": LOOP.replace("states", "hs").replace("H", "h")}
    result.sources = {IDS[1]: {"step_fn": sources[text]}} if text in sources else {}
    return result


def similarity_rows(out: Path) -> list[tuple[str, ...]]:
    with (out / "similarity.csv").open(encoding="utf-8") as handle:
        return [tuple(row) for row in csv.reader(handle)][1:]


def test_similarity_csv_compares_every_record_and_follows_a_regrading(tmp_path):
    def regrade(folder, files, **keywords):
        grade_class(write(tmp_path / folder, files), out, EXERCISES, config(), progress=lambda _: None,
                    grade=grade_with_sources, **keywords)
        return similarity_rows(out)

    out = tmp_path / "out"
    assert regrade("subs", {"ada.ipynb": "loop", "bob.ipynb": "filled", "cy.ipynb": "stub"}) == []
    assert summary(out / "similarity.csv").startswith("no two students' graded functions are 80% alike")
    assert regrade("again", {"bob.ipynb": "renamed"}) == [(IDS[1], "step_fn", "ada", "bob", "1.000")]
    assert len(gradebook(out)) == 3 and all(float(row["total"]) == 0 for row in gradebook(out).values())
    assert summary(out / "similarity.csv").startswith("1 pair(s) of students' graded functions at least 80%")
    assert regrade("third", {"ada.ipynb": "filled"}, only=[IDS[1]]) == []  # ada's function replaced
    assert regrade("fourth", {"cy.ipynb": "filled"}) == [(IDS[1], "step_fn", "ada", "cy", "1.000")]


def test_rubric_points_and_late_days_enter_every_output(tmp_path, capsys):
    subs = write(tmp_path / "subs", {"ada.ipynb": " ".join(IDS), "bob.ipynb": IDS[0], ".DS_Store": ""})
    path = tmp_path / "points.toml"
    path.write_text(
        "[grading]\nseed = 5\nlate_per_day = 0.1\n[points]\n"
        + "".join(f'"{i}" = 1\n' for i in IDS)
        + '[rubric]\n"08:explore" = 3\n[late]\nbob = 2\n',
        "utf-8",
    )
    out = tmp_path / "out"
    grade(subs, out, cfg=load_config(path, EXERCISES))
    rubric = tmp_path / "rubric.csv"
    assert main(["--out", str(out), "--config", str(path), "--rubric-template", str(rubric)]) == 0
    assert rubric.read_text("utf-8").splitlines() == ["student,08:explore", "ada,", "bob,"]
    rubric.write_text("student,08:explore\nada,4\n", "utf-8")
    assert main(["--out", str(out), "--config", str(path), "--rubric", str(rubric)]) == 2
    assert "08:explore of ada must be a number from 0 to 3" in capsys.readouterr().err
    rubric.write_text("student,08:explore\nada,2.5\nbob,3\n", "utf-8")
    assert main(["--out", str(out), "--config", str(path), "--rubric", str(rubric), "--moodle", "HW 2"]) == 0
    rows = gradebook(out)
    assert (rows["ada"]["total"], rows["ada"]["max"], rows["bob"]["total"]) == ("4.5", "5", "3.2")
    assert (out / "moodle.csv").read_text("utf-8").splitlines() == ["username,HW 2", "ada,4.5", "bob,3.2"]
    assert "20% of your points" in (out / "feedback" / "bob.md").read_text("utf-8")
    path.write_text(path.read_text("utf-8").replace("bob = 2", "bbo = 2"), "utf-8")
    assert main(["--out", str(out), "--config", str(path), "--moodle", "HW 2"]) == 0
    assert "[late] names bbo, who have no graded record" in capsys.readouterr().err
    assert ".DS_Store,a hidden entry" in (out / "not_graded.csv").read_text("utf-8")  # the last run's list
    assert gradebook(out)["bob"]["total"] == "4"


def test_the_canvas_export_fills_canvas_own_gradebook_export(tmp_path):
    export = tmp_path / "canvas.csv"
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (7)\n"
        '    Points Possible,,,,,10\n"Lovelace, Ada",101,s1,ada,Sec A,9\n'
        '"Hopper, Grace",102,s2,grace,Sec A,8\n',
        "utf-8",
    )
    config_ = config()
    results = [StudentResult("ada", [Mark(IDS[0], 1, 1, "")]), StudentResult("zed", [Mark(IDS[0], 0, 1, "")])]
    text, missing = canvas_text(results, config_, export, "Homework 2 (1234)")
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 2 (1234)"]
    assert rows[1][3:] == ["ada", "Sec A", "1"] and rows[2][-1] == "" and missing == ["zed"]
    assert moodle_text(results, config_, "HW").splitlines()[1] == "ada,1"
    export.write_text("name,grade\n", "utf-8")
    with pytest.raises(ValueError, match="Canvas gradebook export has the columns"):
        canvas_text(results, config_, export, "x")


SLOW_GRADE = """import os
import time
from pathlib import Path


def slow_grade(name, files, exercises, config, work):
    (Path(__file__).parent / "grading" / str(os.getpid())).touch()
    time.sleep(600)
"""
GRADER = """import sys
from pathlib import Path
from slow import slow_grade
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import load_config
from d2lmini.grading.gradebook.gradebook import grade_class
exercises = manifest.load()
grade_class(Path(sys.argv[1]), Path(sys.argv[2]), exercises, load_config(None, exercises), jobs=2,
            grade=slow_grade)
"""


def _process(pid: int) -> tuple[int, str, str] | None:
    """(parent's pid, state, command line) of process `pid` from /proc, or None once it has gone."""
    try:
        state, parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2]
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, ValueError):
        return None
    return (None if state == "Z" else (int(parent), state, command))


def _workers(grader: int) -> list[int]:
    found = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in found if (info := _process(pid)) and info[0] == grader and "spawn_main" in info[2]]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table in /proc (Linux)")
def test_a_killed_grader_leaves_no_worker_grading(tmp_path):
    subs = write(tmp_path / "subs", {f"s{i}.ipynb": IDS[0] for i in range(2)})
    (tmp_path / "slow.py").write_text(SLOW_GRADE, "utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    grader = subprocess.Popen([sys.executable, "-c", GRADER, str(subs), str(tmp_path / "out")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    grading = tmp_path / "grading"
    grading.mkdir()
    try:
        for _ in range(480):  # importing the grader in a worker takes seconds on a busy machine
            if len(list(grading.iterdir())) == 2:
                break
            time.sleep(0.25)
        workers = sorted(int(p.name) for p in grading.iterdir())
        assert len(workers) == 2 and sorted(_workers(grader.pid)) == workers, "no two workers grading"
    finally:
        grader.kill()
        grader.wait()
    for _ in range(40):
        if not any(_process(pid) for pid in workers):
            break
        time.sleep(0.25)
    left = [pid for pid in workers if _process(pid)]
    for pid in left:
        os.kill(pid, 9)
    assert left == [], "workers of a killed grader went on running"


def test_two_lines_a_process_writes_at_once_are_both_read():
    """The caller writes "started" and then its answer; one read of the pipe can take both, and the
    answer was dropped: a student's function was reported as having ended the process while it loaded."""
    import subprocess

    from d2lmini.grading.base.remote import read_line

    program = "import sys; sys.stdout.write('one\\ntwo\\n'); sys.stdout.flush()"
    writer = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE)
    try:
        writer.wait(timeout=60)  # both lines are in the pipe before the first read
        assert read_line(writer.stdout, 10) == b"one"
        assert read_line(writer.stdout, 10) == b"two"
        assert read_line(writer.stdout, 1) is None  # then the pipe is at its end
    finally:
        writer.stdout.close()
