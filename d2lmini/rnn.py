"""A recurrent neural network written from scratch, and its torch.nn.RNN twin (notebook 04).

The scratch model computes, for every time step t,

    H_t = tanh(X_t W_xh + H_{t-1} W_hh + b_h),    O_t = H_t W_hq + b_q,

where X_t is the one-hot encoding of the input tokens. Three rewrites make it fast
without changing the maths (each is checked in a notebook):

- `one_hot(x) @ W_xh == W_xh[x]`, so the input term is a row lookup (notebook 03);
- the input term does not depend on H, so it is computed for all steps at once;
- the output layer does not feed back, so it is applied to all steps in one matmul.

Only `H_{t-1} W_hh` has to stay inside the loop over time.

Training needs gradients too. `rnn_forward` leaves them to autograd, which records
every step and, going back, computes each step's weight gradient as its own small
matmul. `rnn_forward_bptt` computes the same outputs and gradients with the
backpropagation through time written by hand in `d2lmini.bptt` (notebook 05), which
sums the weight gradients of all steps in single large matmuls. `RNNScratch` can use
either (`hand_written_bptt=`) and uses the hand-written one by default because it trains
faster, as `benchmarks/throughput.py` measures (see the README, "Performance").
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from d2lmini.text import Vocab


def init_rnn_params(
    vocab_size: int,
    num_hiddens: int,
    init: str = "xavier",
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """Return fresh parameters W_xh, W_hh, b_h, W_hq, b_q as CPU tensors.

    `init="normal"` draws weights from N(0, 0.01^2), as the book does; `init="xavier"`
    draws them from N(0, 1/fan_in), which keeps the hidden activations at a useful
    size whatever the layer widths. Biases start at zero.
    """

    def weight(fan_in: int, fan_out: int) -> torch.Tensor:
        std = {"normal": 0.01, "xavier": 1 / math.sqrt(fan_in)}.get(init)
        if std is None:
            raise ValueError(f"init must be 'normal' or 'xavier', not {init!r}")
        return torch.randn(fan_in, fan_out, generator=generator) * std

    return {
        "W_xh": weight(vocab_size, num_hiddens),
        "W_hh": weight(num_hiddens, num_hiddens),
        "b_h": torch.zeros(num_hiddens),
        "W_hq": weight(num_hiddens, vocab_size),
        "b_q": torch.zeros(vocab_size),
    }


def init_rnn_state(batch_size: int, num_hiddens: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Return the initial hidden state: zeros of shape (batch_size, num_hiddens)."""
    return torch.zeros(batch_size, num_hiddens, device=device)


def rnn_forward(
    X: torch.Tensor, state: torch.Tensor, W_xh, W_hh, b_h, W_hq, b_q
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the RNN over token indices X of shape (batch, steps).

    Returns the outputs of every step, shape (steps * batch, vocab) with step-major rows
    (all of step 0, then all of step 1, ...), and the final state (batch, hiddens).
    """
    # Row lookup for all steps at once: (steps, batch, hiddens). F.embedding is W_xh[X.T];
    # unlike plain indexing its backward is deterministic on the CPU, so seeded runs repeat.
    input_terms = F.embedding(X.T, W_xh) + b_h
    H = state
    hiddens = []
    for input_term in input_terms:
        H = torch.tanh(torch.addmm(input_term, H, W_hh))
        hiddens.append(H)
    hidden_stack = torch.stack(hiddens).reshape(-1, W_hh.shape[0])
    return torch.addmm(b_q, hidden_stack, W_hq), H


def rnn_forward_one_hot(
    X: torch.Tensor, state: torch.Tensor, W_xh, W_hh, b_h, W_hq, b_q
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same computation as `rnn_forward`, written step by step with one-hot inputs.

    This is the textbook form (notebook 04 compares the two; benchmarks time them).
    """
    inputs = F.one_hot(X.T, W_xh.shape[0]).to(W_xh.dtype)
    H = state
    outputs = []
    for X_t in inputs:
        H = torch.tanh(X_t @ W_xh + H @ W_hh + b_h)
        outputs.append(H @ W_hq + b_q)
    return torch.cat(outputs), H


class HandWrittenBPTT(torch.autograd.Function):
    """The scratch RNN as one autograd node whose backward is `d2lmini.bptt.bptt_backward`.

    Autograd records a single node for the whole sequence instead of a few per step;
    the forward and backward passes are those of `d2lmini.bptt` (notebook 05).
    Gradients of first order only (no double backward).
    """

    @staticmethod
    def forward(ctx, X, state, W_xh, W_hh, b_h, W_hq, b_q):
        from d2lmini.bptt import bptt_forward  # imported here: d2lmini.bptt imports this module

        outputs, final_state, cache = bptt_forward(X, state, W_xh, W_hh, b_h, W_hq, b_q)
        # save_for_backward (not a plain attribute) frees the tensors with the graph and
        # raises if a parameter is changed in place before backward runs.
        ctx.cache_names = tuple(cache)
        ctx.save_for_backward(*cache.values())
        ctx.set_materialize_grads(False)  # an unused final state sends None, not zeros
        return outputs, final_state.clone()

    @staticmethod
    def backward(ctx, d_outputs, d_final_state):
        from d2lmini.bptt import bptt_backward

        cache = dict(zip(ctx.cache_names, ctx.saved_tensors, strict=True))
        if d_outputs is None:  # only the final state was used
            d_outputs = torch.zeros(cache["hiddens"].shape[0] * cache["hiddens"].shape[1],
                                    cache["W_hq"].shape[1], dtype=cache["W_hq"].dtype,
                                    device=cache["W_hq"].device)
        grads = bptt_backward(d_outputs, d_final_state, cache)
        return (None, grads["state"], grads["W_xh"], grads["W_hh"], grads["b_h"],
                grads["W_hq"], grads["b_q"])


def rnn_forward_bptt(
    X: torch.Tensor, state: torch.Tensor, W_xh, W_hh, b_h, W_hq, b_q
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same outputs as `rnn_forward`; gradients come from the hand-written BPTT, not autograd.

    Returns (outputs (steps * batch, vocab) step-major, final state (batch, hiddens)).
    """
    return HandWrittenBPTT.apply(X, state, W_xh, W_hh, b_h, W_hq, b_q)


class RNNScratch(nn.Module):
    """The scratch RNN as a module: its five parameters and the forward pass over time.

    `model(X, state)` returns (outputs, state) as `rnn_forward` does. With
    `hand_written_bptt=True` (the default: it trains faster, see
    `benchmarks/throughput.py`) it runs `rnn_forward_bptt`, whose gradients come from
    `d2lmini.bptt`; with False, `rnn_forward` and autograd. Both give the same outputs and
    the same gradients (up to rounding).
    """

    def __init__(self, vocab_size: int, num_hiddens: int, init: str = "xavier",
                 generator: torch.Generator | None = None, *, hand_written_bptt: bool = True):
        super().__init__()
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.hand_written_bptt = hand_written_bptt
        params = init_rnn_params(vocab_size, num_hiddens, init, generator)
        for name, value in params.items():
            self.register_parameter(name, nn.Parameter(value))

    def forward(self, X: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        forward = rnn_forward_bptt if self.hand_written_bptt else rnn_forward
        return forward(X, state, self.W_xh, self.W_hh, self.b_h, self.W_hq, self.b_q)

    def begin_state(self, batch_size: int) -> torch.Tensor:
        """Return a zero state on this model's device."""
        return init_rnn_state(batch_size, self.num_hiddens, self.W_hh.device)


class TorchRNN(nn.Module):
    """`torch.nn.RNN` (tanh) with a linear output layer, with the interface of `RNNScratch`.

    Inputs are one-hot vectors, so `rnn.weight_ih_l0` is W_xh transposed.
    """

    def __init__(self, vocab_size: int, num_hiddens: int):
        super().__init__()
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.rnn = nn.RNN(vocab_size, num_hiddens)
        self.output = nn.Linear(num_hiddens, vocab_size)

    def forward(self, X: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = F.one_hot(X.T, self.vocab_size).to(self.output.weight.dtype)
        hiddens, last = self.rnn(inputs, state.unsqueeze(0))
        return self.output(hiddens.reshape(-1, self.num_hiddens)), last.squeeze(0)

    def begin_state(self, batch_size: int) -> torch.Tensor:
        """Return a zero state on this model's device."""
        return init_rnn_state(batch_size, self.num_hiddens, self.output.weight.device)


@torch.no_grad()
def copy_scratch_to_torch(scratch: RNNScratch, twin: TorchRNN) -> None:
    """Give `twin` exactly the weights of `scratch` (nn.RNN's second bias set to zero)."""
    twin.rnn.weight_ih_l0.copy_(scratch.W_xh.T)
    twin.rnn.weight_hh_l0.copy_(scratch.W_hh.T)
    twin.rnn.bias_ih_l0.copy_(scratch.b_h)
    twin.rnn.bias_hh_l0.zero_()
    twin.output.weight.copy_(scratch.W_hq.T)
    twin.output.bias.copy_(scratch.b_q)


def model_device(model: nn.Module) -> torch.device:
    """Return the device of the first parameter of `model`."""
    return next(model.parameters()).device


def check_prefix(prefix: str, vocab: Vocab) -> None:
    """Raise ValueError with a helpful message if `prefix` is empty or has unknown characters."""
    if not prefix:
        raise ValueError("The prefix is empty: type at least one character to start from.")
    unknown = vocab.unknown_characters(prefix)
    if unknown:
        known = "".join(t for t in vocab.idx_to_token[1:])
        raise ValueError(
            f"The prefix contains characters the model has never seen: {unknown}. "
            f"Use only these characters: {known!r}."
        )


@torch.no_grad()
def predict(
    model: nn.Module,
    vocab: Vocab,
    prefix: str,
    num_chars: int,
    temperature: float | None = None,
    generator: torch.Generator | None = None,
) -> str:
    """Return `prefix` followed by `num_chars` characters generated by `model`.

    The model first reads the prefix (warm-up) to build its hidden state. Then each
    new character is the most likely one (`temperature=None`, greedy) or is drawn from
    softmax(logits / temperature); random numbers come from the CPU `generator`.
    `<unk>` is never generated.
    """
    check_prefix(prefix, vocab)
    if temperature is not None and not temperature > 0:
        raise ValueError(f"temperature must be positive (or None for greedy), not {temperature}")
    device = model_device(model)
    state = model.begin_state(1)
    logits, state = model(torch.tensor([vocab.indices(prefix)], device=device), state)
    generated = []
    for _ in range(num_chars):
        last = logits[-1].float().cpu()
        last[vocab.unk] = -float("inf")  # never generate <unk>
        if temperature is None:
            token = int(last.argmax())
        else:
            probs = torch.softmax(last / temperature, dim=0)
            token = int(torch.multinomial(probs, 1, generator=generator))
        generated.append(token)
        logits, state = model(torch.tensor([[token]], device=device), state)
    return prefix + vocab.decode(generated)
