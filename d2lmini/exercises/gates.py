"""Self-checks for the exercises of notebook 09 (gated cells: the GRU and the LSTM)."""

import math

import torch

from d2lmini.exercises import Verdict, number_verdict, self_check
from d2lmini.exercises.coding import Case, check_function, sampler
from d2lmini.exercises.guard.refusals import GATED
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.gates import gru_step, lstm_step
from d2lmini.i18n import _

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
