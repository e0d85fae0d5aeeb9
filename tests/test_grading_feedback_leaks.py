"""Feedback is no oracle (#43, item 1): what a graded function raises or prints never carries the
private cases into the student's feedback.

The "harvesting upload" puts the graded inputs in its exception's message, in its exception's class
name and in what it prints, then resubmits. Graded with several private seeds, its feedback must be
the same text every time (the kind of exception and the course's own words), holding none of it.
"""

import re

import cloudpickle
import pytest

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.remote import error_kind
from d2lmini.grading.judging.judge import judge
from d2lmini.grading.run import sandbox

pytestmark = [pytest.mark.torch_dependent, pytest.mark.sandboxes]  # kernels, and tensors on the grader's wire
needs_sandbox = pytest.mark.skipif(not sandbox.probe().isolated, reason=sandbox.probe().describe())
FUSED = next(e for e in manifest.load() if e.id == "02:fused_step")

HARVEST = '''
def in_message(X, H, W_xh, W_hh, b_h):
    values = ",".join(f"{v:.6f}" for v in X.flatten().tolist()[:8])
    print("HARVEST", values, tuple(X.shape))
    raise ValueError("HARVEST " + values + " shape " + str(tuple(X.shape)))

def in_class_name(X, H, W_xh, W_hh, b_h):
    digits = "".join(c for c in f"{X.flatten()[0].item():.6f}" if c.isdigit())
    raise type("HARVEST_" + digits, (Exception,), {})("HARVEST")
'''


def harvesting(name: str):
    namespace = {"__name__": "student_notebook"}  # as a notebook's functions are: saved by value
    exec(HARVEST, namespace)
    return namespace[name]


def feedback(function, seed: int, scratch) -> str:
    """The verdict's message the grader gives `function` for fused_step with the private `seed`."""
    (scratch / "functions").mkdir(parents=True)
    (scratch / "functions" / "step_fn.pkl").write_bytes(cloudpickle.dumps(function))
    record = {"step_fn": {"t": "function", "handle": "02:fused_step/step_fn", "name": function.__name__,
                          "file": "functions/step_fn.pkl"}}
    verdict = judge(FUSED, record, scratch, Limits(), seed)
    assert not verdict.correct
    return verdict.message


def test_only_python_and_torch_exception_kinds_are_named():
    assert [error_kind(n) for n in ("ValueError", "RuntimeError", "OutOfMemoryError", "HARVEST_314")] == [
        "ValueError", "RuntimeError", "OutOfMemoryError", "Exception"]


@needs_sandbox
@pytest.mark.slow
@pytest.mark.parametrize("name", ["in_message", "in_class_name"])
def test_the_harvesting_upload_learns_nothing_from_its_feedback(tmp_path, name):
    texts = {seed: feedback(harvesting(name), seed, tmp_path / str(seed)) for seed in (11, 12, 13)}
    # before: "For batch=3, inputs=5, hiddens=4 your function raised ValueError: HARVEST -0.111659,
    # -1.145610,..." (seed 11; "-1.014133,..." for 12), or "raised HARVEST_0111659: HARVEST"
    assert len(set(texts.values())) == 1, texts
    text = texts[11]
    assert "HARVEST" not in text and not re.search(r"\d\.\d{3}", text), text
    assert "your function raised" in text and "message is not shown" in text, text
