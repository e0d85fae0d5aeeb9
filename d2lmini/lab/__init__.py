"""The perplexity lab of notebook 08, without widgets: settings in, a trained model's numbers out.

`run_lab(LabSettings(...))` loads the corpus, trains a fresh scratch model (the RNN, or the
GRU or LSTM of notebook 09: the `cell` setting) through
`d2lmini.train.train` for a fixed number of minibatches, measures train and validation
perplexity along the way and generates a sample. It never raises: whatever a slider or a
text box can hold, it returns a `LabResult` whose `error` says what went wrong and what to
try instead. The panel that shows it is `d2lmini.widgets.lab`.

The lab's wing: this module, `lab.cost` (what a run will cost before it starts), `lab.runs` (the
runs of a session and their export) and `lab.sweep` (one run per value of one setting).
"""

import math
import os
import re
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from d2lmini.batching import validate_fits
from d2lmini.corpus import Corpus, load_corpus
from d2lmini.device import try_gpu
from d2lmini.divergence import TrainingDiverged, divergence_limit
from d2lmini.download import TIMEMACHINE_URL, DataUnavailableError
from d2lmini.i18n import N_, _
from d2lmini.kernel_settings import put_back_after
from d2lmini.lab.cost import MachineSpeed, RunCost, cell_factor, estimate_cost
from d2lmini.metrics import ladder_bits, perplexity_from_bits
from d2lmini.rnn import predict, validate_prefix
from d2lmini.settings import CELLS, CORPORA, LAB_SETTINGS, OFF, validate_device_name, validate_settings
from d2lmini.train import (
    History,
    TrainConfig,
    TrainingRun,
    make_model,
    run_training,
    validate_cell_init,
)
from d2lmini.verdicts import PerplexityVerdict, judge_perplexity, text_baselines

# The default budget (its time: README, "Why these defaults"). Counted in minibatches, so the
# same settings and seed give the same curve and sample on any machine, under any load.
LAB_MINIBATCHES = 600
# A safety stop for settings far from the defaults; the default run never reaches it.
TIME_LIMIT_SECONDS = 60.0
# Refuse runs whose estimated cost (`d2lmini.lab.cost`: training, every evaluation and the sample)
# is more than this many times the default run's, or that need more memory than this: the
# reason goes into the message.
MAX_WORK_FACTOR = 10
MAX_BYTES = 2 * 1024**3
# The longest time limit the lab accepts, in seconds.
MAX_LAB_SECONDS = 600.0
# One click of the lab's panel (and each run of a sweep) is refused when estimated above this many
# seconds on the reference machine (`d2lmini.lab.cost`): see `validate_click`.
MAX_CLICK_SECONDS = 15.0
# How this machine compares with the reference, learned from every run the lab finishes.
MACHINE_SPEED = MachineSpeed()
DEFAULT_PREFIXES = {"bundled": "the ", "timemachine": "the time ", "markov": "a"}
# The baselines' names as code writes them (keys of `LabResult.baselines`, `CorpusData.strong_baselines`),
# marked for translation: the lab shows them with `baseline_name`.
BASELINE_NAMES = (
    # TRANSLATORS: a baseline: every character equally likely (a uniform guess).
    N_("uniform"),
    # TRANSLATORS: a baseline: each character as frequent as in the training text (unigram model).
    N_("unigram"),
    # TRANSLATORS: a baseline: the PPMd text compressor.
    N_("PPMd compressor"),
    # TRANSLATORS: the synthetic source's entropy floor, as a perplexity: no model can go below it.
    N_("entropy floor"),
)
KNESER_NEY = re.compile(r"Kneser-Ney (\d+)-gram")


def baseline_name(name: str) -> str:
    """Return a baseline's name ("unigram", "Kneser-Ney 5-gram") in the language d2lmini speaks now."""
    match = KNESER_NEY.fullmatch(name)
    if match:
        # TRANSLATORS: a baseline: the Kneser-Ney smoothed n-gram model of order {n}.
        return _("Kneser-Ney {n}-gram").format(n=match.group(1))
    return _(name)


@dataclass
class LabSettings(TrainConfig):
    """The training settings (`TrainConfig`) with the lab's defaults, plus what only the lab has.

    Training: the course's RNN (`cell`: "gru" or "lstm" for a gated cell of notebook 09), 128
    hidden units (more learn less in so few steps), Adam at 0.01 decaying along a half cosine,
    32 x 35 minibatches, clipping at 1, for `max_minibatches` minibatches,
    evaluation not counted, about 12 checkpoints per run: the live curve's points before the
    last are an estimate from 32 cold-started streams (`eval_batch_size`), the last, the run's
    reported number, is read as one stream as the baselines read it. `max_seconds` is only a safety
    stop. Lab only: the corpus, the prefix, temperature and length of the sample; where
    The Time Machine is cached (`data_dir`, None: `d2lmini.download.default_cache_dir()`) and
    fetched from; the device (None: `try_gpu()`), and `num_threads`, how many CPU threads
    torch may use while the lab trains (restored afterwards; why 1: README, "Why these
    defaults"; None leaves the user's setting alone). What each field
    may hold, its label and help: `d2lmini.settings.LAB_SETTINGS`.
    """

    num_hiddens: int = 128
    batch_size: int = 32
    num_epochs: int | None = None
    max_minibatches: int | None = LAB_MINIBATCHES
    max_seconds: float | None = TIME_LIMIT_SECONDS
    count_eval_time: bool = False
    checkpoints: int | None = 12
    eval_batch_size: int | None = 32
    corpus: str = "bundled"
    prefix: str = "the "
    temperature: float | None = 0.7
    num_chars: int = 120
    data_dir: Path | None = None
    timemachine_url: str = TIMEMACHINE_URL
    download_timeout: float = 10.0
    device: str | None = None
    num_threads: int | None = 1


@dataclass
class LabResult:
    """What one run of the lab produced.

    On success `error` is None and the perplexities and `sample` are set; `verdict` is
    `d2lmini.verdicts.judge_perplexity`'s judgement of the validation perplexity beside
    `baselines`, and `worse_than_uniform` says the model ended no better than guessing. On a
    bad setting `error` explains it;
    `history` then holds whatever was measured before training stopped; `interrupted` says an
    interrupt (■, Ctrl-C) stopped it. `seconds` is the training clock, `wall_seconds` the
    whole call's, `estimated_seconds` the reference estimate (`d2lmini.lab.cost`). `baselines` maps a
    name to a perplexity (uniform, unigram) and `floor` is the synthetic source's entropy
    floor as a perplexity (None for real text): a limit, not a model to beat. Every
    validation perplexity is read as one stream after the training text, as the baselines
    read it (`d2lmini.train.evaluate_perplexity`).
    """

    settings: LabSettings
    history: History = field(default_factory=History)
    baselines: dict[str, float] = field(default_factory=dict)
    floor: float | None = None
    train_perplexity: float | None = None
    valid_perplexity: float | None = None
    sample: str | None = None
    error: str | None = None
    diverged: bool = False
    interrupted: bool = False
    verdict: PerplexityVerdict | None = None
    stopped_at_time_limit: bool = False
    minibatches: int = 0
    seconds: float = 0.0
    wall_seconds: float = 0.0
    estimated_seconds: float | None = None
    vocab_size: int | None = None
    model: torch.nn.Module | None = field(default=None, repr=False)

    @property
    def worse_than_uniform(self) -> bool:
        """True when the run finished no better than a uniform guess (its verdict is "exploded")."""
        return self.verdict is not None and self.verdict.status == "exploded"

    @property
    def valid_bits(self) -> float | None:
        """Validation cross-entropy in bits per character (None when there is no model)."""
        return None if self.valid_perplexity is None else math.log2(self.valid_perplexity)


@dataclass
class CorpusData:
    """A corpus with its train/validation split, its baselines and (synthetic source) its floor.

    `strong` holds the strongest baselines once `strong_baselines` has computed them.
    """

    corpus: Corpus
    train: torch.Tensor
    valid: torch.Tensor
    baselines: dict[str, float]
    floor: float | None
    strong: dict[str, float] | None = None

    def strong_baselines(self) -> dict[str, float]:
        """Return the best Kneser-Ney n-gram's and PPMd's perplexities (computed once, kept in `strong`)."""
        if self.strong is None:
            ladder = ladder_bits(*self.corpus.split_text())
            kn_bits = ladder[f"best n-gram (KN n={ladder.best_order})"]
            self.strong = {f"Kneser-Ney {ladder.best_order}-gram": perplexity_from_bits(kn_bits),
                           "PPMd compressor": perplexity_from_bits(ladder["ppmd"])}
        return self.strong


# How many corpora (with their baselines) the lab keeps; the least recently used goes first.
CACHED_CORPORA = 4
_CACHE: OrderedDict[tuple, CorpusData] = OrderedDict()


def corpus_data(settings: LabSettings) -> CorpusData:
    """Return the corpus of `settings`, its split, baselines and floor (the last `CACHED_CORPORA` kept).

    Baselines are perplexities: `uniform` (every character that occurs equally likely) and
    `unigram` (character frequencies of the training text). Raises DataUnavailableError when
    The Time Machine cannot be fetched (nothing is kept then: the next call tries again).
    """
    key = (settings.corpus, str(settings.data_dir), settings.timemachine_url)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    corpus = load_corpus(settings.corpus, settings.data_dir, url=settings.timemachine_url,
                         timeout=settings.download_timeout)
    train_text, valid_text = corpus.split_text()
    baselines = text_baselines(train_text, valid_text)
    floor = None if corpus.entropy_rate_bits is None else perplexity_from_bits(corpus.entropy_rate_bits)
    _CACHE[key] = CorpusData(corpus, *corpus.split(), baselines, floor)
    while len(_CACHE) > CACHED_CORPORA:
        _CACHE.popitem(last=False)
    return _CACHE[key]


def strong_baselines(settings: LabSettings) -> dict[str, float]:
    """Return the perplexities of the best Kneser-Ney n-gram and of PPMd on the corpus of `settings`.

    These are the baselines an expert would pick (notebook 07, section 6); a sweep's plot
    draws them. Computed once per corpus (about a second) and kept with its `CorpusData`.
    """
    return corpus_data(settings).strong_baselines()


def label(name: str) -> str:
    """Return what the panel calls the setting `name` (its label in `d2lmini.settings.LAB_SETTINGS`),
    in the language d2lmini speaks now."""
    return LAB_SETTINGS[name].shown_label()


def validate_lab_settings(settings: LabSettings) -> None:
    """Raise TypeError/ValueError, naming the control and the allowed values, for settings the lab cannot run.

    Every field is checked against `d2lmini.settings.LAB_SETTINGS`; then what only the lab
    limits: a budget, the time limit, the threads (at most this machine's CPU cores) and
    the device (it must exist here).
    """
    if not isinstance(settings, LabSettings):
        raise TypeError(_("run_lab needs a d2lmini.lab.LabSettings, not {type}.").format(
            type=type(settings).__name__))
    validate_settings(settings, LAB_SETTINGS)
    validate_cell_init(settings.cell, settings.init)
    validate_device_name(settings.device)
    if settings.max_minibatches is None and settings.num_epochs is None and settings.max_seconds is None:
        raise ValueError(_("Give the lab a budget: a number of minibatches, of epochs or a time limit."))
    if settings.max_seconds is not None and settings.max_seconds > MAX_LAB_SECONDS:
        # TRANSLATORS: {label} is the setting's label ("time limit"); max_seconds its name in code.
        raise ValueError(_("The {label} (max_seconds) must be at most {most:g} seconds in the lab, not "
                           "{value:g}.").format(label=label("max_seconds"), most=MAX_LAB_SECONDS,
                                                value=settings.max_seconds))
    cores = os.cpu_count() or 1
    if settings.num_threads is not None and settings.num_threads > cores:
        raise ValueError(_("The {label} (num_threads) must be at most {cores}, the CPU cores of this "
                           "machine, not {value}: more threads than cores only wait for one another.").format(
            label=label("num_threads"), cores=cores, value=settings.num_threads))
    device = settings.device or "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(_("The device {device} is not available here (no CUDA GPU); use 'cpu' or "
                           "None.").format(device=repr(device)))
    if device == "mps" and not torch.backends.mps.is_available():
        raise ValueError(_("The device 'mps' is not available here (no Apple GPU); use 'cpu' or None."))


def lab_cost(settings: LabSettings, data: "CorpusData") -> RunCost:
    """Return the estimated cost of running `settings` on `data`: training, evaluations and the sample."""
    return estimate_cost(settings, len(data.corpus.vocab), len(data.train), len(data.valid),
                         len(settings.prefix), settings.num_chars)


def validate_size(settings: LabSettings, data: "CorpusData", cost: RunCost) -> None:
    """Raise ValueError when a run costing `cost` would need too much memory or far more work than
    the default run (both from `lab_cost`, for every budget, every evaluation and the sample counted)."""
    h = settings.num_hiddens
    if cost.bytes > MAX_BYTES:
        raise ValueError(_("These settings need about {need:.1f} GB of memory (hidden size {hidden}, batch "
                           "size {batch_size} x {num_steps} steps); the lab allows {most:.0f} GB so a laptop "
                           "does not run out. Make the hidden size, the batch size or the steps per "
                           "minibatch smaller.").format(
            need=cost.bytes / 1024**3, hidden=h, batch_size=settings.batch_size, num_steps=settings.num_steps,
            most=MAX_BYTES / 1024**3))
    default = lab_cost(replace(LabSettings(), corpus=settings.corpus, prefix=settings.prefix), data)
    factor = cost.seconds / default.seconds
    if factor > MAX_WORK_FACTOR:
        # TRANSLATORS: what most of a run's work is, in "most of it {where}".
        where = (_("evaluating the validation text") if cost.eval_seconds >= max(cost.train_seconds,
                                                                                    cost.predict_seconds)
                 else _("training") if cost.train_seconds >= cost.predict_seconds
                 else _("generating the sample"))
        # TRANSLATORS: {where} is "training", "evaluating the validation text" or "generating the sample";
        # {most} is how many times the default run's work the lab allows ("10x").
        raise ValueError(_("These settings need about {factor:.0f} times the work of the default run, most "
                           "of it {where} ({evaluations} evaluations); the lab allows {most}x, about "
                           "{seconds:.0f} seconds on a 2-core laptop. Make the hidden size, the batch size, "
                           "the steps per minibatch, the number of minibatches or of checkpoints "
                           "smaller.").format(
            factor=factor, where=where, evaluations=cost.evaluations, most=MAX_WORK_FACTOR,
            seconds=MAX_WORK_FACTOR * default.seconds))


def validate_minibatch_fits(settings: LabSettings, data: "CorpusData") -> None:
    """Raise ValueError, in the panel's words, when a minibatch does not fit in the training text."""
    try:
        validate_fits(len(data.train), settings.batch_size, settings.num_steps)
    except ValueError:
        # TRANSLATORS: {corpus} is the corpus' name ("bundled corpus", "The Time Machine").
        raise ValueError(_(
            "A minibatch of {batch_size} rows x {num_steps} steps = {characters:,} characters does not fit "
            "in the {training:,} training characters of the {corpus} (with one extra row of {num_steps} "
            "steps for the random start). Make the batch size or the steps per minibatch smaller.").format(
            batch_size=settings.batch_size, num_steps=settings.num_steps,
            characters=settings.batch_size * settings.num_steps, training=len(data.train),
            corpus=_(CORPORA[settings.corpus]))) from None


@dataclass(frozen=True)
class LabPlan:
    """One run of the lab, decided before it starts (`plan_lab`): its settings, validated once; its
    corpus with baselines, loaded once; and its cost, estimated once. The estimate the panel
    shows, the baselines of its live plot and the run itself all read this plan."""

    settings: LabSettings
    data: CorpusData
    cost: RunCost

    @property
    def expected_seconds(self) -> float:
        """How long the run should take on this machine (`MACHINE_SPEED`'s estimate)."""
        return MACHINE_SPEED.seconds(self.cost.seconds)


def plan_lab(settings: LabSettings, click_limit: float | None = None) -> LabPlan:
    """Validate `settings`, load their corpus and estimate the run's cost, once each; return the `LabPlan`.

    Raises TypeError/ValueError naming the control for settings the lab cannot run (everything
    `d2lmini.train.train` would check is checked here, so the run does not check again),
    `RunTooLong` for a run estimated above `click_limit` seconds (a click of the panel), and
    DataUnavailableError when The Time Machine cannot be fetched (one download attempt).
    """
    validate_lab_settings(settings)
    data = corpus_data(settings)
    validate_prefix(settings.prefix, data.corpus.vocab)
    plan = LabPlan(settings, data, lab_cost(settings, data))
    if click_limit is not None:
        validate_click(plan, click_limit)
    validate_size(settings, data, plan.cost)
    validate_minibatch_fits(settings, data)
    return plan


def reference_seconds(settings: LabSettings) -> float:
    """Return the estimated seconds of a run of `settings` on the reference machine (`d2lmini.lab.cost`).

    Raises like `plan_lab` (TypeError/ValueError, DataUnavailableError) for settings it refuses.
    """
    return plan_lab(settings).cost.seconds


def expected_seconds(settings: LabSettings) -> float:
    """Return how long a run of `settings` should take on this machine (`MACHINE_SPEED`'s estimate)."""
    return plan_lab(settings).expected_seconds


class RunTooLong(ValueError):
    """A run estimated to take longer than one click of the lab may (`validate_click`)."""


def validate_click(plan: "LabPlan | LabSettings", limit: float = MAX_CLICK_SECONDS) -> float:
    """Return the run's reference estimate in seconds; raise `RunTooLong` if it is above `limit`.

    The panel of notebook 08 calls this with its plan before every run, so that no click it
    allows runs much past `limit` seconds on the reference machine; the message says what to make
    smaller. Settings are planned first (`plan_lab`, which raises for settings it refuses).
    """
    if not isinstance(plan, LabPlan):
        plan = plan_lab(plan, click_limit=limit)
    seconds = plan.cost.seconds
    if seconds > limit:
        here = MACHINE_SPEED.seconds(seconds)
        cell = plan.settings.cell
        slower = cell_factor(cell, "train", plan.settings.num_hiddens)
        if cell == "rnn":
            template = _("These settings would take about {seconds:.0f} s on a 2-core laptop (about "
                         "{here:.0f} s on this machine); one click of the lab is kept under {limit:g} s. "
                         "Make the hidden size, the batch size, the steps per minibatch or the number of "
                         "minibatches smaller.")
        else:
            # TRANSLATORS: {cell} is a gated cell, "GRU" or "LSTM"; {slower} how many times slower it trains.
            template = _("These settings would take about {seconds:.0f} s on a 2-core laptop (about "
                         "{here:.0f} s on this machine); one click of the lab is kept under {limit:g} s. "
                         "Make the hidden size, the batch size, the steps per minibatch or the number of "
                         "minibatches smaller, or choose the RNN cell (the {cell} trains these settings "
                         "about {slower:.0f} times slower).")
        raise RunTooLong(template.format(seconds=seconds, here=here, limit=limit, cell=cell_name(cell),
                                         slower=slower))
    return seconds


def cell_name(cell: str) -> str:
    """Return the short name of a recurrent cell, as the panel writes it: "RNN", "GRU" or "LSTM"."""
    return CELLS.get(cell, cell).split(" (")[0]


def describe_settings(settings: LabSettings) -> str:
    """Return a one-line summary of the training settings, for the panel's messages."""
    clipping = _(OFF) if settings.theta is None else f"θ = {settings.theta:g}"
    # TRANSLATORS: a run's settings in one line: {corpus} is the corpus' name, {cell} "RNN", "GRU" or
    # "LSTM", {optimizer} "SGD" or "ADAM", {clipping} "θ = 1" or "off".
    return _("{corpus}, {cell}, hidden size {hidden}, learning rate {lr:.3g}, {optimizer}, clipping "
             "{clipping}, minibatches of {batch_size} x {num_steps} steps").format(
        corpus=_(CORPORA.get(settings.corpus, settings.corpus)), cell=cell_name(settings.cell),
        hidden=settings.num_hiddens, lr=settings.lr, optimizer=settings.optimizer.upper(), clipping=clipping,
        batch_size=settings.batch_size, num_steps=settings.num_steps)


def divergence_message(error: TrainingDiverged, settings: LabSettings, vocab_size: int) -> str:
    """Return what the lab says about a run that blew up, with what to try instead."""
    # TRANSLATORS: {reason} says how the run blew up ("the loss reached 41.2"); {uniform} and {limit} are
    # losses in nats; {optimizer} is "SGD" or "ADAM"; {smaller} the learning rate to try.
    if settings.theta is None:
        template = _("Training diverged at minibatch {step}: {reason} (a uniform guess costs {uniform:.2f} "
                     "nats per character; a run above {limit:.1f} has blown up), with learning rate {lr:.3g} "
                     "and {optimizer}. Try a learning rate ten times smaller (about {smaller:.3g}), or "
                     "turning gradient clipping on (θ = 1).")
    else:
        template = _("Training diverged at minibatch {step}: {reason} (a uniform guess costs {uniform:.2f} "
                     "nats per character; a run above {limit:.1f} has blown up), with learning rate {lr:.3g} "
                     "and {optimizer}. Try a learning rate ten times smaller (about {smaller:.3g}).")
    return template.format(step=error.step, reason=error.reason, uniform=math.log(vocab_size),
                           limit=divergence_limit(vocab_size), lr=settings.lr,
                           optimizer=settings.optimizer.upper(), smaller=settings.lr / 10)


def run_lab(settings: "LabSettings | LabPlan", on_checkpoint=None, should_stop=None) -> LabResult:
    """Train a fresh scratch model (`settings.cell`) as `settings` or their `LabPlan` say; return the result.

    Settings are planned first (`plan_lab`: validated, corpus loaded, cost estimated); a plan
    is run as it is. Training goes through `d2lmini.train.run_training`:
    `settings.max_minibatches` minibatches with the hidden state carried from one to the next
    (truncated BPTT, as in notebook 04), about `settings.checkpoints` checkpoints, after each
    of which `on_checkpoint(history)` is called (its time is not counted); `should_stop()` is
    asked after every minibatch and True stops the run as an interrupt does. Never raises,
    not even for an interrupt: see `LabResult.error`. A run stopped part way (an interrupt, a
    callback that raised, an error) keeps its history and model but reports no perplexity:
    only a finished run's numbers are measurements. An interrupt during the sample keeps the
    finished training's perplexities (`interrupted` is True, `sample` None).
    """
    # TRANSLATORS: who changed a process-wide setting, and when an interrupt arrived, in a warning
    # written around them ("The lab run (or an interrupt in it) turned gradients off; that was put back.").
    with put_back_after(_("The lab run (or an interrupt in it)"), _("the run ended")):
        return _run_lab(settings, on_checkpoint, should_stop)


def _run_lab(settings: "LabSettings | LabPlan", on_checkpoint, should_stop) -> LabResult:
    start = time.perf_counter()
    result = LabResult(settings.settings if isinstance(settings, LabPlan) else settings)
    try:
        plan = settings if isinstance(settings, LabPlan) else plan_lab(settings)
    except (ValueError, TypeError, DataUnavailableError) as error:
        result.error = str(error)
        return result
    except KeyboardInterrupt:
        result.error = _("Stopped by an interrupt before training started; nothing was trained.")
        result.interrupted = True
        return result
    except Exception as error:  # anything else from loading data: reported, never a traceback
        result.error = _("The corpus could not be loaded ({type}: {error}).").format(
            type=type(error).__name__, error=error)
        return result
    settings, data = plan.settings, plan.data
    result.baselines, result.floor = dict(data.baselines), data.floor
    result.vocab_size = len(data.corpus.vocab)
    result.estimated_seconds = plan.cost.seconds
    threads = torch.get_num_threads()
    try:
        if settings.num_threads:
            torch.set_num_threads(settings.num_threads)
        _train(plan, result, on_checkpoint, should_stop)
    except TrainingDiverged as error:
        result.history = error.history or result.history
        result.error, result.diverged = divergence_message(error, settings, result.vocab_size), True
    except KeyboardInterrupt:
        result.error = _("Stopped by an interrupt after {count} minibatches; the model and its history so "
                         "far are kept.").format(count=len(result.history.step_loss))
        result.interrupted = True
    except ValueError as error:  # e.g. the budget ended before a single minibatch
        result.error = str(error)
    except Exception as error:  # a bug or an exhausted machine: say so instead of a traceback
        result.error = _("Training stopped unexpectedly ({type}: {error}). If it happens at the default "
                         "settings, please report it.").format(type=type(error).__name__, error=error)
    finally:
        torch.set_num_threads(threads)
    result.wall_seconds = time.perf_counter() - start
    if result.error is None:
        MACHINE_SPEED.record(result.estimated_seconds, result.wall_seconds)
    return result


# Only the sample depends on these settings: changing them needs no retraining (`resample`).
SAMPLE_SETTINGS = ("prefix", "temperature", "num_chars")


def only_the_sample_differs(before: LabSettings, after: LabSettings) -> bool:
    """Return True when `after` differs from `before` in nothing but `SAMPLE_SETTINGS`."""
    return replace(after, **{name: getattr(before, name) for name in SAMPLE_SETTINGS}) == before


def resample(result: LabResult, settings: LabSettings) -> LabResult:
    """Return `result` with a new sample from its trained model for `settings`' prefix and temperature.

    No retraining: `settings` may differ from the run's only in `SAMPLE_SETTINGS`. The sample
    is drawn as `run_lab` draws it (same seed), so resampling with the run's own settings
    gives its sample again. Raises ValueError (naming the setting) for a bad prefix or
    temperature, or when there is no trained model or a training setting differs.
    """
    if result.model is None or result.error is not None:
        raise ValueError(_("There is no trained model to sample from: train first."))
    if not only_the_sample_differs(result.settings, settings):
        raise ValueError(_("Only the prefix, the temperature and the length of the sample can change "
                           "without training again."))
    validate_lab_settings(settings)
    vocab = corpus_data(settings).corpus.vocab
    sample = predict(result.model, vocab, settings.prefix, settings.num_chars, settings.temperature,
                     torch.Generator().manual_seed(settings.seed))
    return replace(result, settings=settings, sample=sample)


def _train(plan: LabPlan, result: LabResult, on_checkpoint, should_stop) -> None:
    settings, data = plan.settings, plan.data
    device = torch.device(settings.device) if settings.device else try_gpu()
    model = make_model("scratch", len(data.corpus.vocab), settings, device)
    result.model = model
    run = TrainingRun(model, data.train, data.valid, settings, on_checkpoint, should_stop)
    with warnings.catch_warnings():  # a run that stopped early is reported in result.error instead
        warnings.simplefilter("ignore", RuntimeWarning)
        history = run_training(run)  # validated by the plan: not again
    result.history = history
    result.minibatches = len(history.step_loss)
    result.seconds = history.seconds[-1] if history.seconds else 0.0
    if history.stopped is not None:
        result.error, result.interrupted = history.stopped, history.interrupted
        return
    result.stopped_at_time_limit = bool(plan.cost.minibatches and result.minibatches < plan.cost.minibatches)
    result.train_perplexity = history.train_perplexity[-1]
    result.valid_perplexity = history.valid_perplexity[-1]
    result.verdict = judge_perplexity(result.valid_perplexity, result.baselines)
    try:  # training and its last measurement are finished: an interrupt now stops only the sample
        result.sample = predict(model, data.corpus.vocab, settings.prefix, settings.num_chars,
                                settings.temperature, torch.Generator().manual_seed(settings.seed))
    except KeyboardInterrupt:
        result.error, result.interrupted = _(
            "Stopped by an interrupt while generating the sample. Training had finished: validation "
            "perplexity {valid:.2f}, training {train:.2f} after {minibatches} minibatches.").format(
            valid=result.valid_perplexity, train=result.train_perplexity,
            minibatches=result.minibatches), True
