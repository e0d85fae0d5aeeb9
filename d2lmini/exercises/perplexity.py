"""Self-checks for the exercises of notebook 07 (cross-entropy, bits per character, perplexity).

Each `check_*` takes the student's answer, prints a verdict (with a hint when wrong)
and returns a `Verdict`. The numbers of each question are module constants.
"""

import math

from d2lmini.exercises import Verdict, close_enough, verdict
from d2lmini.markov import make_markov_source

# Exercise 1: the probabilities a model gave to the characters that really came next.
SEQUENCE_PROBS = (0.5, 0.25, 0.125, 0.5)
# Exercise 2: a model's cross-entropy in bits per character.
BITS = 1.8
# Exercise 3: a text of LENGTH characters where the model gives the right character
# probability 1 everywhere except once, where it gives probability 0.
LENGTH = 1000
# Exercise 4: a model with this validation perplexity drives an ideal arithmetic coder
# that compresses TEXT_CHARS characters.
CODER_PERPLEXITY, TEXT_CHARS = 6.0, 13_051


def _is_number(answer) -> bool:
    """True when `answer` is a number (not a bool, not NaN): something float() accepts."""
    if isinstance(answer, bool):
        return False
    try:
        return not math.isnan(float(answer))
    except (TypeError, ValueError):
        return False


def check_sequence_perplexity(answer) -> Verdict:
    """Exercise 1: the perplexity of a model that gave SEQUENCE_PROBS to the true next characters."""
    nats = -sum(math.log(p) for p in SEQUENCE_PROBS) / len(SEQUENCE_PROBS)
    expected = math.exp(nats)
    return verdict(
        _is_number(answer) and close_enough(answer, expected, rel=1e-3),
        f"The mean information is {nats:.4f} nats, so the perplexity is exp({nats:.4f}) = {expected:.4f}: "
        "the geometric mean of 2, 4, 8 and 2 choices.",
        "Average -ln p over the four characters, then take exp of the average "
        "(or take the geometric mean of 1/p).",
    )


def check_bits_to_perplexity(answer) -> Verdict:
    """Exercise 2: (perplexity, nats per character) of a model at BITS bits per character."""
    perplexity, nats = 2**BITS, BITS * math.log(2)
    try:
        got_ppl, got_nats = answer
    except (TypeError, ValueError):
        got_ppl = got_nats = None
    return verdict(
        _is_number(got_ppl) and _is_number(got_nats)
        and close_enough(got_ppl, perplexity, rel=1e-3) and close_enough(got_nats, nats, rel=1e-3),
        f"2 ** {BITS} = {perplexity:.4f} choices per character, and {BITS} x ln 2 = {nats:.4f} nats.",
        "Answer with a pair (perplexity, nats). Perplexity is 2 ** bits; one bit is ln 2 ≈ 0.693 nats.",
    )


def check_zero_probability(answer) -> Verdict:
    """Exercise 3: perplexity when one of LENGTH characters gets probability 0 (the rest 1)."""
    return verdict(
        _is_number(answer) and float(answer) == math.inf,
        "One impossible event costs -log 0 = ∞ information, so the average and the perplexity are "
        "infinite: one confident mistake ruins the whole text. That is why models (and the unigram "
        "baseline, with add-one smoothing) never give probability exactly 0.",
        f"What is -log p for p = 0? The other {LENGTH - 1} characters cost nothing, "
        "but the average cannot absorb that one term. (math.inf is a number in Python.)",
    )


def check_compressed_bytes(answer) -> Verdict:
    """Exercise 4: bytes an ideal coder needs for TEXT_CHARS characters at CODER_PERPLEXITY."""
    expected = TEXT_CHARS * math.log2(CODER_PERPLEXITY) / 8
    return verdict(
        _is_number(answer) and close_enough(answer, expected, rel=0.005),
        f"log2({CODER_PERPLEXITY:g}) = {math.log2(CODER_PERPLEXITY):.4f} bits per character, times "
        f"{TEXT_CHARS:,} characters, divided by 8 bits per byte: about {expected:,.0f} bytes.",
        "Turn the perplexity into bits per character (log2), multiply by the number of characters, "
        "and divide by 8.",
    )


def check_markov_floor(answer) -> Verdict:
    """Exercise 5: the lowest expected perplexity any model reaches on the synthetic Markov source."""
    bits = make_markov_source().entropy_rate_bits()
    expected = 2**bits
    return verdict(
        _is_number(answer) and close_enough(answer, expected, rel=1e-3),
        f"The entropy rate is {bits:.4f} bits per character, so the floor is 2 ** {bits:.4f} = "
        f"{expected:.4f}: even the chain itself, used as a model, is that perplexed on average.",
        "Take the source's entropy rate in bits (make_markov_source().entropy_rate_bits(), or "
        "load_corpus('markov').entropy_rate_bits) and turn bits into a perplexity.",
    )
