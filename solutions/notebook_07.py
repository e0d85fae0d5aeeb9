"""Solutions to the exercises of notebook 07 (perplexity)."""

import math
from collections import Counter

ANSWERS = {
    "check_sequence_perplexity": 3.364,
    "check_bits_to_perplexity": (3.482, 1.248),
    "check_zero_probability": math.inf,
    "check_compressed_bytes": 4217,
    "check_bits_above_floor": 0.0590,
}


def perplexity(logits, targets):
    """exp of the mean of -log p(target), with log_softmax for numerical stability."""
    log_probs = logits.log_softmax(dim=1)
    picked = log_probs.gather(1, targets.unsqueeze(1))
    return math.exp(-picked.mean().item())


def kn_bigram(text, context, char, discount=0.75):
    """Interpolated Kneser-Ney p(char | context) for a bigram model of `text`."""
    pairs = Counter(zip(text, text[1:], strict=False))
    kinds_before = Counter(second for _, second in pairs)  # in how many contexts each character appears
    p_continuation = kinds_before[char] / len(pairs)
    followers = {second: count for (first, second), count in pairs.items() if first == context}
    total = sum(followers.values())
    if total == 0:  # a context never seen: only the continuation unigram is left
        return p_continuation
    discounted = max(followers.get(char, 0) - discount, 0) / total
    return discounted + discount * len(followers) / total * p_continuation
