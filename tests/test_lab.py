"""Tests for notebook 08's perplexity lab: `run_lab` and the panel, driven by setting widget values."""

import math
import socket
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import torch
from settings_examples import an_invalid_choice

from d2lmini.lab import LAB_MINIBATCHES, LabResult, LabSettings, corpus_data, resample, run_lab
from d2lmini.markov import make_markov_source
from d2lmini.rnn import predict
from d2lmini.settings import LAB_SETTINGS
from d2lmini.train import evaluate_perplexity, make_model
from d2lmini.widgets.lab import LabPanel, PanelRun, make_lab
from d2lmini.widgets.lab_views import curves_png, numbers_html, verdict_html

pytestmark = pytest.mark.torch_dependent

# Fewer minibatches than the default run, to keep the tests quick.
FIXED = LabSettings(max_minibatches=120)
# The smallest run that shows a control or a message at work.
TINY = LabSettings(num_hiddens=16, batch_size=8, num_steps=8, max_minibatches=12, checkpoints=2, num_chars=20)


def closed_port() -> int:
    """Return a 127.0.0.1 port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def panel():
    return make_lab(TINY)


def test_defaults_learn_below_the_unigram_baseline(bundled):
    result = run_lab(FIXED)
    assert result.error is None and not result.diverged
    assert result.minibatches == FIXED.max_minibatches
    assert set(result.baselines) == {"uniform", "unigram"}
    assert result.baselines["uniform"] == pytest.approx(len(set(bundled.text)))
    assert 1 < result.valid_perplexity < result.baselines["unigram"] < result.baselines["uniform"]
    assert math.isfinite(result.train_perplexity)
    assert result.valid_bits == pytest.approx(math.log2(result.valid_perplexity))
    # The reported number is the model's perplexity on the validation text, read as one stream after
    # the training text (as the baselines read it); the live curve's earlier points are estimates.
    train, valid = bundled.split()
    assert result.valid_perplexity == evaluate_perplexity(result.model, valid, train)
    assert result.history.valid_estimated[-1] is False and all(result.history.valid_estimated[:-1])
    # Curves: one point per checkpoint, epochs increasing, the last point after all minibatches.
    history = result.history
    assert len(history.epoch) == len(history.train_perplexity) == len(history.valid_perplexity) >= 5
    assert all(a < b for a, b in zip(history.epoch, history.epoch[1:], strict=False))
    assert history.valid_perplexity[-1] < history.valid_perplexity[0]
    assert len(history.step_loss) == FIXED.max_minibatches
    assert result.sample.startswith(FIXED.prefix)
    assert len(result.sample) == len(FIXED.prefix) + FIXED.num_chars


@pytest.mark.slow  # the whole default run
def test_the_default_budget_is_counted_in_minibatches_not_seconds():
    settings = LabSettings()
    assert settings.max_minibatches == LAB_MINIBATCHES and not settings.count_eval_time
    assert settings.num_epochs is None and settings.max_seconds >= 30  # a safety stop only
    result = run_lab(settings)
    assert result.error is None and result.minibatches == LAB_MINIBATCHES
    assert not result.stopped_at_time_limit and len(result.history.epoch) == settings.checkpoints


@pytest.mark.slow  # two runs beside a busy process
def test_two_runs_agree_while_another_process_keeps_a_core_busy():
    spin = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"
    busy = subprocess.Popen([sys.executable, "-c", spin])
    try:
        settings = replace(FIXED, max_minibatches=200)
        first, second = run_lab(settings), run_lab(settings)
    finally:
        busy.kill()
        busy.wait()
    assert first.error is None and first.valid_perplexity == second.valid_perplexity
    assert first.sample == second.sample and first.history.valid_perplexity == second.history.valid_perplexity


def test_a_fixed_number_of_minibatches_is_repeatable():
    settings = replace(FIXED, max_minibatches=15)
    first, second = run_lab(settings), run_lab(settings)
    assert first.valid_perplexity == second.valid_perplexity and first.sample == second.sample
    assert run_lab(replace(settings, num_hiddens=64)).valid_perplexity != first.valid_perplexity


def test_the_lab_restores_the_number_of_torch_threads():
    before = torch.get_num_threads()
    seen = []
    result = run_lab(replace(FIXED, max_minibatches=12, num_threads=1),
                     on_checkpoint=lambda h: seen.append(torch.get_num_threads()))
    assert result.error is None and set(seen) == {1}
    assert torch.get_num_threads() == before
    run_lab(replace(FIXED, optimizer="sgd", lr=1e38))  # also after a run that diverged
    assert torch.get_num_threads() == before


def test_on_checkpoint_sees_the_growing_history():
    seen = []
    run_lab(replace(FIXED, max_minibatches=24), on_checkpoint=lambda h: seen.append(len(h.epoch)))
    assert seen == list(range(1, FIXED.checkpoints + 1))


def test_panel_trains_with_the_values_set_in_its_widgets(panel):
    panel.hidden_size.value = 64
    panel.learning_rate.value = 2.0
    panel.optimizer.value = "adam"
    panel.learning_rate.value = 0.01
    panel.theta.value = "off"
    panel.prefix.value = "a "
    settings = panel.settings()
    assert (settings.num_hiddens, settings.lr, settings.optimizer, settings.theta) == (64, 0.01, "adam", None)
    result = panel.update()
    assert result.error is None and result.model.num_hiddens == 64
    assert f"{result.valid_perplexity:.2f}" in panel.valid_ppl.value
    assert "lab-valid-ppl" in panel.valid_ppl._dom_classes
    assert bytes(panel.plot.value).startswith(b"\x89PNG")
    assert result.sample[2:] and result.sample[2:] in panel.sample.value
    assert "diverged" not in panel.message.value and not panel.train_button.disabled
    for words in ("hidden size 64", "learning rate 0.01", "ADAM", "clipping off"):
        assert words in panel.message.value


def test_diverging_learning_rate_gives_a_message_and_the_panel_stays_usable(panel):
    panel.hidden_size.value, panel.batch_size.value = 128, 32  # a model that blows up within 20 minibatches
    panel.learning_rate.value = panel.learning_rate.max
    panel.theta.value = "off"
    result = panel.update()
    assert result.diverged and result.valid_perplexity is None
    for words in ("diverged", "minibatch", "learning rate", "nats per character", "smaller", "clipping"):
        assert words in panel.message.value
    assert "–" in panel.valid_ppl.value and not panel.train_button.disabled
    panel.learning_rate.value = 0.01
    panel.theta.value = "1"
    result = panel.update()
    assert result.error is None and f"{result.valid_perplexity:.2f}" in panel.valid_ppl.value


def test_a_loss_that_becomes_infinite_is_reported_where_it_happened():
    result = run_lab(replace(FIXED, optimizer="sgd", lr=1e38, theta=None))  # SGD: the loss itself overflows
    assert result.diverged
    assert "diverged at minibatch" in result.error
    assert "inf" in result.error or "nan" in result.error


@pytest.mark.parametrize("widget, value, words", [
    ("prefix", "", "prefix is empty"),
    ("prefix", "The Lab!", "never seen"),
    ("temperature", 0.0, "temperature (temperature) must be a positive number"),
    ("temperature", -1.0, "temperature (temperature) must be a positive number"),
])
def test_a_bad_setting_is_reported_and_the_last_result_is_kept(panel, widget, value, words):
    good = panel.update()
    shown = (panel.plot.value, panel.numbers.value, panel.sample.value, panel.valid_ppl.value)
    getattr(panel, widget).value = value
    result = panel.update()
    assert result.error is not None and result.minibatches == 0
    assert words in panel.message.value and "Traceback" not in panel.message.value
    assert "still those of the last run" in panel.message.value and panel.result is good
    assert (panel.plot.value, panel.numbers.value, panel.sample.value, panel.valid_ppl.value) == shown
    assert not panel.train_button.disabled and not panel.hidden_size.disabled


def test_the_controls_are_disabled_while_training(panel, monkeypatch):
    seen = []
    monkeypatch.setattr(PanelRun, "checkpoint", lambda run, history: seen.append(
        panel.hidden_size.disabled and panel.train_button.disabled))
    panel.update()
    assert seen and all(seen)
    assert not panel.hidden_size.disabled and not panel.train_button.disabled


def test_a_run_worse_than_guessing_is_never_shown_in_green():
    result = LabResult(LabSettings(batch_size=1, num_steps=1), baselines={"uniform": 27.0, "unigram": 16.5},
                       train_perplexity=150.0, valid_perplexity=173.78, minibatches=600, seconds=2.0)
    message = verdict_html(result)
    assert "worse than guessing uniformly" in message
    assert "#225522" not in message and "below the" not in message


def test_an_empty_plot_has_its_perplexity_axis_the_right_way_up():
    png = curves_png([("run", LabResult(LabSettings()).history)], {})
    assert png.startswith(b"\x89PNG")


def test_a_minibatch_longer_than_the_corpus_gives_a_message():
    result = run_lab(replace(FIXED, batch_size=512, num_steps=256, max_minibatches=20))
    assert result.error is not None and "does not fit" in result.error and "smaller" in result.error


def test_a_click_estimated_over_15_seconds_is_refused_before_training(panel):
    panel.hidden_size.value = panel.hidden_size.max
    panel.batch_size.value = panel.batch_size.max
    panel.budget.value = panel.budget.max
    result = panel.update()
    assert result.error is not None and result.minibatches == 0 and not panel.runs.results
    assert "one click of the lab is kept under 15 s" in panel.message.value
    assert "smaller" in panel.message.value
    panel.hidden_size.value, panel.batch_size.value, panel.budget.value = 16, 16, 20  # still usable
    assert panel.update().error is None


@pytest.fixture
def silent_server():
    """A server on 127.0.0.1 that accepts connections and never answers; yields its URL."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # connections wait in the backlog: connected, never answered
        yield f"http://127.0.0.1:{server.getsockname()[1]}/timemachine.txt"




class Counter:
    """Wrap `module.name`, counting its calls (and those whose first argument satisfies `which`)."""

    def __init__(self, monkeypatch, module, name, which=lambda *args: True):
        self.calls, inner = 0, getattr(module, name)

        def counted(*args, **kwargs):
            self.calls += bool(which(*args))
            return inner(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


def test_the_time_machine_offline_answers_within_one_timeout_with_one_download_attempt(
        tmp_path, silent_server, monkeypatch):
    import d2lmini.lab as lab

    timeout = 0.5
    panel = LabPanel(replace(TINY, data_dir=tmp_path, timemachine_url=silent_server,
                             download_timeout=timeout))
    assert "downloads on first use" in dict((v, k) for k, v in panel.corpus.options)["timemachine"]
    panel.corpus.value = "timemachine"
    loads = Counter(monkeypatch, lab, "load_corpus")
    start = time.perf_counter()
    result = panel.update()
    took = time.perf_counter() - start
    assert loads.calls == 1, "one download attempt per click"
    assert took < 2 * timeout, f"the click answered after {took:.2f} s, more than one {timeout} s timeout"
    assert result.error is not None and "Could not download" in panel.message.value
    assert "bundled" in panel.message.value and not list(tmp_path.iterdir())
    panel.corpus.value = "bundled"
    assert panel.update().error is None


def count_the_work(monkeypatch):
    """Count, from now on, validations, corpus lookups and loads (the panel has loaded its corpus:
    a lookup finds it, as a click finds it after the first), cost estimates and training's checks."""
    import d2lmini.lab as lab
    import d2lmini.train as train

    return {"validations": Counter(monkeypatch, lab, "validate_lab_settings"),
            "corpus lookups": Counter(monkeypatch, lab, "corpus_data"),
            "corpus loads": Counter(monkeypatch, lab, "load_corpus"),
            "estimates": Counter(monkeypatch, lab, "estimate_cost",
                                 lambda config, *rest: config.max_minibatches != LAB_MINIBATCHES),  # not the
            # default run's estimate, the reference that a run's work is measured against
            "train validations": Counter(monkeypatch, train, "validate_config"),
            "schema validations": Counter(monkeypatch, lab, "validate_settings"),
            "schema validations in training": Counter(monkeypatch, train, "validate_settings")}


def test_one_click_validates_loads_and_estimates_once(monkeypatch):
    panel = make_lab(TINY)
    counts = count_the_work(monkeypatch)
    result = panel.update()
    assert result.error is None
    assert {name: counter.calls for name, counter in counts.items()} == {
        "validations": 1, "corpus lookups": 1, "corpus loads": 0, "estimates": 1,
        "train validations": 0, "schema validations": 1, "schema validations in training": 0}


def test_each_value_of_a_sweep_is_validated_loaded_and_estimated_once(monkeypatch):
    panel = make_lab(TINY)
    panel.sweep_setting.value = "num_hiddens"
    panel.sweep_values.value = "8, 16"
    counts = count_the_work(monkeypatch)
    sweep = panel.sweep()
    assert sweep is not None and len(sweep.results) == 2 and sweep.stopped is None
    assert {name: counter.calls for name, counter in counts.items()} == {
        "validations": 2, "corpus lookups": 2, "corpus loads": 0, "estimates": 2,
        "train validations": 0, "schema validations": 2, "schema validations in training": 0}


def test_markov_source_has_its_entropy_floor_and_its_own_prefix(panel):
    panel.corpus.value = "markov"
    assert panel.prefix.value == "a"  # the bundled default prefix would have unknown characters
    result = panel.update()
    assert result.error is None
    floor = 2 ** make_markov_source().entropy_rate_bits()
    assert result.floor == pytest.approx(floor) and "entropy floor" not in result.baselines
    assert 1 < floor < result.baselines["unigram"] < result.baselines["uniform"] == pytest.approx(9)
    assert "entropy floor" in panel.numbers.value
    assert set(result.sample) <= set(make_markov_source().alphabet)


def test_the_clipping_menu_offers_off_and_the_starting_threshold():
    assert make_lab(LabSettings(theta=None)).settings().theta is None
    panel = make_lab(LabSettings(theta=2.0))
    assert panel.theta.value == "2" and panel.settings().theta == 2.0
    assert "off" in panel.theta.options


def test_a_typed_prefix_is_kept_when_the_corpus_changes(panel):
    panel.prefix.value = "bad"
    panel.corpus.value = "markov"
    assert panel.prefix.value == "bad"


# Every row of issue 11's table that the lab can be given, and the edges of every control.
BAD_SETTINGS = [
    ({"num_hiddens": 0}, "hidden size"),
    ({"num_hiddens": 100_000}, "GB of memory"),
    ({"num_hiddens": 2.5}, "hidden size"),
    ({"lr": 0.0}, "learning rate"),
    ({"lr": float("nan")}, "learning rate"),
    ({"lr": float("inf")}, "learning rate"),
    ({"theta": -1.0}, "clipping θ"),
    ({"optimizer": an_invalid_choice(LAB_SETTINGS["optimizer"])}, "optimizer"),
    ({"max_minibatches": 0}, "minibatches"),
    ({"max_minibatches": float("inf")}, "minibatches"),
    ({"max_seconds": float("inf")}, "time limit"),
    ({"corpus": an_invalid_choice(LAB_SETTINGS["corpus"])}, "corpus"),
    ({"corpus": ["bundled"]}, "corpus"),
    ({"prefix": 5}, "prefix"),
    ({"num_chars": 2.5}, "characters to generate"),
    ({"num_chars": "10"}, "characters to generate"),
    ({"num_chars": -3}, "characters to generate"),
    ({"device": "banana"}, "device"),
    ({"seed": 1.5}, "seed"),
    ({"seed": True}, "seed"),
    ({"temperature": float("nan")}, "temperature"),
    ({"batch_size": 512, "num_steps": 256, "num_hiddens": 512}, "times the work"),
    ({"num_threads": 0}, "threads"),
]


@pytest.mark.parametrize("change, words", BAD_SETTINGS, ids=lambda v: str(v)[:40])
def test_run_lab_never_raises_for_bad_settings(change, words):
    result = run_lab(replace(FIXED, **change))
    assert result.error is not None and words in result.error and result.model is None
    assert result.minibatches == 0 and "Traceback" not in result.error


@pytest.mark.parametrize("change", [{"lr": 1000.0}, {"lr": 1e30}, {"lr": 1e38, "optimizer": "adam"},
                                    {"lr": 1e38, "optimizer": "sgd"}], ids=str)
@pytest.mark.parametrize("minibatches", [1, 20])
def test_a_blow_up_is_reported_as_divergence_never_as_success(change, minibatches):
    result = run_lab(replace(FIXED, theta=None, max_minibatches=minibatches, **change))
    assert result.diverged and result.valid_perplexity is None and "diverged" in result.error
    assert len(result.history.step_loss) <= minibatches


@pytest.mark.parametrize("temperature", [1e-40, 1e-300, 5e-324, 1e6, 1e300])
def test_any_positive_temperature_samples(temperature):
    result = run_lab(replace(FIXED, max_minibatches=20, temperature=temperature))
    assert result.error is None and len(result.sample) == len(FIXED.prefix) + FIXED.num_chars


def test_corpus_data_is_cached():
    assert corpus_data(LabSettings()) is corpus_data(LabSettings(prefix="x"))


def test_numbers_and_plot_show_every_baseline():
    result = run_lab(replace(FIXED, max_minibatches=12))
    table = numbers_html(result)
    for name, value in result.baselines.items():
        assert name in table and f"{value:.2f}" in table and f"{math.log2(value):.3f}" in table
    assert f"{result.valid_perplexity:.2f}" in table
    assert curves_png([("run", result.history)], result.baselines).startswith(b"\x89PNG")


# Issue 20: results that are not measurements, runs that never end, and messages that name the control.
@pytest.mark.parametrize("change, words", [
    ({"eval_num_steps": -1}, "evaluation steps"),
    ({"eval_num_steps": 0.5}, "evaluation steps"),
    ({"eval_batch_size": "8"}, "evaluation batch size"),
    ({"init": 3}, "initialisation"),
    ({"max_seconds": 1e-300}, "time limit"),
    ({"lr": "0.1"}, "learning rate"),
    ({"lr": None}, "learning rate"),
    ({"theta": "1"}, "clipping θ"),
    ({"theta": float("nan")}, "clipping θ"),
    ({"batch_size": 0}, "batch size"),
    ({"num_steps": 0}, "steps per minibatch"),
    ({"batch_size": "3"}, "batch size"),
    ({"prefix": "t" * 1_000_000}, "prefix"),
    ({"num_threads": 1024}, "threads"),
    ({"max_minibatches": None, "num_epochs": 1000}, "times the work"),
    ({"batch_size": 1, "num_steps": 1, "max_minibatches": 1000, "checkpoints": 1000}, "evaluating"),
    ({"num_hiddens": 4000}, "times the work"),
])
def test_issue_20_settings_are_refused_naming_the_control(change, words):
    result = run_lab(replace(FIXED, **change))
    assert result.error is not None and words in result.error, result.error
    assert result.model is None and result.valid_perplexity is None and not result.diverged


def test_run_lab_of_none_names_the_settings():
    result = run_lab(None)
    assert "LabSettings" in result.error and result.valid_perplexity is None


def test_the_cost_counts_evaluation_for_every_budget():
    from d2lmini.lab import lab_cost

    data = corpus_data(FIXED)
    one = lab_cost(replace(FIXED, num_hiddens=4000, max_minibatches=1), data)
    assert one.evaluations == 2 and one.eval_seconds > one.train_seconds  # evaluation dominates
    epochs = lab_cost(replace(FIXED, max_minibatches=None, num_epochs=3, checkpoints=None), data)
    assert epochs.minibatches == 3 * ((len(data.train) - 1) // (FIXED.batch_size * FIXED.num_steps))
    assert epochs.evaluations == 4
    clock = lab_cost(replace(FIXED, max_minibatches=None, max_seconds=5.0, checkpoints=4), data)
    assert clock.minibatches is None and clock.train_seconds == 5.0 and clock.evaluations == 5


def test_a_seconds_budget_runs_and_stops_at_its_limit():
    result = run_lab(replace(FIXED, max_minibatches=None, max_seconds=0.5, checkpoints=2))
    assert result.error is None and result.minibatches > 0 and result.history.seconds[-1] < 5


def test_an_interrupt_keeps_the_history_and_model_and_says_so():
    def interrupt(history):
        if len(history.epoch) == 2:
            raise KeyboardInterrupt

    result = run_lab(replace(FIXED, max_minibatches=24), on_checkpoint=interrupt)
    assert "interrupt" in result.error and result.model is not None
    assert len(result.history.epoch) == 2 and result.history.step_loss
    assert result.valid_perplexity is None and result.sample is None and not result.diverged


def test_a_callback_that_raises_is_reported_as_such():
    def broken(history):
        raise ZeroDivisionError("oops")

    result = run_lab(replace(FIXED, max_minibatches=24), on_checkpoint=broken)
    assert "on_checkpoint callback raised ZeroDivisionError: oops" in result.error
    assert "smaller settings" not in result.error and result.model is not None
    assert len(result.history.epoch) == 1 and result.valid_perplexity is None


def test_an_interrupt_while_loading_is_a_result(monkeypatch):
    import d2lmini.lab as lab

    def interrupted(settings):
        raise KeyboardInterrupt

    monkeypatch.setattr(lab, "corpus_data", interrupted)
    result = run_lab(FIXED)
    assert "interrupt" in result.error and result.model is None


def test_the_strong_baselines_are_the_best_kneser_ney_and_ppmd_of_the_ladder():
    from d2lmini.lab import strong_baselines
    from d2lmini.metrics import ladder_bits

    settings = replace(FIXED, corpus="markov", prefix="a")
    ladder = ladder_bits(*corpus_data(settings).corpus.split_text())
    strong = strong_baselines(settings)
    best_kn = min(bits for name, bits in ladder.items() if name.startswith("KN n="))
    assert strong == {f"Kneser-Ney {ladder.best_order}-gram": pytest.approx(2 ** best_kn),
                      "PPMd compressor": pytest.approx(2 ** ladder["ppmd"])}
    assert strong_baselines(replace(settings, prefix="b")) is strong  # computed once per corpus


def test_the_verdict_names_the_strong_baselines_still_ahead_and_those_beaten():
    result = LabResult(LabSettings(), baselines={"uniform": 27.0, "unigram": 16.5}, train_perplexity=5.4,
                       valid_perplexity=5.0, minibatches=600, seconds=2.0)
    strong = {"Kneser-Ney 6-gram": 5.5, "PPMd compressor": 4.2}
    message = verdict_html(result, strong)
    assert "It also beats the Kneser-Ney 6-gram (5.50)" in message
    assert "Still ahead of it: the PPMd compressor (4.20)" in message
    assert "Still ahead" not in verdict_html(result, {"PPMd compressor": 6.0})


def test_the_panel_compares_a_finished_run_with_the_strongest_baselines():
    from d2lmini.lab import strong_baselines

    panel = make_lab(TINY)
    result = panel.update()
    for name, value in strong_baselines(FIXED).items():
        assert f"{name} ({value:.2f})" in panel.message.value
    assert result.valid_perplexity > min(strong_baselines(FIXED).values())  # 12 minibatches: still behind


def test_the_corpus_cache_keeps_only_the_last_few_corpora(tmp_path, monkeypatch):
    import d2lmini.lab as lab

    monkeypatch.setattr(lab, "_CACHE", type(lab._CACHE)())
    folders = [replace(TINY, data_dir=tmp_path / str(k)) for k in range(lab.CACHED_CORPORA + 1)]
    first = corpus_data(folders[0])
    assert corpus_data(folders[0]) is first
    for settings in folders[1:]:
        corpus_data(settings)
    assert len(lab._CACHE) == lab.CACHED_CORPORA
    last = corpus_data(folders[-1])
    assert corpus_data(folders[-1]) is last and corpus_data(folders[0]) is not first  # the oldest went


CELL_MODELS = {"rnn": "RNNScratch", "gru": "GRUScratch", "lstm": "LSTMScratch"}


@pytest.mark.parametrize("cell", CELL_MODELS)
def test_the_lab_trains_samples_and_scrubs_every_cell(cell):
    from d2lmini.widgets.memory import memory_view

    result = run_lab(replace(TINY, cell=cell))
    assert result.error is None and type(result.model).__name__ == CELL_MODELS[cell]
    assert math.isfinite(result.valid_perplexity) and result.sample.startswith(TINY.prefix)
    assert len(result.sample) == len(TINY.prefix) + TINY.num_chars
    resampled = resample(result, replace(result.settings, temperature=None, prefix="a "))
    assert resampled.sample.startswith("a ") and len(resampled.sample) == 2 + TINY.num_chars
    text = corpus_data(TINY).corpus.split_text()[1][:60]
    view = memory_view(result.model, text, corpus_data(TINY).corpus.vocab, 40, max_lag=10)
    assert len(view.influence) == 10 and all(math.isfinite(v) and v >= 0 for v in view.influence)
    assert 0 < view.probability < 1


@pytest.mark.parametrize("kind, cell, model", [
    ("scratch", "rnn", "RNNScratch"), ("scratch", "gru", "GRUScratch"), ("scratch", "lstm", "LSTMScratch"),
    ("torch", "rnn", "TorchRNN"), ("torch", "gru", "TorchGated"), ("torch", "lstm", "TorchGated")])
def test_make_model_builds_the_cell_of_the_config(kind, cell, model):
    made = make_model(kind, 28, replace(TINY, cell=cell))
    assert type(made).__name__ == model and getattr(made, "cell", cell) == cell
    width = 2 * 16 if cell == "lstm" else 16  # the LSTM's state is [H, C] side by side
    assert made.begin_state(3).shape == (3, width)


def test_a_cell_the_lab_does_not_know_is_refused_naming_the_control():
    result = run_lab(replace(TINY, cell="transformer"))
    assert "recurrent cell (cell)" in result.error and "'gru'" in result.error and result.model is None


def test_a_gated_cell_with_the_books_rnn_initialisation_is_refused_before_training():
    result = run_lab(replace(TINY, cell="gru", init="normal"))
    assert "initialisation (init)" in result.error and "lecun" in result.error and result.minibatches == 0
    with pytest.raises(ValueError, match="LeCun"):
        make_model("scratch", 28, replace(TINY, cell="lstm", init="normal"))
    assert run_lab(replace(TINY, init="normal")).error is None  # the RNN keeps the book's initialisation


def test_the_default_cell_is_the_rnn_and_its_run_is_unchanged():
    assert LabSettings().cell == "rnn"
    assert run_lab(TINY).valid_perplexity == run_lab(replace(TINY, cell="rnn")).valid_perplexity
    assert run_lab(TINY).valid_perplexity != run_lab(replace(TINY, cell="gru")).valid_perplexity


def test_the_numbers_and_the_message_name_the_cell():
    result = run_lab(replace(TINY, cell="lstm"))
    assert "LSTM, validation" in numbers_html(result) and "RNN" not in numbers_html(result)
    assert "bundled corpus, LSTM, hidden size 16" in verdict_html(result)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_greedy_predict_of_a_gated_cell_carries_its_whole_state(cell):
    vocab = corpus_data(TINY).corpus.vocab
    model = make_model("scratch", len(vocab), replace(TINY, cell=cell, num_hiddens=24))
    sample = predict(model, vocab, "the ", 15, None, torch.Generator().manual_seed(0))
    text = "the "
    with torch.no_grad():  # the definition: read the whole text again from a zero state for each character
        for _ in range(15):
            logits, _ = model(torch.tensor([vocab.indices(text)]), model.begin_state(1))
            scores = logits[-1].clone()
            scores[vocab.unk] = -math.inf  # predict never writes the unknown token
            text += vocab.to_tokens([int(scores.argmax())])[0]
    assert sample == text
