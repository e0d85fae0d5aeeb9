"""Classmates' graded functions compared (d2lmini.grading.similarity): copies found, the rest left alone.

The functions are the instructors' solutions (solutions/notebook_NN.py), copies of them as a
student would disguise one, and other correct solutions written another way.
"""

import csv
import io
from pathlib import Path

from d2lmini.grading.evidence import SIMILAR, submitted_function
from d2lmini.grading.similarity import (
    alike_pairs,
    attempted,
    canonical_tokens,
    csv_text,
    graded_sources,
    stub_source,
)

ROOT = Path(__file__).resolve().parents[1]


def solution(notebook: str, name: str) -> str:
    """The instructors' `def name` of solutions/notebook_NN.py, normalised as the grader keeps it."""
    return submitted_function([(ROOT / "solutions" / f"notebook_{notebook}.py").read_text("utf-8")], name)


def kept(text: str) -> str:
    """A function as the grader keeps it from a notebook's cell (no comments or docstrings)."""
    return submitted_function([text], text.strip().split("(")[0].removeprefix("def "))


RENAMED_COPY = '''
def all_states(toks, A, B, c):
    """My own loop over time."""
    # state of every sequence
    state = torch.zeros(toks.shape[0],   B.shape[0], dtype=B.dtype, device=B.device)

    collected = [ ]
    for column in toks.T:   # one step
        state = torch.tanh(A[column] + state @ B + c)
        collected.append(state)
    return torch.stack(collected)
'''

ONE_HOT_LOOP = '''
def all_states(tokens, W_xh, W_hh, b_h):
    batch, steps = tokens.shape
    hidden = torch.zeros(batch, W_hh.shape[1])
    out = torch.empty(steps, batch, W_hh.shape[1])
    for t in range(steps):
        x = torch.nn.functional.one_hot(tokens[:, t], W_xh.shape[0]).float()
        hidden = torch.tanh(x @ W_xh + hidden @ W_hh + b_h)
        out[t] = hidden
    return out
'''

STABLE_BY_HAND = '''
def perplexity(logits, targets):
    m = logits.max(dim=1, keepdim=True).values
    lse = m.squeeze(1) + torch.log(torch.exp(logits - m).sum(dim=1))
    nll = lse - logits[torch.arange(len(targets)), targets]
    return math.exp(nll.mean().item())
'''


def class_of(**students: dict[str, dict[str, str]]) -> dict:
    return students


def test_a_copy_with_other_names_spacing_comments_and_docstring_is_flagged():
    original = solution("01", "all_states")
    assert canonical_tokens(original) == canonical_tokens(kept(RENAMED_COPY))
    pairs = alike_pairs(class_of(ada={"01:all_states": {"fn": original}},
                                 bob={"01:all_states": {"fn": kept(RENAMED_COPY)}}))
    assert [(p.exercise, p.function, p.a, p.b, p.ratio) for p in pairs] == [
        ("01:all_states", "fn", "ada", "bob", 1.0)]


def test_independent_correct_solutions_written_differently_are_not_flagged():
    sources = class_of(
        ada={"01:all_states": {"fn": solution("01", "all_states")}, "07:perplexity_function":
             {"fn": solution("07", "perplexity")}},
        bob={"01:all_states": {"fn": kept(ONE_HOT_LOOP)}, "07:perplexity_function":
             {"fn": kept(STABLE_BY_HAND)}},
    )
    assert alike_pairs(sources) == []
    assert alike_pairs(sources, threshold=0.4)  # they are compared: only not alike enough


def test_the_released_stub_and_a_body_that_does_nothing_are_never_compared():
    stub = stub_source("01_hidden_state", "all_states")
    assert stub is not None and not attempted(stub, stub)
    cells = ["def all_states(tokens, W_xh, W_hh, b_h):\n    # my code here\n    return None\n"]
    assert graded_sources("01_hidden_state", cells, {"fn": "all_states"}) == {}
    for nothing in ("pass", "...", '"""To do."""\n    return'):  # whatever the stub was
        assert not attempted(kept(f"def all_states(tokens, W_xh, W_hh, b_h):\n    {nothing}\n"))
    starter = "def f(X):\n    n = X.shape[0] + 1\n    out = torch.zeros(n, n)\n    return None\n"
    renamed = "def f(Y):\n    size = Y.shape[0] + 1\n    z = torch.zeros(size, size)\n    return None\n"
    assert not attempted(kept(renamed), kept(starter))  # the starter code every student got, renamed
    class_ = {name: {"01:all_states": {"fn": kept(cells[0])}} for name in ("ada", "bob", "cy")}
    assert alike_pairs(class_) == []
    solved = [(ROOT / "solutions" / "notebook_01.py").read_text("utf-8")]
    expected = {"fn": solution("01", "all_states")}
    assert graded_sources("01_hidden_state", solved, {"fn": "all_states"}) == expected


def test_a_student_is_never_paired_with_themself_and_each_pair_is_listed_once():
    same = solution("01", "all_states")
    sources = {name: {"01:all_states": {"fn": same}, "08:capstone": {"forward": same}}
               for name in ("ada", "bob", "cy")}
    pairs = alike_pairs(sources)
    assert all(p.a < p.b for p in pairs)
    assert sorted((p.exercise, p.a, p.b) for p in pairs) == sorted(
        (exercise, a, b) for exercise in ("01:all_states", "08:capstone")
        for a, b in (("ada", "bob"), ("ada", "cy"), ("bob", "cy")))
    rows = list(csv.reader(io.StringIO(csv_text(pairs))))
    assert rows[0] == ["exercise", "function", "student_a", "student_b", "ratio"] and len(rows) == 7


def test_a_class_of_300_renamed_copies_in_two_groups_gives_the_pairs_of_each_group():
    base = solution("01", "all_states")
    sources = {f"s{i:03}": {"01:all_states": {"fn": base.replace("states", f"states_{i % 7}") if i % 2 else
                                              kept(ONE_HOT_LOOP).replace("hidden", f"h{i % 5}")}}
               for i in range(300)}
    pairs = alike_pairs(sources)
    assert len(pairs) == 150 * 149 // 2 + 150 * 149 // 2 and all(p.ratio >= SIMILAR for p in pairs)
