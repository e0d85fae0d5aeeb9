"""Unit conversions and baselines."""

import math
from pathlib import Path

import pytest
import torch

from d2lmini import metrics
from d2lmini.corpus import corpus_from_text
from d2lmini.text import preprocess

pytestmark = pytest.mark.torch_dependent

SHARED_TIMEMACHINE = Path(__file__).resolve().parents[2] / "shared" / "data" / "timemachine.txt"


def test_worked_examples_and_round_trips():
    assert metrics.perplexity_from_nats(-math.log(0.8)) == pytest.approx(1.25)
    assert metrics.perplexity_from_bits(-math.log2(0.2)) == pytest.approx(5.0)
    for bits in (0.5, 1.0, 2.3):
        nats = metrics.nats_from_bits(bits)
        assert metrics.bits_from_nats(nats) == pytest.approx(bits)
        assert metrics.perplexity_from_nats(nats) == pytest.approx(metrics.perplexity_from_bits(bits))
        assert metrics.bits_from_perplexity(metrics.perplexity_from_bits(bits)) == pytest.approx(bits)
        assert metrics.nats_from_perplexity(metrics.perplexity_from_nats(nats)) == pytest.approx(nats)
    assert metrics.uniform_bits(32) == 5.0


def test_smoothed_ngram_baselines_on_a_tiny_text():
    # unigram: counts a=3, b=1 in "aaab", add-one over {a, b}: P(a)=4/6, P(b)=2/6
    assert metrics.unigram_bits("aaab", "ab") == pytest.approx(-(math.log2(4 / 6) + math.log2(2 / 6)) / 2)
    # bigram: pairs aa=2, ab=1 and contexts a=3, b=0: P(b|b)=1/2, P(a|b)=1/2, P(a|a)=3/5
    expected = -(math.log2(1 / 2) + math.log2(1 / 2) + math.log2(3 / 5)) / 3
    assert metrics.bigram_bits("aaab", "baa") == pytest.approx(expected)
    assert metrics.unigram_bits("aaab", "c", symbols="abc") == pytest.approx(-math.log2(1 / 7))


def test_compression_and_ngrams_rank_as_expected_on_the_bundled_corpus(bundled):
    train, valid = bundled.split_text()
    table = metrics.baseline_bits(train, valid)
    assert table["uniform"] == pytest.approx(math.log2(27))
    assert table["uniform"] > table["unigram"] > table["bigram"] > table["bz2"]
    assert table["gzip"] > table["bz2"]


def test_compression_of_a_repeated_text_is_nearly_free():
    text = "the quick brown fox jumps over the lazy dog " * 50
    assert metrics.compression_bits(text, text[:200], "xz") < 0.5


@pytest.mark.skipif(not SHARED_TIMEMACHINE.is_file(), reason="../shared/data/timemachine.txt is absent")
def test_compression_baselines_reproduce_the_published_figures():
    corpus = corpus_from_text("timemachine", preprocess(SHARED_TIMEMACHINE.read_text()))
    train, valid = corpus.split_text(0.1)
    table = metrics.baseline_bits(train, valid)
    assert table["gzip"] == pytest.approx(2.817, abs=0.001)
    assert table["xz"] == pytest.approx(2.353, abs=0.001)
    assert table["bz2"] == pytest.approx(2.106, abs=0.001)
    assert table["uniform"] == pytest.approx(4.755, abs=0.001)
    assert metrics.perplexity_from_bits(table["ppmd"]) == pytest.approx(3.626, abs=0.001)


@pytest.mark.skipif(not SHARED_TIMEMACHINE.is_file(), reason="../shared/data/timemachine.txt is absent")
def test_the_ladder_reproduces_issue_14s_kneser_ney_figures():
    corpus = corpus_from_text("timemachine", preprocess(SHARED_TIMEMACHINE.read_text()))
    ladder = metrics.ladder_bits(*corpus.split_text(0.1))
    measured = [round(metrics.perplexity_from_bits(ladder[f"KN n={n}"]), 2) for n in range(2, 9)]
    assert measured == [9.61, 6.37, 4.55, 3.91, 3.76, 3.77, 3.84]
    assert ladder["best n-gram (KN n=6)"] == ladder["KN n=6"]
    assert ladder.best_order == 6
    assert list(ladder)[-4:] == ["gzip", "bz2", "xz", "ppmd"]


def test_perplexity_from_logits():
    targets = torch.tensor([0, 2, 1])
    assert math.isclose(metrics.perplexity_from_logits(torch.zeros(3, 5), targets), 5, rel_tol=1e-6)
    logits = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    expected = math.exp(-sum(float(logits[i].log_softmax(0)[t]) for i, t in enumerate(targets.tolist())) / 3)
    assert math.isclose(metrics.perplexity_from_logits(logits, targets), expected, rel_tol=1e-5)
    assert math.isclose(metrics.perplexity_from_logits(logits.half(), targets), expected, rel_tol=1e-2)
    assert metrics.perplexity_from_logits(torch.tensor([[1000.0, -1000.0]]), torch.tensor([1])) == math.inf


def test_the_ladder_names_its_best_order_as_a_value(bundled):
    text = bundled.text[:20_000]
    ladder = metrics.ladder_bits(text[:18_000], text[18_000:], orders=range(2, 5))
    kn = {n: ladder[f"KN n={n}"] for n in range(2, 5)}
    assert ladder.best_order == min(kn, key=kn.get)
    assert ladder[f"best n-gram (KN n={ladder.best_order})"] == kn[ladder.best_order]
