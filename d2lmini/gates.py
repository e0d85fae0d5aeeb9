"""Gated recurrent cells written from scratch: the GRU and the LSTM (notebook 09).

Both follow the conventions of `torch.nn.GRU` and `torch.nn.LSTM` (the cuDNN forms), so a
scratch cell with copied weights gives the same numbers as torch's. With row vectors, as in
the rest of the course, one GRU step is

    R = σ(X W_xr + H W_hr + b_r)                  reset gate
    Z = σ(X W_xz + H W_hz + b_z)                  update gate
    N = tanh(X W_xn + b_n + R ⊙ (H W_hn + b_hn))  candidate state
    H' = Z ⊙ H + (1 - Z) ⊙ N

(Dive into Deep Learning writes the candidate with (R ⊙ H) W_hn; torch and cuDNN apply R
after the product, which lets one matmul serve all three gates.) One LSTM step is

    I, F, G, O = σ(·), σ(·), tanh(·), σ(·) of  X W_x + H W_h + b   (four blocks of columns)
    C' = F ⊙ C + I ⊙ G,    H' = O ⊙ tanh(C')

The speed-ups of the RNN carry over unchanged (notebooks 02 and 03): the gates' weights are
stacked side by side so each step needs one product with H (the fused matmul), and the input
term of every gate for every step is one row lookup done before the loop.

An LSTM has two states, H and C. To keep the one interface every model of the course has
(`model(X, state) -> (outputs, state)`, `begin_state`, a state that training detaches), the
LSTM's state is one tensor, H and C side by side: shape (batch, 2 * num_hiddens).

Every constructor argument is checked before torch sees it (`check_gated_arguments`, with the checks
every model shares in `d2lmini.model_sizes`): the sizes are whole numbers in their declared ranges,
the generator a CPU `torch.Generator` or None, the flags True or False; a wrong one is a TypeError or
ValueError naming the argument.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from d2lmini.gru_bptt import gru_forward_bptt
from d2lmini.i18n import _
from d2lmini.lstm_bptt import lstm_forward_bptt
from d2lmini.model_sizes import check_flag, check_model_arguments
from d2lmini.settings import short_repr

GRU_GATES = ("reset", "update", "candidate")
LSTM_GATES = ("input", "forget", "cell", "output")
GATED_LAYERS = {"gru": nn.GRU, "lstm": nn.LSTM}


def gated_parameter_count(vocab_size: int, num_hiddens: int, num_gates: int) -> int:
    """Return how many numbers a gated cell of these sizes holds (`init_gated_params`, plus b_hn's bound)."""
    width = num_gates * num_hiddens
    return (vocab_size + num_hiddens + 1) * width + (num_hiddens + 1) * vocab_size + num_hiddens


def check_gated_arguments(vocab_size, num_hiddens, generator=None, num_gates: int = 4) -> tuple[int, int]:
    """Return (vocab_size, num_hiddens) as plain ints; raise TypeError or ValueError naming the argument.

    The checks every model makes (`d2lmini.model_sizes.check_model_arguments`): whole sizes in their
    declared ranges, a CPU `torch.Generator` or None, parameters within `model_sizes.MAX_PARAMETER_BYTES`.
    """
    return check_model_arguments(vocab_size, num_hiddens, generator,
                                 lambda vocab, hiddens: gated_parameter_count(vocab, hiddens, num_gates))


def init_gated_params(vocab_size: int, num_hiddens: int, num_gates: int,
                      generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Return fresh CPU parameters for a gated cell with `num_gates` stacked blocks.

    W_x (vocab, gates·hiddens) and W_h (hiddens, gates·hiddens) hold the gates side by side;
    weights are drawn from N(0, 1/fan_in) (LeCun's rule, as `rnn.init_rnn_params`); biases
    start at zero; the output layer W_hq, b_q is the RNN's. Raises TypeError or ValueError naming
    the argument for sizes or a generator that cannot work (`check_gated_arguments`).
    """
    if isinstance(num_gates, bool) or not isinstance(num_gates, int) or num_gates < 1:
        raise ValueError(_("num_gates must be a whole number of at least 1, not {value}").format(
            value=short_repr(num_gates)))
    vocab_size, num_hiddens = check_gated_arguments(vocab_size, num_hiddens, generator, num_gates)
    width = num_gates * num_hiddens
    return {
        "W_x": torch.randn(vocab_size, width, generator=generator) / math.sqrt(vocab_size),
        "W_h": torch.randn(num_hiddens, width, generator=generator) / math.sqrt(num_hiddens),
        "b": torch.zeros(width),
        "W_hq": torch.randn(num_hiddens, vocab_size, generator=generator) / math.sqrt(num_hiddens),
        "b_q": torch.zeros(vocab_size),
    }


def gru_step(input_term: torch.Tensor, H: torch.Tensor, W_h, b_hn) -> torch.Tensor:
    """One GRU step from the gates' input term X W_x + b (batch, 3·hiddens); returns H'."""
    x_r, x_z, x_n = input_term.chunk(3, dim=1)
    h_r, h_z, h_n = (H @ W_h).chunk(3, dim=1)
    R = torch.sigmoid(x_r + h_r)
    Z = torch.sigmoid(x_z + h_z)
    N = torch.tanh(x_n + R * (h_n + b_hn))
    return Z * H + (1 - Z) * N


def lstm_step(input_term: torch.Tensor, H: torch.Tensor, C: torch.Tensor, W_h) -> tuple:
    """One LSTM step from the gates' input term X W_x + b (batch, 4·hiddens); returns (H', C')."""
    gates = input_term + H @ W_h
    i, f, g, o = gates.chunk(4, dim=1)
    C = torch.sigmoid(f) * C + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(C), C


def gru_forward(X: torch.Tensor, state: torch.Tensor, W_x, W_h, b, b_hn, W_hq, b_q) -> tuple:
    """Run the GRU over token indices X (batch, steps): (outputs (steps·batch, vocab), state)."""
    input_terms = F.embedding(X.T, W_x) + b  # every gate's input term, every step: one lookup
    H = state
    hiddens = []
    for input_term in input_terms:
        H = gru_step(input_term, H, W_h, b_hn)
        hiddens.append(H)
    return torch.addmm(b_q, torch.cat(hiddens), W_hq), H


def lstm_forward(X: torch.Tensor, state: torch.Tensor, W_x, W_h, b, W_hq, b_q) -> tuple:
    """Run the LSTM over X (batch, steps); `state` is [H, C] side by side (batch, 2·hiddens)."""
    input_terms = F.embedding(X.T, W_x) + b
    H, C = state.chunk(2, dim=1)
    hiddens = []
    for input_term in input_terms:
        H, C = lstm_step(input_term, H, C, W_h)
        hiddens.append(H)
    return torch.addmm(b_q, torch.cat(hiddens), W_hq), torch.cat([H, C], dim=1)


class GatedScratch(nn.Module):
    """What the scratch GRU and LSTM share: parameters, the output layer, `begin_state`."""

    num_gates = 0
    state_width = 1  # how many hidden-sized blocks the state holds

    def __init__(self, vocab_size: int, num_hiddens: int, generator: torch.Generator | None = None):
        super().__init__()
        vocab_size, num_hiddens = check_gated_arguments(vocab_size, num_hiddens, generator, self.num_gates)
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        params = init_gated_params(vocab_size, num_hiddens, self.num_gates, generator)
        for name, value in params.items():
            self.register_parameter(name, nn.Parameter(value))

    def begin_state(self, batch_size: int) -> torch.Tensor:
        """Return a zero state on this model's device."""
        return torch.zeros(batch_size, self.state_width * self.num_hiddens, device=self.W_h.device)


class GRUScratch(GatedScratch):
    """The scratch GRU as a module; `model(X, state)` returns (outputs, state) as the RNN does.

    With `hand_written_bptt=True` (the default: it trains faster, `benchmarks/throughput.py
    --gated`) it runs `d2lmini.gru_bptt.gru_forward_bptt`; with False, `gru_forward` and
    autograd. Both give the same outputs and gradients (up to rounding).
    """

    num_gates = 3

    def __init__(self, vocab_size: int, num_hiddens: int, generator: torch.Generator | None = None,
                 *, hand_written_bptt: bool = True):
        check_gated_arguments(vocab_size, num_hiddens, generator, self.num_gates)  # in the arguments' order
        hand_written_bptt = check_flag("hand_written_bptt", hand_written_bptt)
        super().__init__(vocab_size, num_hiddens, generator)
        self.hand_written_bptt = hand_written_bptt
        self.b_hn = nn.Parameter(torch.zeros(self.num_hiddens))  # the candidate's bias inside R ⊙ (·)

    def forward(self, X: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        forward = gru_forward_bptt if self.hand_written_bptt else gru_forward
        return forward(X, state, self.W_x, self.W_h, self.b, self.b_hn, self.W_hq, self.b_q)


class LSTMScratch(GatedScratch):
    """The scratch LSTM as a module; its state is [H, C] side by side, (batch, 2·hiddens).

    With `hand_written_bptt=True` (the default: it trains faster, `benchmarks/throughput.py
    --gated`) it runs `d2lmini.lstm_bptt.lstm_forward_bptt`; with False, `lstm_forward` and
    autograd. Both give the same outputs and gradients (up to rounding).
    """

    num_gates = 4
    state_width = 2

    def __init__(self, vocab_size: int, num_hiddens: int, generator: torch.Generator | None = None,
                 *, hand_written_bptt: bool = True):
        check_gated_arguments(vocab_size, num_hiddens, generator, self.num_gates)  # in the arguments' order
        hand_written_bptt = check_flag("hand_written_bptt", hand_written_bptt)
        super().__init__(vocab_size, num_hiddens, generator)
        self.hand_written_bptt = hand_written_bptt
        h = self.num_hiddens
        with torch.no_grad():  # a forget-gate bias of 1: remember by default at the start
            self.b[h:2 * h] = 1.0

    def forward(self, X: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        forward = lstm_forward_bptt if self.hand_written_bptt else lstm_forward
        return forward(X, state, self.W_x, self.W_h, self.b, self.W_hq, self.b_q)


class TorchGated(nn.Module):
    """`torch.nn.GRU` or `torch.nn.LSTM` with a linear output layer and the scratch interface."""

    def __init__(self, cell: str, vocab_size: int, num_hiddens: int):
        super().__init__()
        if not isinstance(cell, str) or cell not in GATED_LAYERS:
            error = ValueError if isinstance(cell, str) else TypeError
            raise error(_("cell must be 'gru' or 'lstm', not {cell}").format(cell=short_repr(cell)))
        gates = len(GRU_GATES if cell == "gru" else LSTM_GATES)
        vocab_size, num_hiddens = check_gated_arguments(vocab_size, num_hiddens, num_gates=gates)
        self.cell, self.vocab_size, self.num_hiddens = cell, vocab_size, num_hiddens
        self.rnn = GATED_LAYERS[cell](vocab_size, num_hiddens)
        self.output = nn.Linear(num_hiddens, vocab_size)

    def forward(self, X: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = F.one_hot(X.T, self.vocab_size).to(self.output.weight.dtype)
        if self.cell == "gru":
            hiddens, last = self.rnn(inputs, state.unsqueeze(0))
            new_state = last.squeeze(0)
        else:
            H, C = state.chunk(2, dim=1)
            # chunk gives views into the state; cuDNN needs each of H and C contiguous
            start = (H.unsqueeze(0).contiguous(), C.unsqueeze(0).contiguous())
            hiddens, (last_h, last_c) = self.rnn(inputs, start)
            new_state = torch.cat([last_h.squeeze(0), last_c.squeeze(0)], dim=1)
        return self.output(hiddens.reshape(-1, self.num_hiddens)), new_state

    def begin_state(self, batch_size: int) -> torch.Tensor:
        """Return a zero state on this model's device."""
        width = 2 if self.cell == "lstm" else 1
        return torch.zeros(batch_size, width * self.num_hiddens, device=self.output.weight.device)


@torch.no_grad()
def copy_gated_to_torch(scratch: GatedScratch, twin: TorchGated) -> None:
    """Give `twin` exactly the weights of `scratch` (torch's layout is the transpose)."""
    twin.rnn.weight_ih_l0.copy_(scratch.W_x.T)
    twin.rnn.weight_hh_l0.copy_(scratch.W_h.T)
    twin.rnn.bias_ih_l0.copy_(scratch.b)
    twin.rnn.bias_hh_l0.zero_()
    if isinstance(scratch, GRUScratch):
        twin.rnn.bias_hh_l0[2 * scratch.num_hiddens:] = scratch.b_hn
    twin.output.weight.copy_(scratch.W_hq.T)
    twin.output.bias.copy_(scratch.b_q)
