"""The release: computed questions take their numbers from the instructor's seed, in the text, the
self-check's call and the grader's exercise list alike, so the public solutions no longer answer them."""

import ast
import contextlib
import io
import json
import math
import sys
from pathlib import Path

import nbformat
import pytest
from solution_files import load_answers

from d2lmini.grading.__main__ import main
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.release import FACTS, RELEASED, draw, public_values, release, rewrite_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import grading_samples  # noqa: E402  (tools/ is not a package)

pytestmark = pytest.mark.torch_dependent

ROOT = Path(__file__).resolve().parents[1]
COURSE = {e.id: e for e in manifest.load()}
SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> dict[int, Path]:
    folders = {}
    for seed in SEEDS:
        folders[seed] = tmp_path_factory.mktemp(f"released{seed}")
        release(ROOT / "notebooks", folders[seed], seed)
    return folders


def verdict(exercise, answer, arguments: dict) -> bool:
    with contextlib.redirect_stdout(io.StringIO()):
        return bool(exercise.checker()(answer, **arguments))


def test_every_question_is_released_or_named_a_fact():
    questions = {e.check for e in COURSE.values() if e.kind == "question"}
    assert questions == set(RELEASED) | set(FACTS) and not set(RELEASED) & set(FACTS)
    docs = (ROOT / "docs" / "instructors.md").read_text("utf-8")
    assert all(f"`{e.id}`" in docs for e in COURSE.values() if e.check in FACTS)


def test_the_seeds_numbers_are_in_the_text_the_call_and_the_graders_list(released):
    for seed, folder in released.items():
        graded = {e.id: e for e in manifest.load(folder / "exercises.json")}
        assert set(graded) == set(COURSE)
        for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
            before, after = nbformat.read(path, 4), nbformat.read(folder / path.name, 4)
            assert [c.id for c in before.cells] == [c.id for c in after.cells]
            changed = {c.id for c, d in zip(before.cells, after.cells, strict=True) if c.source != d.source}
            calls = {}
            for cell in after.cells:
                if cell.cell_type == "code":
                    for call in manifest.check_calls(ast.parse(cell.source), RELEASED):
                        calls[call.func.id if isinstance(call.func, ast.Name) else call.func.attr] = (
                            cell,
                            public_values(call),
                        )
            assert len(changed) == 2 * len(calls)  # each question's text and its check cell, nothing else
            for check, (cell, written) in calls.items():
                exercise = next(e for e in graded.values() if e.check == check and e.notebook == path.stem)
                public = COURSE[exercise.id].instructor_arguments()
                drawn = draw(seed, path.stem, check, public)
                assert {k: written[k] for k in drawn} == drawn  # the self-check's arguments
                assert {k: exercise.instructor_arguments()[k] for k in drawn} == drawn  # the grader's
                assert all(drawn[k] != public[k] for k in drawn), (check, drawn, public)
                assert cell.outputs == []


def test_the_public_solutions_do_not_answer_the_released_questions(released):
    for folder in released.values():
        for exercise in manifest.load(folder / "exercises.json"):
            if exercise.check not in RELEASED:
                continue
            answer = load_answers(exercise.notebook[:2])[exercise.check]
            assert verdict(exercise, answer, COURSE[exercise.id].instructor_arguments()), exercise.id
            assert not verdict(exercise, answer, exercise.instructor_arguments()), (exercise.id, folder)


def test_a_right_answer_to_the_released_numbers_is_right_for_self_check_and_grader(released):
    formulas = {
        "check_rnn_parameter_count": lambda a: (
            a["vocab_size"] * a["num_hiddens"] * 2
            + a["num_hiddens"] ** 2
            + a["num_hiddens"]
            + a["vocab_size"]
        ),
        "check_one_hot_bytes": lambda a: a["batch"] * a["steps"] * a["vocab"] * 4,
        "check_multiply_adds": lambda a: a["batch"] * a["steps"] * a["vocab"] * a["hiddens"],
        "check_sequential_start": lambda a: (
            a["offset"]
            + a["row"] * ((a["num_tokens"] - a["offset"] - 1) // a["batch_size"])
            + a["minibatch"] * a["num_steps"]
        ),
        "check_max_step": lambda a: a["lr"] * a["theta"],
        "check_initial_loss": lambda a: math.log(a["vocab_size"]),
        "check_truncation_reach": lambda a: (a["loss_step"] - 1) // 10 * 10 + 1,
    }
    for folder in released.values():
        for exercise in manifest.load(folder / "exercises.json"):
            if exercise.check in formulas:
                arguments = exercise.instructor_arguments()
                assert verdict(exercise, formulas[exercise.check](arguments), arguments), exercise.id


def test_the_same_seed_releases_the_same_notebooks_and_nothing_is_replaced(released, tmp_path, capsys):
    again = tmp_path / "again"
    release(ROOT / "notebooks", again, SEEDS[0])
    assert all((again / p.name).read_bytes() == p.read_bytes() for p in released[SEEDS[0]].iterdir())
    with pytest.raises(ValueError, match="exist"):
        release(ROOT / "notebooks", again, SEEDS[0])
    with pytest.raises(ValueError, match="holds no notebook"):
        release(tmp_path / "nothing", tmp_path / "out", 1)
    config = tmp_path / "points.toml"
    config.write_text('[grading]\nseed = 5\n[points]\n"01:ngram_order" = 1\n', "utf-8")
    assert main(["release", "--config", str(config), "--out", str(again)]) == 2
    assert "nothing was written" in capsys.readouterr().err
    assert (
        main(
            [
                "release",
                "--config",
                str(config),
                "--out",
                str(tmp_path / "r"),
                "--notebooks",
                str(ROOT / "notebooks"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "r" / "exercises.json").read_text("utf-8"))


def test_a_question_text_that_no_longer_says_its_number_stops_the_release():
    with pytest.raises(ValueError, match="0 times, not once"):
        rewrite_text(
            "How many parameters has an RNN?",
            "check_rnn_parameter_count",
            {"vocab_size": 30, "num_hiddens": 16},
        )


def _answered(notebook_path: Path, answers: dict) -> nbformat.NotebookNode:
    notebook = nbformat.read(notebook_path, 4)
    for cell in notebook.cells:
        for check, value in answers.items():
            if cell.cell_type == "code" and f"{check}(answer" in cell.source:
                cell.source = cell.source.replace("answer = None", f"answer = {value!r}", 1)
    return notebook


@pytest.mark.slow
@pytest.mark.classes
def test_a_released_class_is_graded_with_the_released_numbers(tmp_path):
    from d2lmini.grading.assignment.config import validate_config
    from d2lmini.grading.gradebook.gradebook import grade_class

    folder = tmp_path / "released"
    exercises = release(ROOT / "notebooks", folder, 4242)
    ids = ["02:stacked_weight_shape", "02:multiplication_count", "02:gru_weight_shape"]
    right = grading_samples.released_answers("02", exercises)
    assert len(right) == len(ids)
    path = folder / "02_concat_matmul.ipynb"
    submissions = tmp_path / "submissions"
    for student, answers in (("honest", right), ("public_key", load_answers("02"))):
        (submissions / student).mkdir(parents=True)
        nbformat.write(_answered(path, answers), submissions / student / path.name)
    config = validate_config({"grading": {"seed": 4242}, "points": dict.fromkeys(ids, 1)}, exercises, "test")
    results = {
        r.student: r
        for r in grade_class(submissions, tmp_path / "out", exercises, config, progress=lambda _: None)
    }
    assert [m.points for m in results["honest"].marks] == [1, 1, 1], results["honest"].marks
    assert [m.points for m in results["public_key"].marks] == [0, 0, 0], results["public_key"].marks


def test_the_gradescope_zip_grades_a_release_with_its_numbers(released, tmp_path):
    """`--gradescope zip --manifest released/exercises.json`: the zip judges the released numbers."""
    import zipfile

    from d2lmini.grading.gradescope import build_zip, graded_exercises

    listed = released[SEEDS[0]] / "exercises.json"
    build_zip(tmp_path / "autograder.zip", exercises=listed)
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        archive.extractall(tmp_path / "source")
    assert graded_exercises(tmp_path / "source") == manifest.load(listed) != manifest.load()
    build_zip(tmp_path / "course.zip")
    with zipfile.ZipFile(tmp_path / "course.zip") as archive:
        archive.extractall(tmp_path / "course")
    assert graded_exercises(tmp_path / "course") == manifest.load()
