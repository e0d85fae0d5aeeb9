"""The synthetic Markov source and its exact entropy rate."""

import math

import numpy as np
import pytest

from d2lmini.markov import (
    EchoSource,
    MarkovSource,
    empirical_conditional_entropy_bits,
    empirical_lag_entropy_bits,
    make_markov_source,
)
from d2lmini.ngram import kneser_ney_bits


def test_empirical_entropy_of_a_long_sample_is_within_one_percent():
    source = make_markov_source(seed=0)
    sample = source.sample(400_000, seed=1)
    exact = source.entropy_rate_bits()
    assert abs(empirical_conditional_entropy_bits(sample) - exact) / exact < 0.01


def test_stationary_distribution_is_stationary_and_matches_frequencies():
    source = make_markov_source(seed=3)
    pi = source.stationary()
    assert np.allclose(pi @ source.transitions, pi)
    sample = source.sample(200_000, seed=2)
    freq = np.array([sample.count(c) for c in source.alphabet]) / len(sample)
    assert np.abs(freq - pi).max() < 0.01


def test_known_entropy_rates():
    fair_coin = MarkovSource("ab", np.full((2, 2), 0.5))
    assert abs(fair_coin.entropy_rate_bits() - 1.0) < 1e-12
    alternating = MarkovSource("ab", np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert abs(alternating.entropy_rate_bits()) < 1e-12
    assert alternating.sample(6, seed=0) in ("ababab", "bababa")


def test_rows_are_distributions_and_space_never_repeats():
    source = make_markov_source(seed=5)
    assert np.allclose(source.transitions.sum(axis=1), 1.0)
    assert "  " not in source.sample(50_000, seed=0)
    assert source.sample(1000, seed=4) == source.sample(1000, seed=4)


def test_echo_source_entropy_rate_matches_a_long_sample():
    source = EchoSource("abcd", lag=6, keep=0.85)
    # h(0.85) + 0.15 log2 3
    exact = -0.85 * math.log2(0.85) - 0.15 * math.log2(0.15) + 0.15 * math.log2(3)
    assert source.entropy_rate_bits() == pytest.approx(exact)
    text = source.sample(200_000, seed=1)
    assert empirical_lag_entropy_bits(text, 6) == pytest.approx(exact, abs=0.01)
    assert empirical_lag_entropy_bits(text, 5) == pytest.approx(2.0, abs=0.01)  # no memory at lag 5


def test_ngrams_shorter_than_the_lag_stay_far_above_the_floor():
    source = EchoSource("abcd", lag=6, keep=0.85)
    text = source.sample(120_000, seed=2)
    train, valid = text[:100_000], text[100_000:]
    floor = source.entropy_rate_bits()
    for n in (2, 4, 6):  # contexts of 1, 3, 5 characters cannot see 6 back
        assert kneser_ney_bits(train, valid, n) > floor + 1.0
    assert kneser_ney_bits(train, valid, 7) < floor + 0.1


def test_echo_source_rejects_bad_arguments():
    with pytest.raises(ValueError, match="keep"):
        EchoSource(keep=1.0)
    with pytest.raises(ValueError, match="lag"):
        EchoSource(lag=0)
