"""Property-based tests (Hypothesis): any value of any type in any setting gives a result or a clear error.

Every field of `LabSettings` through `run_lab`, every field of `TrainConfig` through `train`,
and every argument of `predict`: no traceback escapes, nothing runs past a small bound, and
no number is reported from something that was not measured. The budgets are tiny so the
whole file runs in well under a minute.
"""

import dataclasses
import math
import socket
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import d2lmini.lab as lab
from d2lmini.corpus import corpus_from_text
from d2lmini.lab import LabSettings, run_lab
from d2lmini.rnn import RNNScratch, predict
from d2lmini.settings import LAB_SETTINGS, TRAIN_SETTINGS
from d2lmini.train import TrainConfig, TrainingDiverged, make_model, train

pytestmark = pytest.mark.torch_dependent

CHOICE_WORDS = sorted({str(c) for s in LAB_SETTINGS.values() for c in s.choices} | {"cpu", "cuda", "mps", ""})
ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.just(10**400), st.integers(-3, 40),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e-300, 5e-324, -0.0, 0.5, 1e300]),
    st.text(max_size=12), st.sampled_from(CHOICE_WORDS), st.lists(st.integers(), max_size=3),
    st.builds(object), st.just(b"bytes"), st.just({"a": 1}),
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def a_measurement(value) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value >= 1.0


@pytest.fixture(scope="module")
def lab_base(tmp_path_factory):
    return LabSettings(num_hiddens=16, max_minibatches=2, checkpoints=1, num_chars=5,
                       data_dir=tmp_path_factory.mktemp("cache"),
                       timemachine_url=f"http://127.0.0.1:{closed_port()}/tm.txt", download_timeout=1.0)


@FAST
@given(name=st.sampled_from(sorted(LAB_SETTINGS)), value=ANY_VALUE)
def test_run_lab_never_raises_and_reports_only_measurements(lab_base, monkeypatch_module, name, value):
    result = run_lab(dataclasses.replace(lab_base, **{name: value}))
    if result.error is None:
        assert result.minibatches > 0 and result.history.step_loss
        assert a_measurement(result.valid_perplexity) and a_measurement(result.train_perplexity)
        assert isinstance(result.sample, str)
    else:
        assert isinstance(result.error, str) and result.error and "Traceback" not in result.error
        assert result.valid_perplexity is None and result.sample is None


@pytest.fixture(scope="module")
def monkeypatch_module():
    """Cap the lab's work at a few per cent of its default run, so an accepted example takes moments."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lab, "MAX_WORK_FACTOR", 0.05)
        yield patch


@pytest.fixture(scope="module")
def tiny(bundled):
    corpus = corpus_from_text("tiny", bundled.text[:600])
    train_indices, valid_indices = corpus.split(0.2)
    base = TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, num_epochs=None, max_minibatches=3,
                       max_seconds=0.5, checkpoints=2)
    return corpus, train_indices, valid_indices, base


@FAST
@given(name=st.sampled_from(sorted(TRAIN_SETTINGS)), value=ANY_VALUE)
def test_train_gives_a_history_or_a_clear_error(tiny, name, value):
    corpus, train_indices, valid_indices, base = tiny
    model = make_model("scratch", len(corpus.vocab), base)
    config = dataclasses.replace(base, **{name: value})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            history = train(model, train_indices, valid_indices, config)
    except (TypeError, ValueError) as error:
        assert str(error)
        if name in TRAIN_SETTINGS and "must be" in str(error):
            assert TRAIN_SETTINGS[name].label in str(error)
        return
    except TrainingDiverged as error:
        assert "diverged" in str(error)
        return
    assert history.stopped is None and history.step_loss
    assert all(a_measurement(v) for v in history.valid_perplexity) and history.valid_perplexity


@pytest.fixture(scope="module")
def small_model(bundled):
    return RNNScratch(len(bundled.vocab), 8, generator=torch.Generator().manual_seed(0))


PREDICT_ARGUMENTS = ("model", "vocab", "prefix", "num_chars", "temperature", "generator")


@FAST
@given(name=st.sampled_from(PREDICT_ARGUMENTS), value=ANY_VALUE | st.sampled_from(
    [torch.nn.Linear(2, 2), torch.nn.Identity(), torch.Generator(), "the ", "zzz", "\x00"]))
def test_predict_gives_text_or_a_clear_error(bundled, small_model, name, value):
    arguments = {"model": small_model, "vocab": bundled.vocab, "prefix": "the ", "num_chars": 5,
                 "temperature": 1.0, "generator": torch.Generator().manual_seed(0), name: value}
    try:
        text = predict(**arguments)
    except (TypeError, ValueError) as error:
        assert str(error)
        return
    assert isinstance(text, str) and text.startswith(arguments["prefix"])
    assert len(text) == len(arguments["prefix"]) + arguments["num_chars"]
