"""A synthetic text source with an exactly known entropy rate (introduced in notebook 07).

A first-order Markov chain over a small alphabet: the next character depends only on
the current one. Its entropy rate, the average information per character of a long
sample, is computed exactly from the stationary distribution, so it is the floor that
no model's cross-entropy on this source can go below (in expectation).
"""

from dataclasses import dataclass

import numpy as np
import numpy.random  # noqa: F401 - imported here, never lazily inside a run an interrupt can cut

from d2lmini.i18n import _

DEFAULT_ALPHABET = "abcdefgh "


@dataclass(frozen=True)
class MarkovSource:
    """A Markov chain: `transitions[i, j]` is P(next = alphabet[j] | current = alphabet[i])."""

    alphabet: str
    transitions: np.ndarray

    def stationary(self) -> np.ndarray:
        """Return the stationary distribution pi with pi @ transitions == pi."""
        values, vectors = np.linalg.eig(self.transitions.T)
        pi = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
        return pi / pi.sum()

    def entropy_rate_bits(self) -> float:
        """Return the exact entropy rate in bits per character: -sum_i pi_i sum_j P_ij log2 P_ij."""
        p = self.transitions
        logs = np.log2(p, where=p > 0, out=np.zeros_like(p))
        return float(-(self.stationary() * (p * logs).sum(axis=1)).sum())

    def sample(self, length: int, seed: int = 0) -> str:
        """Return `length` characters drawn from the chain, starting from the stationary law."""
        rng = np.random.default_rng(seed)
        cumulative = np.cumsum(self.transitions, axis=1)
        uniforms = rng.random(length)
        state = int(np.searchsorted(np.cumsum(self.stationary()), uniforms[0]))
        out = np.empty(length, dtype=np.int64)
        for t in range(length):
            out[t] = state
            if t + 1 < length:
                row = cumulative[state]
                state = min(int(np.searchsorted(row, uniforms[t + 1] * row[-1])), len(row) - 1)
        return "".join(np.array(list(self.alphabet))[out])


def make_markov_source(
    alphabet: str = DEFAULT_ALPHABET, seed: int = 0, concentration: float = 0.3
) -> MarkovSource:
    """Return a random Markov chain over `alphabet`, seeded.

    Each row of transition probabilities is drawn from a Dirichlet distribution; a small
    `concentration` makes rows peaked (a low entropy rate), a large one nearly uniform.
    A space is never followed by another space, so samples look like words.
    """
    rng = np.random.default_rng(seed)
    k = len(alphabet)
    transitions = rng.dirichlet(np.full(k, concentration), size=k)
    if " " in alphabet:
        s = alphabet.index(" ")
        transitions[s, s] = 0.0
        transitions[s] /= transitions[s].sum()
    return MarkovSource(alphabet, transitions)


def empirical_conditional_entropy_bits(text: str) -> float:
    """Return H(next char | current char) in bits, estimated from the pair counts of `text`."""
    symbols = sorted(set(text))
    index = {c: i for i, c in enumerate(symbols)}
    codes = np.array([index[c] for c in text])
    counts = np.zeros((len(symbols), len(symbols)))
    np.add.at(counts, (codes[:-1], codes[1:]), 1)
    joint = counts / counts.sum()
    conditional = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    mask = joint > 0
    return float(-(joint[mask] * np.log2(conditional[mask])).sum())


@dataclass(frozen=True)
class EchoSource:
    """A source with memory: each character repeats the one `lag` places back with probability
    `keep`, else is one of the other characters drawn uniformly (notebook 07).

    The text is `lag` interleaved first-order chains, so x_t is independent of the `lag - 1`
    characters just before it: an n-gram with n <= lag sees nothing (log2 |alphabet| bits per
    character) while the exact floor is h(keep) + (1 - keep) log2(|alphabet| - 1). A model must
    remember `lag` steps back to reach it.
    """

    alphabet: str = "abcd"
    lag: int = 6
    keep: float = 0.85

    def __post_init__(self):
        if len(set(self.alphabet)) != len(self.alphabet) or len(self.alphabet) < 2:
            raise ValueError(_("alphabet must be at least 2 distinct characters, got {alphabet}").format(
                alphabet=repr(self.alphabet)))
        if not (isinstance(self.lag, int) and self.lag >= 1):
            raise ValueError(_("lag must be an integer >= 1, got {lag}").format(lag=repr(self.lag)))
        if not 0 < self.keep < 1:
            raise ValueError(_("keep must be in (0, 1), got {keep}").format(keep=repr(self.keep)))

    def entropy_rate_bits(self) -> float:
        """Return the exact entropy rate in bits per character (the floor for any model)."""
        p = self.keep
        return float(-p * np.log2(p) - (1 - p) * np.log2(1 - p) + (1 - p) * np.log2(len(self.alphabet) - 1))

    def sample(self, length: int, seed: int = 0) -> str:
        """Return `length` characters: `lag` uniform ones, then each echoes the one `lag` back or not."""
        rng = np.random.default_rng(seed)
        size = len(self.alphabet)
        out = np.empty(length, dtype=np.int64)
        out[: self.lag] = rng.integers(0, size, self.lag)
        echo = rng.random(length) < self.keep
        shift = rng.integers(1, size, length)  # a different character: add 1..size-1 mod size
        for t in range(self.lag, length):
            out[t] = out[t - self.lag] if echo[t] else (out[t - self.lag] + shift[t]) % size
        return "".join(np.array(list(self.alphabet))[out])


def empirical_lag_entropy_bits(text: str, lag: int) -> float:
    """Return H(x_t | x_{t-lag}) in bits, estimated from the counts of `text` (checks EchoSource)."""
    symbols = sorted(set(text))
    index = {c: i for i, c in enumerate(symbols)}
    codes = np.array([index[c] for c in text])
    counts = np.zeros((len(symbols), len(symbols)))
    np.add.at(counts, (codes[:-lag], codes[lag:]), 1)
    joint = counts / counts.sum()
    conditional = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    mask = joint > 0
    return float(-(joint[mask] * np.log2(conditional[mask])).sum())
