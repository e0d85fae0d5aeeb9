"""One schema for every value a user can give: numpy scalars, Fractions, Decimals and bools are taken
alike at every entry point (lab, train, predict, generate, downloads, sweep, run log, export),
made plain once, or refused with a message that names the setting."""

import itertools
import math
import socket
import warnings
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import d2lmini.lab as lab
from d2lmini.download import DataUnavailableError, download_timemachine
from d2lmini.lab import LabResult, LabSettings, run_lab
from d2lmini.lab.runs import RunLog
from d2lmini.lab.sweep import SweepResult, parse_values, run_sweep, sweep_settings
from d2lmini.rnn import RNNScratch, predict
from d2lmini.settings import (
    CORPUS_SETTINGS,
    EXPORT_PATH,
    LAB_SETTINGS,
    PREDICT_SETTINGS,
    TRAIN_SETTINGS,
    validate_value,
)
from d2lmini.train import TrainConfig, TrainingDiverged, make_model, train
from d2lmini.widgets.generate import generate_text, generation_html
from d2lmini.widgets.lab import make_lab

pytestmark = pytest.mark.torch_dependent

NUMPY_TYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64)


def numpy_scalar(number):
    """`number` as each numpy type that holds it exactly enough to matter (or is refused: overflow)."""
    def cast(kind):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                return kind(number)
            except (OverflowError, ValueError):
                return kind(0)
    return st.sampled_from(NUMPY_TYPES).map(cast)


SMALL_NUMBERS = st.one_of(st.integers(-5, 5000), st.floats(-10, 1000, allow_nan=False), st.sampled_from(
    [0.5, 0.01, 1e-300, 2**63, 10**400, -0.0]))
EXOTIC = st.one_of(
    st.booleans(), st.sampled_from([np.True_, np.False_]),
    SMALL_NUMBERS.flatmap(numpy_scalar),
    st.fractions(max_denominator=1000), st.sampled_from([Fraction(10**400), Fraction(1, 3), Fraction(7, 1)]),
    st.decimals(allow_nan=True, allow_infinity=True, places=3),
    st.sampled_from([Decimal("0.7"), Decimal("32"), Decimal("sNaN"), Decimal("1e400"), Decimal("-Infinity")]),
    st.sampled_from([np.float64("nan"), np.float32("inf"), np.str_("adam"), np.str_("the ")]),
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
EVERY_SETTING = {**LAB_SETTINGS, **{f"corpus.{k}": s for k, s in CORPUS_SETTINGS.items()},
                 "export": EXPORT_PATH}


def plain_equivalent(value):
    """The plain Python value a user means by `value` (what the schema must treat it exactly like)."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.str_):
        return str(value)
    return value


def costly_size(setting, value, largest=64) -> bool:
    """Whether `setting` accepts `value` as a size or count above `largest`: a valid hidden size of 5,000,
    or 5,000 minibatches, trains for minutes, and what this module tests is the type, not the size."""
    try:
        accepted = validate_value(setting, value)
    except (TypeError, ValueError):
        return False
    return isinstance(accepted, int) and not isinstance(accepted, bool) and accepted > largest


def outcome(setting, value):
    try:
        return "accepted", validate_value(setting, value)
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error)


def names_the_setting(message: str, setting) -> bool:
    return f"{setting.label} ({setting.name})" in message or setting.label in message


@FAST
@given(key=st.sampled_from(sorted(EVERY_SETTING)), value=EXOTIC)
def test_every_setting_takes_any_number_type_alike_and_makes_it_plain(key, value):
    setting = EVERY_SETTING[key]
    verdict, result = outcome(setting, value)
    if verdict != "accepted":
        assert names_the_setting(result, setting) and "Traceback" not in result
        return
    assert type(result) in (int, float, str, bool, type(None)), (value, result)
    if setting.kind is int:
        assert type(result) is int and result == value
    if setting.kind is float:
        assert type(result) is float and math.isfinite(result) and result == float(value)
    # a numpy scalar is taken exactly like the Python number it holds
    assert outcome(setting, plain_equivalent(value)) == ("accepted", result)


@FAST
@given(key=st.sampled_from(sorted(EVERY_SETTING)), value=EXOTIC)
def test_a_fraction_or_decimal_is_taken_like_the_float_it_means(key, value):
    setting = EVERY_SETTING[key]
    if setting.kind is not float or not isinstance(value, Fraction | Decimal):
        return
    try:
        as_float = float(value)
    except (OverflowError, ValueError):
        assert outcome(setting, value)[0] == "ValueError"
        return
    assert outcome(setting, value)[0] == outcome(setting, as_float)[0]


def test_bools_are_never_numbers_and_numpy_bools_are_bools():
    for value in (True, np.True_):
        assert outcome(TRAIN_SETTINGS["num_hiddens"], value)[0] == "TypeError"
        assert outcome(TRAIN_SETTINGS["lr"], value)[0] == "TypeError"
    assert validate_value(TRAIN_SETTINGS["count_eval_time"], np.True_) is True


# --- the lab ---------------------------------------------------------------------------------------

def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


TINY = LabSettings(num_hiddens=16, max_minibatches=4, checkpoints=1, num_chars=5)


@pytest.fixture(scope="module")
def capped():
    """Cap the lab's work at a few per cent of its default run, so an accepted example takes moments."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lab, "MAX_WORK_FACTOR", 0.05)
        yield


LAB_NUMBERS = ("num_hiddens", "lr", "batch_size", "num_steps", "theta", "max_minibatches", "checkpoints",
               "temperature", "num_chars", "seed", "max_seconds", "num_threads", "download_timeout")


@FAST
@given(name=st.sampled_from(LAB_NUMBERS), value=EXOTIC)
def test_run_lab_gives_a_result_or_a_message_naming_the_setting(capped, name, value):
    result = run_lab(replace(TINY, **{name: value}))
    if result.error is None:
        assert result.valid_perplexity is not None and isinstance(result.sample, str)
        assert type(getattr(result.settings, name)) in (int, float, type(None))
    elif not result.diverged:
        assert "Traceback" not in result.error and "unexpectedly" not in result.error
        if "must be" in result.error:
            assert LAB_SETTINGS[name].label in result.error


def test_a_numpy_seed_trains_like_the_int_it_holds():
    plain = run_lab(replace(TINY, seed=3))
    numpy_seed = run_lab(replace(TINY, seed=np.int64(3)))
    assert plain.error is None and numpy_seed.error is None
    assert numpy_seed.valid_perplexity == plain.valid_perplexity and numpy_seed.sample == plain.sample
    assert type(numpy_seed.settings.seed) is int


def test_fractions_for_the_learning_rate_theta_and_temperature_run():
    result = run_lab(replace(TINY, lr=Fraction(1, 100), theta=Fraction(1, 2), temperature=Fraction(7, 10)))
    assert result.error is None and result.sample is not None
    assert (result.settings.lr, result.settings.theta, result.settings.temperature) == (0.01, 0.5, 0.7)


def test_a_fraction_learning_rate_that_diverges_gives_the_lab_message():
    result = run_lab(replace(TINY, lr=Fraction(10**6), optimizer="sgd", theta=None, max_minibatches=20))
    assert result.diverged and "learning rate 1e+06" in result.error


def test_a_decimal_learning_rate_is_the_float_it_means():
    assert run_lab(replace(TINY, lr=Decimal("0.01"))).valid_perplexity == run_lab(
        replace(TINY, lr=0.01)).valid_perplexity


# --- train, predict, generate ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_data(bundled):
    train_indices, valid_indices = bundled.split()
    return bundled, train_indices[:3000], valid_indices[:500]


def test_train_with_a_numpy_seed_and_fraction_learning_rate(tiny_data):
    corpus, train_indices, valid_indices = tiny_data
    config = TrainConfig(num_hiddens=np.int32(8), lr=Fraction(1, 100), seed=np.int64(3), num_epochs=None,
                         max_minibatches=np.int64(3), batch_size=np.uint8(4), num_steps=5, checkpoints=1)
    model = make_model("scratch", len(corpus.vocab), config)
    history = train(model, train_indices, valid_indices, config)
    assert history.stopped is None and len(history.step_loss) == 3
    assert all(type(getattr(config, name)) in (int, float) for name in ("num_hiddens", "lr", "seed"))


@FAST
@given(name=st.sampled_from(["num_hiddens", "lr", "seed", "theta", "batch_size", "max_minibatches"]),
       value=EXOTIC)
def test_train_gives_a_history_or_an_error_naming_the_setting(tiny_data, name, value):
    assume(name == "seed" or not costly_size(TRAIN_SETTINGS[name], value))
    corpus, train_indices, valid_indices = tiny_data
    base = TrainConfig(num_hiddens=8, batch_size=4, num_steps=5, num_epochs=None, max_minibatches=3,
                       checkpoints=1)
    config = replace(base, **{name: value})
    try:
        model = make_model("scratch", len(corpus.vocab), config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            history = train(model, train_indices, valid_indices, config)
    except (TypeError, ValueError) as error:
        assert TRAIN_SETTINGS[name].label in str(error) or "minibatch" in str(error), str(error)
        return
    except TrainingDiverged:
        return
    assert history.stopped is None and history.step_loss


@pytest.fixture(scope="module")
def small_model(bundled):
    return RNNScratch(len(bundled.vocab), 8, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def model_and_vocab(small_model, bundled):
    return small_model, bundled.vocab


@FAST
@given(name=st.sampled_from(["num_chars", "temperature"]), value=EXOTIC)
def test_predict_and_generate_take_numbers_alike(model_and_vocab, name, value):
    model, vocab = model_and_vocab
    arguments = {"num_chars": 5, "temperature": 1.0, name: value}
    outcomes = []
    for call in (lambda: predict(model, vocab, "the ", generator=torch.Generator(), **arguments),
                 lambda: generate_text(model, vocab, "the ", **arguments)):
        try:
            text = call()
        except (TypeError, ValueError) as error:
            assert PREDICT_SETTINGS[name].label in str(error) and f"({name})" in str(error), str(error)
            outcomes.append(type(error))
            continue
        assert isinstance(text, str) and len(text) == 4 + int(arguments["num_chars"])
        outcomes.append(len(text))
    if not (outcomes[0] != outcomes[1] and isinstance(outcomes[0], int) and outcomes[0] > 1004):
        assert outcomes[0] == outcomes[1], (value, outcomes)  # the panel's own limit is only its length


def test_generate_takes_a_numpy_temperature_and_refuses_a_huge_one(bundled, small_model):
    text = generate_text(small_model, bundled.vocab, "the ", 10, np.float32(0.7))
    assert text == generate_text(small_model, bundled.vocab, "the ", 10, float(np.float32(0.7)))
    with pytest.raises(ValueError, match=r"temperature \(temperature\) must be a positive number"):
        generate_text(small_model, bundled.vocab, "the ", 10, 10**400)
    shown = generation_html(small_model, bundled.vocab, "the ", 10, Fraction(1, 2))[1]
    assert "temperature 0.5" in shown


# --- downloads ------------------------------------------------------------------------------------------

@FAST
@given(value=EXOTIC)
def test_a_download_timeout_of_any_number_type_is_taken_alike(tmp_path_factory, value):
    folder = tmp_path_factory.mktemp("cache")
    url = f"http://127.0.0.1:{closed_port()}/tm.txt"
    verdict = outcome(CORPUS_SETTINGS["timeout"], value)[0]
    try:
        download_timemachine(folder, url, timeout=value, sha1="0" * 40)
    except DataUnavailableError:
        assert verdict == "accepted"  # the timeout was taken; the closed port refused
        return
    except (TypeError, ValueError) as error:
        assert verdict == type(error).__name__ and "download timeout (timeout)" in str(error)
        return
    pytest.fail("a closed port cannot give a file")


def test_a_numpy_download_timeout_is_accepted(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/tm.txt"
    for timeout in (np.int64(5), Fraction(5), Decimal("5")):
        with pytest.raises(DataUnavailableError, match="Could not download"):
            download_timemachine(tmp_path, url, timeout=timeout, sha1="0" * 40)


def test_a_data_folder_that_is_not_a_path_names_the_setting(tmp_path):
    with pytest.raises(TypeError, match=r"data folder \(data_dir\)"):
        download_timemachine(5, timeout=1)


# --- sweeps --------------------------------------------------------------------------------------------

NOT_A_LIST = st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=5), st.just({"a": 1}),
                       st.just(b"8, 16"), EXOTIC, st.builds(object))


@FAST
@given(values=NOT_A_LIST | st.lists(EXOTIC, max_size=4))
def test_a_sweep_takes_its_values_alike_or_names_the_setting(values):
    try:
        runs = sweep_settings(TINY, "num_hiddens", values)
    except (TypeError, ValueError) as error:
        assert "hidden size" in str(error), str(error)
        return
    assert all(type(run.num_hiddens) is int for run in runs) and 2 <= len(runs) <= 8


@pytest.mark.parametrize("values", [None, 16, "8, 16", {"a": 1}, itertools.count(8)])
def test_run_sweep_refuses_what_is_not_a_list_of_values_by_name(values):
    with pytest.raises((TypeError, ValueError), match="hidden size"):
        run_sweep(TINY, "num_hiddens", values)


def test_run_sweep_takes_a_generator_of_numpy_values():
    sweep = run_sweep(replace(TINY, max_minibatches=2), "num_hiddens", (np.int64(n) for n in (8, 16)))
    assert sweep.values == [8, 16] and [type(v) for v in sweep.values] == [int, int]
    assert len(sweep.results) == 2 and sweep.stopped is None


@pytest.mark.parametrize("text", [None, 16, b"8, 16", ["8", "16"]])
def test_parse_values_refuses_what_is_not_text_by_name(text):
    with pytest.raises(TypeError, match="hidden size"):
        parse_values("num_hiddens", text)


def test_a_setting_name_that_is_not_text_is_refused():
    with pytest.raises(ValueError, match="A sweep varies one of"):
        parse_values(["num_hiddens"], "8, 16")


# --- the run log and the export -----------------------------------------------------------------------

@FAST
@given(value=EXOTIC | NOT_A_LIST | st.just(SweepResult(TINY, "num_hiddens", [8, 16])))
def test_the_run_log_keeps_only_lab_results(value):
    log = RunLog()
    with pytest.raises(TypeError, match="LabResult"):
        log.add(value)
    assert len(log) == 0 and log.to_csv().count("\n") == 1


def test_a_sweep_added_to_the_run_log_says_how_to_add_its_runs():
    with pytest.raises(TypeError, match="one by one"):
        RunLog().add(SweepResult(TINY, "num_hiddens", [8, 16]))
    with pytest.raises(TypeError, match="LabResult"):
        RunLog().add(LabResult(settings="not settings"))


@FAST
@given(path=NOT_A_LIST.filter(lambda value: not isinstance(value, str)))
def test_exporting_to_what_is_not_a_path_names_it(path):
    if path is None:
        return
    with pytest.raises(TypeError, match=r"CSV file \(path\)"):
        RunLog().to_csv(path)


def test_the_panel_shows_why_its_runs_could_not_be_saved(tmp_path):
    panel = make_lab(TINY)
    assert panel.export(tmp_path / "no such folder" / "runs.csv") is None
    assert "could not be saved" in panel.message.value and "No such file" in panel.message.value
    assert panel.export(5) is None and "CSV file (path)" in panel.message.value
    assert panel.export(tmp_path / "runs.csv") == tmp_path / "runs.csv"
    assert "Saved 0 runs" in panel.message.value
