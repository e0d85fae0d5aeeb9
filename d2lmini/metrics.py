"""Perplexity, bits per character, and the baselines an RNN must beat (notebook 07).

Cross-entropy is measured in nats (natural log) by PyTorch; information theory often
uses bits (log base 2). Perplexity is exp(nats) = 2 ** bits.
"""

import bz2
import collections
import gzip
import lzma
import math

import pyppmd
import torch
import torch.nn.functional as F

from d2lmini.ngram import kneser_ney_ladder

LN2 = math.log(2)


def bits_from_nats(nats: float) -> float:
    """Return a cross-entropy in bits, given it in nats (divide by ln 2)."""
    return nats / LN2


def nats_from_bits(bits: float) -> float:
    """Return a cross-entropy in nats, given it in bits (multiply by ln 2)."""
    return bits * LN2


def perplexity_from_nats(nats: float) -> float:
    """Return the perplexity exp(nats)."""
    return math.exp(nats)


def perplexity_from_logits(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Return the perplexity of `logits` (n, |V|) on the true next tokens `targets` (n,) (notebook 07).

    It is exp of the mean cross-entropy in nats, averaged in float32 whatever the logits'
    type; a perplexity beyond the largest float is infinity.
    """
    nats = float(F.cross_entropy(logits.float(), targets))
    try:
        return math.exp(nats)
    except OverflowError:
        return math.inf


def perplexity_from_bits(bits: float) -> float:
    """Return the perplexity 2 ** bits."""
    return 2.0**bits


def bits_from_perplexity(perplexity: float) -> float:
    """Return the bits per token log2(perplexity)."""
    return math.log2(perplexity)


def nats_from_perplexity(perplexity: float) -> float:
    """Return the nats per token ln(perplexity)."""
    return math.log(perplexity)


def uniform_bits(vocab_size: int) -> float:
    """Return the bits per token of guessing uniformly among `vocab_size` tokens: log2 |V|."""
    return math.log2(vocab_size)


def unigram_bits(train_text: str, valid_text: str, symbols: str | None = None) -> float:
    """Return bits per character of `valid_text` under character frequencies of `train_text`.

    Add-one (Laplace) smoothing over `symbols` (default: every character of either
    text) gives unseen characters a small probability instead of zero.
    """
    alphabet = set(symbols or train_text + valid_text)
    counts = collections.Counter(train_text)
    total = len(train_text) + len(alphabet)
    return -sum(math.log2((counts[c] + 1) / total) for c in valid_text) / len(valid_text)


def bigram_bits(train_text: str, valid_text: str, symbols: str | None = None) -> float:
    """Return bits per character of `valid_text` under add-one smoothed P(next | previous).

    The pair counts come from `train_text`; the first validation character is
    conditioned on the last training character.
    """
    size = len(set(symbols or train_text + valid_text))
    pairs = collections.Counter(zip(train_text, train_text[1:], strict=False))
    firsts = collections.Counter(train_text[:-1])
    context = train_text[-1:] + valid_text
    return -sum(
        math.log2((pairs[(prev, nxt)] + 1) / (firsts[prev] + size))
        for prev, nxt in zip(context, valid_text, strict=False)
    ) / len(valid_text)


COMPRESSORS = {
    "gzip": lambda data: gzip.compress(data, compresslevel=9, mtime=0),
    "bz2": lambda data: bz2.compress(data, compresslevel=9),
    "xz": lambda data: lzma.compress(data, preset=9 | lzma.PRESET_EXTREME),
    # PPMd order 6: on The Time Machine orders 5/6/8 give 3.67/3.63/3.64 (6 is best, as for
    # KN), and 16 MiB of model memory never fills on these texts, so nothing is discarded.
    "ppmd": lambda data: pyppmd.compress(data, max_order=6, mem_size=16 << 20),
}


def compression_bits(train_text: str, valid_text: str, method: str) -> float:
    """Return the bits per character a compressor needs for `valid_text` after `train_text`.

    That is 8 * (size(train + valid) - size(train)) / len(valid): what the compressed
    file grows by when the validation text is appended, so the compressor may use
    everything it learned from the training text.
    """
    compress = COMPRESSORS[method]
    train = train_text.encode("ascii", "replace")
    both = (train_text + valid_text).encode("ascii", "replace")
    return 8 * (len(compress(both)) - len(compress(train))) / len(valid_text)


def baseline_bits(train_text: str, valid_text: str) -> dict[str, float]:
    """Return bits per character on `valid_text` for uniform, unigram, bigram, gzip, bz2, xz and PPMd."""
    symbols = "".join(sorted(set(train_text + valid_text)))
    table = {
        "uniform": uniform_bits(len(symbols)),
        "unigram": unigram_bits(train_text, valid_text, symbols),
        "bigram": bigram_bits(train_text, valid_text, symbols),
    }
    for method in COMPRESSORS:
        table[method] = compression_bits(train_text, valid_text, method)
    return table


class Ladder(dict):
    """The baseline ladder: bits per character by model name, in order, and `best_order`.

    `best_order` is the Kneser-Ney order with the fewest bits, the one named in the
    "best n-gram (KN n=...)" row.
    """

    def __init__(self, rows: dict[str, float], best_order: int):
        super().__init__(rows)
        self.best_order = best_order


def ladder_bits(train_text: str, valid_text: str, orders=range(2, 9)) -> Ladder:
    """Return the baseline ladder in bits per character on `valid_text` (notebook 07).

    Keys in order: "uniform", "unigram", "KN n=2".."KN n=8" (interpolated Kneser-Ney,
    `d2lmini.ngram`), "best n-gram (KN n=...)" (the lowest of those, whose order is the
    ladder's `best_order`), then the compressors "gzip", "bz2", "xz", "ppmd".
    """
    symbols = "".join(sorted(set(train_text + valid_text)))
    table = {"uniform": uniform_bits(len(symbols)),
             "unigram": unigram_bits(train_text, valid_text, symbols)}
    kn = kneser_ney_ladder(train_text, valid_text, orders)
    table.update({f"KN n={n}": bits for n, bits in kn.items()})
    best = min(kn, key=kn.get)
    table[f"best n-gram (KN n={best})"] = kn[best]
    for method in COMPRESSORS:
        table[method] = compression_bits(train_text, valid_text, method)
    return Ladder(table, best)
