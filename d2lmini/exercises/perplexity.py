"""Self-checks for the exercises of notebook 07 (cross-entropy, bits per character, perplexity).

Each `check_*` takes the student's answer and returns a `Verdict` (with a hint when wrong),
which shows itself when a cell ends with the check; nothing is printed. The numbers of each
question are module constants.
"""

import math

import torch
import torch.nn.functional as F

from d2lmini.exercises import Verdict, as_number, number_verdict, self_check, verdict
from d2lmini.exercises.coding import Case, check_function, never, python_number, sampler
from d2lmini.exercises.guard.refusals import CROSS_ENTROPY
from d2lmini.exercises.mistakes import mistakes_of
from d2lmini.i18n import N_, _
from d2lmini.markov import make_markov_source
from d2lmini.ngram import KneserNey

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
ABOUT_BYTES = 0.01  # the question asks "about how many bytes": 4200 or 4218 is a fair answer
# Exercise 5: a model trained in the lab on the Markov source reaches this validation perplexity.
LAB_PERPLEXITY = 4.1
# Section 7 prints the floor as 1.9766 bits (4 decimals) and as perplexity 3.936 (3 decimals):
# an answer computed from either printed value is off by up to 0.00019 bits, so that is accepted.
PRINTED_FLOOR_SLACK_BITS = 0.0002


@self_check
def check_sequence_perplexity(answer, probs: tuple = SEQUENCE_PROBS) -> Verdict:
    """Exercise 1: the perplexity of a model that gave `probs` to the true next characters."""
    nats = -sum(math.log(p) for p in probs) / len(probs)
    expected = math.exp(nats)
    choices = [f"{1 / p:.4g}" for p in probs]
    return number_verdict(
        answer, expected,
        # TRANSLATORS: {choices} lists numbers separated by ", "; {last} is the last one.
        _("The mean information is {nats:.4f} nats, so the perplexity is exp({nats:.4f}) = {expected:.4f}: "
          "the geometric mean of {choices} and {last} choices.").format(
              nats=nats, expected=expected, choices=", ".join(choices[:-1]), last=choices[-1]),
        _("Average -ln p over the four characters, then take exp of the average (or take the geometric "
          "mean of 1/p)."),
    )


@self_check
def check_bits_to_perplexity(answer, bits: float = BITS) -> Verdict:
    """Exercise 2: (perplexity, nats per character) of a model at `bits` bits per character."""
    perplexity, nats = 2**bits, bits * math.log(2)
    success = _("2 ** {bits:g} = {perplexity:.4f} choices per character, and {bits:g} x ln 2 = {nats:.4f} "
                "nats.").format(bits=bits, perplexity=perplexity, nats=nats)
    hint = _("Answer with a pair (perplexity, nats). Perplexity is 2 ** bits; one bit is ln 2 nats.")
    try:
        got_ppl, got_nats = answer  # a tuple, a list, a 1-d tensor or array of two numbers
    except (TypeError, ValueError):
        return verdict(False, success, hint)
    first = number_verdict(got_ppl, perplexity, success, hint)
    return first if not first else number_verdict(got_nats, nats, success, hint)


@self_check
def check_zero_probability(answer) -> Verdict:
    """Exercise 3: perplexity when one of LENGTH characters gets probability 0 (the rest 1)."""
    return verdict(
        as_number(answer) == math.inf,
        _("One impossible event costs -log 0 = ∞ information, so the average and the perplexity are "
          "infinite: one confident mistake ruins the whole text. That is why models (and the unigram "
          "baseline, with add-one smoothing) never give probability exactly 0."),
        _("What is -log p for p = 0? The other {others} characters cost nothing, but the average cannot "
          "absorb that one term. (math.inf is a number in Python.)").format(others=LENGTH - 1),
    )


@self_check
def check_compressed_bytes(answer, perplexity: float = CODER_PERPLEXITY) -> Verdict:
    """Exercise 4: bytes an ideal coder needs for TEXT_CHARS characters at `perplexity`."""
    expected = TEXT_CHARS * math.log2(perplexity) / 8
    return number_verdict(
        answer, expected,
        _("log2({perplexity:g}) = {bits:.4f} bits per character, times {chars:,} characters, divided by 8 "
          "bits per byte: about {expected:,.0f} bytes.").format(
              perplexity=perplexity, bits=math.log2(perplexity), chars=TEXT_CHARS, expected=expected),
        _("Turn the perplexity into bits per character (log2), multiply by the number of characters, and "
          "divide by 8."),
        about=ABOUT_BYTES,
    )


@self_check
def check_bits_above_floor(answer, perplexity: float = LAB_PERPLEXITY) -> Verdict:
    """Exercise 5: how many bits per character a model at `perplexity` spends above the Markov floor."""
    floor_bits = make_markov_source().entropy_rate_bits()
    expected = math.log2(perplexity) - floor_bits
    return number_verdict(
        answer, expected,
        _("log2({perplexity:g}) - {floor:.4f} = {expected:.4f} bits per character: on a text of 100,000 "
          "characters that is about {bytes:,.0f} bytes more than the best possible code.").format(
              perplexity=perplexity, floor=floor_bits, expected=expected, bytes=100_000 * expected / 8),
        _("Turn both perplexities (the model's and the floor) into bits per character with log2, then "
          "subtract."),
        about=PRINTED_FLOOR_SLACK_BITS / abs(expected),
    )


def reference_perplexity(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """exp of the mean cross-entropy of `logits` (n, vocab) against `targets` (n,), in float64."""
    return math.exp(float(F.cross_entropy(logits.double(), targets)))


def _perplexity_cases(device: torch.device):
    rand = sampler(7, device)
    generator = torch.Generator().manual_seed(70)
    # TRANSLATORS: how the cases' logits are made ("random logits, 12 characters, vocabulary 5").
    for n, vocab, scale, label in [(12, 5, 1.0, N_("random logits")), (40, 28, 3.0, N_("random logits")),
                                   (6, 4, 0.0, N_("all-zero logits (a uniform guess)")),
                                   (8, 3, 1000.0, N_("logits as large as 1000"))]:
        logits = rand(n, vocab) * scale
        targets = torch.randint(vocab, (n,), generator=generator).to(device)
        if scale == 1000.0:  # confident and right: perplexity near 1, where naive exp overflows
            targets = logits.argmax(1)
        yield Case(_("{logits}, {n} characters, vocabulary "
                     "{vocab}").format(logits=_(label), n=n, vocab=vocab),
                   (logits, targets), reference=reference_perplexity)
    # Confident and wrong once: a logit of 1000 on a wrong character puts log p(true character) near
    # -1000 in that row, far below what a probability clamped before the log (log 1e-10 = -23) can
    # give; averaged over 20 rows the perplexity (about e^50) is still finite, in float32 too.
    logits = rand(20, 4)
    targets = torch.randint(4, (20,), generator=generator).to(device)
    logits[0, (int(targets[0]) + 1) % 4] += 1000.0
    yield Case(_("random logits with one logit of 1000 on a wrong character, 20 characters, vocabulary 4"),
               (logits, targets), reference=reference_perplexity)


def check_perplexity_function(fn) -> Verdict:
    """Exercise 6: `fn(logits, targets)` returns the perplexity (a number), computed by hand and stably."""
    return check_function(
        fn, _perplexity_cases,
        _("exp of the mean of -log p(true character): right for any vocabulary, and stable for huge logits."),
        rules=[never({"cross_entropy", "cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss2d"},
                     N_("Compute the loss yourself: F.cross_entropy and F.nll_loss do the whole exercise "
                        "for you."))],
        signature="perplexity(logits, targets)", rtol=1e-4,
        bans=(CROSS_ENTROPY,), mistakes=mistakes_of("07:perplexity_function"), form=python_number)


def reference_kn_bigram(text: str, context: str, char: str, discount: float = 0.75) -> float:
    """The package's interpolated Kneser-Ney bigram p(char | context) (continuation unigram, no floor)."""
    return KneserNey(2, discount, floor=False).fit(text).prob(context, char)


def _kn_cases(device: torch.device):
    del device  # plain Python: the same on every device
    # "cabbage" ends with a character seen nowhere else: a context with no counts at all. In "aaa" and
    # "abbba" a pair overlaps itself ("aa" twice in "aaa"), which `str.count` counts once: kept last, so
    # that a function wrong on the earlier texts is told about those first.
    for text, discount in [("abracadabra", 0.75), ("the cat sat on the mat", 0.5), ("aab", 0.75),
                           ("xyzzy", 0.9), ("cabbage", 0.75), ("aaa", 0.75), ("abbba", 0.5)]:
        for context in sorted(set(text)):
            for char in sorted(set(text)):
                yield Case(_("text {text}, discount {discount}, p({char} | {context})").format(
                    text=repr(text), discount=discount, char=repr(char), context=repr(context)),
                    (text, context, char, discount), reference=reference_kn_bigram)


def check_kn_bigram(fn) -> Verdict:
    """Exercise 7: `fn(text, context, char, discount)` returns the interpolated Kneser-Ney bigram p."""
    return check_function(
        fn, _kn_cases,
        _("Your bigram discounts every seen pair, and gives what it saved to the continuation unigram, "
          "which counts in how many different contexts a character appears."),
        signature="kn_bigram(text, context, char, discount)", rtol=1e-6,
        mistakes=mistakes_of("07:kn_bigram"))
