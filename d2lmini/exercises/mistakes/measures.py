"""Notebooks 06 and 07's typical mistakes: clipping by the joint norm, perplexity, Kneser-Ney bigrams."""

import math
from collections import Counter
from functools import partial

import torch

from d2lmini.exercises.coding import Mistake
from d2lmini.i18n import N_

RULE_SECTION = N_("notebook 06, section 2 (The rule: one norm over all parameters)")
PER_ELEMENT_SECTION = N_("notebook 06, section 6 (Per-element clipping vs global-norm clipping)")
PERPLEXITY_SECTION = N_("notebook 07, section 3 (Perplexity: an effective number of choices)")
UNITS_SECTION = N_("notebook 07, section 4 (Nats, bits per character and perplexity)")
ENTROPY_SECTION = N_("notebook 07, section 2 (Cross-entropy: the average surprise over a text)")
KN_SECTION = N_("notebook 07, section 5 (The baseline ladder on the bundled corpus)")
ONE_NORM = N_(
    "the norm is one gradient's norm (the first's, or the largest's): it runs over every entry of every "
    "gradient together."
)


def _clip_with(grads, theta, norm_of="all", scale="joint", squared=False, inverted=False, entries="squares"):
    """Clipped copies of `grads` with the flags' mistakes (clamped per value, per tensor, always scaled)."""
    norms = {
        "squares": lambda: [torch.linalg.vector_norm(g) for g in grads],
        "absolute": lambda: [g.abs().sum() for g in grads],
        "mean": lambda: [g.square().mean().sqrt() for g in grads],
    }[entries]()
    if scale == "per value":
        return [g.clamp(-theta, theta) for g in grads]
    if scale == "each":
        return [g * min(1.0, theta / max(float(n), 1e-12)) for g, n in zip(grads, norms, strict=True)]
    counted = torch.stack(
        norms[:3] if norm_of == "first three" else norms[:-1] if norm_of == "not last" else norms
    )
    if norm_of == "largest":
        norm = float(counted.max())
    elif norm_of == "first":
        norm = float(counted[0])
    elif norm_of == "sum":
        norm = float(counted.sum())
    else:
        norm = float(counted.square().sum() if squared else torch.linalg.vector_norm(counted))
    if inverted:
        factor = norm / theta if norm > theta else 1.0
    elif scale == "max":
        factor = max(1.0, theta / max(norm, 1e-12))
    else:
        factor = theta / max(norm, 1e-12) if scale == "always" else min(1.0, theta / max(norm, 1e-12))
    return [g * factor for g in grads]


CLIP = (
    Mistake(
        N_(
            "the gradients are clamped entry by entry (clipping by value): clipping by the norm scales "
            "every gradient by the same factor, keeping the direction."
        ),
        partial(_clip_with, scale="per value"),
        PER_ELEMENT_SECTION,
    ),
    Mistake(
        N_(
            "each gradient is clipped by its own norm: all of them are scaled by one factor, from the "
            "joint norm of every gradient together."
        ),
        partial(_clip_with, scale="each"),
        RULE_SECTION,
    ),
    Mistake(
        N_(
            "the gradients are scaled even when their norm is below θ: gradients already short enough "
            "are left as they are."
        ),
        partial(_clip_with, scale="always"),
        RULE_SECTION,
    ),
    Mistake(
        N_(
            "the norm is not square-rooted: the joint norm is the square root of the sum of the squares "
            "of every entry of every gradient."
        ),
        partial(_clip_with, squared=True),
        RULE_SECTION,
    ),
    Mistake(
        N_(
            "the norms of the gradients are added: the joint norm is the square root of the sum of their "
            "squares, not their sum."
        ),
        partial(_clip_with, norm_of="sum"),
        RULE_SECTION,
    ),
    Mistake(ONE_NORM, partial(_clip_with, norm_of="largest"), RULE_SECTION),
    Mistake(
        N_(
            "the norm counts only the first three gradients: it runs over every gradient passed, however "
            "many."
        ),
        partial(_clip_with, norm_of="first three"),
        RULE_SECTION,
    ),
    Mistake(
        N_("the norm leaves out the last gradient: it runs over every gradient passed."),
        partial(_clip_with, norm_of="not last"),
        RULE_SECTION,
    ),
    # After the first three: on some gradients the first one's norm is also the largest one's.
    Mistake(ONE_NORM, partial(_clip_with, norm_of="first"), RULE_SECTION),
    Mistake(
        N_("the norm adds up absolute values (an L1 norm): it is the square root of the sum of the squares."),
        partial(_clip_with, entries="absolute"),
        RULE_SECTION,
    ),
    Mistake(
        N_("the norm averages the squares: it is the square root of their sum, not of their mean."),
        partial(_clip_with, entries="mean"),
        RULE_SECTION,
    ),
    Mistake(
        N_("the scaling factor is upside down: a gradient too long is shrunk by θ / norm, a number below 1."),
        partial(_clip_with, inverted=True),
        RULE_SECTION,
    ),
    # min(1, norm / θ) and max(1, θ / norm) both leave gradients far above θ as they are: one cause.
    Mistake(
        N_("gradients whose norm is above θ are left as they are: the factor is the smaller of 1 and θ / "
           "norm, below 1 exactly when the norm is above θ (check the min and the ratio)."),
        partial(_clip_with, scale="max"),
        RULE_SECTION,
    ),
)


def _perplexity_with(
    logits,
    targets,
    base=math.e,
    bits=False,
    reduce="mean",
    sign=-1.0,
    pick="targets",
    dim=1,
    average="log",
    exponent=True,
    shift_back=True,
):
    """The perplexity with the flags' mistakes: another base, in bits, summed, the wrong average, ..."""
    values = logits.detach().double()
    log_probs = torch.log_softmax(values, dim=dim)
    if not shift_back:  # the largest logit subtracted inside the log-sum-exp but not added back
        log_probs = log_probs + values.max(dim=1, keepdim=True).values
    rows = torch.arange(len(targets), device=logits.device)
    log_p = {
        "targets": lambda: log_probs[rows, targets],
        "all": lambda: log_probs.reshape(-1),
        "broadcast": lambda: log_probs[:, targets].reshape(-1),
        "largest": lambda: log_probs.max(dim=1).values,
    }[pick]()
    if average == "perplexities":  # the mean of each prediction's own perplexity, 1/p
        return float(torch.exp(-log_p).mean())
    if average == "probability":  # the perplexity of the mean probability
        return float(1 / log_p.exp().mean())
    mean = {"sum": log_p.sum, "mean": log_p.mean, "n - 1": lambda: log_p.sum() / (len(log_p) - 1)}[reduce]()
    nats = sign * mean
    value = nats / math.log(2) if bits else nats
    return float(base**value) if exponent else float(value)


# Shared with the capstone's perplexity (notebook 08), which has the same slips.
LARGEST_PICKED = N_(
    "the probability of the most likely token is used in place of the target's: each prediction is scored "
    "by the probability it gives the token that really comes next, p(target)."
)
ONE_LESS = N_("the mean divides by n - 1: it is the mean over all n predictions, the sum divided by n.")


PERPLEXITY = (
    Mistake(
        N_(
            "the result is the mean cross-entropy itself: perplexity is the exponential of it, e to the "
            "mean in nats."
        ),
        partial(_perplexity_with, exponent=False),
        PERPLEXITY_SECTION,
    ),
    Mistake(
        N_(
            "the result is the cross-entropy in bits: perplexity is 2 to the mean in bits (or e to the "
            "mean in nats)."
        ),
        partial(_perplexity_with, bits=True, exponent=False),
        UNITS_SECTION,
    ),
    Mistake(
        N_(
            "it is 2 to the mean cross-entropy in nats: the base of the exponential and of the log must "
            "be the same (e with the natural log)."
        ),
        partial(_perplexity_with, base=2.0),
        UNITS_SECTION,
    ),
    Mistake(
        N_(
            "it is e to the mean cross-entropy in bits: the base of the exponential and of the log must "
            "be the same (2 with log2)."
        ),
        partial(_perplexity_with, bits=True),
        UNITS_SECTION,
    ),
    Mistake(
        N_(
            "it is e to the summed cross-entropy: perplexity is e to the *mean* over the predictions, so "
            "texts of any length compare."
        ),
        partial(_perplexity_with, reduce="sum"),
        PERPLEXITY_SECTION,
    ),
    Mistake(
        N_(
            "the minus sign is missing: exp of the mean of log p is 1 / perplexity; perplexity is exp "
            "of the mean of -log p."
        ),
        partial(_perplexity_with, sign=1.0),
        ENTROPY_SECTION,
    ),
    Mistake(
        N_(
            "it is the mean of each prediction's own perplexity (the arithmetic mean of 1/p): perplexity "
            "is exp of the mean cross-entropy, the geometric mean of 1/p."
        ),
        partial(_perplexity_with, average="perplexities"),
        PERPLEXITY_SECTION,
    ),
    Mistake(
        N_(
            "it is the perplexity of the mean probability (1 over the mean of p): perplexity is exp of "
            "the mean of -log p, not of the log of the mean."
        ),
        partial(_perplexity_with, average="probability"),
        PERPLEXITY_SECTION,
    ),
    Mistake(
        N_(
            "the log-sum-exp leaves out the largest logit it subtracted: log(sum(exp(z))) is m + "
            "log(sum(exp(z - m))), with m each row's largest logit."
        ),
        partial(_perplexity_with, shift_back=False),
        ENTROPY_SECTION,
    ),
    Mistake(
        N_(
            "the mean runs over every entry of the log-probabilities: only the log-probability of each "
            "row's target counts, one per prediction."
        ),
        partial(_perplexity_with, pick="all"),
        ENTROPY_SECTION,
    ),
    Mistake(
        N_(
            "every row's log-probabilities are indexed with every target (a square matrix): pick one "
            "entry per row, row i's target."
        ),
        partial(_perplexity_with, pick="broadcast"),
        ENTROPY_SECTION,
    ),
    Mistake(
        N_(
            "the softmax runs over the wrong dimension (dim=0, down each column): each row of logits is "
            "one prediction, normalised over the vocabulary."
        ),
        partial(_perplexity_with, dim=0),
        ENTROPY_SECTION,
    ),
    Mistake(
        N_(
            "your result has inf or nan where the right one is finite: in float32, exp of a number above "
            "about 88 is inf. Take the log-softmax as shifted - log(sum(exp(shifted))), with each row's "
            "largest logit subtracted first, never log(softmax)."
        ),
        section=ENTROPY_SECTION,
    ),
    Mistake(LARGEST_PICKED, partial(_perplexity_with, pick="largest"), ENTROPY_SECTION),
    Mistake(ONE_LESS, partial(_perplexity_with, reduce="n - 1"), PERPLEXITY_SECTION),
)


def _kn_with(
    text,
    context,
    char,
    discount=0.75,
    continuation="contexts",
    seen="discounted",
    weight="types",
    unseen="continuation",
    mix="lambda",
):
    """Interpolated Kneser-Ney p(char | context) with the flags' mistakes."""
    pairs = Counter(zip(text, text[1:], strict=False))
    if continuation == "frequency":
        p_cont = Counter(text)[char] / len(text)
    else:
        kinds = sum(1 for _first, second in pairs if second == char)
        total = {"over characters": len(set(text)), "over tokens": len(text) - 1}.get(
            continuation, len(pairs)
        )
        p_cont = kinds / total
    followers = {second: n for (first, second), n in pairs.items() if first == context}
    total = sum(followers.values())
    if total == 0:
        return {"continuation": p_cont, "zero": 0.0, "uniform": 1 / len(set(text))}[unseen]
    count = followers.get(char, 0)
    first = {"discounted": max(count - discount, 0), "raw": count, "unclamped": count - discount}[
        seen
    ] / total
    types = {"types": len(followers), "tokens": total, "none": 1, "vocabulary": len(set(text)),
             "contexts of char": sum(1 for _first, second in pairs if second == char)}[weight]
    weight_of_rest = discount * types / total
    return first + {"lambda": weight_of_rest, "one": 1.0, "one minus": 1 - weight_of_rest}[mix] * p_cont


def _kn_fixed_discount(text, context, char, discount):
    """Kneser-Ney with the discount argument ignored: 0.75, the usual value, written in."""
    del discount
    return _kn_with(text, context, char, 0.75)


KN_BIGRAM = (
    Mistake(
        N_(
            "the discount argument is ignored: a number written into the function (0.75 is only the usual "
            "default) gives wrong probabilities for any other discount the caller passes."
        ),
        _kn_fixed_discount,
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the weight of the continuation probability counts the contexts before char: λ counts the "
            "distinct characters seen after the context, discount × that number / the context's count."
        ),
        partial(_kn_with, weight="contexts of char"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the lower-order distribution is the characters' frequency: Kneser-Ney's continuation "
            "probability counts in how many different contexts a character follows, over the number of "
            "distinct bigrams."
        ),
        partial(_kn_with, continuation="frequency"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the continuation counts are divided by the number of distinct characters: divide by the "
            "number of distinct bigrams, so the continuation probabilities sum to 1."
        ),
        partial(_kn_with, continuation="over characters"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "seen pairs are not discounted: subtract the discount from each seen pair's count (at least "
            "0), and give what it saved to the continuation probability."
        ),
        partial(_kn_with, seen="raw"),
        KN_SECTION,
    ),
    Mistake(
        N_("a discounted count can go below 0: it is the pair's count minus the discount, at least 0."),
        partial(_kn_with, seen="unclamped"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the weight of the continuation probability counts tokens: it is the discount times the "
            "number of distinct characters seen after the context, over the context's count."
        ),
        partial(_kn_with, weight="tokens"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the weight of the continuation probability leaves out how many distinct characters follow "
            "the context: it is the discount times that number, over the context's count."
        ),
        partial(_kn_with, weight="none"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the weight of the continuation probability counts every character of the text: it counts "
            "the distinct characters seen after this context."
        ),
        partial(_kn_with, weight="vocabulary"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the continuation probability is added with weight 1: it gets exactly the mass the discount "
            "saved, the discount times the number of distinct followers, over the context's count."
        ),
        partial(_kn_with, mix="one"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the continuation probability gets 1 - λ: in interpolated Kneser-Ney it gets λ, the mass the "
            "discount saved (the seen pairs are already discounted)."
        ),
        partial(_kn_with, mix="one minus"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "the continuation counts are divided by the number of bigram tokens: divide by the number of "
            "distinct bigrams."
        ),
        partial(_kn_with, continuation="over tokens"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "a context never seen (the text's last character, with nothing after it) gets 0: with no "
            "counts, only the continuation probability is left."
        ),
        partial(_kn_with, unseen="zero"),
        KN_SECTION,
    ),
    Mistake(
        N_(
            "a context never seen (the text's last character, with nothing after it) gets a uniform "
            "guess: with no counts, only the continuation probability is left."
        ),
        partial(_kn_with, unseen="uniform"),
        KN_SECTION,
    ),
)
