"""Interpolated Kneser-Ney character n-grams (d2lmini.ngram)."""

import math

import numpy as np
import pytest

from d2lmini.ngram import KneserNey, kneser_ney_bits, unseen_fraction


def test_probabilities_sum_to_one_for_random_contexts(bundled):
    train, _ = bundled.split_text()
    model = KneserNey(5, discount=0.75).fit(train[:20_000], symbols=bundled.text + "#")
    rng = np.random.default_rng(0)
    symbols = model.symbols
    contexts = ["", "q", "zzzz", "####", "the q"]  # "#" never occurs: unseen contexts and character
    contexts += ["".join(rng.choice(list(symbols), size=int(rng.integers(0, 8)))) for _ in range(50)]
    for context in contexts:
        dist = model.distribution(context)
        assert dist.sum() == pytest.approx(1.0, abs=1e-12)
        assert (dist > 0).all()


def test_a_bigram_on_a_tiny_text_matches_the_hand_computation():
    # "abab", symbols abc, d = 0.5. Bigram counts ab=2, ba=1; contexts a: total 2, 1 type;
    # b: total 1, 1 type. Continuation unigram: distinct bigrams {ab, ba} end in b and a,
    # so N1+(.a) = N1+(.b) = 1, total 2, 2 types, and with the uniform floor 1/3:
    # p1(a) = p1(b) = (1 - 0.5 + 0.5 * 2 / 3) / 2 = 5/12, p1(c) = (0.5 * 2 / 3) / 2 = 1/6.
    # p(b|a) = (2 - 0.5 + 0.5 * 1 * 5/12) / 2 = 41/48, p(a|a) = (0.5 * 5/12) / 2 = 5/48,
    # p(c|a) = (0.5 * 1/6) / 2 = 1/24, p(c|b) = (0.5 * 1 * 1/6) / 1 = 1/12.
    model = KneserNey(2, discount=0.5).fit("abab", symbols="abc")
    assert model.distribution("") == pytest.approx([5 / 12, 5 / 12, 1 / 6])
    assert model.distribution("a") == pytest.approx([5 / 48, 41 / 48, 1 / 24])
    assert model.prob("b", "c") == pytest.approx(1 / 12)
    assert model.distribution("c") == pytest.approx(model.distribution(""))  # unseen context
    assert model.log_probs("bc", history="a") == pytest.approx([math.log(41 / 48), math.log(1 / 12)])
    assert model.log_probs("ab") == pytest.approx([math.log(5 / 12), math.log(41 / 48)])


def test_agrees_with_nltk_kneser_ney_interpolated(bundled):
    lm_module = pytest.importorskip("nltk.lm")
    from nltk.util import everygrams

    order, discount = 4, 0.1  # NLTK's default discount; NLTK has no uniform floor
    train = "the " + bundled.text[:1500]
    reference = lm_module.KneserNeyInterpolated(order, discount=discount)
    reference.fit([list(everygrams(list(train), max_len=order))], list(train))
    ours = KneserNey(order, discount=discount, floor=False).fit(train)
    probe = [c for c in bundled.text[1500:1700] if c in ours.symbols]
    stream = train[-(order - 1):] + "".join(probe)
    for i in range(order - 1, len(stream)):
        context, char = stream[i - order + 1 : i], stream[i]
        assert ours.prob(context, char) == pytest.approx(reference.score(char, list(context)), rel=1e-9)


def test_higher_orders_win_on_text_and_the_boundary_context_is_used(bundled):
    train, valid = bundled.split_text()
    bits = [kneser_ney_bits(train, valid, n) for n in (1, 2, 3, 4)]
    assert bits == sorted(bits, reverse=True)
    model = KneserNey(3).fit(train, symbols=train + valid)
    with_history = model.log_probs(valid[:5], history=train[-2:])
    without = model.log_probs(valid[:5])
    assert with_history[2:] == pytest.approx(without[2:])
    assert with_history[0] != pytest.approx(without[0])


def test_unseen_fraction_counts_held_out_ngrams_missing_from_training():
    # held-out bigrams ab, bx, xa: only ab occurs in "abab"
    assert unseen_fraction("abab", "abxa", 2) == pytest.approx(2 / 3)
    assert unseen_fraction("abab", "ba", 1) == 0.0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="order"):
        KneserNey(0)
    with pytest.raises(ValueError, match="discount"):
        KneserNey(3, discount=1.5)
    with pytest.raises(ValueError, match="symbols"):
        KneserNey(2).fit("abab").log_probs("z")
