"""The capstone of notebook 08: the instructors' solution passes every piece, the loop and the run
on the course corpus (below the trigram, with a curve and a sample); each planted mistake is
named by the piece it is in; stubs are unattempted."""

import importlib.util
import math

import matplotlib
import pytest
import torch
from solution_files import SOLUTIONS

from d2lmini.exercises import capstone
from d2lmini.exercises.capstone_loop import LOOP_BUDGET, initial_params, loop_text, reference_train
from d2lmini.exercises.capstone_pieces import PIECE_CHECKS, _clip_cases
from d2lmini.exercises.capstone_run import SAMPLE_CHARS, SAMPLE_PREFIX, TRIGRAM, show_run
from d2lmini.exercises.coding import NOT_ATTEMPTED

NAMES = (*PIECE_CHECKS, "train")


def load_solution():
    spec = importlib.util.spec_from_file_location("solution_capstone", SOLUTIONS / "capstone.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOLUTION = load_solution()


@pytest.fixture(scope="module")
def pieces():
    return {name: getattr(SOLUTION, name) for name in NAMES}


def stub(*args):
    return None


# --- the instructors' solution --------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_each_piece_of_the_solution_passes_alone(pieces, name):
    verdict = getattr(capstone, f"check_{name}")(pieces[name])
    assert verdict and verdict.message.startswith("Correct!"), verdict.message


@pytest.mark.slow
def test_the_solution_beats_the_trigram_and_shows_a_curve_and_a_sample(pieces, capsys):
    threads = torch.get_num_threads()
    verdict = capstone.check_capstone(**pieces)
    assert verdict and verdict.message.startswith("Correct!"), verdict.message
    run = verdict.run
    assert run.perplexity < run.ladder[TRIGRAM] == capstone.trigram_perplexity()
    assert max(run.norms) > run.theta and run.clipped > 0  # clipping acted in this run
    assert len(run.losses) == len(run.norms) > 1000 and run.losses[-1] < run.losses[0] - 1
    assert run.sample.startswith(SAMPLE_PREFIX) and len(run.sample) == len(SAMPLE_PREFIX) + SAMPLE_CHARS
    assert run.sample in verdict.message and "→ your RNN" in verdict.message
    assert torch.get_num_threads() == threads
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    verdict._ipython_display_()
    assert capsys.readouterr().out.strip() == verdict.message
    curve, ladder = plt.gcf().axes
    assert len(curve.lines[0].get_xdata()) == len(run.losses)  # the loss curve, every minibatch
    assert len(ladder.patches) == len(run.ladder) + 1  # every baseline and the student's RNN
    plt.close("all")


# --- stubs ----------------------------------------------------------------------------------

def test_unattempted_shows_not_attempted_only(capsys):
    verdict = capstone.check_capstone()
    assert not verdict and verdict.message == NOT_ATTEMPTED
    verdict._ipython_display_()
    assert capsys.readouterr().out.strip() == NOT_ATTEMPTED
    assert capstone.check_capstone(**dict.fromkeys(NAMES, stub)).message == NOT_ATTEMPTED


@pytest.mark.parametrize("name", NAMES)
def test_each_stub_is_not_attempted(name):
    verdict = getattr(capstone, f"check_{name}")(stub)
    assert not verdict and verdict.message == NOT_ATTEMPTED


def test_a_piece_left_as_a_stub_is_named(pieces):
    verdict = capstone.check_capstone(**dict(pieces, clip=stub))
    assert not verdict
    assert "is not right yet is clip" in verdict.message and "still returns None" in verdict.message
    verdict = capstone.check_capstone(**dict(pieces, train=stub))
    assert "is not right yet is the loop" in verdict.message and "still returns None" in verdict.message


# --- planted mistakes, each named by its piece ----------------------------------------------

def backward_wrong_transpose(X, state, hiddens, d_outputs, d_final, params):
    """BPTT with dH_{t-1} = dA_t W_hh instead of dA_t W_hh^T."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    steps, batch, num_hiddens = hiddens.shape
    d_from_outputs = (d_outputs @ W_hq.T).reshape(steps, batch, num_hiddens)
    d_W_xh, d_W_hh, d_b_h = torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)
    d_H = d_final
    for t in reversed(range(steps)):
        dA = (d_from_outputs[t] + d_H) * (1 - hiddens[t] ** 2)
        H_prev = state if t == 0 else hiddens[t - 1]
        d_W_hh, d_b_h = d_W_hh + H_prev.T @ dA, d_b_h + dA.sum(0)
        d_W_xh = d_W_xh.index_add(0, X[:, t], dA)
        d_H = dA @ W_hh
    grads = [d_W_xh, d_W_hh, d_b_h, hiddens.reshape(-1, num_hiddens).T @ d_outputs, d_outputs.sum(0)]
    return grads, d_H


def clip_per_element(grads, theta):
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    return [g.clamp(-theta, theta) for g in grads], norm


def clip_first_three(grads, theta):
    """The joint norm of only the first three tensors (the 06-E5 bug): right whenever there are three."""
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads[:3]))
    scale = min(1.0, theta / (norm + 1e-12))
    return [g * scale for g in grads], norm


def perplexity_base_two(logits, targets):
    nats = -torch.log_softmax(logits.double(), dim=1)[torch.arange(len(targets)), targets].mean()
    return 2 ** float(nats)


def perplexity_from_log2(logits, targets):
    probs = torch.softmax(logits.double(), dim=1)[torch.arange(len(targets)), targets]
    return math.exp(float(-torch.log2(probs).mean()))


def minibatches_one_short(indices, batch_size, num_steps):
    """The loop bound off by one: the last minibatch is dropped when it ends exactly at the end."""
    stream = (len(indices) - 1) // batch_size
    xs = indices[: stream * batch_size].reshape(batch_size, stream)
    ys = indices[1 : stream * batch_size + 1].reshape(batch_size, stream)
    for start in range(0, stream - num_steps, num_steps):
        yield xs[:, start : start + num_steps], ys[:, start : start + num_steps]


def minibatches_labels_two_ahead(indices, batch_size, num_steps):
    """Y starts one character too late: each label is the character after the next."""
    stream = (len(indices) - 2) // batch_size
    xs = indices[: stream * batch_size].reshape(batch_size, stream)
    ys = indices[2 : stream * batch_size + 2].reshape(batch_size, stream)
    for start in range(0, stream - num_steps + 1, num_steps):
        yield xs[:, start : start + num_steps], ys[:, start : start + num_steps]


PIECE_MISTAKES = [
    ("backward", backward_wrong_transpose),
    ("clip", clip_per_element),
    ("clip", clip_first_three),
    ("perplexity", perplexity_base_two),
    ("perplexity", perplexity_from_log2),
    ("minibatches", minibatches_one_short),
    ("minibatches", minibatches_labels_two_ahead),
]


@pytest.mark.parametrize("name, wrong", PIECE_MISTAKES, ids=[w.__name__ for _, w in PIECE_MISTAKES])
def test_a_wrong_piece_is_named(pieces, name, wrong):
    alone = getattr(capstone, f"check_{name}")(wrong)
    assert not alone and alone.message.startswith("Not yet."), alone.message
    verdict = capstone.check_capstone(**dict(pieces, **{name: wrong}))
    assert not verdict and verdict.run is None
    named = f"Not yet. The first piece that is not right yet is {name}, "
    assert verdict.message.startswith(named), verdict.message


def test_clipping_is_checked_with_more_than_three_tensors():
    assert max(len(case.args[0]) for case in _clip_cases(torch.device("cpu"))) > 3


def train_not_detached(indices, params, budget):
    """The solution's loop with the gradient carried across minibatches (the state not detached)."""
    W_hh, losses, norms = params[1], [], []
    for _ in range(budget.epochs):
        state = torch.zeros(budget.batch_size, W_hh.shape[0], dtype=W_hh.dtype)
        d_state = torch.zeros_like(state)
        for X, Y in SOLUTION.minibatches(indices, budget.batch_size, budget.num_steps):
            outputs, hiddens = SOLUTION.forward(X, state, params)
            loss, d_outputs = SOLUTION.loss_and_grad(outputs, Y)
            grads, d_state = SOLUTION.backward(X, state, hiddens, d_outputs, d_state, params)
            grads, norm = SOLUTION.clip(grads, budget.theta)
            params = SOLUTION.sgd(params, grads, budget.lr)
            state = hiddens[-1]
            losses.append(float(loss))
            norms.append(norm)
    return params, losses, norms


def train_state_reset(indices, params, budget):
    """The solution's loop with a zero state for every minibatch (the state not carried)."""
    W_hh, losses, norms = params[1], [], []
    for _ in range(budget.epochs):
        for X, Y in SOLUTION.minibatches(indices, budget.batch_size, budget.num_steps):
            state = torch.zeros(budget.batch_size, W_hh.shape[0], dtype=W_hh.dtype)
            outputs, hiddens = SOLUTION.forward(X, state, params)
            loss, d_outputs = SOLUTION.loss_and_grad(outputs, Y)
            grads, _ = SOLUTION.backward(X, state, hiddens, d_outputs, torch.zeros_like(state), params)
            grads, norm = SOLUTION.clip(grads, budget.theta)
            params = SOLUTION.sgd(params, grads, budget.lr)
            losses.append(float(loss))
            norms.append(norm)
    return params, losses, norms


def train_update_then_clip(indices, params, budget):
    """The solution's loop that updates with the unclipped gradient."""
    W_hh, losses, norms = params[1], [], []
    for _ in range(budget.epochs):
        state = torch.zeros(budget.batch_size, W_hh.shape[0], dtype=W_hh.dtype)
        for X, Y in SOLUTION.minibatches(indices, budget.batch_size, budget.num_steps):
            outputs, hiddens = SOLUTION.forward(X, state, params)
            loss, d_outputs = SOLUTION.loss_and_grad(outputs, Y)
            grads, _ = SOLUTION.backward(X, state, hiddens, d_outputs, torch.zeros_like(state), params)
            _, norm = SOLUTION.clip(grads, budget.theta)
            params = SOLUTION.sgd(params, grads, budget.lr)
            state = hiddens[-1]
            losses.append(float(loss))
            norms.append(norm)
    return params, losses, norms


def train_state_kept_across_passes(indices, params, budget):
    """The solution's loop with one zero state before the first pass only."""
    W_hh, losses, norms = params[1], [], []
    state = torch.zeros(budget.batch_size, W_hh.shape[0], dtype=W_hh.dtype)
    for _ in range(budget.epochs):
        for X, Y in SOLUTION.minibatches(indices, budget.batch_size, budget.num_steps):
            outputs, hiddens = SOLUTION.forward(X, state, params)
            loss, d_outputs = SOLUTION.loss_and_grad(outputs, Y)
            grads, _ = SOLUTION.backward(X, state, hiddens, d_outputs, torch.zeros_like(state), params)
            grads, norm = SOLUTION.clip(grads, budget.theta)
            params = SOLUTION.sgd(params, grads, budget.lr)
            state = hiddens[-1]
            losses.append(float(loss))
            norms.append(norm)
    return params, losses, norms


@pytest.mark.parametrize("wrong, words", [
    (train_not_detached, "the state is not detached"),
    (train_state_reset, "every minibatch starts from a zero state"),
    (train_state_kept_across_passes, "from the end of one pass"),
    (train_update_then_clip, "The loss of minibatch 1 ("),
])
def test_a_wrong_loop_is_named(pieces, wrong, words):
    """The loop check is a short run on a random text; the solution's loop passes the same check."""
    alone = capstone.check_train(wrong)
    assert not alone and words in alone.message, alone.message
    verdict = capstone.check_capstone(**dict(pieces, train=wrong))
    assert not verdict and verdict.run is None
    assert verdict.message.startswith("Not yet. The first piece that is not right yet is the loop, "
                                      "train(indices, params, budget): ")
    assert words in verdict.message
    assert capstone.check_train(pieces["train"])  # the same check passes the right loop


def test_the_loop_check_runs_where_clipping_acts():
    indices, budget = loop_text(), LOOP_BUDGET
    _, losses, norms = reference_train(indices, initial_params(12, budget), budget)
    assert max(norms) > budget.theta and min(norms) < budget.theta  # it acts, and not always
    assert len(losses) == budget.epochs * 15


def test_a_loop_that_fails_only_on_the_course_corpus_is_named(pieces):
    def train_for_short_texts(indices, params, budget):
        assert len(indices) < 10_000, "written for the check's text only"
        return pieces["train"](indices, params, budget)

    verdict = capstone.check_capstone(**dict(pieces, train=train_for_short_texts))
    assert not verdict
    assert verdict.message.startswith("Not yet. Every piece and the loop passed their checks, but in the run "
                                      "on the course corpus train: ")
    assert "AssertionError" in verdict.message


def test_a_perplexity_wrong_only_on_long_texts_is_named(pieces):
    """The final score uses the student's perplexity and must agree with exp of the mean cross-entropy."""
    def perplexity_for_short_texts(logits, targets):
        return 1.0 if len(targets) > 1000 else pieces["perplexity"](logits, targets)

    verdict = capstone.check_capstone(**dict(pieces, perplexity=perplexity_for_short_texts),
                                      budget=capstone.Budget(epochs=1))
    assert not verdict and "on the course corpus perplexity: " in verdict.message


def test_the_run_is_drawn_without_a_figure_left_open():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    run = capstone.CapstoneRun([3.0, 2.5, 2.0], [2.0, 0.5, 0.4], 6.0, "the river ...",
                               {"uniform": 27.0, TRIGRAM: 6.6}, 1.0, 1.0)
    show_run(run)
    assert run.clipped == 1 and len(plt.gcf().axes) == 2
    plt.close("all")


def forward_with_torch_rnn(X, state, params):
    W_xh, W_hh, b_h, W_hq, b_q = params
    rnn = torch.nn.RNN(W_xh.shape[1], W_hh.shape[0], nonlinearity="tanh", bias=False)
    hiddens, _ = rnn(W_xh[X.T], state[None])
    return hiddens.reshape(-1, W_hh.shape[0]) @ W_hq + b_q, hiddens


def loss_with_torch_cross_entropy(outputs, Y):
    targets = Y.T.reshape(-1)
    d_outputs = torch.softmax(outputs, dim=1)
    d_outputs[torch.arange(len(targets)), targets] -= 1
    return torch._C._nn.cross_entropy_loss(outputs, targets, None, 1, -100, 0.0), d_outputs / len(targets)


def backward_by_autograd(X, state, hiddens, d_outputs, d_final, params):
    leaves = [p.clone().requires_grad_(True) for p in (*params, state)]
    with torch.enable_grad():
        outputs, hidden_states = SOLUTION.forward(X, leaves[-1], leaves[:-1])
        total = (outputs * d_outputs).sum() + (hidden_states[-1] * d_final).sum()
        *grads, d_state = torch.autograd.grad(total, leaves)
    return grads, d_state


@pytest.mark.parametrize("name, shortcut, words", [
    ("forward", forward_with_torch_rnn, "not with torch's built-in RNN"),
    ("loss_and_grad", loss_with_torch_cross_entropy, "not with torch's"),
    ("backward", backward_by_autograd, "no autograd"),
])
def test_torch_shortcuts_are_refused(name, shortcut, words):
    verdict = getattr(capstone, f"check_{name}")(shortcut)
    assert not verdict and words in verdict.message, verdict.message


@pytest.mark.parametrize("returned, words", [
    (None, "still returns None"),
    ((1, 2), "three things"),
    (([], ["not a number"], []), "lists of numbers"),
    (([torch.zeros(2).as_subclass(torch.nn.Buffer)], [], []), "five plain tensors"),
])
def test_a_loop_returning_something_else_is_told_what(pieces, returned, words):
    verdict = capstone.check_capstone(**dict(pieces, train=lambda *args: returned))
    assert not verdict and "the loop" in verdict.message and words in verdict.message, verdict.message


def forward_one_hot(X, state, params):
    """The textbook form: one-hot inputs, one matmul per step."""
    W_xh, W_hh, b_h, W_hq, b_q = params
    H, hiddens, outputs = state, [], []
    for X_t in torch.nn.functional.one_hot(X.T, W_xh.shape[0]).to(W_xh.dtype):
        H = torch.tanh(X_t @ W_xh + H @ W_hh + b_h)
        hiddens.append(H)
        outputs.append(H @ W_hq + b_q)
    return torch.cat(outputs), torch.stack(hiddens)


def loss_and_grad_log_softmax(outputs, Y):
    targets = Y.T.reshape(-1)
    log_probs = torch.log_softmax(outputs.double(), dim=1)
    one_hot = torch.nn.functional.one_hot(targets, outputs.shape[1]).double()
    loss = -(log_probs * one_hot).sum() / len(targets)
    return float(loss), ((log_probs.exp() - one_hot) / len(targets)).to(outputs.dtype)


def clip_with_linalg(grads, theta):
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    return [g * torch.clamp(theta / norm, max=1.0) for g in grads], norm


def train_written_otherwise(indices, params, budget):
    """A correct loop from differently written pieces (one-hot forward, log_softmax, linalg norm)."""
    W_hh, losses, norms = params[1], [], []
    for _ in range(budget.epochs):
        state = torch.zeros(budget.batch_size, W_hh.shape[0], dtype=W_hh.dtype)
        for X, Y in SOLUTION.minibatches(indices, budget.batch_size, budget.num_steps):
            outputs, hiddens = forward_one_hot(X, state, params)
            loss, d_outputs = loss_and_grad_log_softmax(outputs, Y)
            grads, _ = SOLUTION.backward(X, state, hiddens, d_outputs, torch.zeros_like(state), params)
            grads, norm = clip_with_linalg(grads, budget.theta)
            params = tuple(p - budget.lr * g for p, g in zip(params, grads, strict=True))
            state = hiddens[-1]
            losses.append(torch.tensor(loss))
            norms.append(norm)
    return params, losses, norms


def test_correct_pieces_written_otherwise_pass():
    for name, fn in [("forward", forward_one_hot), ("loss_and_grad", loss_and_grad_log_softmax),
                     ("clip", clip_with_linalg), ("train", train_written_otherwise)]:
        verdict = getattr(capstone, f"check_{name}")(fn)
        assert verdict, f"{name}: {verdict.message}"
