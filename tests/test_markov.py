"""The synthetic Markov source and its exact entropy rate."""

import numpy as np

from d2lmini.markov import MarkovSource, empirical_conditional_entropy_bits, make_markov_source


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
