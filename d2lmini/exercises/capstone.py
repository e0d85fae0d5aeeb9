"""The capstone of notebook 07: the student's own pieces from notebooks 01-07 train one RNN.

`check_capstone` first checks each piece on random inputs with the self-check of the
exercise that asked for it (so a piece is judged exactly as it was there), in the order the
course built them, and names the first one that differs. When all five pass, it trains a
small RNN twice on the bundled corpus, with the same seed and budget: once assembled from
the student's pieces, once from the package's, and compares the validation perplexities.
Both runs use float64 on the CPU, so rounding cannot hide or fake a difference.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from d2lmini.batching import sequential_batches
from d2lmini.bptt import PARAM_NAMES, hidden_gradients, sequence_loss_and_grad, weight_gradients
from d2lmini.corpus import load_corpus
from d2lmini.exercises import Verdict
from d2lmini.exercises.bptt import check_bptt
from d2lmini.exercises.clipping import check_clip_function
from d2lmini.exercises.coding import NOT_ATTEMPTED
from d2lmini.exercises.hidden_state import check_rnn_step
from d2lmini.exercises.perplexity import check_perplexity_function
from d2lmini.exercises.rnn_scratch import check_forward
from d2lmini.metrics import perplexity_from_logits
from d2lmini.rnn import init_rnn_params, rnn_forward, rnn_step
from d2lmini.train import clip_gradients

# Relative difference allowed between the two runs' validation perplexities. Two correct
# implementations differ only by rounding, which 150 SGD steps amplify (measured: 1.1e-7
# between solutions/capstone.py and the package; 1.4e-6 with the outputs rounded to float32);
# gradients 0.1% too small move it by 2% (tests/test_capstone.py).
TOLERANCE = 1e-4


@dataclass(frozen=True)
class Budget:
    """The capstone's training run: small enough to finish within a self-check on a CPU."""

    num_hiddens: int = 32
    batch_size: int = 16
    num_steps: int = 16
    minibatches: int = 150
    lr: float = 1.0
    theta: float = 1.0
    valid_chars: int = 4000
    seed: int = 0


# (keyword, the exercise that asked for it, its self-check), in the order the course builds them.
PIECES = (
    ("rnn_step", "notebook 01, rnn_step(X_t, H, W_xh, W_hh, b_h)", check_rnn_step),
    ("forward", "notebook 04, forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)", check_forward),
    ("backward", "notebook 05, bptt(X, state, hiddens, d_outputs, W_hh, W_hq)", check_bptt),
    ("clip", "notebook 06, my_clip(grads, theta)", check_clip_function),
    ("perplexity", "notebook 07, perplexity(logits, targets)", check_perplexity_function),
)


def package_pieces() -> dict[str, Callable]:
    """Return the package's five pieces, with the signatures of the student's (notebook 07's capstone)."""
    return {"rnn_step": rnn_step, "forward": rnn_forward, "backward": _package_backward,
            "clip": _package_clip, "perplexity": perplexity_from_logits}


def _package_backward(X, state, hiddens, d_outputs, W_hh, W_hq):
    cache = {"X": X, "state": state, "hiddens": hiddens, "W_hh": W_hh, "W_hq": W_hq,
             "W_xh": torch.empty(W_hq.shape[1], W_hh.shape[0], dtype=W_hh.dtype, device=W_hh.device)}
    _, dA_all, _ = hidden_gradients(d_outputs, None, cache)
    grads = weight_gradients(d_outputs, dA_all, cache)
    return grads["W_xh"], grads["W_hh"], grads["b_h"]


def _package_clip(grads, theta):
    holders = [torch.zeros_like(g) for g in grads]
    for holder, g in zip(holders, grads, strict=True):
        holder.grad = g.clone()
    clip_gradients(holders, theta)
    return [holder.grad for holder in holders]


def first_failing_piece(pieces: dict[str, Callable]) -> str | None:
    """Return what is wrong with the first piece that fails its exercise's check, or None (notebook 07).

    Every piece still returning None gives `NOT_ATTEMPTED`.
    """
    verdicts = [(name, where, check(pieces.get(name), quiet=True)) for name, where, check in PIECES]
    if all(v.message.startswith("Not attempted") for _, _, v in verdicts):
        return NOT_ATTEMPTED
    for name, where, verdict in verdicts:
        if not verdict:
            problem = verdict.message.removeprefix("Not yet. ")
            if problem.startswith("Not attempted"):
                problem = "it still returns None."
            return f"The first piece that differs is {name} ({where}): {problem}"
    return None


def hidden_states_by_steps(step, X, state, W_xh, W_hh, b_h) -> torch.Tensor:
    """Return all hidden states (steps, batch, hiddens), running `step` once per time step (notebook 07)."""
    inputs = F.one_hot(X.T, W_xh.shape[0]).to(W_xh.dtype)
    H, hiddens = state, []
    for X_t in inputs:
        H = step(X_t, H, W_xh, W_hh, b_h)
        hiddens.append(H)
    return torch.stack(hiddens)


def train_step(pieces, params: dict, X, Y, state, theta: float, lr: float):
    """One SGD step of the assembled model; return (new params, the final state to carry) (notebook 07)."""
    p = [params[n] for n in PARAM_NAMES]
    hiddens = hidden_states_by_steps(pieces["rnn_step"], X, state, *p[:3])
    outputs, final_state = pieces["forward"](X, state, *p)
    _, d_outputs = sequence_loss_and_grad(outputs, Y)
    d_W_xh, d_W_hh, d_b_h = pieces["backward"](X, state, hiddens, d_outputs, params["W_hh"], params["W_hq"])
    d_W_hq = hiddens.reshape(-1, hiddens.shape[-1]).T @ d_outputs  # the output layer: one matmul
    grads = pieces["clip"]([d_W_xh, d_W_hh, d_b_h, d_W_hq, d_outputs.sum(0)], theta)
    new = {n: params[n] - lr * g for n, g in zip(PARAM_NAMES, grads, strict=True)}
    return new, final_state


def train_and_evaluate(pieces: dict[str, Callable], budget: Budget = Budget()) -> float:
    """Train the RNN assembled from `pieces` on the bundled corpus; return its validation perplexity (07).

    Plain SGD with clipping, sequential minibatches with the state carried (detached: every
    tensor here is new each step), float64 on the CPU, everything seeded by `budget.seed`.
    """
    corpus = load_corpus("bundled")
    train_idx, valid_idx = corpus.split()
    generator = torch.Generator().manual_seed(budget.seed)
    params = {n: p.double() for n, p in init_rnn_params(len(corpus.vocab), budget.num_hiddens, "xavier",
                                                        generator).items()}
    batches = sequential_batches(train_idx, budget.batch_size, budget.num_steps, generator)
    state = torch.zeros(budget.batch_size, budget.num_hiddens, dtype=torch.float64)
    for _, (X, Y) in zip(range(budget.minibatches), batches, strict=False):
        params, state = train_step(pieces, params, X, Y, state, budget.theta, budget.lr)
    streams = 8
    text = valid_idx[: budget.valid_chars + 1]
    length = (len(text) - 1) // streams
    X = text[: streams * length].reshape(streams, length)
    Y = text[1 : streams * length + 1].reshape(streams, length)
    start = torch.zeros(streams, budget.num_hiddens, dtype=torch.float64)
    outputs, _ = pieces["forward"](X, start, *(params[n] for n in PARAM_NAMES))
    return float(pieces["perplexity"](outputs, Y.T.reshape(-1)))


def check_capstone(rnn_step=None, forward=None, backward=None, clip=None, perplexity=None,
                   quiet: bool = False, budget: Budget = Budget()) -> Verdict:
    """Capstone of notebook 07: check the five pieces, then train with them and compare with the package.

    Prints (unless `quiet`) and returns a Verdict: "Not attempted yet" while every piece
    returns None; the first piece that fails its own check; a training run that fails or
    ends at a different validation perplexity (relative difference above `TOLERANCE`); or
    "Correct!" with both perplexities.
    """
    pieces = {"rnn_step": rnn_step, "forward": forward, "backward": backward, "clip": clip,
              "perplexity": perplexity}
    problem = first_failing_piece(pieces)
    if problem is None:
        problem, mine, reference = _compare_training(pieces, budget)
    if problem == NOT_ATTEMPTED:
        result = Verdict(False, NOT_ATTEMPTED)
    elif problem:
        result = Verdict(False, "Not yet. " + problem)
    else:
        result = Verdict(True, f"Correct! Your RNN, built from your own five pieces, trained for "
                               f"{budget.minibatches} minibatches and reached validation perplexity "
                               f"{mine:.4f}; the package's model, same seed and budget: {reference:.4f}.")
    if not quiet:
        print(result.message)
    return result


def _compare_training(pieces, budget: Budget) -> tuple[str | None, float, float]:
    # One thread: on two busy cores torch's second thread makes these many small steps
    # ten times slower (see the lab, README "Why these defaults"). Restored afterwards.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        reference = train_and_evaluate(package_pieces(), budget)
        mine = train_and_evaluate(pieces, budget)
    except Exception as error:  # the student's pieces may fail in any way once assembled
        return (f"Each piece passed its check, but training with them raised "
                f"{type(error).__name__}: {error}", math.nan, math.nan)
    finally:
        torch.set_num_threads(threads)
    if not abs(mine - reference) <= TOLERANCE * reference:
        return (f"Each piece passed its check, but the trained model differs: validation perplexity "
                f"{mine:.6g}, the package's {reference:.6g}. Do your pieces work in float64, and "
                "for any batch size and number of steps?", mine, reference)
    return None, mine, reference
