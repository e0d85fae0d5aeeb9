"""Checks of the hand-written BPTT, and the vanishing/exploding-gradient experiments (notebook 05).

`autograd_gradients` and `finite_difference_gradients` compute the gradients of
`d2lmini.bptt` in two independent ways, so the hand-written ones can be checked;
`rescaled_model` and `gradient_norms_back_in_time` tie the growth or decay of gradients
going back in time to the spectral radius of W_hh.
"""

import torch
import torch.nn.functional as F

from d2lmini.bptt import PARAM_NAMES, bptt_forward, hidden_gradients
from d2lmini.rnn import init_rnn_params, rnn_forward


def autograd_gradients(X, Y, state, params: dict[str, torch.Tensor], window: int | None = None):
    """Return (loss, gradients) of the same loss computed by PyTorch's autograd on `rnn_forward`.

    With `window=k` the state is detached after every k steps (truncated BPTT).
    """
    leaves = {n: params[n].detach().clone().requires_grad_(True) for n in PARAM_NAMES}
    leaves["state"] = state.detach().clone().requires_grad_(True)
    args = [leaves[n] for n in PARAM_NAMES]
    steps = X.shape[1]
    window = window or steps
    H, outputs = leaves["state"], []
    for start in range(0, steps, window):
        if start > 0:
            H = H.detach()
        chunk, H = rnn_forward(X[:, start : start + window], H, *args)
        outputs.append(chunk)
    loss = F.cross_entropy(torch.cat(outputs), Y.T.reshape(-1))
    loss.backward()
    return float(loss.detach()), {n: leaf.grad for n, leaf in leaves.items()}


def loss_value(X, Y, state, params: dict[str, torch.Tensor]) -> float:
    """Return the mean cross-entropy of the RNN on (X, Y) from `state` (no gradients)."""
    with torch.no_grad():
        outputs, _ = rnn_forward(X, state, *(params[n] for n in PARAM_NAMES))
        return float(F.cross_entropy(outputs, Y.T.reshape(-1)))


def sample_entries(shape, count: int, generator: torch.Generator) -> list[tuple[int, ...]]:
    """Return `count` distinct random positions in a tensor of `shape` (drawn on the CPU)."""
    total = 1
    for size in shape:
        total *= size
    flat = torch.randperm(total, generator=generator)[: min(count, total)]
    return [tuple(int(i) for i in torch.unravel_index(f, tuple(shape))) for f in flat]


def finite_difference_gradients(X, Y, state, params: dict[str, torch.Tensor], name: str,
                                entries: list[tuple[int, ...]], eps: float = 1e-6) -> torch.Tensor:
    """Estimate dL/d(params[name] or state)[entry] for each entry by central differences.

    (L(w + eps) - L(w - eps)) / (2 eps) is off by a truncation error of order eps^2 plus
    the rounding of the two losses divided by eps, about machine-epsilon * |L| / eps: use
    float64. Returns a 1-D CPU float64 tensor, one estimate per entry.
    """
    estimates = []
    for entry in entries:
        values = []
        for sign in (1, -1):
            shifted = {n: p.detach().clone() for n, p in params.items()}
            shifted_state = state.detach().clone()
            target = shifted_state if name == "state" else shifted[name]
            target[entry] += sign * eps
            values.append(loss_value(X, Y, shifted_state, shifted))
        estimates.append((values[0] - values[1]) / (2 * eps))
    return torch.tensor(estimates, dtype=torch.float64)


def relative_error(a, b) -> float:
    """Return ||a - b|| / max(||a||, ||b||) (0 when both are zero): a scale-free distance."""
    a = torch.as_tensor(a, dtype=torch.float64).cpu()
    b = torch.as_tensor(b, dtype=torch.float64).cpu()
    scale = max(float(torch.linalg.vector_norm(a)), float(torch.linalg.vector_norm(b)))
    return 0.0 if scale == 0 else float(torch.linalg.vector_norm(a - b)) / scale


def max_relative_error(grads_a: dict, grads_b: dict) -> float:
    """Return the largest `relative_error` over the gradients both dicts have."""
    return max(relative_error(grads_a[n], grads_b[n]) for n in grads_a if n in grads_b)


# ---------------------------------------------------------------------------------------
# Vanishing and exploding gradients


def spectral_radius(W: torch.Tensor) -> float:
    """Return the largest absolute eigenvalue of the square matrix W."""
    return float(torch.linalg.eigvals(W.detach().double().cpu()).abs().max())


def rescale_to_spectral_radius(W: torch.Tensor, radius: float) -> torch.Tensor:
    """Return W scaled so that its spectral radius is `radius`."""
    return W * (radius / spectral_radius(W))


def rescaled_model(radius: float, num_hiddens: int = 32, vocab_size: int = 28, seed: int = 0,
                   input_scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Return seeded float64 CPU parameters whose W_hh has spectral radius `radius`.

    The same seed gives the same weights for every radius, up to the rescaling of W_hh;
    `input_scale` multiplies W_xh (0 turns the inputs off, so H stays 0 from a zero state).
    """
    generator = torch.Generator().manual_seed(seed)
    params = init_rnn_params(vocab_size, num_hiddens, "lecun", generator)
    params["W_hh"] = rescale_to_spectral_radius(params["W_hh"], radius)
    params["W_xh"] = params["W_xh"] * input_scale
    return {n: p.double() for n, p in params.items()}


def gradient_norms_back_in_time(radius: float, max_k: int, num_hiddens: int = 32, vocab_size: int = 28,
                                batch_size: int = 8, seed: int = 0, input_scale: float = 1.0,
                                device: torch.device | str = "cpu") -> list[float]:
    """Return ||dL/dH_{T-k}|| for k = 0..max_k on `rescaled_model(radius, ...)`.

    The loss is L = <g, H_T> for a fixed random unit vector g per sequence, so dL/dH_T = g
    and each step back multiplies by one Jacobian diag(1 - H_t^2) W_hh^T. The inputs are
    random tokens from a zero state; norms are averaged over the batch (floats, k = 0 first).
    """
    params = rescaled_model(radius, num_hiddens, vocab_size, seed, input_scale)
    generator = torch.Generator().manual_seed(seed + 1)
    X = torch.randint(0, vocab_size, (batch_size, max_k + 1), generator=generator)
    g = torch.randn(batch_size, num_hiddens, generator=generator, dtype=torch.float64)
    g = g / torch.linalg.vector_norm(g, dim=1, keepdim=True)
    params = {n: p.to(device) for n, p in params.items()}
    state = torch.zeros(batch_size, num_hiddens, dtype=torch.float64, device=device)
    outputs, _, cache = bptt_forward(X.to(device), state, *(params[n] for n in PARAM_NAMES))
    dH_all, _, _ = hidden_gradients(torch.zeros_like(outputs), g.to(device), cache)
    norms = torch.linalg.vector_norm(dH_all, dim=2).mean(1).cpu()  # index t; k = T - t
    return [float(v) for v in norms.flip(0)]
