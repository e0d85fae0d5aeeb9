"""Notebook 07's perplexity lab panel: sliders for `LabSettings`, a Train button, curves and a sample.

The work is `d2lmini.lab.run_lab`; this module only shows it. `LabPanel.update()` does
what the button does, so tests set the widget values from Python and call it. Works with
ipywidgets 7.7 (Google Colab) and 8.x.
"""

import html
import math
import time
from dataclasses import replace

import ipywidgets as widgets
from matplotlib.figure import Figure

from d2lmini.corpus import timemachine_is_cached
from d2lmini.lab import (
    DEFAULT_PREFIXES,
    LabResult,
    LabSettings,
    check_lab_settings,
    corpus_data,
    describe_settings,
    run_lab,
)
from d2lmini.plot import figure_png, plot_perplexity
from d2lmini.settings import CORPORA, LAB_SETTINGS
from d2lmini.train import History
from d2lmini.widgets import controls_disabled, make_control, parse_menu_choice

PLOT_WIDTH_PX, PLOT_HEIGHT_PX, PLOT_DPI = 576, 306, 90
OK_COLOUR, WARN_COLOUR, ERROR_COLOUR = "#225522", "#a35200", "#b30000"


def plot_png(history: History, baselines: dict[str, float], floor: float | None = None,
             title: str = "Perplexity in the lab") -> bytes:
    """Return a PNG (576 x 306 px) of the train/validation curves with baselines and the floor."""
    figure = Figure(figsize=(PLOT_WIDTH_PX / PLOT_DPI, PLOT_HEIGHT_PX / PLOT_DPI), dpi=PLOT_DPI)
    ax = figure.subplots()
    lines = dict(baselines)
    if floor is not None:
        lines["entropy floor (a limit)"] = floor
    plot_perplexity(ax, history, lines, title)
    shown = list(lines.values()) + history.valid_perplexity + history.train_perplexity
    finite = [v for v in shown if math.isfinite(v)]
    # Perplexity is at least 1; points far above the uniform guess are off the chart.
    ax.set_ylim(1, 1.25 * max(baselines.values()) if baselines else max(finite, default=10.0) * 1.25)
    ax.set_xlim(0, None if history.epoch else 1)
    ax.set_xlabel("epochs (passes over the training text)")
    return figure_png(figure, dpi=PLOT_DPI)


def numbers_html(result: LabResult) -> str:
    """Return the HTML table of a run's numbers (perplexity and bits per character)."""
    rows = []
    if result.train_perplexity is not None:
        rows += [("RNN, training text", result.train_perplexity),
                 ("RNN, validation text", result.valid_perplexity)]
    rows += [(f"{name} baseline", value) for name, value in result.baselines.items()]
    if result.floor is not None:
        rows.append(("entropy floor (no model can beat it)", result.floor))
    cells = "".join(f"<tr><td>{html.escape(name)}</td><td style='text-align:right'>{ppl:.2f}</td>"
                    f"<td style='text-align:right'>{math.log2(ppl):.3f}</td></tr>"
                    for name, ppl in rows if ppl is not None and math.isfinite(ppl))
    footer = (f"<p style='color:#555;margin:2px 0'>{result.minibatches} minibatches, "
              f"{result.seconds:.1f} s of training</p>" if result.minibatches else "")
    return "<table><tr><th></th><th>perplexity</th><th>bits/char</th></tr>" + cells + "</table>" + footer


def verdict_html(result: LabResult) -> str:
    """Return the coloured message for a finished run: green only when it beats a uniform guess."""
    settings = result.settings
    text = (f"Trained {result.minibatches} minibatches in {result.seconds:.1f} s "
            f"({describe_settings(settings)}). Validation perplexity {result.valid_perplexity:.2f} "
            f"= {result.valid_bits:.3f} bits per character")
    below = [name for name, value in result.baselines.items() if result.valid_perplexity < value]
    if result.worse_than_uniform:
        colour = WARN_COLOUR
        text += (f": worse than guessing uniformly among the characters (perplexity "
                 f"{result.baselines['uniform']:.2f}). This model has not learned yet: try more minibatches, "
                 "a larger batch or a different learning rate.")
    else:
        colour = OK_COLOUR
        text += (f", below the {' and the '.join(below)} baseline{'s' if len(below) > 1 else ''}."
                 if below else ", not yet below the unigram baseline.")
    if result.stopped_at_time_limit:
        text += (f" Stopped at the {settings.max_seconds:g} s safety limit before the "
                 f"{settings.max_minibatches} minibatches asked for.")
    return f"<p style='color:{colour}'>{html.escape(text)}</p>"


def _corpus_options(data_dir) -> list[tuple[str, str]]:
    cached = timemachine_is_cached(data_dir)
    return [(label + ("" if name != "timemachine" or cached else " (downloads on first use)"), name)
            for name, label in CORPORA.items()]


def _known_baselines(settings: LabSettings) -> dict[str, float]:
    """Return the baselines of the corpus `settings` name, for the live plot ({} if it cannot be loaded)."""
    try:
        check_lab_settings(settings)
        return dict(corpus_data(settings).baselines)
    except Exception:  # run_lab reports the reason
        return {}


class LabPanel:
    """The perplexity lab of notebook 07: settings, a Train button, curves, numbers and a sample.

    `controls` maps a `LabSettings` field name to the widget that sets it; each is also an
    attribute (`corpus`, `hidden_size`, `learning_rate`, `num_steps`, `batch_size`, `theta`
    ("off" or a number as text), `optimizer`, `budget` (minibatches), `prefix`,
    `temperature`). `update()` runs `run_lab` on the base settings with the controls' values,
    as the button does. `valid_ppl` (CSS class `lab-valid-ppl`) shows the validation
    perplexity, `message` (class `lab-message`) how the run went, `plot` the curves,
    `sample` the generated text. A bad setting is reported without discarding the last
    trained result; the controls are disabled while a run is in progress.
    """

    # The settings the panel shows, in order, and the attribute that holds each control.
    SHOWN = {"corpus": "corpus", "num_hiddens": "hidden_size", "lr": "learning_rate",
             "num_steps": "num_steps", "batch_size": "batch_size", "theta": "theta", "optimizer": "optimizer",
             "max_minibatches": "budget", "prefix": "prefix", "temperature": "temperature"}

    def __init__(self, settings: LabSettings | None = None):
        self.base = settings or LabSettings()
        style, wide = {"description_width": "160px"}, widgets.Layout(width="460px")
        self.controls = {name: make_control(LAB_SETTINGS[name], getattr(self.base, name))
                         for name in self.SHOWN}
        self.controls["corpus"].options = _corpus_options(self.base.data_dir)
        self.controls["corpus"].value = self.base.corpus
        for name, control in self.controls.items():
            setattr(self, self.SHOWN[name], control)
            control.style, control.layout = style, wide
        self.train_button = widgets.Button(description="Train", button_style="primary", icon="play")
        self.train_button.add_class("lab-train")
        self.message = widgets.HTML()
        self.message.add_class("lab-message")
        self.valid_ppl = widgets.HTML("validation perplexity: <b>–</b>")
        self.valid_ppl.add_class("lab-valid-ppl")
        self.numbers = widgets.HTML()
        self.plot = widgets.Image(format="png", width=PLOT_WIDTH_PX, height=PLOT_HEIGHT_PX,
                                  layout=widgets.Layout(width=f"{PLOT_WIDTH_PX}px",
                                                        height=f"{PLOT_HEIGHT_PX}px"))
        self.sample = widgets.HTML()
        self.sample.add_class("lab-sample")
        self.result: LabResult | None = None
        self._last_draw, self._baselines = 0.0, {}
        self.corpus.observe(self._corpus_changed, names="value")
        self.train_button.on_click(lambda _: self.update())
        controls = widgets.VBox([*self.controls.values(), self.train_button],
                                layout=widgets.Layout(min_width="470px"))
        results = widgets.VBox([self.plot, self.valid_ppl, self.numbers])
        self.widget = widgets.VBox([widgets.HBox([controls, results]), self.message, self.sample])
        self.widget.add_class("perplexity-lab")

    def _corpus_changed(self, change) -> None:
        """Swap the prefix for the new corpus's default when it was the old corpus's default."""
        if self.prefix.value == DEFAULT_PREFIXES.get(change["old"]):
            self.prefix.value = DEFAULT_PREFIXES.get(change["new"], self.prefix.value)

    def settings(self) -> LabSettings:
        """Return the base settings with the values the controls show now (raises for a bad θ)."""
        values = {name: control.value for name, control in self.controls.items()}
        values["theta"] = parse_menu_choice(LAB_SETTINGS["theta"], values["theta"])
        return replace(self.base, **values)

    def _live(self, history: History) -> None:
        now = time.perf_counter()
        if now - self._last_draw > 0.3:  # drawing happens between checkpoints, outside the budget
            self.plot.value = plot_png(history, self._baselines)
            latest = history.valid_perplexity[-1]
            self.valid_ppl.value = f"validation perplexity: <b>{latest:.2f}</b> (training…)"
            self._last_draw = time.perf_counter()

    def update(self, change=None) -> LabResult:
        """Retrain with the current control values, update every output, and return the `LabResult`.

        The Train button calls this; the controls are disabled while it runs.
        """
        self.message.value = "<p>Training…</p>"
        with controls_disabled([*self.controls.values(), self.train_button]):
            settings = self.settings()
            self._baselines = _known_baselines(settings)
            result = run_lab(settings, on_checkpoint=self._live)
        if result.error is not None and not result.diverged and not result.history.step_loss:
            return self._refuse(result)
        self.result = result
        self.plot.value = plot_png(result.history, result.baselines, result.floor)
        self.numbers.value = numbers_html(result)
        if result.error is not None:
            self.message.value = f"<p style='color:{ERROR_COLOUR}'><b>{html.escape(result.error)}</b></p>"
            self.valid_ppl.value = "validation perplexity: <b>–</b> (no trained model)"
            self.sample.value = ""
            return result
        self.valid_ppl.value = f"validation perplexity: <b>{result.valid_perplexity:.2f}</b>"
        self.message.value = verdict_html(result)
        body = (f"<b>{html.escape(result.settings.prefix)}</b><span style='color:#1f5fa8'>"
                f"{html.escape(result.sample[len(result.settings.prefix):])}</span>")
        self.sample.value = ("<p style='color:#555;margin:2px 0'>A sample (prefix in bold, "
                             f"{_temperature_words(result.settings.temperature)}):</p>"
                             f"<pre style='white-space:pre-wrap;word-break:normal'>{body}</pre>")
        return result

    def _refuse(self, result: LabResult) -> LabResult:
        """Show why a setting was refused, keeping the last trained result's plot, numbers and sample."""
        kept = " The plot and numbers below are still those of the last run." if self.result else ""
        self.message.value = f"<p style='color:{ERROR_COLOUR}'><b>{html.escape(result.error + kept)}</b></p>"
        if self.result is None:
            self.plot.value = plot_png(History(), result.baselines)
        return result


def _temperature_words(temperature: float | None) -> str:
    return "greedy" if temperature is None else f"temperature {temperature:g}"


def make_lab(settings: LabSettings | None = None) -> LabPanel:
    """Return the perplexity lab of notebook 07 (default settings: `LabSettings()`); display `.widget`."""
    return LabPanel(settings)
