"""The self-check and the grader give the same verdict on the same answer (#32, deliverable 5).

For every exercise: the instructors' solution, a wrong answer and (for coding exercises) a
solution that also calls what the exercises ban are judged by the check as the notebook runs
it (the function in this process) and as the grader does (the answer after the wire, the
function in a fresh caller process, `d2lmini.grading.run.calling.Caller`), on the same seed.
"""

import ast
import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
from solution_files import needs_solutions_beside_the_package

from d2lmini.exercises.coding import shifted_seeds
from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.remote import RemoteFunction, decode, encode
from d2lmini.grading.run.calling import Caller

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grading_samples  # noqa: E402  (tools/ is not a package)

pytestmark = [pytest.mark.torch_dependent, pytest.mark.sandboxes]

EXERCISES = manifest.load()
SEED = 11
SLOW = {"08:capstone", "08:train"}  # each trains a model for a minute or more: graded in test_grading's class

BANNED_PREFIX = """
import torch
import torch.nn.functional as F


def banned_calls():
    torch.rnn_tanh_cell(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1))
    F.cross_entropy(torch.zeros(1, 2), torch.zeros(1, dtype=torch.long))
"""


def _verdict(exercise, answers: dict) -> bool:
    arguments = exercise.instructor_arguments() | answers
    with shifted_seeds(SEED), contextlib.redirect_stdout(io.StringIO()):
        return bool(exercise.checker()(**arguments).correct)


def _stub_names(exercise) -> dict[str, str]:
    """slot -> the name of the notebook's function passed there (`ex.check_fused_step(fused_step)`)."""
    notebook = grading_samples.released(exercise.notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code" and exercise.check in cell.source:
            for node in ast.walk(ast.parse(manifest.python_of(cell.source))):
                func = node.func if isinstance(node, ast.Call) else None
                called = getattr(func, "attr", getattr(func, "id", ""))
                if called == exercise.check:
                    given = dict(zip(exercise.parameters, node.args, strict=False))
                    given |= {k.arg: k.value for k in node.keywords if k.arg}
                    return {slot: given[slot].id for slot in exercise.slots
                            if isinstance(given.get(slot), ast.Name)}
    raise AssertionError(f"no check call of {exercise.id} in its notebook")


def _student_functions(exercise, banned: bool) -> dict:
    """The solutions' functions for the exercise's slots, defined as a notebook defines them."""
    number = exercise.notebook[:2]
    found = {}
    for slot, name in _stub_names(exercise).items():
        source = grading_samples._solution_source(name, grading_samples.SOLUTIONS / f"notebook_{number}.py",
                                                  grading_samples.SOLUTIONS / "capstone.py")
        assert source is not None, (exercise.id, name)
        namespace = {"__name__": "student_notebook"}  # saved by value, as a notebook's function is
        if banned:
            source = BANNED_PREFIX + source.replace(":\n", ":\n    banned_calls()\n", 1)
        exec(compile(source, f"<{exercise.id}>", "exec"), namespace)
        found[slot] = namespace[name]
    return found


def _wrong_function():
    namespace = {"__name__": "student_notebook"}
    exec("def wrong(*args):\n    return None\n", namespace)
    return namespace["wrong"]


CODING = [e for e in EXERCISES if e.kind == "coding" and e.id not in SLOW]
QUESTIONS = [e for e in EXERCISES if e.kind == "question"]


def _variants(exercise) -> dict[str, dict]:
    """The solution, a wrong answer and the solution that also calls what the exercises ban."""
    return {"solution": _student_functions(exercise, banned=False),
            "wrong": dict.fromkeys(exercise.slots, _wrong_function()),
            "banned": _student_functions(exercise, banned=True)}


def _with_models(exercise) -> bool:
    return "RNNScratch" in exercise.checker().__globals__


def _through_one_caller(entries: list[tuple], folder: Path, with_models: bool) -> dict[tuple, bool]:
    """Each (exercise, variant)'s verdict with its functions called in one sandboxed caller process.

    One process holds every entry's functions (slot `exercise.variant.slot`), as one holds a student's
    functions for one check; the entries run in the order given (the banned calls last). Should a
    refused call end the process, a fresh one takes the entries left, and the one that ended it is
    judged as the grader judges it (its process stopped).
    """
    import cloudpickle

    verdicts, left = {}, list(entries)
    while left:
        saved = {f"{e.id}.{variant}.{slot}": cloudpickle.dumps(f)
                 for e, variant, functions in left for slot, f in functions.items()}
        caller = Caller(saved, folder / f"caller-{len(verdicts)}", Limits(), with_models)
        try:
            assert caller.ready() is None
            while left:
                exercise, variant, functions = left.pop(0)
                state = {"broken": False}
                remote = {slot: RemoteFunction(caller.process, 300, f.__name__,
                                               f"{exercise.id}.{variant}.{slot}", state)
                          for slot, f in functions.items()}
                verdicts[exercise.id, variant] = _verdict(exercise, remote)
                if caller.process.poll() is not None:
                    break
        finally:
            caller.close()
    return verdicts


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[dict, dict[tuple, bool]]:
    """Every coding exercise's variants, and their verdicts through the grader: one sandboxed caller for
    the exercises whose checks hand a model, one for the others (two sandbox starts, not one per exercise)."""
    variants = {e.id: _variants(e) for e in CODING}
    verdicts = {}
    for with_models in (False, True):
        chosen = [e for e in CODING if _with_models(e) == with_models]
        entries = [(e, v, variants[e.id][v]) for v in ("solution", "wrong") for e in chosen]
        entries += [(e, "banned", variants[e.id]["banned"]) for e in chosen]
        folder = tmp_path_factory.mktemp(f"models-{with_models}")
        verdicts |= _through_one_caller(entries, folder, with_models)
    return variants, verdicts


@needs_solutions_beside_the_package
@pytest.mark.slow
@pytest.mark.classes
@pytest.mark.parametrize("exercise", CODING, ids=[e.id for e in CODING])
def test_a_function_gets_the_same_verdict_from_the_self_check_and_the_grader(exercise, graded):
    variants, through_the_grader = graded
    verdicts = {name: (_verdict(exercise, functions), through_the_grader[exercise.id, name])
                for name, functions in variants[exercise.id].items()}
    assert verdicts["solution"] == (True, True), verdicts
    assert verdicts["wrong"] == (False, False), verdicts
    assert verdicts["banned"][0] == verdicts["banned"][1], verdicts


@needs_solutions_beside_the_package
@pytest.mark.parametrize("exercise", QUESTIONS, ids=[e.id for e in QUESTIONS])
def test_an_answer_gets_the_same_verdict_from_the_self_check_and_the_grader(exercise):
    number = exercise.notebook[:2]
    answers = grading_samples._module(grading_samples.SOLUTIONS / f"notebook_{number}.py").ANSWERS
    right = answers[exercise.check]
    for answer, correct in ((right, True), (None, False), ("a guess", False)):
        slot = exercise.slots[0]
        wired = decode(json.loads(json.dumps(encode(answer))))
        assert _verdict(exercise, {slot: answer}) is correct, (exercise.id, answer)
        assert _verdict(exercise, {slot: wired}) is correct, (exercise.id, answer, wired)
