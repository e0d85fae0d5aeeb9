"""Verdicts judged against the baselines, never against a fixed threshold (#18)."""

import math

import pytest

from d2lmini.metrics import perplexity_from_bits, unigram_bits
from d2lmini.verdicts import VERDICT_COLOURS, judge_perplexity, text_baselines

BASELINES = {"uniform": 28.0, "unigram": 16.5, "best n-gram": 4.55}


@pytest.mark.parametrize(("perplexity", "status"), [
    (4.0, "ok"), (6.4, "weak"), (16.4, "weak"), (22.3, "weak"), (28.0, "exploded"),
    (400.0, "exploded"), (math.inf, "exploded"), (math.nan, "exploded")])
def test_status_follows_the_baselines(perplexity, status):
    verdict = judge_perplexity(perplexity, BASELINES)
    assert verdict.status == status
    assert set(verdict.beaten) | set(verdict.missed) == set(BASELINES)
    assert all(perplexity < BASELINES[name] for name in verdict.beaten)


def test_seed_4_of_notebook_06_is_not_ok():
    # 22.3 beats the uniform 28 but not the unigram 16.5: it must not be shown as "ok"
    verdict = judge_perplexity(22.3, {"uniform": 28.0, "unigram": 16.5})
    assert verdict.status == "weak" and verdict.missed == ("unigram",)
    assert "unigram" in verdict.text and "22.3" in verdict.text


def test_ok_only_when_every_baseline_is_beaten():
    assert judge_perplexity(10.0, {"uniform": 28.0, "unigram": 16.5}).status == "ok"
    assert judge_perplexity(10.0, BASELINES).status == "weak"


def test_uniform_is_required():
    with pytest.raises(ValueError, match="uniform"):
        judge_perplexity(5.0, {"unigram": 16.5})


def test_every_status_has_a_colour():
    statuses = {judge_perplexity(p, BASELINES).status for p in (1.0, 10.0, 100.0)}
    assert statuses | {"diverged"} == set(VERDICT_COLOURS)


def test_text_baselines_on_the_bundled_corpus(bundled):
    train_text, valid_text = bundled.split_text()
    baselines = text_baselines(train_text, valid_text)
    assert baselines["uniform"] == pytest.approx(27.0)
    assert baselines["unigram"] == pytest.approx(perplexity_from_bits(unigram_bits(train_text, valid_text)))
    assert 1 < baselines["unigram"] < baselines["uniform"]
