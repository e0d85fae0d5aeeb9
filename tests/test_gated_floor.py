"""benchmarks/gated_floor.py: its fewest-call chain is a real LSTM step, and its table adds up."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch

from d2lmini.gates import lstm_step

pytestmark = pytest.mark.torch_dependent

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def floor():
    """benchmarks/gated_floor.py as a module; it imports its neighbour throughput.py."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("gated_floor", BENCHMARKS / "gated_floor.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def to_o_i_f_g(gates_i_f_g_o: torch.Tensor) -> torch.Tensor:
    """Torch's gate order [I, F, G, O] (batch, 4·h) as the chain's [O, I, F, G] (batch, 4, h)."""
    i, f, g, o = gates_i_f_g_o.chunk(4, dim=1)
    return torch.stack([o, i, f, g], dim=1)


def test_the_chain_forward_step_is_the_lstm_step(floor):
    generator = torch.Generator().manual_seed(0)
    batch, hiddens = 3, 5
    input_term = torch.randn(batch, 4 * hiddens, generator=generator)
    C = torch.randn(batch, hiddens, generator=generator)
    H_expected, C_expected = lstm_step(input_term, torch.zeros(batch, hiddens), C,
                                       torch.zeros(hiddens, 4 * hiddens))
    gates = to_o_i_f_g(input_term)
    out = [torch.empty(batch, hiddens) for _ in range(3)]
    H, C_next = floor.chain_forward_step(floor.gate_views(gates), C, *out)
    torch.testing.assert_close(H, H_expected)
    torch.testing.assert_close(C_next, C_expected)


def test_the_chain_backward_step_gives_autograds_gradients(floor):
    """Its 4 calls turn the step's factors into dL/d(pre-activations) and dC into dL/dC_{t-1}."""
    generator = torch.Generator().manual_seed(1)
    batch, hiddens = 3, 5
    pre = torch.randn(batch, 4 * hiddens, generator=generator, dtype=torch.float64, requires_grad=True)
    C_prev = torch.randn(batch, hiddens, generator=generator, dtype=torch.float64, requires_grad=True)
    dH, dC_after = (torch.randn(batch, hiddens, generator=generator, dtype=torch.float64) for _ in range(2))
    no_recurrence = torch.zeros(hiddens, 4 * hiddens, dtype=torch.float64)  # the gates are `pre` alone
    H, C = lstm_step(pre, torch.zeros_like(C_prev), C_prev, no_recurrence)
    torch.autograd.backward([H, C], [dH, dC_after])

    with torch.no_grad():
        i, f, g, o = (torch.sigmoid(block) for block in pre.chunk(4, dim=1))
        g = torch.tanh(pre.chunk(4, dim=1)[2])
        tanh_C = torch.tanh(C)
        factors = torch.stack([tanh_C * o * (1 - o), g * i * (1 - i), C_prev * f * (1 - f), i * (1 - g * g)],
                              dim=1)
        dC = dC_after.clone()
        floor.chain_backward_step(dH, dC, dC.unsqueeze(1), o * (1 - tanh_C**2), floor.gate_views(factors), f)
    torch.testing.assert_close(factors, to_o_i_f_g(pre.grad))
    torch.testing.assert_close(dC, C_prev.grad)


def test_the_table_row_adds_up_and_the_threads_come_back(floor, capsys):
    threads = torch.get_num_threads()
    floor.main(["--hiddens", "8", "--threads", "1", "--repeats", "1", "--seconds", "0.01"])
    assert torch.get_num_threads() == threads
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\| 1 \| 8 \|", line)]
    assert len(rows) == 1, rows
    cells = rows[0].strip("|").split("|")
    assert len(cells) == 12
    torch_ms, scratch_ms, by_mm, by_packed, chain, lookup, shared, bound, speed, most = (
        float(cell) if cell.strip() != "n/a" else None for cell in cells[2:])
    products = min(x for x in (by_mm, by_packed) if x is not None)
    # one round: each printed cell is that round's value, rounded to 0.01
    assert bound == pytest.approx(products + chain + lookup + shared, abs=0.03)
    assert speed == pytest.approx(torch_ms / scratch_ms, rel=0.03)
    assert most == pytest.approx(torch_ms / bound, rel=0.03)
