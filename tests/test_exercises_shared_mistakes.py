"""The shared mistakes (`d2lmini.exercises.mistakes.shared`), each planted in a student's function.

A shared mistake is recognised by how a wrong result relates to the right one, whatever the
exercise: each is planted here as a student's right answer whose result is then transformed (the
right numbers transposed, negated, scaled, in a list...), in notebook 02's fused step (one output)
and in the capstone's clipping (two outputs) and update (a list). The verdict must name the shared
mistake's cause and the exercise's section, and quote no number of the reference's result.
"""

import pytest
from test_exercises_held_apart import CASES, quotes_a_reference_number

from d2lmini.exercises.capstone.pieces import check_clip, check_sgd
from d2lmini.exercises.concat_matmul import check_fused_step
from d2lmini.exercises.mistakes import CATALOGUE, OWN, SECTIONS, shared
from d2lmini.i18n import _

pytestmark = pytest.mark.torch_dependent

FUSED = """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    right = torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)
    return {result}
"""
CLIP = """\
import torch


def clip(grads, theta):
    norm = torch.sqrt(sum((g * g).sum() for g in grads))
    factor = min(1.0, float(theta / norm))
    clipped = [g * factor for g in grads]
    norm = float(norm)
    return {result}
"""
SGD = """\
def sgd(params, grads, lr):
    new = [p - lr * g for p, g in zip(params, grads)]
    return {result}
"""
# (shared cause, check, source, the result the function returns)
PLANTED = [
    (shared.TRANSPOSED, check_fused_step, FUSED, "right.T"),
    (shared.RESHAPED, check_fused_step, FUSED, "right.reshape(-1)"),
    (shared.NEGATED, check_fused_step, FUSED, "-right"),
    (shared.SCALED, check_fused_step, FUSED, "right / X.shape[0]"),
    (shared.CONTAINER, check_fused_step, FUSED, "[row for row in right]"),
    (shared.DTYPE, check_fused_step, FUSED, "right.double()"),
    (shared.ORDER, check_clip, CLIP, "norm, clipped"),
    (shared.PART, check_clip, CLIP, "clipped"),
    (shared.MORE, check_clip, CLIP, "clipped, norm, factor"),
    (shared.SCALED, check_sgd, SGD, "[2 * p for p in new]"),
    (shared.CONTAINER, check_clip, CLIP, "torch.cat([g.reshape(-1) for g in clipped]), norm"),
]
EXERCISE = {check_fused_step: "02:fused_step", check_clip: "08:clip", check_sgd: "08:sgd"}


def student(source: str, result: str):
    """The function a student's cell defines: the right answer, returning `result`."""
    namespace: dict = {}
    exec(compile(source.format(result=result), "<cell>", "exec"), namespace)  # noqa: S102 - a student's cell
    return next(value for name, value in namespace.items() if callable(value) and name != "torch")


def test_every_shared_mistake_is_planted():
    assert {cause for cause, *_rest in PLANTED} == {cause for cause, _relation in shared.RELATIONS}


def test_every_exercise_but_the_training_loop_has_the_shared_mistakes_after_its_own():
    assert set(SECTIONS) == set(OWN) - {"04:train_loop"}
    for exercise, mistakes in CATALOGUE.items():
        own = len(OWN[exercise])
        assert mistakes[:own] == OWN[exercise]
        assert [m.cause for m in mistakes[own:]] == ([cause for cause, _ in shared.RELATIONS]
                                                      if exercise in SECTIONS else [])


@pytest.mark.parametrize("cause, check, source, result", PLANTED, ids=[p[3] for p in PLANTED])
def test_each_shared_mistake_planted_is_named_with_its_cause_and_section(cause, check, source, result):
    exercise = EXERCISE[check]
    mistake = next(m for m in CATALOGUE[exercise] if m.cause == cause and m.shows is not None)
    verdict = check(student(source, result))
    assert not verdict and verdict.message.startswith("Not yet."), verdict.message
    assert mistake.said() in verdict.message, verdict.message
    if mistake.section:
        assert _("Re-read {section}.").format(section=_(mistake.section)) in verdict.message
    if exercise in CASES:
        assert quotes_a_reference_number(verdict.message, exercise) is None, verdict.message


def test_a_right_answer_shows_no_shared_mistake():
    assert check_fused_step(student(FUSED, "right"))
    assert check_clip(student(CLIP, "clipped, norm"))
    assert check_sgd(student(SGD, "new"))


def test_a_shared_mistake_in_some_outputs_gives_way_to_the_hint_on_them():
    verdict = check_clip(student(CLIP, "[2 * g for g in clipped], norm"))
    assert "Hint: " in verdict.message and "Likely cause: " not in verdict.message, verdict.message
