"""Every scratch model of the course as one step on one-hot inputs (notebooks 05 and 09).

The memory scrubber (`d2lmini.widgets.memory`) differentiates a prediction with respect to
the one-hot input of each earlier character, so it needs each model written as
`state = step(one_hot, state)` and `logits = readout(state)`. `one_hot_cell` returns that
form for the scratch RNN, GRU and LSTM (chosen by the model's type); each uses the model's
own step function, so the scrubber measures exactly the model that was trained.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from d2lmini.gates import GRUScratch, LSTMScratch, gru_step, lstm_step
from d2lmini.i18n import _
from d2lmini.rnn import RNNScratch

SCRATCH_MODELS = "d2lmini.rnn.RNNScratch, d2lmini.gates.GRUScratch or d2lmini.gates.LSTMScratch"


@dataclass(frozen=True)
class OneHotCell:
    """A model as `step(one_hot (n, vocab), state (n, width)) -> state` and `readout(state) -> logits`."""

    step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    readout: Callable[[torch.Tensor], torch.Tensor]
    state_width: int
    vocab_size: int
    dtype: torch.dtype
    device: torch.device

    def zero_state(self, batch_size: int = 1) -> torch.Tensor:
        """Return a zero state (batch_size, state_width) of the model's dtype, on its device."""
        return torch.zeros(batch_size, self.state_width, dtype=self.dtype, device=self.device)


def _rnn_cell(model: RNNScratch) -> OneHotCell:
    W_xh, W_hh, b_h, W_hq, b_q = (getattr(model, n).detach() for n in ("W_xh", "W_hh", "b_h", "W_hq", "b_q"))
    return OneHotCell(lambda x, H: torch.tanh(x @ W_xh + H @ W_hh + b_h), lambda H: H @ W_hq + b_q,
                      W_hh.shape[0], W_xh.shape[0], W_hh.dtype, W_hh.device)


def _gru_cell(model: GRUScratch) -> OneHotCell:
    names = ("W_x", "W_h", "b", "b_hn", "W_hq", "b_q")
    W_x, W_h, b, b_hn, W_hq, b_q = (getattr(model, n).detach() for n in names)
    return OneHotCell(lambda x, H: gru_step(x @ W_x + b, H, W_h, b_hn), lambda H: H @ W_hq + b_q,
                      W_h.shape[0], W_x.shape[0], W_h.dtype, W_h.device)


def _lstm_step_joined(x, state, W_x, W_h, b) -> torch.Tensor:
    """One LSTM step on the state [H, C] side by side, as `LSTMScratch` keeps it."""
    H, C = state.chunk(2, dim=1)
    return torch.cat(lstm_step(x @ W_x + b, H, C, W_h), dim=1)


def _lstm_cell(model: LSTMScratch) -> OneHotCell:
    W_x, W_h, b, W_hq, b_q = (getattr(model, n).detach() for n in ("W_x", "W_h", "b", "W_hq", "b_q"))
    hiddens = W_h.shape[0]
    return OneHotCell(lambda x, state: _lstm_step_joined(x, state, W_x, W_h, b),
                      lambda state: state[:, :hiddens] @ W_hq + b_q,  # the readout sees H only
                      2 * hiddens, W_x.shape[0], W_h.dtype, W_h.device)


def one_hot_cell(model) -> OneHotCell:
    """Return `model` (a scratch RNN, GRU or LSTM) as a `OneHotCell` with its weights detached.

    Raises TypeError naming the kinds it takes for any other model (torch's layers hide their
    step inside one C function).
    """
    for kind, cell in ((LSTMScratch, _lstm_cell), (GRUScratch, _gru_cell), (RNNScratch, _rnn_cell)):
        if isinstance(model, kind):
            return cell(model)
    raise TypeError(_("model must be a scratch model ({models}), not {kind}").format(
        models=SCRATCH_MODELS, kind=type(model).__name__))


@torch.no_grad()
def states_along(cell: OneHotCell, indices: torch.Tensor) -> torch.Tensor:
    """Return the states after each token of `indices` (1-D), read from a zero state.

    Row i is the state after token i.
    """
    one_hot = F.one_hot(indices.to(cell.device), cell.vocab_size).to(cell.dtype)
    state, states = cell.zero_state(), []
    for x in one_hot:
        state = cell.step(x[None], state)
        states.append(state[0])
    return torch.stack(states) if states else cell.zero_state(0)
