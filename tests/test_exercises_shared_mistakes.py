"""The shared mistakes (`d2lmini.exercises.mistakes.shared`), each planted in a student's function.

A shared mistake is recognised by how a wrong result relates to the right one, whatever the
exercise: each is planted here as a student's right answer whose result is then transformed (the
right numbers transposed, negated, scaled, in a list...), in notebook 02's fused step (one output)
and in the capstone's clipping (two outputs) and update (a list). The verdict must name the shared
mistake's cause and the exercise's section, and quote no number of the reference's result. The
mistakes seen in how a function failed (`shared.INCIDENTS`: an exception of a kind, an input changed
in place, a forbidden route, a form the exercise does not ask for) are planted the same way, each
as a statement the right answer runs before it returns.
"""

import pytest
import torch
from test_exercises_held_apart import CASES, quotes_a_reference_number

from d2lmini.exercises.capstone.pieces import check_clip, check_perplexity, check_sgd
from d2lmini.exercises.concat_matmul import check_fused_step
from d2lmini.exercises.mistakes import CATALOGUE, OWN, SECTIONS, shared, training
from d2lmini.exercises.rnn_scratch import check_train_loop
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
FUSED_FAILING = """\
import torch


def fused_step(X, H, W_xh, W_hh, b_h):
    right = torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)
    {statement}
    return right
"""
PERPLEXITY = """\
import torch


def perplexity(logits, targets):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    log_p = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
    right = torch.exp(-log_p[torch.arange(len(targets)), targets].mean())
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
    (shared.NOT_FINITE, check_fused_step, FUSED, "right / 0"),
    (shared.COUNT, check_sgd, SGD, "new + new[:1]"),
]
# (cause seen in how the function failed, check, source, what the source is filled with)
FAILING = [
    (shared.PRODUCT_SHAPES, check_fused_step, FUSED_FAILING, "right = right @ torch.cat((W_xh, W_hh), 0)"),
    (shared.RESHAPE_SIZE, check_fused_step, FUSED_FAILING, "right = right.reshape(right.numel() + 1)"),
    (shared.MISMATCHED_SHAPES, check_fused_step, FUSED_FAILING, "right = torch.stack([right, right[1:]])"),
    (shared.INDEX_PAST_END, check_fused_step, FUSED_FAILING, "right = right[:, right.shape[1]]"),
    (shared.FIXED_DTYPE, check_fused_step, FUSED_FAILING,
     "right = right @ torch.eye(right.shape[1]).double()"),
    (shared.UNPACKED, check_fused_step, FUSED_FAILING, "rows, columns, steps = right.shape"),
    (shared.NO_GRAPH, check_fused_step, FUSED_FAILING, "right.sum().backward()"),
    (shared.IN_PLACE, check_fused_step, FUSED_FAILING, "X += 1"),
    (shared.ROUTE, check_fused_step, FUSED_FAILING, "right = torch.tanh(X @ W_xh + H @ W_hh + b_h)"),
    (shared.INPUT_RETURNED, check_clip, CLIP,
     "[g if factor == 1.0 else c for g, c in zip(grads, clipped)], norm"),
    (shared.TENSOR_FOR_NUMBER, check_perplexity, PERPLEXITY, "right"),
]
EXERCISE = {check_fused_step: "02:fused_step", check_clip: "08:clip", check_sgd: "08:sgd",
            check_perplexity: "08:perplexity"}


def student(source: str, result: str):
    """The function a student's cell defines: the right answer, returning `result` (or running the
    statement `result` before it returns)."""
    namespace: dict = {}
    cell = source.format(result=result, statement=result)
    exec(compile(cell, "<cell>", "exec"), namespace)  # noqa: S102 - a student's cell
    return next(value for name, value in namespace.items() if callable(value) and name != "torch")


def test_every_shared_mistake_is_planted():
    assert {cause for cause, *_rest in PLANTED} == {cause for cause, _relation in shared.RELATIONS}
    assert {cause for cause, *_rest in FAILING} == {cause for cause, _happens in shared.INCIDENTS}


def test_every_exercise_has_the_shared_mistakes_after_its_own_the_training_loop_only_the_incidents():
    assert set(SECTIONS) == set(OWN) - {"04:train_loop"}
    for exercise, mistakes in CATALOGUE.items():
        own = len(OWN[exercise])
        assert mistakes[:own] == OWN[exercise]
        relations = [cause for cause, _ in shared.RELATIONS] if exercise in SECTIONS else []
        assert [m.cause for m in mistakes[own:]] == relations + [cause for cause, _ in shared.INCIDENTS]


def _assert_named(check, function, cause, seen_in_how_it_failed: bool = False) -> None:
    """The verdict on `function` is "Not yet", names the shared `cause` with the exercise's section, and
    quotes no number of the reference."""
    exercise = EXERCISE[check]
    mistake = next(m for m in CATALOGUE[exercise] if m.cause == cause
                   and (m.happens if seen_in_how_it_failed else m.shows) is not None)
    verdict = check(function)
    assert not verdict and verdict.message.startswith("Not yet."), verdict.message
    assert mistake.said() in verdict.message, verdict.message
    if mistake.section:
        assert _("Re-read {section}.").format(section=_(mistake.section)) in verdict.message
    if exercise in CASES:
        assert quotes_a_reference_number(verdict.message, exercise) is None, verdict.message


@pytest.mark.parametrize("cause, check, source, result", PLANTED, ids=[p[3] for p in PLANTED])
def test_each_shared_mistake_planted_is_named_with_its_cause_and_section(cause, check, source, result):
    _assert_named(check, student(source, result), cause)


@pytest.mark.parametrize("cause, check, source, statement", FAILING, ids=[p[3] for p in FAILING])
def test_each_way_of_failing_planted_is_named_with_its_cause_and_section(cause, check, source, statement):
    _assert_named(check, student(source, statement), cause, seen_in_how_it_failed=True)


def test_the_training_loop_names_how_it_failed_with_its_section():
    def train_loop(model, batches, optimizer):
        return float((torch.zeros(2, 3) @ torch.zeros(2, 3)).sum())

    verdict = check_train_loop(train_loop)
    mistake = next(m for m in CATALOGUE["04:train_loop"] if m.cause == shared.PRODUCT_SHAPES)
    assert not verdict and mistake.said() in verdict.message, verdict.message
    assert _("Re-read {section}.").format(section=_(training.TRAINING_SECTION)) in verdict.message


def test_a_named_cause_never_repeats_the_exception_s_text():
    # The text is the student's to write: the cause is recognised from torch's words in it, not quoted.
    raised = "raise RuntimeError('mat1 and mat2 shapes cannot be multiplied: SEE THE SOLUTION')"
    verdict = check_fused_step(student(FUSED_FAILING, raised))
    cause = verdict.message.split("Likely cause: ", 1)[1]
    assert cause.startswith(_(shared.PRODUCT_SHAPES)) and "SOLUTION" not in cause, verdict.message


def test_an_exception_without_torch_s_words_gets_no_named_cause():
    verdict = check_fused_step(student(FUSED_FAILING, "raise RuntimeError('something else went wrong')"))
    assert not verdict and "Likely cause: " not in verdict.message, verdict.message


def test_a_right_answer_shows_no_shared_mistake():
    assert check_fused_step(student(FUSED, "right"))
    assert check_clip(student(CLIP, "clipped, norm"))
    assert check_sgd(student(SGD, "new"))
    assert check_perplexity(student(PERPLEXITY, "float(right)"))


def test_a_shared_mistake_in_some_outputs_is_named_beside_the_hint_on_them():
    # Until the third held-apart set was used (#45), the hint alone was given; both say something true.
    verdict = check_clip(student(CLIP, "[2 * g for g in clipped], norm"))
    scaled = next(m for m in CATALOGUE["08:clip"] if m.cause == shared.SCALED)
    assert "Hint: " in verdict.message and scaled.said() in verdict.message, verdict.message
