"""A kernel that does not start is the grader's fault: the run is tried once more, and a second
failure is raised (to become "not graded", never a 0), not retried forever."""

from pathlib import Path

import pytest

from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.assignment.submission import Submission
from d2lmini.grading.run import notebook
from d2lmini.grading.run.kernel import GraderFailure


def _failing(times: int, calls: list):
    def execute(*args):
        calls.append(args)
        if len(calls) <= times:
            raise GraderFailure("the grading kernel did not start: no ports")
        return notebook.NotebookRun(), None
    return execute


def test_a_kernel_that_did_not_start_once_is_tried_again(monkeypatch, capsys, tmp_path):
    calls = []
    monkeypatch.setattr(notebook, "execute", _failing(1, calls))
    run, kernel = notebook.execute_retried(Submission(Path("a.ipynb"), []), [], tmp_path, Limits())
    assert len(calls) == 2 and kernel is None and run.records == {}
    assert "trying once more" in capsys.readouterr().err


def test_a_kernel_that_did_not_start_twice_is_the_graders_failure(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(notebook, "execute", _failing(2, calls))
    with pytest.raises(GraderFailure, match="did not start"):
        notebook.execute_retried(Submission(Path("a.ipynb"), []), [], tmp_path, Limits())
    assert len(calls) == 2
