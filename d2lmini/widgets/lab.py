"""Notebook 07's perplexity lab: pick a corpus and hyperparameters, retrain, watch perplexity.

The logic is plain Python: `run_lab(LabSettings(...))` loads the corpus, trains a fresh
scratch RNN for a few seconds, measures train and validation perplexity along the way,
and generates a sample. It never raises for a setting a student can choose: it returns a
`LabResult` whose `error` says what went wrong and what to try instead.

`LabPanel` (built by `make_lab`) wires `run_lab` to ipywidgets: sliders and menus for
the settings, a Train button, a live plot of the perplexity curves with baseline lines,
the final numbers and the generated text. `LabPanel.train()` does what the button does,
so tests set the widget values from Python and call it.
"""

import html
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from d2lmini.batching import check_fits, make_batches
from d2lmini.corpus import (
    CORPUS_NAMES,
    TIMEMACHINE_URL,
    Corpus,
    DataUnavailableError,
    download_timemachine,
    load_corpus,
    timemachine_is_cached,
)
from d2lmini.device import try_gpu
from d2lmini.metrics import perplexity_from_bits, uniform_bits, unigram_bits
from d2lmini.plot import figure_png, plot_perplexity
from d2lmini.rnn import check_prefix, predict
from d2lmini.train import (
    History,
    TrainConfig,
    TrainingDiverged,
    check_final_model,
    divergence_limit,
    evaluate_perplexity,
    make_model,
    make_optimizer,
    safe_exp,
    scheduled_lr,
    train_epoch,
)

# How many validation points the curves get over one training budget (about).
POINTS_PER_RUN = 12
DEFAULT_PREFIXES = {"bundled": "the ", "timemachine": "the time ", "markov": "a"}
CORPUS_LABELS = {"bundled": "bundled corpus", "markov": "synthetic Markov source",
                 "timemachine": "The Time Machine"}


@dataclass
class LabSettings:
    """Everything the lab needs for one run; the defaults retrain in about two seconds.

    The defaults are the best this project measured for a two-second budget on a 2-core
    CPU (README, "Performance"): 128 hidden units (more learn less in so few steps), Adam at
    0.01 with `lr_schedule="cosine"` decaying to 0 by the end of the budget, 32 x 35
    minibatches, clipping at 1.

    `max_minibatches` (None: no limit) stops training after that many minibatches and
    then checkpoints by count rather than by time, so a run is repeatable whatever the
    machine's speed. `data_dir` (None: `d2lmini.corpus.default_cache_dir()`), `timemachine_url` and
    `download_timeout` say where The Time Machine is cached and fetched from (tests point
    them at an empty folder and a closed local port to act offline). `num_threads`, if
    set, is how many CPU threads torch may use while the lab trains (restored afterwards);
    the default None leaves the user's setting alone.
    """

    corpus: str = "bundled"
    num_hiddens: int = 128
    lr: float = 0.01
    num_steps: int = 35
    batch_size: int = 32
    theta: float | None = 1.0
    optimizer: str = "adam"
    lr_schedule: str = "cosine"
    budget_seconds: float = 2.0
    prefix: str = "the "
    temperature: float = 0.7
    num_chars: int = 120
    max_minibatches: int | None = None
    seed: int = 0
    data_dir: Path | None = None
    timemachine_url: str = TIMEMACHINE_URL
    download_timeout: float = 10.0
    device: str | None = None
    num_threads: int | None = None


@dataclass
class LabResult:
    """What one run of the lab produced.

    On success `error` is None and the perplexities and `sample` are set. On a bad setting
    `error` explains it; `history` then holds whatever was measured before training stopped
    (empty if it never started). `baselines` maps a name to a perplexity (uniform, unigram,
    and for the synthetic source its entropy floor).
    """

    settings: LabSettings
    history: History = field(default_factory=History)
    baselines: dict[str, float] = field(default_factory=dict)
    train_perplexity: float | None = None
    valid_perplexity: float | None = None
    sample: str | None = None
    error: str | None = None
    diverged: bool = False
    minibatches: int = 0
    seconds: float = 0.0
    vocab_size: int | None = None
    model: torch.nn.Module | None = field(default=None, repr=False)

    @property
    def valid_bits(self) -> float | None:
        """Validation cross-entropy in bits per character (None when there is no model)."""
        return None if self.valid_perplexity is None else math.log2(self.valid_perplexity)


@dataclass
class _CorpusData:
    corpus: Corpus
    train: torch.Tensor
    valid: torch.Tensor
    baselines: dict[str, float]


_CACHE: dict[tuple, _CorpusData] = {}


def corpus_data(settings: LabSettings) -> _CorpusData:
    """Return the corpus of `settings`, its train/validation split and its baselines (cached).

    The baselines are perplexities: `uniform` (every character that occurs equally likely),
    `unigram` (character frequencies of the training text) and, for the synthetic Markov
    source, `entropy floor` (2 ** its exact entropy rate). Raises DataUnavailableError when
    The Time Machine cannot be fetched and ValueError for an unknown corpus name.
    """
    key = (settings.corpus, str(settings.data_dir), settings.timemachine_url)
    if key not in _CACHE:
        if settings.corpus not in CORPUS_NAMES:
            raise ValueError(f"Unknown corpus {settings.corpus!r}; choose one of {', '.join(CORPUS_NAMES)}.")
        if settings.corpus == "timemachine":  # fetch (or find) it first, from where the settings say
            download_timemachine(settings.data_dir, settings.timemachine_url, settings.download_timeout)
        corpus = load_corpus(settings.corpus, settings.data_dir if settings.corpus == "timemachine" else None)
        train, valid = corpus.split()
        train_text, valid_text = corpus.split_text()
        symbols = "".join(sorted(set(corpus.text)))
        baselines = {
            "uniform": perplexity_from_bits(uniform_bits(len(symbols))),
            "unigram": perplexity_from_bits(unigram_bits(train_text, valid_text, symbols)),
        }
        if corpus.entropy_rate_bits is not None:
            baselines["entropy floor"] = perplexity_from_bits(corpus.entropy_rate_bits)
        _CACHE[key] = _CorpusData(corpus, train, valid, baselines)
    return _CACHE[key]


def check_settings(settings: LabSettings) -> None:
    """Raise ValueError, with a message for the student, for settings that cannot train."""
    s = settings
    if not (isinstance(s.num_hiddens, int) and s.num_hiddens >= 1):
        raise ValueError(f"The hidden size must be a whole number of at least 1, not {s.num_hiddens!r}.")
    if not (isinstance(s.batch_size, int) and s.batch_size >= 1):
        raise ValueError(f"The batch size must be a whole number of at least 1, not {s.batch_size!r}.")
    if not (isinstance(s.num_steps, int) and s.num_steps >= 1):
        raise ValueError("The steps per minibatch must be a whole number of at least 1, "
                         f"not {s.num_steps!r}.")
    if not (isinstance(s.lr, int | float) and math.isfinite(s.lr) and s.lr > 0):
        raise ValueError(f"The learning rate must be a positive number such as 1 or 0.01, not {s.lr!r}.")
    if s.theta is not None and not (isinstance(s.theta, int | float) and s.theta > 0):
        raise ValueError(f"The clipping threshold must be positive (or off), not {s.theta!r}.")
    if s.lr_schedule not in ("constant", "cosine"):
        raise ValueError(f"The schedule must be 'constant' or 'cosine', not {s.lr_schedule!r}.")
    if s.optimizer not in ("sgd", "adam"):
        raise ValueError(f"The optimizer must be 'sgd' or 'adam', not {s.optimizer!r}.")
    if not (isinstance(s.budget_seconds, int | float) and s.budget_seconds > 0):
        raise ValueError("The training budget must be a positive number of seconds, "
                         f"not {s.budget_seconds!r}.")
    if s.max_minibatches is not None and not s.max_minibatches >= 1:
        raise ValueError(f"max_minibatches must be at least 1 (or None), not {s.max_minibatches!r}.")
    if not (isinstance(s.temperature, int | float) and math.isfinite(s.temperature) and s.temperature > 0):
        raise ValueError("The temperature must be a positive number such as 0.5 or 1, "
                         f"not {s.temperature!r}. Small temperatures pick the likeliest characters; "
                         "1 samples the model as it is.")


def _divergence_message(error: TrainingDiverged, settings: LabSettings, vocab_size: int) -> str:
    limit = divergence_limit(vocab_size)
    what = (f"{error.reason} (a uniform guess costs {math.log(vocab_size):.2f} nats per character; "
            f"a run above {limit:.1f} has blown up)")
    tips = [f"a learning rate ten times smaller (about {settings.lr / 10:.3g})"]
    if settings.theta is None:
        tips.append("turning gradient clipping on (θ = 1)")
    return (f"Training diverged at minibatch {error.step} (epoch {error.epoch}): {what}, with learning rate "
            f"{settings.lr:.3g} and {settings.optimizer.upper()}. Try " + ", or ".join(tips) + ".")


def run_lab(settings: LabSettings, on_epoch: Callable[[History, dict[str, float]], None] | None = None,
            ) -> LabResult:
    """Train a fresh scratch RNN as `settings` say and return a `LabResult` (notebook 07).

    Training stops when `settings.budget_seconds` of wall-clock time (validation included)
    are used up, or after `settings.max_minibatches`. About `POINTS_PER_RUN` times per run it
    records the training perplexity of the minibatches since the last point and the
    validation perplexity, with the position in epochs (fractions of a pass over the
    training text) in `history.epoch`, then calls `on_epoch(history, baselines)`.
    The hidden state is carried from one minibatch to the next (sequential partitioning,
    truncated BPTT), as in notebook 04. Never raises for user settings: see `LabResult.error`.
    """
    result = LabResult(settings)
    begin = time.perf_counter()
    try:
        check_settings(settings)
        data = corpus_data(settings)
        check_prefix(settings.prefix, data.corpus.vocab)
    except (ValueError, DataUnavailableError) as error:
        result.error = str(error)
        return result
    result.baselines = dict(data.baselines)
    result.vocab_size = len(data.corpus.vocab)
    try:
        check_fits(len(data.train), settings.batch_size, settings.num_steps)
    except ValueError:
        result.error = (
            f"A minibatch of {settings.batch_size} rows x {settings.num_steps} steps = "
            f"{settings.batch_size * settings.num_steps:,} characters does not fit in the "
            f"{len(data.train):,} training characters of the {CORPUS_LABELS[settings.corpus]} "
            f"(with one extra row of {settings.num_steps} steps for the random start). "
            "Make the batch size or the steps per minibatch smaller.")
        return result
    threads = torch.get_num_threads()
    try:
        if settings.num_threads:
            torch.set_num_threads(settings.num_threads)
        _train(settings, data, result, on_epoch)
    except TrainingDiverged as error:
        result.error = _divergence_message(error, settings, result.vocab_size)
        result.diverged = True
    finally:
        torch.set_num_threads(threads)
    result.seconds = time.perf_counter() - begin
    return result


def _train(settings: LabSettings, data: _CorpusData, result: LabResult, on_epoch) -> None:
    device = torch.device(settings.device) if settings.device else try_gpu()
    config = TrainConfig(num_hiddens=settings.num_hiddens, lr=settings.lr, optimizer=settings.optimizer,
                         batch_size=settings.batch_size, num_steps=settings.num_steps,
                         theta=settings.theta, lr_schedule=settings.lr_schedule, seed=settings.seed)
    model = make_model("scratch", len(data.corpus.vocab), config, device)
    optimizer = make_optimizer(settings.optimizer, model.parameters(), settings.lr)
    generator = torch.Generator().manual_seed(settings.seed)
    history = result.history
    per_epoch = max(1, (len(data.train) - 1) // (settings.batch_size * settings.num_steps))
    begin = time.perf_counter()
    deadline = begin + settings.budget_seconds
    by_count = settings.max_minibatches is not None
    every = max(1, (settings.max_minibatches or 0) // POINTS_PER_RUN)
    interval = settings.budget_seconds / POINTS_PER_RUN
    last = {"steps": 0, "time": time.perf_counter()}
    done = False

    def lr_now() -> float:
        """The scheduled rate: progress is the share of minibatches or of the time budget used."""
        if by_count:
            progress = len(history.step_loss) / settings.max_minibatches
        else:
            progress = (time.perf_counter() - begin) / settings.budget_seconds
        return scheduled_lr(settings.lr, settings.lr_schedule, progress)

    def checkpoint() -> None:
        losses = history.step_loss[last["steps"]:]
        if not losses:
            return
        history.epoch.append(len(history.step_loss) / per_epoch)
        history.train_perplexity.append(safe_exp(sum(losses) / len(losses)))
        history.valid_perplexity.append(
            evaluate_perplexity(model, data.valid, settings.batch_size, settings.num_steps))
        history.seconds.append(time.perf_counter() - begin)
        last["steps"], last["time"] = len(history.step_loss), time.perf_counter()
        if on_epoch is not None:
            on_epoch(history, result.baselines)

    def scheduled(batches: Iterator, epoch: int) -> Iterator:
        """Yield the minibatches of one epoch; checkpoint on schedule; stop when the run is over."""
        nonlocal done
        for batch in batches:
            steps = len(history.step_loss)
            if by_count:
                if steps and steps >= settings.max_minibatches:
                    done = True
                    return
                if steps - last["steps"] >= every:
                    checkpoint()
            else:
                now = time.perf_counter()
                if steps and now >= deadline:
                    done = True
                    return
                if now - last["time"] >= interval:
                    checkpoint()
            yield batch

    epoch = 0
    while not done:
        epoch += 1
        batches = make_batches("sequential", data.train, settings.batch_size, settings.num_steps,
                               generator, device)
        train_epoch(model, scheduled(batches, epoch), optimizer, settings.theta, True, history, epoch,
                    lr_now=lr_now)
    checkpoint()
    check_final_model(model, history, settings.lr)
    result.model = model
    result.minibatches = len(history.step_loss)
    result.train_perplexity = history.train_perplexity[-1]
    result.valid_perplexity = history.valid_perplexity[-1]
    result.sample = predict(model, data.corpus.vocab, settings.prefix, settings.num_chars,
                            settings.temperature, torch.Generator().manual_seed(settings.seed))


def plot_png(history: History, baselines: dict[str, float], title: str = "Perplexity in the lab") -> bytes:
    """Return a PNG of the train/validation perplexity curves with baseline lines."""
    figure = Figure(figsize=(6.4, 3.4), dpi=90)
    ax = figure.subplots()
    plot_perplexity(ax, history, baselines, title)
    top = 1.25 * max(baselines.values()) if baselines else None
    ax.set_ylim(1, top)  # perplexity is at least 1; points far above the uniform guess are off the chart
    ax.set_xlim(0, None if history.epoch else 1)
    ax.set_xlabel("epochs (passes over the training text)")
    return figure_png(figure, dpi=90)


def describe_settings(settings: LabSettings) -> str:
    """Return a one-line summary of the training settings, for the panel's messages."""
    clipping = "off" if settings.theta is None else f"θ = {settings.theta:g}"
    return (f"{CORPUS_LABELS.get(settings.corpus, settings.corpus)}, hidden size {settings.num_hiddens}, "
            f"learning rate {settings.lr:.3g}, {settings.optimizer.upper()}, clipping {clipping}, "
            f"minibatches of {settings.batch_size} x {settings.num_steps} steps")


def numbers_html(result: LabResult) -> str:
    """Return the HTML table of a finished run's numbers (perplexity and bits per character)."""
    rows = []
    if result.train_perplexity is not None:
        rows.append(("RNN, training text", result.train_perplexity))
        rows.append(("RNN, validation text", result.valid_perplexity))
    rows += [(f"{name} baseline", value) for name, value in result.baselines.items()]
    cells = "".join(f"<tr><td>{html.escape(name)}</td><td style='text-align:right'>{ppl:.2f}</td>"
                    f"<td style='text-align:right'>{math.log2(ppl):.3f}</td></tr>"
                    for name, ppl in rows if ppl is not None and math.isfinite(ppl))
    footer = (f"<p style='color:#555;margin:2px 0'>{result.minibatches} minibatches in "
              f"{result.seconds:.1f} s</p>" if result.minibatches else "")
    return ("<table><tr><th></th><th>perplexity</th><th>bits/char</th></tr>" + cells + "</table>" + footer)


def _corpus_options(data_dir: Path | None) -> list[tuple[str, str]]:
    timemachine = CORPUS_LABELS["timemachine"]
    if not timemachine_is_cached(data_dir):
        timemachine += " (downloads on first use)"
    return [(CORPUS_LABELS["bundled"], "bundled"), (CORPUS_LABELS["markov"], "markov"),
            (timemachine, "timemachine")]


class LabPanel:
    """The perplexity lab of notebook 07: settings, a Train button, curves, numbers and a sample.

    The controls are attributes: `corpus`, `hidden_size`, `learning_rate` (log scale),
    `num_steps`, `batch_size`, `theta` (a string: "off" or a number), `optimizer`, `budget`, `prefix` and
    `temperature`. `train()` runs `run_lab` on their values, as the Train button does, and
    shows the result: `valid_ppl` (CSS class `lab-valid-ppl`) shows the final validation
    perplexity, `message` (class `lab-message`) what went wrong or how the run went,
    `plot` the curves and `sample` the generated text. `widget` is the box to display.
    `data_dir`, `timemachine_url` and `download_timeout` go to every run's `LabSettings`.
    """

    def __init__(self, settings: LabSettings | None = None):
        s = settings or LabSettings()
        self.extra = {"data_dir": s.data_dir, "timemachine_url": s.timemachine_url,
                      "download_timeout": s.download_timeout, "num_chars": s.num_chars,
                      "max_minibatches": s.max_minibatches, "seed": s.seed, "device": s.device,
                      "num_threads": s.num_threads}
        style = {"description_width": "150px"}
        wide = widgets.Layout(width="440px")
        self.corpus = widgets.Dropdown(options=_corpus_options(s.data_dir), value=s.corpus,
                                       description="corpus", style=style, layout=wide)
        self.hidden_size = widgets.IntSlider(value=s.num_hiddens, min=8, max=512, step=8,
                                             description="hidden size", style=style, layout=wide)
        self.learning_rate = widgets.FloatLogSlider(value=s.lr, base=10, min=-3, max=3, step=0.1,
                                                    readout_format=".3g", description="learning rate",
                                                    style=style, layout=wide)
        self.num_steps = widgets.IntSlider(value=s.num_steps, min=1, max=256,
                                           description="steps per minibatch", style=style, layout=wide)
        self.batch_size = widgets.IntSlider(value=s.batch_size, min=1, max=512, description="batch size",
                                            style=style, layout=wide)
        # The clipping menu holds strings: ipywidgets reads a Dropdown value of None as "nothing chosen".
        theta = "off" if s.theta is None else f"{s.theta:g}"
        thetas = ["off", "0.1", "0.5", "1", "5", "10", "100"]
        self.theta = widgets.Dropdown(options=thetas if theta in thetas else [*thetas, theta], value=theta,
                                      description="clipping θ", style=style, layout=wide)
        self.optimizer = widgets.Dropdown(options=[("SGD (as in the book)", "sgd"), ("Adam", "adam")],
                                          value=s.optimizer, description="optimizer", style=style,
                                          layout=wide)
        self.budget = widgets.FloatSlider(value=s.budget_seconds, min=0.5, max=30, step=0.5,
                                          description="training budget (s)", style=style, layout=wide)
        self.prefix = widgets.Text(value=s.prefix, description="prefix", style=style, layout=wide)
        self.temperature = widgets.FloatText(value=s.temperature, step=0.1, description="temperature",
                                             style=style, layout=wide)
        self.train_button = widgets.Button(description="Train", button_style="primary", icon="play")
        self.train_button.add_class("lab-train")
        self.message = widgets.HTML()
        self.message.add_class("lab-message")
        self.valid_ppl = widgets.HTML("validation perplexity: <b>–</b>")
        self.valid_ppl.add_class("lab-valid-ppl")
        self.numbers = widgets.HTML()
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="576px"))
        self.sample = widgets.HTML()
        self.result: LabResult | None = None
        self._last_draw = 0.0
        self.corpus.observe(self._corpus_changed, names="value")
        self.train_button.on_click(lambda _: self.train())
        controls = widgets.VBox([self.corpus, self.hidden_size, self.learning_rate, self.num_steps,
                                 self.batch_size, self.theta, self.optimizer, self.budget, self.prefix,
                                 self.temperature, self.train_button],
                                layout=widgets.Layout(min_width="450px"))
        results = widgets.VBox([self.plot, self.valid_ppl, self.numbers])
        self.widget = widgets.VBox([widgets.HBox([controls, results]), self.message, self.sample])
        self.widget.add_class("perplexity-lab")

    def _corpus_changed(self, change) -> None:
        """Swap the prefix for the new corpus's default when it was the old corpus's default."""
        if self.prefix.value == DEFAULT_PREFIXES.get(change["old"]):
            self.prefix.value = DEFAULT_PREFIXES.get(change["new"], self.prefix.value)

    def settings(self) -> LabSettings:
        """Return the `LabSettings` the widgets show now."""
        return LabSettings(corpus=self.corpus.value, num_hiddens=self.hidden_size.value,
                           lr=self.learning_rate.value, num_steps=self.num_steps.value,
                           batch_size=self.batch_size.value,
                           theta=None if self.theta.value == "off" else float(self.theta.value),
                           optimizer=self.optimizer.value, budget_seconds=self.budget.value,
                           prefix=self.prefix.value, temperature=self.temperature.value, **self.extra)

    def _live(self, history: History, baselines: dict[str, float]) -> None:
        now = time.perf_counter()
        if now - self._last_draw > 0.3:  # drawing costs time that training would like to have
            self.plot.value = plot_png(history, baselines)
            latest = history.valid_perplexity[-1]
            self.valid_ppl.value = f"validation perplexity: <b>{latest:.2f}</b> (training…)"
            self._last_draw = time.perf_counter()

    def train(self) -> LabResult:
        """Retrain with the current widget values, update every output, and return the `LabResult`."""
        self.train_button.disabled = True
        self.message.value = "<p>Training…</p>"
        self.valid_ppl.value = "validation perplexity: <b>…</b>"
        try:
            result = run_lab(self.settings(), on_epoch=self._live)
        finally:
            self.train_button.disabled = False
        self.result = result
        self.plot.value = plot_png(result.history, result.baselines)  # empty axes if it never trained
        self.numbers.value = numbers_html(result)
        if result.error is not None:
            self.message.value = f'<p style="color:#b30000"><b>{html.escape(result.error)}</b></p>'
            self.valid_ppl.value = "validation perplexity: <b>–</b> (no trained model)"
            self.sample.value = ""
            return result
        below = [name for name, value in result.baselines.items() if result.valid_perplexity < value]
        self.valid_ppl.value = f"validation perplexity: <b>{result.valid_perplexity:.2f}</b>"
        self.message.value = (f"<p style='color:#225522'>Trained for {result.seconds:.1f} s "
                              f"({describe_settings(result.settings)}). Validation perplexity "
                              f"{result.valid_perplexity:.2f} = {result.valid_bits:.3f} bits per character; "
                              "below the " + (", ".join(below) or "no") + " baseline"
                              + ("s" if len(below) != 1 else "") + ".</p>")
        body = (f"<b>{html.escape(self.prefix.value)}</b>"
                f"<span style='color:#1f5fa8'>{html.escape(result.sample[len(self.prefix.value):])}</span>")
        self.sample.value = ("<p style='color:#555;margin:2px 0'>A sample (prefix in bold, temperature "
                             f"{self.temperature.value:g}):</p>"
                             f"<pre style='white-space:pre-wrap'>{body}</pre>")
        return result


def make_lab(settings: LabSettings | None = None) -> LabPanel:
    """Return the perplexity lab of notebook 07 (default settings: `LabSettings()`); display `.widget`."""
    return LabPanel(settings)
