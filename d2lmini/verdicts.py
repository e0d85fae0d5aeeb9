"""Verdicts on a trained model's perplexity, judged against the baselines.

A run is "ok" only when its validation perplexity beats every baseline it is shown beside
(a uniform guess over the vocabulary, the unigram, and where given the best n-gram), never
when it merely passes a fixed number. Notebook 06's clipping panel and the lab colour their
verdicts with `VERDICT_COLOURS`.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from d2lmini.i18n import N_, _
from d2lmini.metrics import perplexity_from_bits, uniform_bits, unigram_bits

# Each at least 4.5:1 against white (WCAG AA), and every verdict is also written in words.
VERDICT_COLOURS = {"ok": "#1a7f37", "weak": "#8a6100", "exploded": "#a84a00", "diverged": "#b30000"}


@dataclass(frozen=True)
class PerplexityVerdict:
    """`status`: "ok" (beats every baseline), "weak" (beats the uniform guess, not every
    baseline) or "exploded" (no better than a uniform guess, or not finite); `beaten` and
    `missed` name the baselines; `text` says it in one sentence, in the language d2lmini spoke
    when it was judged."""

    status: str
    beaten: tuple[str, ...]
    missed: tuple[str, ...]
    text: str


def text_baselines(train_text: str, valid_text: str) -> dict[str, float]:
    """Return {"uniform": |V|, "unigram": ...}: the baseline perplexities on `valid_text` (notebook 06)."""
    symbols = "".join(sorted(set(train_text + valid_text)))
    return {"uniform": perplexity_from_bits(uniform_bits(len(symbols))),
            "unigram": perplexity_from_bits(unigram_bits(train_text, valid_text, symbols))}


# How a verdict names the baselines it knows, with their perplexity; any other by its own name.
BASELINE_PHRASES = {
    # TRANSLATORS: a baseline in a list ("better than the uniform (28), the unigram (16.5)"): a uniform guess.
    "uniform": N_("the uniform ({value:.3g})"),
    # TRANSLATORS: a baseline in a list: the unigram model (character frequencies).
    "unigram": N_("the unigram ({value:.3g})"),
    # TRANSLATORS: a baseline in a list: the best n-gram model.
    "best n-gram": N_("the best n-gram ({value:.3g})"),
    # TRANSLATORS: a baseline in a list: the PPMd compressor.
    "PPMd compressor": N_("the PPMd compressor ({value:.3g})"),
}
KNESER_NEY = re.compile(r"Kneser-Ney (\d+)-gram")


def baseline_phrase(name: str, value: float) -> str:
    """'the unigram (16.5)': a baseline and its perplexity, as a verdict names it (in d2lmini's language)."""
    if name in BASELINE_PHRASES:
        return _(BASELINE_PHRASES[name]).format(value=value)
    kneser_ney = KNESER_NEY.fullmatch(name)
    if kneser_ney:
        # TRANSLATORS: a baseline in a list: the Kneser-Ney n-gram model of order {order}.
        return _("the Kneser-Ney {order}-gram ({value:.3g})").format(order=kneser_ney[1], value=value)
    # TRANSLATORS: a baseline in a list, {name} as the program names it (e.g. "KN n=3").
    return _("the {name} ({value:.3g})").format(name=name, value=value)


def _listed(names, baselines: Mapping[str, float]) -> str:
    # TRANSLATORS: the separator between the items of a list ("a, b, c").
    return _(", ").join(baseline_phrase(name, baselines[name]) for name in names)


def judge_perplexity(perplexity: float, baselines: Mapping[str, float]) -> PerplexityVerdict:
    """Return the verdict on a validation `perplexity` beside `baselines` (name -> perplexity).

    `baselines` must hold "uniform"; introduced with notebook 06's clipping panel.
    """
    if "uniform" not in baselines:
        raise ValueError(_("baselines must include 'uniform', got {names}").format(names=sorted(baselines)))
    finite = math.isfinite(perplexity)
    beaten = tuple(name for name, value in baselines.items() if finite and perplexity < value)
    missed = tuple(name for name in baselines if name not in beaten)
    if "uniform" in missed:
        status = "exploded"
        text = _("perplexity {value:.3g}: no better than a uniform guess ({uniform:.3g})").format(
            value=perplexity, uniform=baselines["uniform"])
    elif missed:
        status = "weak"
        # TRANSLATORS: {baselines} lists the baselines still ahead, e.g. "the unigram (16.5)".
        text = _("perplexity {value:.3g}: better than guessing, but worse than {baselines}").format(
            value=perplexity, baselines=_listed(missed, baselines))
    else:
        status = "ok"
        # TRANSLATORS: {baselines} lists every baseline beaten, e.g. "the uniform (28), the unigram (16.5)".
        text = _("perplexity {value:.3g}: better than {baselines}").format(
            value=perplexity, baselines=_listed(beaten, baselines))
    return PerplexityVerdict(status, beaten, missed, text)
