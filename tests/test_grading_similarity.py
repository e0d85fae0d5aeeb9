"""Graded functions compared with classmates' (d2lmini.grading.judging.similarity) and with the package's and
`solutions/` (d2lmini.grading.judging.evidence): copies found, the rest left alone, at a cost linear per pair.

The functions are the instructors' solutions (solutions/notebook_NN.py), the package's, copies of
them as a student would disguise one, and other correct solutions written another way.
"""

import csv
import io
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmini.grading.judging.evidence import (
    SIMILAR,
    attempted,
    canonical_tokens,
    fingerprint,
    graded_sources,
    known_functions,
    likeness,
    similar,
    stub_source,
    submitted_function,
)
from d2lmini.grading.judging.similarity import alike_pairs, csv_text

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
    assert len(alike_pairs(sources, threshold=0.0)) == 2  # they are compared: only not alike enough


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


# Copies of solutions/notebook_05.py:bptt, restructured as a student hides one (each one way).
BPTT_REORDERED = '''
def bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    steps, batch, num_hiddens = hiddens.shape
    vocab_size = W_hq.shape[1]
    d_from_next = torch.zeros(batch, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    db_h = torch.zeros(num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    dW_hh = torch.zeros(num_hiddens, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    dW_xh = torch.zeros(vocab_size, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    for t in reversed(range(steps)):
        dH = d_from_outputs[t] + d_from_next
        dA = dH * (1 - hiddens[t] ** 2)
        H_prev = hiddens[t - 1] if t > 0 else state
        db_h = db_h + dA.sum(0)
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        dW_hh = dW_hh + H_prev.T @ dA
        d_from_next = dA @ W_hh.T
    return dW_xh, dW_hh, db_h
'''

BPTT_DEAD_CODE = '''
def bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    steps, batch, num_hiddens = hiddens.shape
    debug = False
    vocab_size = W_hq.shape[1]
    d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    dW_xh = torch.zeros(vocab_size, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    dW_hh = torch.zeros(num_hiddens, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    db_h = torch.zeros(num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    d_from_next = torch.zeros(batch, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    for t in reversed(range(steps)):
        dH = d_from_outputs[t] + d_from_next
        dA = dH * (1 - hiddens[t] ** 2)
        if debug:
            print(t, dA.norm())
        H_prev = hiddens[t - 1] if t > 0 else state
        dW_hh = dW_hh + H_prev.T @ dA
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        db_h = db_h + dA.sum(0)
        d_from_next = dA @ W_hh.T
    return dW_xh, dW_hh, db_h
'''

BPTT_TEMPORARIES = '''
def bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    steps, batch, num_hiddens = hiddens.shape
    vocab_size = W_hq.shape[1]
    projected = d_outputs @ W_hq.T
    d_from_outputs = projected.reshape(steps, batch, num_hiddens)
    dW_xh = torch.zeros(vocab_size, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    dW_hh = torch.zeros(num_hiddens, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    db_h = torch.zeros(num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    d_from_next = torch.zeros(batch, num_hiddens, dtype=hiddens.dtype, device=hiddens.device)
    for t in reversed(range(steps)):
        dH = d_from_outputs[t] + d_from_next
        slope = 1 - hiddens[t] ** 2
        dA = dH * slope
        H_prev = hiddens[t - 1] if t > 0 else state
        dW_hh = dW_hh + H_prev.T @ dA
        dW_xh = dW_xh.index_add(0, X[:, t], dA)
        db_h = db_h + dA.sum(0)
        d_from_next = dA @ W_hh.T
    return dW_xh, dW_hh, db_h
'''

# A copy of the package's d2lmini/rnn.py:rnn_forward as notebook 04's `forward`: names, order, temporaries.
FORWARD_FROM_PACKAGE = '''
def forward(X, state, W_xh, W_hh, b_h, W_hq, b_q):
    Hs = []
    h = state
    terms = F.embedding(X.T, W_xh) + b_h
    for term in terms:
        h = torch.tanh(torch.addmm(term, h, W_hh))
        Hs.append(h)
    stacked = torch.stack(Hs)
    stacked = stacked.reshape(-1, W_hh.shape[0])
    return torch.addmm(b_q, stacked, W_hq), h
'''

# Independent solutions of the exercises of solutions/, each written in a style of its own.
BPTT_OWN = '''
def bptt(X, state, hiddens, d_outputs, W_hh, W_hq):
    T = hiddens.shape[0]
    B = hiddens.shape[1]
    grads_h = d_outputs.reshape(T, B, -1) @ W_hq.T
    gW_hh = torch.zeros_like(W_hh)
    gb = torch.zeros(W_hh.shape[0], dtype=W_hh.dtype)
    gW_xh = torch.zeros(W_hq.shape[1], W_hh.shape[0], dtype=W_hh.dtype)
    carry = 0
    t = T - 1
    while t >= 0:
        g = (grads_h[t] + carry) * (1 - hiddens[t] * hiddens[t])
        prev = state if t == 0 else hiddens[t - 1]
        gW_hh += prev.T @ g
        gb += g.sum(dim=0)
        for b in range(B):
            gW_xh[X[b, t]] += g[b]
        carry = g @ W_hh.T
        t -= 1
    return gW_xh, gW_hh, gb
'''

MASKED_OWN = '''
def masked_loss_and_grad(outputs, Y, lengths):
    batch, steps = Y.shape
    mask = torch.zeros(steps, batch)
    for i in range(batch):
        mask[: int(lengths[i]), i] = 1.0
    mask = mask.reshape(-1)
    targets = Y.T.reshape(-1)
    probs = torch.softmax(outputs, dim=1)
    picked = probs[torch.arange(targets.shape[0]), targets]
    count = mask.sum()
    loss = -(torch.log(picked) * mask).sum() / count
    grad = probs.clone()
    grad[torch.arange(targets.shape[0]), targets] = grad[torch.arange(targets.shape[0]), targets] - 1
    grad = grad * mask.unsqueeze(1) / count
    return loss, grad
'''

KN_OWN = '''
def kn_bigram(text, context, char, discount=0.75):
    counts = {}
    for a, b in zip(text, text[1:]):
        counts[(a, b)] = counts.get((a, b), 0) + 1
    contexts_of = {}
    for a, b in counts:
        contexts_of[b] = contexts_of.get(b, 0) + 1
    p_cont = contexts_of.get(char, 0) / len(counts)
    after = [(b, n) for (a, b), n in counts.items() if a == context]
    total = sum(n for _, n in after)
    if not total:
        return p_cont
    seen = dict(after).get(char, 0)
    return max(seen - discount, 0) / total + discount * len(after) / total * p_cont
'''

LSTM_BACKWARD_OWN = '''
def lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C):
    n = C.shape[1]
    i = gates[:, :n]
    f = gates[:, n:2 * n]
    g = gates[:, 2 * n:3 * n]
    o = gates[:, 3 * n:]
    tc = torch.tanh(C)
    dC_total = dC + dH * o * (1 - tc * tc)
    d_i = dC_total * g * i * (1 - i)
    d_f = dC_total * C_prev * f * (1 - f)
    d_g = dC_total * i * (1 - g * g)
    d_o = dH * tc * o * (1 - o)
    dA = torch.cat((d_i, d_f, d_g, d_o), 1)
    dX = dA @ W_x.T
    dH_prev = dA @ W_h.T
    dW_x = X.T @ dA
    dW_h = H_prev.T @ dA
    db = dA.sum(0)
    return dX, dH_prev, dC_total * f, dW_x, dW_h, db
'''


def tokens(text: str) -> tuple[str, ...]:
    return canonical_tokens(kept(text))


def alike(a: str, b: str) -> float:
    """The likeness of two kept sources (0.0 where one is not compared)."""
    fa, fb = fingerprint(canonical_tokens(a)), fingerprint(canonical_tokens(b))
    return likeness(fa, fb) if fa is not None and fb is not None else 0.0


@pytest.mark.parametrize("copy", [BPTT_REORDERED, BPTT_DEAD_CODE, BPTT_TEMPORARIES],
                         ids=["reordered", "dead code", "temporaries"])
def test_a_restructured_copy_is_found_against_the_classmate_and_the_solution(copy):
    # difflib, before: reordered 0.787 (missed); dead code 0.961, temporaries 0.968
    original = solution("05", "bptt")
    pairs = alike_pairs(class_of(ada={"05:bptt": {"fn": original}}, bob={"05:bptt": {"fn": kept(copy)}}))
    assert [(p.a, p.b) for p in pairs] == [("ada", "bob")] and pairs[0].ratio >= SIMILAR
    assert "solutions/notebook_05.py:bptt" in dict(similar(kept(copy), known_functions()))


def test_a_restructured_copy_of_the_package_is_found():
    # difflib on the text, before: 0.766, not listed
    found = dict(similar(kept(FORWARD_FROM_PACKAGE), known_functions()))
    assert found.get("d2lmini/rnn.py:rnn_forward", 0) >= SIMILAR


UNRELATED = {  # (function a, its source), (function b, its source): what difflib gave on the tokens
    "bptt, own style": (("05", "bptt"), BPTT_OWN),  # 0.558
    "masked loss, own style": (("05", "masked_loss_and_grad"), MASKED_OWN),  # 0.500
    "Kneser-Ney, own style": (("07", "kn_bigram"), KN_OWN),  # 0.669
    "LSTM backward, own style": (("09", "lstm_step_backward"), LSTM_BACKWARD_OWN),  # 0.558
    "bptt and leaky bptt": (("05", "bptt"), ("05", "leaky_bptt")),  # 0.583
    "GRU and LSTM cells": (("09", "gru_cell"), ("09", "lstm_cell")),  # 0.732
    "bptt and masked loss": (("05", "bptt"), ("05", "masked_loss_and_grad")),  # 0.397
    "masked loss and LSTM backward": (("05", "masked_loss_and_grad"), ("09", "lstm_step_backward")),
    "two own styles": (BPTT_OWN, MASKED_OWN),  # 0.239
}


def _source(which) -> str:
    return solution(*which) if isinstance(which, tuple) else kept(which)


@pytest.mark.parametrize("a, b", UNRELATED.values(), ids=UNRELATED.keys())
def test_unrelated_functions_of_similar_length_are_not_paired(a, b):
    first, second = _source(a), _source(b)
    assert alike(first, second) < 0.7 < SIMILAR  # measured at most 0.591 (bptt and leaky bptt)
    assert alike(first, second) == alike(second, first)


def long_function(seed: int, statements: int) -> str:
    """A long function of torch statements drawn at random: two seeds give two unrelated functions."""
    rnd = random.Random(seed)
    names = [f"v{i}" for i in range(40)]
    ops = ["torch.tanh", "torch.sigmoid", "torch.relu", "torch.exp", "F.softmax", "torch.sqrt"]
    lines = ["def f(X, W, U, b):"]
    for _ in range(statements):
        a, c, d = rnd.sample(names, 3)
        k, m = rnd.randint(0, 99), rnd.randint(1, 99)  # constants, as real statements have theirs
        lines.append(rnd.choice([
            f"    {a} = {rnd.choice(ops)}({c} @ W[{k}] + {d} @ U * {m} + b)",
            f"    {a} = {c}.{rnd.choice(['sum', 'mean'])}(dim={k % 2}) * {m} + {d}[{k}]",
            f"    {a} = torch.zeros({k}, {m}) + {c}",
            f"    {a} = {c}[{k}:{k + m}] - {d} * {m}",
            f"    {a} = {rnd.choice(ops)}({c}) + {k / 100:.2f} * {d} ** {m}",
        ]))
    return "\n".join([*lines, "    return v0\n"])


def _profiled_events(sources: dict) -> int:
    """How many Python and C calls `alike_pairs(sources)` makes, every pair compared in full."""
    count = 0

    def count_event(frame, event, arg):
        nonlocal count
        count += 1

    sys.setprofile(count_event)
    try:
        alike_pairs(sources, threshold=0.0)
    finally:
        sys.setprofile(None)
    return count


def test_the_cost_of_a_pair_grows_linearly_with_the_functions_length():
    # difflib, before: 4 times the calls for functions twice as long
    def events(statements: int) -> int:
        fingerprint.cache_clear()
        return _profiled_events({name: {"05:bptt": {"fn": long_function(seed, statements)}}
                                 for seed, name in enumerate(("ada", "bob"))})

    assert events(300) < 2.6 * events(150)


def test_two_8000_token_functions_and_a_class_of_100_fingerprint_each_function_once():
    pair = {name: {"05:bptt": {"fn": long_function(seed, 700)}} for seed, name in enumerate(("ada", "bob"))}
    assert len(canonical_tokens(pair["ada"]["05:bptt"]["fn"])) > 8000
    class_ = {f"s{i:03}": {"05:bptt": {"fn": long_function(i, 25)}} for i in range(100)}
    for sources in (pair, class_):
        fingerprint.cache_clear()
        pairs = alike_pairs(sources, threshold=0.0)
        assert len(pairs) == len(sources) * (len(sources) - 1) // 2
        assert fingerprint.cache_info().misses == len(sources)
        assert max(p.ratio for p in pairs) < SIMILAR  # unrelated functions: no pair
    # benchmarks/similarity.py times them (difflib: 90 s for one pair of 8,000 tokens)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text())
def test_any_source_text_gives_a_likeness_in_0_1_or_is_skipped(a, b):
    for text in (a, b, f"def f(x):\n    {a}\n", f"def f(x):\n    {a}\n    {b}\n"):
        for _where, ratio in similar(text, {"other": f"def g(y):\n    {b}\n"}):
            assert 0.0 <= ratio <= 1.0
    assert 0.0 <= alike(f"def f(x):\n    {a}\n", f"def g(y):\n    {b}\n") <= 1.0
