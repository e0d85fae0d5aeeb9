"""Verdicts on a trained model's perplexity, judged against the baselines.

A run is "ok" only when its validation perplexity beats every baseline it is shown beside
(a uniform guess over the vocabulary, the unigram, and where given the best n-gram), never
when it merely passes a fixed number. Notebook 06's clipping panel and the lab colour their
verdicts with `VERDICT_COLOURS`.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

from d2lmini.metrics import perplexity_from_bits, uniform_bits, unigram_bits

VERDICT_COLOURS = {"ok": "green", "weak": "goldenrod", "exploded": "darkorange", "diverged": "crimson"}


@dataclass(frozen=True)
class PerplexityVerdict:
    """`status`: "ok" (beats every baseline), "weak" (beats the uniform guess, not every
    baseline) or "exploded" (no better than a uniform guess, or not finite); `beaten` and
    `missed` name the baselines; `text` says it in one sentence."""

    status: str
    beaten: tuple[str, ...]
    missed: tuple[str, ...]
    text: str


def text_baselines(train_text: str, valid_text: str) -> dict[str, float]:
    """Return {"uniform": |V|, "unigram": ...}: the baseline perplexities on `valid_text` (notebook 06)."""
    symbols = "".join(sorted(set(train_text + valid_text)))
    return {"uniform": perplexity_from_bits(uniform_bits(len(symbols))),
            "unigram": perplexity_from_bits(unigram_bits(train_text, valid_text, symbols))}


def judge_perplexity(perplexity: float, baselines: Mapping[str, float]) -> PerplexityVerdict:
    """Return the verdict on a validation `perplexity` beside `baselines` (name -> perplexity).

    `baselines` must hold "uniform"; introduced with notebook 06's clipping panel.
    """
    if "uniform" not in baselines:
        raise ValueError(f"baselines must include 'uniform', got {sorted(baselines)}")
    finite = math.isfinite(perplexity)
    beaten = tuple(name for name, value in baselines.items() if finite and perplexity < value)
    missed = tuple(name for name in baselines if name not in beaten)
    if "uniform" in missed:
        status = "exploded"
        text = f"perplexity {perplexity:.3g}: no better than a uniform guess ({baselines['uniform']:.3g})"
    elif missed:
        status = "weak"
        text = (f"perplexity {perplexity:.3g}: better than guessing, but worse than "
                + ", ".join(f"the {name} ({baselines[name]:.3g})" for name in missed))
    else:
        status = "ok"
        text = (f"perplexity {perplexity:.3g}: better than "
                + ", ".join(f"the {name} ({baselines[name]:.3g})" for name in beaten))
    return PerplexityVerdict(status, beaten, missed, text)
