"""The instructors' grader speaks the language of D2LMINI_LANG in its own process: Chinese under zh_CN.

Each test makes the grader say something (feedback, gradebook notes, not_graded.csv, the command
line's help, messages and errors, Gradescope's tests, the isolation line, a remote function's
messages under a check's guard, the caller process's refusal) first with D2LMINI_LANG=zh_CN, where
it must hold Chinese and none of the grading catalog's English sentences, then with the variable
unset, where it must be the English the other grading tests compare. What a program reads (CSV
headers, JSON keys, TOML keys, Gradescope's fields) stays English in both.
"""

import csv
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import cloudpickle
import pytest
import torch
from catalog_checks import english_messages

from d2lmini import i18n
from d2lmini.exercises import Verdict
from d2lmini.exercises.coding import Tally
from d2lmini.exercises.guard import run_guarded
from d2lmini.grading.__main__ import main
from d2lmini.grading.assignment.config import config_text, load_config, validate_config
from d2lmini.grading.assignment.manifest import load
from d2lmini.grading.assignment.settings import Limits, help_text
from d2lmini.grading.assignment.submission import read_submission
from d2lmini.grading.base.remote import RemoteFunction, Unreadable
from d2lmini.grading.gradebook.export import read_rubric
from d2lmini.grading.gradebook.gradebook import StudentResult, grade_class, grade_student
from d2lmini.grading.gradebook.report import feedback_text
from d2lmini.grading.gradescope import RUN, results, run_script
from d2lmini.grading.judging.marks import Mark, earned
from d2lmini.grading.judging.similarity import summary
from d2lmini.grading.run import copies, sandbox
from d2lmini.grading.run.caller import _load
from d2lmini.grading.run.calling import caller_files
from d2lmini.grading.run.notebook import NotebookRun, missing_reason
from d2lmini.grading.run.sandbox import Isolation, Reason

EXERCISES = load()
IDS = ["02:stacked_weight_shape", "02:fused_step"]  # a question and a coding exercise
CATALOG = Path(i18n.__file__).with_name("locale") / "zh_CN" / "LC_MESSAGES" / "grading.po"
CJK = re.compile(r"[\u4e00-\u9fff]")
FIELD = re.compile(r"\{[^{}]*\}")


def english_sentences() -> set[str]:
    """The English of the grading catalog's messages, cut at their fields: each piece of 3 words or more."""
    return {piece.strip() for english in english_messages(CATALOG) for piece in FIELD.split(english)
            if len(re.findall(r"[A-Za-z]{2,}", piece)) >= 3}


ENGLISH = english_sentences()


def assert_chinese(text: str) -> None:
    """`text` holds Chinese and no English sentence of the grading catalog."""
    assert CJK.search(text), text
    left = sorted(piece for piece in ENGLISH if piece in text)
    assert not left, f"English left in {text!r}: {left}"


@pytest.fixture(autouse=True)
def fresh_catalogs():
    """The catalogs are read anew for each test (another test may have read them before a compile)."""
    i18n.translations.cache_clear()
    yield
    i18n.translations.cache_clear()


@pytest.fixture
def zh(monkeypatch):
    """D2LMINI_LANG=zh_CN for the test; calling what it returns unsets it again, within the test."""
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")
    return lambda: monkeypatch.delenv("D2LMINI_LANG")


def config(**tables):
    return validate_config({"points": {i: 2 for i in IDS}, **tables}, EXERCISES, "test")


def a_result() -> StudentResult:
    failed = "Not graded: the grader could not run 02_concat_matmul (OSError); tell your instructor."
    return StudentResult("bob", [Mark(IDS[0], 2, 2, "Correct!"), Mark(IDS[1], 0, 2, failed)],
                         notes=["notes.txt has none of this course's check cells"], rubric={"style": 1.5})


def test_the_feedback_file_is_written_in_the_graders_language(zh):
    settings = config(rubric={"style": 2, "report": 3}, late={"bob": 2}, grading={"late_per_day": 0.1})
    text = feedback_text(a_result(), EXERCISES, settings)
    said = [line for line in text.splitlines() if line.startswith(("# ", "### ", "**")) or "%" in line]
    assert len(said) == 7  # the title, the total, the late days, two exercises, two rubric items
    for line in said:
        assert_chinese(line)
    assert "### 02:stacked_weight_shape（问答题）：2 / 2" in text
    assert "### report（人工评分）：尚未评分 / 3" in text
    zh()
    text = feedback_text(a_result(), EXERCISES, settings)
    assert not CJK.search(text)
    assert text.startswith("# Feedback for bob\n\n**Total: 2.8 / 9**\n\n"
                           "- 2 days late: 20% of your points were taken off.\n")
    assert "### 02:stacked_weight_shape (question): 2 / 2" in text
    assert "### style (graded by hand): 1.5 / 2" in text
    assert "### report (graded by hand): not yet graded / 3" in text


def test_a_class_graded_in_chinese_gets_chinese_notes_and_reasons_and_english_columns(zh, tmp_path):
    submissions = tmp_path / "submissions"  # no kernel but the pre-flight's: no file is a notebook
    (submissions / "alice").mkdir(parents=True)
    (submissions / "alice" / "homework.ipynb").write_text("this is not a notebook", "utf-8")
    (submissions / ".cache").mkdir()
    said = []

    def graded(out: Path):
        grade_class(submissions, out, EXERCISES, config(), progress=said.append, grade=grade_student)
        with (out / "not_graded.csv").open(encoding="utf-8") as handle:
            refused = list(csv.reader(handle))
        record = json.loads((out / "results.json").read_text("utf-8"))[0]
        header = (out / "gradebook.csv").read_text("utf-8").splitlines()[0]
        return refused, record, header, (out / "feedback" / "alice.md").read_text("utf-8")

    refused, record, header, feedback = graded(tmp_path / "zh")
    assert header == "student,02:stacked_weight_shape,02:fused_step,late_days,total,max"
    assert refused[0] == ["entry", "reason"] and refused[1][0] == ".cache"
    assert set(record) == {"student", "total", "notes", "stats", "rubric", "marks"}
    assert_chinese(refused[1][1])
    for note in record["notes"]:
        assert_chinese(note)
    for mark in record["marks"]:
        assert set(mark) == {"exercise", "points", "max_points", "message", "graded"}
        assert_chinese(mark["message"])
    assert_chinese(feedback.split("\n> ")[1])
    for line in said[:-1]:  # the isolation line
        assert_chinese(line)
    assert said[-1] == "alice：0 / 4"
    zh()
    said.clear()
    refused, record, header, feedback = graded(tmp_path / "en")
    assert refused[1] == [".cache", "a hidden entry (its name starts with '.')"]
    assert record["notes"][0].startswith("homework.ipynb could not be read as a Jupyter notebook (")
    assert record["marks"][0]["message"] == ("No notebook of yours has the check cells of 02_concat_matmul: "
                                             "upload it as Jupyter saves it.")
    assert said[0].startswith(("submissions run isolated", "WARNING: submissions run NOT isolated"))
    assert said[-1] == "alice: 0 / 4"


def test_the_command_line_helps_and_answers_in_the_graders_language(zh, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    assert_chinese(shown)
    assert "只重新评这些练习（以逗号分隔的编号）" in shown
    assert "cell_seconds（默认 120，1 到 3,600）：" in shown
    with pytest.raises(SystemExit):
        main([])
    assert_chinese(capsys.readouterr().err.splitlines()[-1].split("error: ", 1)[1])  # after argparse's own
    written = tmp_path / "points.toml"
    assert main(["--write-config", str(written)]) == 0
    assert_chinese(capsys.readouterr().out)
    comments = [line for line in written.read_text("utf-8").splitlines() if "#" in line]
    assert all(CJK.search(line) for line in comments if not line.startswith("# 0"))  # "# 01_hidden_state"
    assert load_config(written, EXERCISES).points  # still TOML, with its English keys
    assert main(["--write-config", str(written)]) == 2
    assert_chinese(capsys.readouterr().err)
    zh()
    assert main(["--write-config", str(written)]) == 2
    assert capsys.readouterr().err == (f"error: {written} exists: it was not replaced (give --force to "
                                       "replace it)\n")
    assert config_text(EXERCISES).startswith("# d2lmini grading: points per exercise and the grader's ")
    assert "  cell_seconds (default 120, 1 to 3,600): a cell still running after this many" in help_text()


def test_a_wrong_config_or_rubric_is_told_in_the_graders_language(zh, tmp_path):
    wrong = [{"grading": {"memory_mb": 1.5}}, {"grading": {"partial_credit": 1}}, {"points": {}},
             {"points": {"01:ngram_order": -1}}, {"extra": {}}, {"late": {"bob": 400}}]
    for tables in wrong:
        with pytest.raises(ValueError) as raised:
            validate_config({"points": {"01:ngram_order": 1}} | tables, EXERCISES, "points.toml")
        assert_chinese(str(raised.value))
    rubric = tmp_path / "rubric.csv"
    rubric.write_text("student,style,colour\nbob,1,\n", "utf-8")
    with pytest.raises(ValueError) as raised:
        read_rubric(rubric, config(rubric={"style": 2}), {"bob"})
    assert_chinese(str(raised.value))
    zh()
    with pytest.raises(ValueError, match=r"^points.toml: memory_mb must be a whole number from 128 to "):
        validate_config(wrong[0] | {"points": {"01:ngram_order": 1}}, EXERCISES, "points.toml")
    with pytest.raises(ValueError, match=r"column\(s\) 'colour' are not items of the config's \[rubric\] "):
        read_rubric(rubric, config(rubric={"style": 2}), {"bob"})


def test_a_students_marks_say_why_in_the_graders_language(zh, tmp_path):
    exercise = next(e for e in EXERCISES if e.id == IDS[1])
    problems = {4: "time limit", 5: "NameError: name 'W' is not defined"}
    wrong = Verdict(False, "Not yet.")
    tally = Tally(passed=3, total=4, checks=1, verdict=wrong)
    upload = tmp_path / "upload.ipynb"
    upload.write_bytes(b"\x00")

    def said() -> list[str]:
        runs = [NotebookRun(cells=problems, skipped={3}, check_cells={exercise.id: i}) for i in (3, 4, 5)]
        reasons = [missing_reason(exercise, run, Limits()) for run in [*runs, NotebookRun()]]
        return reasons + [earned(wrong, 2, tally)[1].split("\n\n")[1], read_submission(upload).problem]

    for reason in said():
        assert_chinese(reason)
    zh()
    assert said() == [
        "Cell 4, which checks this exercise, ended the notebook's kernel (os._exit, a crash, or more memory "
        "than allowed), so it was left out.",
        "Cell 5, which checks this exercise, was still running after 120 s and was stopped.",
        "Cell 6, which checks this exercise, stopped with NameError: name 'W' is not defined before the "
        "check ran. Run your notebook from top to bottom in a fresh kernel to see it.",
        "The cell that checks this exercise (`check_fused_step(...)`) is not in your notebook, or its call "
        "was changed: copy it back from the released notebook and run it.",
        "Partial credit: 3 of 4 graded cases passed.",
        "upload.ipynb could not be read as a Jupyter notebook (NotJSONError): upload the .ipynb file that "
        "Jupyter saves, not a copy or an export.",
    ]


def test_gradescope_names_its_tests_in_the_graders_language_with_its_own_fields(zh):
    built = results(a_result(), EXERCISES)
    assert set(built) == {"score", "output", "tests"}
    fields = {"name", "score", "max_score", "output", "visibility"}
    assert [set(test) for test in built["tests"]] == [fields, fields]
    assert [test["name"] for test in built["tests"]] == ["02:stacked_weight_shape（问答题）",
                                                         "02:fused_step（编程题）"]
    assert 'export D2LMINI_LANG="${D2LMINI_LANG:-zh_CN}"\n' in run_script()  # the zip grades in Chinese
    zh()
    built = results(a_result(), EXERCISES)
    assert [test["name"] for test in built["tests"]] == ["02:stacked_weight_shape (question)",
                                                         "02:fused_step (coding)"]
    assert run_script() == RUN


def test_the_isolation_line_is_told_in_the_language_of_when_it_is_shown(zh):
    # `probe` finds its reason once per process, before a language may be chosen: it is translated when shown.
    missing = Reason("bubblewrap ({name}) is not installed", name="bwrap")
    reason = Reason("{why}; and uid {uid} cannot run this Python and d2lmini ({error})", why=missing,
                    uid=65534, error="denied")
    unisolated, by_user = Isolation(None, None, reason), Isolation("/usr/bin/setpriv", "user", reason)
    for isolation in (unisolated, by_user, Isolation("/usr/bin/bwrap", "bwrap")):
        assert_chinese(isolation.describe())
    told = unisolated.describe()
    assert "没有安装 bubblewrap（bwrap）；而且 uid 65534 无法运行这个 Python 和 d2lmini（denied）" in told
    # The kernel's and the caller process's environment carry the grader's language.
    assert sandbox.clean_env(Path("/nonexistent/scratch"))["D2LMINI_LANG"] == "zh_CN"
    zh()
    assert reason == ("bubblewrap (bwrap) is not installed; and uid 65534 cannot run this Python and d2lmini "
                      "(denied)")
    assert unisolated.describe().startswith(f"NOT isolated: {reason}. Submissions run as the grader's own")
    assert "D2LMINI_LANG" not in sandbox.clean_env(Path("/nonexistent/scratch"))


def test_similarity_summary_is_told_in_the_graders_language(zh, tmp_path):
    found = tmp_path / "similarity.csv"
    found.write_text("exercise,function,student_a,student_b,ratio\n02:fused_step,f,a,b,0.912\n", "utf-8")
    for path in (found, tmp_path / "missing.csv"):
        assert_chinese(summary(path))
    zh()
    assert summary(found) == ("1 pair(s) of students' graded functions at least 80% alike, as evidence to "
                              f"read, not a verdict: {found}")


ANSWER = "import sys; sys.stdin.readline(); print({reply!r}, flush=True)"  # a caller process's one reply


@pytest.mark.parametrize("reply, english", [
    ({"timed_out": True}, "it was still running after its time limit: look for a loop that never ends (a "
                          "`while` whose condition stays true, an endless generator)."),
    ({"refused": "torch's RNN"}, "it calls torch's RNN. The exercise asks you to write it yourself, so that "
                                 "call is refused."),
    ("not JSON", "the process running your function stopped or stopped answering during this call "
                 "(os._exit, a crash, or more memory than allowed)"),
])
def test_a_remote_functions_messages_under_a_checks_guard_are_in_the_graders_language(zh, reply, english):
    # Worded while the check's guard watches the call: its hook lets d2lmini.i18n run (refusals.MACHINERY).
    def told() -> str:
        answer = ANSWER.format(reply=json.dumps(reply) if isinstance(reply, dict) else reply)
        process = subprocess.Popen([sys.executable, "-c", answer], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
        try:
            outcome = run_guarded(RemoteFunction(process, 60, "my_step"), (torch.ones(2, 3),))
        finally:
            process.kill()
            process.wait()
            process.stdin.close()
            process.stdout.close()
        assert outcome.error is not None and not outcome.refused, (outcome.error, outcome.refused)
        return str(outcome.error)

    assert_chinese(told())
    assert_chinese(repr(Unreadable("generator")))
    zh()
    assert told() == english
    assert repr(Unreadable("generator")) == "a generator object"


def test_the_caller_process_refuses_a_copy_in_the_language_it_is_given(zh, tmp_path):
    import d2lmini.batching as batching

    namespace = {"__name__": "my_batches"}  # a copy of the package, pickled by value as a notebook's is
    exec(compile(inspect.getsource(batching), "elsewhere.py", "exec"), namespace)
    saved = tmp_path / "function.pkl"
    saved.write_bytes(cloudpickle.dumps(namespace["sequential_batches"]))
    known = copies.known_fingerprints([sandbox.PACKAGE])
    _function, error = _load(saved, known)
    assert error["type"] == "RefusedCall"
    assert_chinese(error["message"])
    zh()
    _function, error = _load(saved, known)
    assert re.fullmatch(r"it is a copy of the package's d2lmini/batching\.py:\w+, which is refused",
                        error["message"])


def test_the_caller_sandbox_holds_the_catalogs_it_speaks_with():
    names = {path.name for path in caller_files(False)}
    assert {"i18n.py", "grading.mo"} <= names
