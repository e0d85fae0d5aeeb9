"""Per-character probabilities of a trained RNN and its mixture with an n-gram (notebook 07).

Two models that err differently can be combined: p = lam * p_rnn + (1 - lam) * p_kn is a
proper distribution for any lam in [0, 1], so its cross-entropy on the characters that
actually occur is a fair score. lam is fitted by EM on text the models were not trained on
but which is not the held-out text either: a slice cut from the end of the training text.
"""

import numpy as np
import torch
import torch.nn.functional as F

from d2lmini.i18n import _


@torch.no_grad()
def rnn_log_probs(model, indices: torch.Tensor, history: torch.Tensor | None = None,
                  num_steps: int = 500) -> np.ndarray:
    """Return ln p(indices[t] | history, indices[:t]) for every t, read as one stream (batch 1).

    The hidden state is carried through `history` (which is read but not scored) and the
    whole of `indices`; the first character is predicted from the state after `history`
    (without history it is not predicted and the result has len(indices) - 1 entries).
    """
    device = next(model.parameters()).device
    stream = indices if history is None else torch.cat([history, indices])
    skip = 0 if history is None else len(history) - 1
    state = model.begin_state(1)
    out = []
    for start in range(0, len(stream) - 1, num_steps):
        X = stream[start : start + num_steps].reshape(1, -1).to(device)
        Y = stream[start + 1 : start + 1 + num_steps].to(device)
        X = X[:, : len(Y)]
        outputs, state = model(X, state)
        out.append(-F.cross_entropy(outputs.float(), Y, reduction="none").cpu())
    return torch.cat(out).double().numpy()[skip:]


def fit_mixture_weight(log_p_a: np.ndarray, log_p_b: np.ndarray, iterations: int = 500) -> float:
    """Return the lam in [0, 1] maximising mean ln(lam p_a + (1 - lam) p_b), by EM.

    Each EM step sets lam to the mean posterior responsibility of model a; the likelihood
    never decreases, and it is concave in lam, so this converges to the optimum.
    """
    if log_p_a.shape != log_p_b.shape:
        raise ValueError(_("log_p_a and log_p_b must have the same shape, got {shape_a} and "
                           "{shape_b}").format(shape_a=log_p_a.shape, shape_b=log_p_b.shape))
    lam = 0.5
    for _iteration in range(iterations):
        a = np.log(lam) + log_p_a if lam > 0 else np.full_like(log_p_a, -np.inf)
        b = np.log1p(-lam) + log_p_b if lam < 1 else np.full_like(log_p_b, -np.inf)
        lam = float(np.mean(np.exp(a - np.logaddexp(a, b))))
    return lam


def mixture_log_probs(log_p_a: np.ndarray, log_p_b: np.ndarray, lam: float) -> np.ndarray:
    """Return ln(lam p_a + (1 - lam) p_b) per position, given ln p_a and ln p_b."""
    if not 0 <= lam <= 1:
        raise ValueError(_("lam must be in [0, 1], got {lam}").format(lam=repr(lam)))
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(lam) + log_p_a, np.log1p(-lam) + log_p_b)


def perplexity_of(log_probs: np.ndarray) -> float:
    """Return exp(-mean ln p): the perplexity of per-position log-probabilities."""
    return float(np.exp(-np.mean(log_probs)))


def harmonic_mean_of_probs(log_probs: np.ndarray) -> float:
    """Return 1 / mean(p), the inverse arithmetic mean of the probabilities (notebook 07).

    Perplexity is 1 / geometric mean(p), never below this: the confident mistakes (tiny p)
    dominate the geometric mean but barely move the arithmetic one.
    """
    return float(1.0 / np.mean(np.exp(log_probs)))
