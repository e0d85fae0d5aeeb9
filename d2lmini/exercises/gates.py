"""Self-checks for the exercises of notebook 09 (gated cells: the GRU and the LSTM)."""

import math
from functools import partial

import torch

from d2lmini.exercises import Verdict, number_verdict, self_check
from d2lmini.exercises.bptt import GRADIENTS_BY_HAND
from d2lmini.exercises.coding import Case, check_function, sampler
from d2lmini.exercises.guard.refusals import GATED
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.gates import gru_step, lstm_step
from d2lmini.i18n import N_, _

SHAPES = ((2, 5, 3), (4, 28, 16), (1, 2, 1))  # (batch, vocab, hiddens): small, usual, a single unit


def sigmoid_slope(a: float) -> float:
    """Return dσ/da at `a`: σ(a)(1 - σ(a))."""
    s = 1 / (1 + math.exp(-a))
    return s * (1 - s)


GRU_NAMES = ("W_xr", "W_hr", "b_r", "W_xz", "W_hz", "b_z", "W_xn", "W_hn", "b_n", "b_hn")
LSTM_NAMES = tuple(name for gate in "ifgo" for name in (f"W_x{gate}", f"W_h{gate}", f"b_{gate}"))


def gru_cell_reference(X, H, params):
    """The package's GRU step on a one-hot X (batch, vocab) and per-gate weights `params`, fused."""
    W_x = torch.cat([params["W_xr"], params["W_xz"], params["W_xn"]], dim=1)
    W_h = torch.cat([params["W_hr"], params["W_hz"], params["W_hn"]], dim=1)
    b = torch.cat([params["b_r"], params["b_z"], params["b_n"]])
    return gru_step(X @ W_x + b, H, W_h, params["b_hn"])


def lstm_cell_reference(X, H, C, params):
    """The package's LSTM step on a one-hot X (batch, vocab) and per-gate weights `params`, fused."""
    W_x, W_h, b = (torch.cat([params[form.format(gate)] for gate in "ifgo"], dim=-1)
                   for form in ("W_x{}", "W_h{}", "b_{}"))
    return lstm_step(X @ W_x + b, H, C, W_h)


def _gate_params(rand, names, vocab: int, hiddens: int) -> dict:
    shapes = {"W_x": (vocab, hiddens), "W_h": (hiddens, hiddens), "b": (hiddens,)}
    return {name: rand(*shapes["b" if name.startswith("b") else name[:3]]) * 0.5 for name in names}


def _one_hot(vocab: int, batch: int, generator: torch.Generator, device: torch.device):
    indices = torch.randint(vocab, (batch,), generator=generator)
    return torch.nn.functional.one_hot(indices, vocab).float().to(device)


def _gru_cases(device: torch.device):
    rand, generator = sampler(90, device), torch.Generator().manual_seed(90)
    for batch, vocab, hiddens in SHAPES:
        params = _gate_params(rand, GRU_NAMES, vocab, hiddens)
        yield Case(f"batch={batch}, vocab={vocab}, hiddens={hiddens}",
                   (_one_hot(vocab, batch, generator, device), rand(batch, hiddens), params),
                   reference=gru_cell_reference)


def _lstm_cases(device: torch.device):
    rand, generator = sampler(91, device), torch.Generator().manual_seed(91)
    for batch, vocab, hiddens in SHAPES:
        params = _gate_params(rand, LSTM_NAMES, vocab, hiddens)
        yield Case(f"batch={batch}, vocab={vocab}, hiddens={hiddens}",
                   (_one_hot(vocab, batch, generator, device), rand(batch, hiddens), rand(batch, hiddens),
                    params), reference=lstm_cell_reference, names=("H'", "C'"))


def check_gru_cell(cell) -> Verdict:
    """Exercise 1: `gru_cell(X, H, params)` with one weight matrix per gate returns H' as torch.nn.GRU."""
    return check_function(
        cell, _gru_cases,
        _("Your GRU step with one matrix per gate gives torch's numbers: the fused step of section 1 does "
          "the same with one product."),
        signature="gru_cell(X, H, params)", rtol=1e-4, atol=1e-5, bans=(GATED,),
        mistakes=mistakes_of("09:gru_cell"))


def check_lstm_cell(cell) -> Verdict:
    """Exercise 2: `lstm_cell(X, H, C, params)` with one weight matrix per gate returns (H', C')."""
    return check_function(
        cell, _lstm_cases,
        _("Your LSTM step with one matrix per gate gives torch's numbers: C' = F ⊙ C + I ⊙ G and H' = O ⊙ "
          "tanh(C')."),
        signature="lstm_cell(X, H, C, params)", rtol=1e-4, atol=1e-5, bans=(GATED,),
        mistakes=mistakes_of("09:lstm_cell"))


@self_check
def check_saturated_gate_slope(answer, pre_activation: float = 3.0) -> Verdict:
    """Exercise 3: dF/da of a forget gate F = σ(a) at a = `pre_activation`, a nearly saturated gate."""
    expected = sigmoid_slope(pre_activation)
    keep = 1 / (1 + math.exp(-pre_activation))
    return number_verdict(
        answer, expected,
        _("σ'({a:g}) = σ(1 - σ) = {keep:.4f} x {rest:.4f} = {expected:.4f}: a gate near 1 keeps its cell "
          "almost unchanged, and learns to move only slowly (its own gradient is small).").format(
              a=pre_activation, keep=keep, rest=1 - keep, expected=expected),
        _("The derivative of the sigmoid can be written with its own value: σ'(a) = σ(a)(1 - σ(a)). "
          "Compute σ(a) first."),
    )


# Exercise 4: the backward pass of one LSTM step, written by hand. The expected gradients come from
# autograd through the package's `lstm_step`, in float64; the student's function may not use autograd.
BACKWARD_NAMES = ("dX", "dH_prev", "dC_prev", "dW_x", "dW_h", "db")
BACKWARD_SIGNATURE = "lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C)"


def lstm_step_cache(X, H_prev, C_prev, W_x, W_h, b) -> tuple[torch.Tensor, torch.Tensor]:
    """What a forward LSTM step keeps for its backward pass: the gates [I, F, G, O] side by side
    (batch, 4·hiddens), after their sigmoid or tanh, and the new cell C_t."""
    i, f, g, o = (X @ W_x + H_prev @ W_h + b).chunk(4, dim=1)
    gates = torch.cat([torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)], dim=1)
    return gates, torch.sigmoid(f) * C_prev + torch.sigmoid(i) * torch.tanh(g)


def reference_lstm_step_backward(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C, *, b):
    """Exercise 4's (dX, dH_prev, dC_prev, dW_x, dW_h, db) by autograd through `d2lmini.gates.lstm_step`.

    The loss is <dH, H_t> + <dC, C_t>, so its gradients are what dH and dC send back through the
    step; the cache (`gates`, `C`) is not read: the forward step is run again from its inputs and `b`.
    """
    with torch.enable_grad():
        leaves = [t.detach().clone().requires_grad_() for t in (X, H_prev, C_prev, W_x, W_h, b)]
        X_, H_, C_, W_x_, W_h_, b_ = leaves
        H_t, C_t = lstm_step(X_ @ W_x_ + b_, H_, C_, W_h_)
        grads = torch.autograd.grad((H_t, C_t), leaves, grad_outputs=(dH, dC))
    return tuple(g.detach() for g in grads)


def _lstm_backward_cases(device: torch.device):
    rand, generator = sampler(94, device, torch.float64), torch.Generator().manual_seed(94)
    shapes = (  # batch, inputs, hiddens, what X and dC are
        (3, 5, 4, "dense"), (2, 7, 6, "one-hot"), (1, 3, 1, "dense"), (4, 6, 3, "last"))
    labels = {
        "dense": N_("batch={batch}, inputs={inputs}, hiddens={hiddens}, dense X"),
        "one-hot": N_("batch={batch}, inputs={inputs}, hiddens={hiddens}, one-hot X"),
        "last": N_("batch={batch}, inputs={inputs}, hiddens={hiddens}, dense X, dC = 0 (the last step)"),
    }
    for batch, inputs, hiddens, kind in shapes:
        if kind == "one-hot":
            X = _one_hot(inputs, batch, generator, device).double()
        else:
            X = rand(batch, inputs)
        H_prev, C_prev = rand(batch, hiddens).tanh(), rand(batch, hiddens)
        W_x, W_h = rand(inputs, 4 * hiddens) * 0.7, rand(hiddens, 4 * hiddens) * 0.7
        b = rand(4 * hiddens) * 0.5
        gates, C = lstm_step_cache(X, H_prev, C_prev, W_x, W_h, b)
        dH = rand(batch, hiddens)
        dC = torch.zeros_like(dH) if kind == "last" else rand(batch, hiddens)
        yield Case(_(labels[kind]).format(batch=batch, inputs=inputs, hiddens=hiddens),
                   (dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C),
                   reference=partial(reference_lstm_step_backward, b=b), names=BACKWARD_NAMES,
                   outputs=BACKWARD_NAMES)


def check_lstm_step_backward(fn) -> Verdict:
    """Exercise 4: `fn(dH, dC, X, H_prev, C_prev, W_x, W_h, gates, C)` is one LSTM step's backward pass.

    dH = dL/dH_t and dC = dL/dC_t as they come from the step after; `gates` is [I, F, G, O] of the
    forward step (batch, 4·hiddens) and C is C_t. It returns (dX, dH_prev, dC_prev, dW_x, dW_h, db),
    compared in float64 with autograd through `d2lmini.gates.lstm_step`; autograd and torch's LSTM
    are not allowed in `fn`.
    """
    return check_function(
        fn, _lstm_backward_cases,
        _("Your backward pass of one LSTM step gives autograd's six gradients: the cell gathers dC and what "
          "comes through H_t, each gate's gradient goes through its own slope, and the old cell gets the "
          "cell's gradient scaled by F alone."),
        rules=[GRADIENTS_BY_HAND],
        signature=BACKWARD_SIGNATURE, rtol=1e-7, atol=1e-10, bans=(GATED,),
        mistakes=mistakes_of("09:lstm_step_backward"))
