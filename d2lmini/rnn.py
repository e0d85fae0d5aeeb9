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

from d2lmini.bptt import rnn_forward_bptt
from d2lmini.i18n import _
from d2lmini.model_sizes import check_flag, check_generator, check_model_arguments, check_sizes
from d2lmini.settings import PREDICT_SETTINGS, short_repr, validate_value
from d2lmini.text import Vocab


def check_init(init: str) -> None:
    """Raise ValueError (TypeError if it is no string) unless `init` is one of `init_rnn_params`'s rules,
    "normal" or "lecun"."""
    if not isinstance(init, str) or init not in ("normal", "lecun"):
        error = ValueError if isinstance(init, str) else TypeError
        raise error(_("init must be 'normal' or 'lecun', not {init}").format(init=short_repr(init)))


def rnn_parameter_count(vocab_size: int, num_hiddens: int) -> int:
    """Return how many numbers an RNN of these sizes holds: `TorchRNN`'s count, whose `nn.RNN` has one
    bias more than `init_rnn_params`."""
    return (2 * vocab_size + num_hiddens + 2) * num_hiddens + vocab_size


def check_rnn_arguments(vocab_size, num_hiddens, init: str = "lecun", generator=None) -> tuple[int, int]:
    """Return (vocab_size, num_hiddens) as plain ints; raise TypeError or ValueError naming the first wrong
    argument in the order they are passed: the sizes, `init` (`check_init`), then the generator and the
    parameters' memory (`d2lmini.model_sizes.check_model_arguments`, the checks of every model)."""
    check_sizes(vocab_size, num_hiddens)
    check_init(init)
    return check_model_arguments(vocab_size, num_hiddens, generator, rnn_parameter_count)


def init_rnn_params(
    vocab_size: int,
    num_hiddens: int,
    init: str = "lecun",
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """Return fresh parameters W_xh, W_hh, b_h, W_hq, b_q as CPU tensors (notebook 04).

    `init="normal"` draws weights from N(0, 0.01^2), as the book does; `init="lecun"`
    draws them from N(0, 1/fan_in) (LeCun's rule), which keeps the hidden activations at
    a useful size whatever the layer widths. Biases start at zero. Raises TypeError or ValueError
    naming the argument for sizes, a rule or a generator that cannot work (`check_rnn_arguments`).
    """
    vocab_size, num_hiddens = check_rnn_arguments(vocab_size, num_hiddens, init, generator)

    def weight(fan_in: int, fan_out: int) -> torch.Tensor:
        std = {"normal": 0.01, "lecun": 1 / math.sqrt(fan_in)}[init]
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


def rnn_step(X_t: torch.Tensor, H: torch.Tensor, W_xh, W_hh, b_h) -> torch.Tensor:
    """One step of the recurrence: H_t = tanh(X_t W_xh + H_{t-1} W_hh + b_h) (notebook 01)."""
    return torch.tanh(X_t @ W_xh + H @ W_hh + b_h)


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
        H = rnn_step(X_t, H, W_xh, W_hh, b_h)
        outputs.append(H @ W_hq + b_q)
    return torch.cat(outputs), H


class RNNScratch(nn.Module):
    """The scratch RNN as a module: its five parameters and the forward pass over time.

    `model(X, state)` returns (outputs, state) as `rnn_forward` does. With
    `hand_written_bptt=True` (the default: it trains faster, see
    `benchmarks/throughput.py`) it runs `rnn_forward_bptt`, whose gradients come from
    `d2lmini.bptt`; with False, `rnn_forward` and autograd. Both give the same outputs and
    the same gradients (up to rounding). A wrong argument is a TypeError or ValueError naming it
    (`check_rnn_arguments`, `d2lmini.model_sizes.check_flag`).
    """

    def __init__(self, vocab_size: int, num_hiddens: int, init: str = "lecun",
                 generator: torch.Generator | None = None, *, hand_written_bptt: bool = True):
        super().__init__()
        vocab_size, num_hiddens = check_rnn_arguments(vocab_size, num_hiddens, init, generator)
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.hand_written_bptt = check_flag("hand_written_bptt", hand_written_bptt)
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

    Inputs are one-hot vectors, so `rnn.weight_ih_l0` is W_xh transposed. Wrong sizes are a TypeError
    or ValueError naming them (`d2lmini.model_sizes.check_model_arguments`).
    """

    def __init__(self, vocab_size: int, num_hiddens: int):
        super().__init__()
        vocab_size, num_hiddens = check_model_arguments(vocab_size, num_hiddens, None, rnn_parameter_count)
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


def validate_prefix(prefix: str, vocab: Vocab) -> None:
    """Raise ValueError with a helpful message if `prefix` is empty or has unknown characters."""
    if not prefix:
        raise ValueError(_("The prefix is empty: type at least one character to start from."))
    unknown = vocab.unknown_characters(prefix)
    if unknown:
        known = "".join(t for t in vocab.idx_to_token[1:])
        # TRANSLATORS: {unknown} lists the characters (['é', '1']), {known} the vocabulary's ('abc ...').
        raise ValueError(_("The prefix contains characters the model has never seen: {unknown}. Use only "
                           "these characters: {known}.").format(unknown=unknown, known=repr(known)))


def validate_model_for(model, vocab: Vocab) -> None:
    """Raise ValueError unless `model` is a d2lmini model (RNNScratch, TorchRNN) made for `vocab`.

    It must have a `vocab_size` equal to `len(vocab)` and a `begin_state`, float32
    parameters, and live on a device that holds its weights (not 'meta').
    """
    parameters = list(model.parameters())
    if not parameters or not isinstance(getattr(model, "vocab_size", None), int) or not callable(
            getattr(model, "begin_state", None)):
        raise ValueError(_("model must be a d2lmini model such as RNNScratch or TorchRNN (with vocab_size, "
                           "begin_state and parameters), not {kind}.").format(kind=type(model).__name__))
    if model.vocab_size != len(vocab):
        raise ValueError(_("The model was made for {model_size} tokens but the vocabulary has {vocab_size}: "
                           "use the vocabulary of the corpus the model was trained on.").format(
            model_size=model.vocab_size, vocab_size=len(vocab)))
    dtypes = {p.dtype for p in parameters}
    if dtypes != {torch.float32}:
        # TRANSLATORS: {dtypes} lists the parameters' types (torch.float64); model.float() is code.
        raise ValueError(_("The model's parameters are {dtypes}; predict needs torch.float32 (call "
                           "model.float()).").format(dtypes=", ".join(sorted(map(str, dtypes)))))
    devices = {p.device for p in parameters}
    if any(d.type == "meta" for d in devices) or len(devices) > 1:
        # TRANSLATORS: {devices} lists the parameters' devices (cpu, cuda:0); 'meta' is torch's device name.
        raise ValueError(_("The model's parameters are on {devices}; predict needs them all on one real "
                           "device (the 'meta' device holds no weights).").format(
            devices=", ".join(sorted(map(str, devices)))))


def validate_predict_arguments(model, vocab, prefix, num_chars, temperature, generator) -> tuple:
    """Return (prefix, num_chars, temperature) as plain str, int and float (or None); raise
    TypeError/ValueError naming the argument of `predict` that is wrong and what it may be.

    The ranges of `prefix`, `num_chars` and `temperature` are `d2lmini.settings.PREDICT_SETTINGS`.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(_("model must be a torch.nn.Module such as RNNScratch, not {kind}").format(
            kind=type(model).__name__))
    if not isinstance(vocab, Vocab):
        raise TypeError(_("vocab must be a d2lmini.text.Vocab, not {kind}").format(kind=type(vocab).__name__))
    prefix, num_chars, temperature = (validate_value(PREDICT_SETTINGS[name], value) for name, value in (
        ("prefix", prefix), ("num_chars", num_chars), ("temperature", temperature)))
    check_generator(generator)
    validate_model_for(model, vocab)
    return prefix, num_chars, temperature


def validate_logits(logits: torch.Tensor, unk: int) -> None:
    """Raise ValueError when a logit other than `<unk>`'s is inf or nan: the model has diverged."""
    known = torch.cat([logits[:unk], logits[unk + 1:]])
    if not bool(torch.isfinite(known).all()):
        raise ValueError(_("The model's outputs are not finite (inf or nan): its training diverged, so it "
                           "cannot predict. Retrain it with a smaller learning rate or with clipping."))


def next_token(logits: torch.Tensor, unk: int, temperature: float | None,
               generator: torch.Generator | None) -> int:
    """Return the next token from one step's `logits` (vocab,): greedy, or sampled at `temperature`.

    Sampling draws from softmax(logits / T), computed in float64 as exp((logits - max) / T):
    every exponent is at most 0, so no temperature, however small or large, overflows
    (a tiny T gives the greedy choice, a huge T the uniform one). `<unk>` is never chosen.
    Raises ValueError when the logits are not finite: the model has diverged (notebook 04).
    """
    validate_logits(logits, unk)
    logits = logits.detach().double().cpu()      # random numbers and the draw stay on the CPU
    logits[unk] = -math.inf                      # probability 0 for <unk>
    if temperature is None:
        return int(logits.argmax())              # greedy: the most likely token
    # softmax(logits / T) without its denominator: multinomial divides by the sum itself
    weights = torch.exp((logits - logits.max()) / temperature)
    return int(torch.multinomial(weights, 1, generator=generator))


@torch.no_grad()
def predict(
    model: nn.Module,
    vocab: Vocab,
    prefix: str,
    num_chars: int,
    temperature: float | None = None,
    generator: torch.Generator | None = None,
) -> str:
    """Return `prefix` followed by `num_chars` characters generated by `model` (notebook 04).

    The model first reads the prefix (warm-up) to build its hidden state. Then each
    new character is the most likely one (`temperature=None`, greedy) or is drawn from
    softmax(logits / temperature) (see `next_token`); random numbers come from the CPU
    `generator`. `<unk>` is never generated. Wrong argument types or ranges raise
    TypeError/ValueError naming the argument, and a model that does not fit the vocabulary
    (see `validate_model_for`) raises ValueError.
    """
    prefix, num_chars, temperature = validate_predict_arguments(model, vocab, prefix, num_chars,
                                                                temperature, generator)
    validate_prefix(prefix, vocab)
    device = model_device(model)
    state = model.begin_state(1)
    # warm-up: read the whole prefix; keep the state and the scores after its last character
    logits, state = model(torch.tensor([vocab.indices(prefix)], device=device), state)
    generated = []
    for _step in range(num_chars):
        token = next_token(logits[-1], vocab.unk, temperature, generator)
        generated.append(token)
        # feed the new token back in: a batch of one sequence, one step long
        logits, state = model(torch.tensor([[token]], device=device), state)
    return prefix + vocab.decode(generated)
