"""Notebook 08's perplexity lab panel: controls for `LabSettings`, Train, the runs so far, a sweep.

The work is `d2lmini.lab.run_lab` (one run), `d2lmini.lab.resample` (a new sample from the
trained model) and `d2lmini.lab.sweep.run_sweep` (one run per value of a setting); the session's
runs are kept in a `d2lmini.lab.runs.RunLog`, and `d2lmini.widgets.lab_views` draws them. This
module only lays them out and wires the buttons: `LabPanel.update()` does what Train does and
`LabPanel.sweep()` what Sweep does, so tests set the widget values from Python and call them.
The kernel's interrupt button (■) stops a run or a sweep and keeps what was trained. Works with
ipywidgets 7.7 (Google Colab) and 8.x.
"""

import html
import time
from dataclasses import replace
from pathlib import Path

import ipywidgets as widgets

from d2lmini.download import DataUnavailableError, timemachine_is_cached
from d2lmini.i18n import N_, _
from d2lmini.interrupt import interruptible, remember_main_loop
from d2lmini.lab import (
    DEFAULT_PREFIXES,
    MACHINE_SPEED,
    MAX_CLICK_SECONDS,
    CorpusData,
    LabPlan,
    LabResult,
    LabSettings,
    baseline_name,
    corpus_data,
    only_the_sample_differs,
    plan_lab,
    resample,
    run_lab,
    validate_lab_settings,
)
from d2lmini.lab.runs import SHOWN_SETTINGS, RunLog
from d2lmini.lab.sweep import (
    SWEEPABLE,
    parse_values,
    plan_sweep,
    run_sweep,
    suggested_values,
    validate_sweep_time,
    value_text,
)
from d2lmini.settings import CORPORA, EXPORT_PATH, LAB_SETTINGS, validate_value
from d2lmini.widgets import control_value, controls_disabled, make_control, stop_enabled
from d2lmini.widgets.a11y import Access, name_setting, panel_summary
from d2lmini.widgets.lab_views import (
    ERROR_COLOUR,
    OK_COLOUR,
    PLOT_HEIGHT_PX,
    PLOT_WIDTH_PX,
    WARN_COLOUR,
    curves_alt,
    curves_png,
    numbers_html,
    overlay,
    runs_html,
    sweep_alt,
    sweep_png,
    verdict_html,
)
from d2lmini.widgets.preview import PanelBox

# The panel attributes of controls not named as their setting.
RENAMED_CONTROLS = {"num_hiddens": "hidden_size", "lr": "learning_rate", "max_minibatches": "budget"}
# TRANSLATORS: how to stop a run: the Stop button, or ■ (the notebook's "interrupt the kernel" button).
STOP_HINT = N_("Stop (or ■, interrupt the kernel) stops it and keeps what was trained")
# While a run trains, the panel's one live region (`message`) says how far it got at most this
# often, so a screen reader announces progress every ten seconds, not at every redraw (WCAG 4.1.3).
ANNOUNCE_EVERY_SECONDS = 10.0
# How often the chart follows a run: every 0.3 s, a moving picture; for a reader whose system asks for
# reduced motion (prefers-reduced-motion, which the panel's browser side reports), every 10 s.
REDRAW_EVERY_SECONDS = 0.3
REDUCED_MOTION_REDRAW_SECONDS = 10.0
# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("The perplexity lab: choose settings and press Train (Stop ends a run); each run's "
           "validation perplexity is compared with the baselines. Sweep, further down, tries several "
           "values of one setting.")


def _corpus_options(data_dir) -> list[tuple[str, str]]:
    cached = timemachine_is_cached(data_dir)
    # TRANSLATORS: a corpus in a menu that is fetched from the internet the first time it is chosen.
    return [(_(label) if name != "timemachine" or cached
             else _("{corpus} (downloads on first use)").format(corpus=_(label)), name)
            for name, label in CORPORA.items()]


def _known_baselines(settings: LabSettings) -> dict[str, float]:
    """Return the baselines of the corpus `settings` name, for the live plot ({} if it cannot be loaded)."""
    try:
        validate_lab_settings(settings)
        return dict(corpus_data(settings).baselines)
    except Exception:  # run_lab reports the reason
        return {}


class PanelRun:
    """A run of the panel in progress (one Train click, or a sweep's runs), from its start to its end.

    Created when the run begins, from the runs' `LabPlan`s (whose estimates and baselines it
    shows): it shows the estimate, follows the training at every checkpoint (`checkpoint`: the
    progress bar, the chart and perplexity at most every 0.3 s, or 10 s where the browser asks for
    reduced motion, a progress line in the panel's live
    region at most every `ANNOUNCE_EVERY_SECONDS`), counts the runs finished (`run_done`) and shows
    how long it took (`end`). The last run's numbers and sample are hidden meanwhile
    (they would read as the new run's) and `restore` puts them back for a run that never started.
    The live region says "started" once here; the panel says how the run ended.
    """

    def __init__(self, panel: "LabPanel", plans: list[LabPlan]):
        self.panel, self.plans = panel, plans
        self.expected = [plan.expected_seconds for plan in plans]
        self.finished: list[LabResult] = []
        self.live = LabResult(plans[0].settings)
        self.started = self.last_announced = time.perf_counter()
        self.last_draw = 0.0
        self.shown_before = (panel.numbers.value, panel.sample.value)
        panel.progress.value, panel.progress.bar_style = 0.0, ""
        seconds, hint = sum(self.expected), _(STOP_HINT)
        if len(plans) > 1:
            # TRANSLATORS: {hint} says how to stop a run ("Stop (or ■, interrupt the kernel) stops it ...").
            progress = _("Training {count} runs: about {seconds:.0f} s on this machine; {hint}.")
            started = _("Training {count} runs: about {seconds:.0f} s.")
        else:
            progress = _("Training run #{number}: about {seconds:.0f} s on this machine; {hint}.")
            started = _("Training run #{number}: about {seconds:.0f} s.")
        fields = {"count": len(plans), "number": panel.runs.next_number, "seconds": seconds, "hint": hint}
        panel.progress_text.value = progress.format(**fields)
        panel.message.value = f"<p style='margin:2px 0'>{started.format(**fields)}</p>"
        panel.numbers.value, panel.sample.value = "", ""

    def checkpoint(self, history) -> None:
        """At a checkpoint: move the bar, redraw (`redraw_every`), announce progress at most every 10 s."""
        panel, settings = self.panel, self.live.settings
        planned = settings.max_minibatches or 1
        done = history.minibatches[-1] if history.minibatches else 0
        finished = len(self.finished)
        current = self.expected[finished] if finished < len(self.expected) else 0.0
        total = sum(self.expected) or 1.0
        done_seconds = sum(self.expected[:finished]) + current * min(1.0, done / planned)
        panel.progress.value = min(1.0, done_seconds / total)
        elapsed = time.perf_counter() - self.started
        fields = {"run": finished + 1, "runs": len(self.plans), "done": done, "planned": planned,
                  "elapsed": elapsed, "total": total, "hint": _(STOP_HINT)}
        if len(self.plans) > 1:
            progress = _("run {run} of {runs}, minibatch {done} of {planned} · {elapsed:.1f} s of about "
                         "{total:.0f} s · {hint}")
        else:
            progress = _("minibatch {done} of {planned} · {elapsed:.1f} s of about {total:.0f} s · {hint}")
        panel.progress_text.value = progress.format(**fields)
        if time.perf_counter() - self.last_draw > self.redraw_every():
            self._draw(history, finished)
        if time.perf_counter() - self.last_announced > ANNOUNCE_EVERY_SECONDS and history.valid_perplexity:
            if len(self.plans) > 1:
                news = _("Training: run {run} of {runs}, minibatch {done} of {planned}, validation "
                         "perplexity {perplexity:.2f} so far.")
            else:
                news = _("Training: minibatch {done} of {planned}, validation perplexity {perplexity:.2f} so "
                         "far.")
            panel.message.value = (f"<p style='margin:2px 0'>"
                                   f"{news.format(perplexity=history.valid_perplexity[-1], **fields)}</p>")
            self.last_announced = time.perf_counter()

    def redraw_every(self) -> float:
        """Seconds between two drawings of the chart in a run: less often where motion is to be reduced."""
        return REDUCED_MOTION_REDRAW_SECONDS if self.panel.access.reduced_motion else REDRAW_EVERY_SECONDS

    def _draw(self, history, finished: int) -> None:
        """Redraw the chart with the run in progress, and show its perplexity (not announced)."""
        panel = self.panel
        self.live.history = history
        baselines = self.plans[min(finished, len(self.plans) - 1)].data.baselines
        shown = overlay(panel.runs, self.live)
        panel.plot.value = curves_png(shown, baselines)
        panel.access.describe(panel.plot, curves_alt(shown, baselines))
        if history.valid_perplexity:
            # TRANSLATORS: keep the <b> tags around the number.
            panel.valid_ppl.value = _("validation perplexity: <b>{perplexity:.2f}</b> (a training-time "
                                      "estimate; training…)").format(perplexity=history.valid_perplexity[-1])
        self.last_draw = time.perf_counter()

    def run_done(self, result: LabResult) -> None:
        """Count `result` as finished; the next run (of a sweep) starts its own curve.

        The next progress line comes ten seconds after this run's result was announced.
        """
        self.finished.append(result)
        self.last_announced = time.perf_counter()
        if len(self.finished) < len(self.plans):
            self.live, self.last_draw = LabResult(self.plans[len(self.finished)].settings), 0.0

    def restore(self) -> None:
        """Put back the numbers and sample shown before this run (it trained nothing)."""
        self.panel.numbers.value, self.panel.sample.value = self.shown_before

    def end(self, result: LabResult | None) -> None:
        """Show how the run ended: the bar full and green for a result, and how long it took."""
        panel, elapsed = self.panel, time.perf_counter() - self.started
        ok = result is not None and result.error is None
        panel.progress.value = 1.0 if ok else panel.progress.value
        panel.progress.bar_style = "success" if ok else "warning"
        panel.progress_text.value = (_("took {elapsed:.1f} s (estimated {estimated:.1f} s)").format(
            elapsed=elapsed, estimated=sum(self.expected)) if result is not None else "")


class LabPanel:
    """The perplexity lab of notebook 08: settings, Train, the session's runs side by side, a sweep.

    `controls` maps a `LabSettings` field name to the widget that sets it; each is also an
    attribute (`corpus`, `cell` (the recurrent cell: RNN, GRU or LSTM), `hidden_size`,
    `learning_rate`, `num_steps`, `batch_size`, `theta` ("off" or a number as text), `optimizer`,
    `budget` (minibatches), `prefix`, `temperature`). `update()` trains a run as the Train button
    does (or, when only the prefix or temperature changed since the last run, resamples from its
    model); `sweep()` runs the sweep that `sweep_setting` and `sweep_values` describe. Every run
    is kept in `runs` (a `RunLog`: `runs.to_csv()`, `runs.to_dataframe()`); `clear()` forgets them.

    Shown, after a short summary: `valid_ppl` (CSS class `lab-valid-ppl`), `progress_text`
    (`lab-progress`: the estimate before, progress during and the time after a run), `plot` (the
    newest runs' validation curves), `numbers`, `message` (`lab-message`, the panel's one live
    region: a run started, its progress every ten seconds, how it ended; what a button did),
    `sample` (`lab-sample`),
    `runs_table` (`lab-runs`), `sweep_estimate` and `sweep_plot` (`lab-sweep-plot`). A refused
    setting is reported without discarding what is shown; the controls are disabled while a
    run is in progress, and ■ stops it within a second, keeping what was trained.
    """

    # The settings the panel shows (those a run's summary shows), in order, and the attribute that
    # holds each control.
    SHOWN = {name: RENAMED_CONTROLS.get(name, name) for name in SHOWN_SETTINGS}

    def __init__(self, settings: LabSettings | None = None):
        self.base = settings or LabSettings()
        remember_main_loop()  # so that ■ can reach a run that a widget starts in another thread
        self.runs = RunLog()
        self._stop = None
        self.run: PanelRun | None = None  # the run in progress, or the last one
        self.result: LabResult | None = None
        self.sweep_result = None
        self._make_controls()
        self._make_outputs()
        self._make_sweep()
        self.widget = self._layout()
        self.plot.value = curves_png([], _known_baselines(self.base))
        self.access.describe(self.plot, curves_alt([], _known_baselines(self.base)))

    def _make_controls(self) -> None:
        style, wide = {"description_width": "130px"}, widgets.Layout(width="400px")
        self.controls = {name: make_control(LAB_SETTINGS[name], getattr(self.base, name))
                         for name in self.SHOWN}
        self.controls["corpus"].options = _corpus_options(self.base.data_dir)
        self.controls["corpus"].value = self.base.corpus
        for name, control in self.controls.items():
            setattr(self, self.SHOWN[name], control)
            control.style, control.layout = style, wide
            if hasattr(control, "continuous_update"):
                control.continuous_update = False  # act on release or Enter, not on every step or key
        self.corpus.observe(self._corpus_changed, names="value")
        for control in (self.prefix, self.temperature):
            control.observe(lambda change: self._sample_settings_changed(), names="value")
        self.train_button = widgets.Button(description=_("Train"), button_style="primary", icon="play",
                                           layout=widgets.Layout(width="120px"))
        self.train_button.add_class("lab-train")
        self.train_button.on_click(lambda _: self.update())
        # Enabled only while a run or sweep is in progress: then it is in the tab order and takes the
        # focus from Train (widgets/a11y.js); clicking it stops the run after its minibatch.
        self.stop_button = widgets.Button(description=_("Stop"), icon="stop", disabled=True,
                                          layout=widgets.Layout(width="120px"))
        self.stop_button.add_class("lab-stop")
        self.stop_button.on_click(lambda _: self.stop())
        self.clear_button = widgets.Button(description=_("Clear runs"), layout=widgets.Layout(width="120px"))
        self.clear_button.add_class("lab-clear")
        self.clear_button.on_click(lambda _: self.clear())
        self.export_button = widgets.Button(description=_("Save as CSV"), icon="download",
                                            layout=widgets.Layout(width="140px"))
        self.export_button.add_class("lab-export")
        self.export_button.on_click(lambda _: self.export())

    def _make_outputs(self) -> None:
        self.valid_ppl = _html(_("validation perplexity: <b>–</b>"), "lab-valid-ppl")
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0,
                                              layout=widgets.Layout(width="160px"))
        self.progress_text = _html("", "lab-progress")
        size = widgets.Layout(width=f"{PLOT_WIDTH_PX}px", height=f"{PLOT_HEIGHT_PX}px")
        self.plot = widgets.Image(format="png", width=PLOT_WIDTH_PX, height=PLOT_HEIGHT_PX, layout=size)
        self.plot.add_class("lab-plot")
        self.numbers = _html("", "lab-numbers")
        self.message = _html("", "lab-message")
        self.sample = _html("", "lab-sample")
        self.runs_table = _html(runs_html(self.runs), "lab-runs")

    def _make_sweep(self) -> None:
        style = {"description_width": "130px"}
        self.sweep_setting = widgets.Dropdown(options=[(LAB_SETTINGS[n].shown_label(), n) for n in SWEEPABLE],
                                              value="num_hiddens", description=_("sweep"), style=style,
                                              layout=widgets.Layout(width="400px"))
        self.sweep_values = widgets.Text(value=suggested_values("num_hiddens"), description=_("values"),
                                         placeholder=_("e.g. 32, 128, 384"), continuous_update=False,
                                         style=style, layout=widgets.Layout(width="400px"))
        self.sweep_button = widgets.Button(description=_("Sweep"), icon="line-chart",
                                           layout=widgets.Layout(width="120px"))
        self.sweep_button.add_class("lab-sweep")
        self.sweep_button.on_click(lambda _: self.sweep())
        self.sweep_estimate = _html("", "lab-sweep-estimate")
        self.sweep_plot = widgets.Image(format="png", layout=widgets.Layout(width=f"{PLOT_WIDTH_PX}px"))
        self.sweep_plot.add_class("lab-sweep-plot")
        self.sweep_setting.observe(self._sweep_setting_changed, names="value")
        self.sweep_values.observe(lambda change: self.show_sweep_estimate(), names="value")

    def _layout(self) -> PanelBox:
        buttons = widgets.HBox([self.train_button, self.stop_button, self.clear_button, self.export_button])
        controls = widgets.VBox([*self.controls.values(), buttons], layout=widgets.Layout(min_width="410px"))
        status = widgets.HBox([self.progress, self.progress_text])
        results = widgets.VBox([self.valid_ppl, status, self.plot])
        main = widgets.HBox([controls, results])
        main.add_class("lab-main")
        sweep_controls = widgets.VBox([self.sweep_setting, self.sweep_values,
                                       widgets.HBox([self.sweep_button]), self.sweep_estimate],
                                      layout=widgets.Layout(min_width="410px"))
        sweep = widgets.HBox([sweep_controls, self.sweep_plot])
        panel = PanelBox([panel_summary(_(SUMMARY)), main, self.message, self.numbers, self.sample,
                              _html("<b>" + _("Your runs") + "</b>"), self.runs_table,
                              # TRANSLATORS: a heading; keep the <b> tags around its first word ("Sweep").
                              _html(_("<b>Sweep</b>: one run per value of one setting, the rest as above")),
                              sweep])
        panel.add_class("perplexity-lab")
        self._name_controls()
        panel.children = (*panel.children, self.access.widget)
        return panel

    def _name_controls(self) -> None:
        self.access = Access()
        for name, control in self.controls.items():
            name_setting(self.access, control, LAB_SETTINGS[name])
        # TRANSLATORS: accessible names; each must contain its control's label (Train, Clear runs, Save as
        # CSV, sweep, values, Sweep, Stop).
        for control, text in ((self.train_button, _("Train a new model with these settings")),
                              (self.clear_button, _("Clear runs")), (self.export_button, _("Save as CSV")),
                              (self.sweep_setting, _("sweep: the setting to vary")),
                              (self.sweep_values, _("values to try, separated by commas")),
                              (self.sweep_button, _("Sweep: one run per value"))):
            self.access.name(control, text)
        self.access.stopper(self.stop_button, _("Stop the run in progress, keeping what it trained"))
        # One live region, so that each change is announced once: the perplexity and the progress line
        # beside the chart are shown, not announced; the message says what a screen reader needs.
        self.access.announce(self.message)

    def _all_controls(self) -> list:
        return [*self.controls.values(), self.train_button, self.clear_button, self.export_button,
                self.sweep_setting, self.sweep_values, self.sweep_button]

    def _corpus_changed(self, change) -> None:
        """Swap the prefix for the new corpus's default when it was the old corpus's default."""
        if self.prefix.value == DEFAULT_PREFIXES.get(change["old"]):
            self.prefix.value = DEFAULT_PREFIXES.get(change["new"], self.prefix.value)

    def settings(self) -> LabSettings:
        """Return the base settings with the values the controls show now (raises for a bad θ)."""
        values = {name: control_value(LAB_SETTINGS[name], control) for name, control in self.controls.items()}
        return replace(self.base, **values)

    # --- one run -------------------------------------------------------------------------------

    def update(self, change=None) -> LabResult:
        """Do what Train does for the current control values; return the `LabResult`.

        Settings that differ from the last run only in the prefix or temperature resample from
        its model; settings estimated above `d2lmini.lab.MAX_CLICK_SECONDS` are refused;
        otherwise a fresh model trains, with the estimate and then the progress shown. An
        interrupt (■) stops the run within a second, keeping what was trained.
        """
        with interruptible() as self._stop:
            try:
                return self._update()
            except KeyboardInterrupt:
                return self._stopped_outside_a_run()

    def _update(self) -> LabResult:
        try:
            settings = self.settings()
        except (TypeError, ValueError) as error:
            return self._refuse(LabResult(self.base, error=str(error)))
        latest = self.runs.latest()
        if (latest is not None and latest.model is not None and latest.error is None
                and only_the_sample_differs(latest.settings, settings)
                and settings != latest.settings):
            return self.resample()
        try:
            plan = plan_lab(settings, click_limit=MAX_CLICK_SECONDS)
        except (TypeError, ValueError, DataUnavailableError) as error:
            return self._refuse(LabResult(settings, error=str(error)))
        self.run = PanelRun(self, [plan])
        with controls_disabled(self._all_controls()), stop_enabled(self.stop_button):
            result = run_lab(plan, on_checkpoint=self.run.checkpoint, should_stop=self._stop_requested)
        self.run.run_done(result)
        if result.error is not None and not result.diverged and not result.history.step_loss:
            self.run.end(None)
            self.run.restore()
            return self._refuse(result)
        self.run.end(result)
        self._show(result, plan.data)
        return result

    def stop(self) -> bool:
        """Do what Stop does: ask the run or sweep in progress to stop after its minibatch.

        Returns False when none is in progress. The run keeps what it trained, as after ■.
        """
        if self._stop is None or self.stop_button.disabled:
            return False
        self._stop.set()
        return True

    def _stop_requested(self) -> bool:
        return self._stop is not None and self._stop.is_set()

    def _show(self, result: LabResult, data: CorpusData) -> None:
        """Keep `result` (a run on `data`) as a new run and show it: the curves, the table, the numbers
        and the sample."""
        self.runs.add(result)
        self.result = result
        self.plot.value = curves_png(overlay(self.runs), result.baselines, result.floor)
        self.access.describe(self.plot, curves_alt(overlay(self.runs), result.baselines, result.floor))
        self.numbers.value = numbers_html(result)
        self.runs_table.value = runs_html(self.runs)
        if result.error is None:
            self.valid_ppl.value = _("validation perplexity: <b>{perplexity:.2f}</b>").format(
                perplexity=result.valid_perplexity)
            self.message.value = verdict_html(result, data.strong_baselines())
            self._show_sample(result)
            return
        partial = result.history.valid_perplexity
        stopped_at = result.history.minibatches[-1] if partial and not result.diverged else None
        self.valid_ppl.value = (
            _("validation perplexity: <b>–</b> (no trained model)") if stopped_at is None
            else _("validation perplexity: <b>{perplexity:.2f}</b> at minibatch {minibatch} "
                   "(stopped)").format(
                perplexity=partial[-1], minibatch=stopped_at))
        colour = WARN_COLOUR if result.interrupted else ERROR_COLOUR
        self.message.value = f"<p style='color:{colour};margin:2px 0'><b>{html.escape(result.error)}</b></p>"
        self.sample.value = ""

    def _show_sample(self, result: LabResult) -> None:
        prefix = result.settings.prefix
        body = (f"<b>{html.escape(prefix)}</b><span style='color:#1f5fa8'>"
                f"{html.escape(result.sample[len(prefix):])}</span>")
        # TRANSLATORS: {how} is "temperature 0.7" or "greedy".
        intro = _("A sample (prefix in bold, "
                  "{how}):").format(how=_temperature_words(result.settings.temperature))
        self.sample.value = (f"<p style='color:#555;margin:2px 0'>{intro}</p>"
                             f"<pre style='white-space:pre-wrap;word-break:normal;margin:2px 0'>{body}</pre>")

    def _refuse(self, result: LabResult) -> LabResult:
        """Show why a setting was refused, keeping the last trained result's plot, numbers and sample."""
        # TRANSLATORS: {error} says why the setting was refused.
        text = (_("{error} The plot and numbers below are still those of the last "
                  "run.").format(error=result.error)
                if self.result else result.error)
        self.message.value = f"<p style='color:{ERROR_COLOUR}'><b>{html.escape(text)}</b></p>"
        return result

    def _stopped_outside_a_run(self) -> LabResult:
        news = _("Stopped by an interrupt. The runs so far are kept in the table.")
        self.message.value = f"<p style='color:{WARN_COLOUR}'><b>{news}</b></p>"
        return LabResult(self.base, error=_("Stopped by an interrupt."), interrupted=True)

    # --- a new sample without training ---------------------------------------------------------

    def _sample_settings_changed(self) -> None:
        latest = self.runs.latest()
        if latest is None or latest.model is None or latest.error is not None or self.train_button.disabled:
            return
        try:
            settings = self.settings()
        except (TypeError, ValueError):
            return
        if only_the_sample_differs(latest.settings, settings):
            self.resample()

    def resample(self) -> LabResult:
        """Draw a new sample from the newest run's model for the current prefix and temperature (no training).

        Returns the run with its new sample; for a bad prefix or temperature, or when there is
        no run to sample from, a `LabResult` whose `error` says why (also shown).
        """
        latest = self.runs.latest()
        try:
            if latest is None:
                raise ValueError(_("There is no trained model to sample from: train first."))
            result = resample(latest, self.settings())
        except (TypeError, ValueError) as error:
            return self._refuse(LabResult(self.base, error=str(error)))
        self.result = result
        self._show_sample(result)
        news = _("A new sample from run #{number}'s model: only the prefix or temperature changed, so "
                 "nothing was trained.").format(number=self.runs.numbers[-1])
        self.message.value = f"<p style='color:{OK_COLOUR};margin:2px 0'>{news}</p>"
        return result

    # --- the runs ------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget every run of the session: the table and the chart start empty."""
        self.runs.clear()
        self.result = None
        self.runs_table.value = runs_html(self.runs)
        self.plot.value = curves_png([], _known_baselines(self.base))
        self.access.describe(self.plot, curves_alt([], _known_baselines(self.base)))
        self.message.value = "<p style='margin:2px 0'>" + _("Runs cleared.") + "</p>"

    def export(self, path: str | Path = "lab_runs.csv") -> Path | None:
        """Write every run (settings and results) to the CSV file `path`; return its path.

        A path that is not a file name, or a file that cannot be written, is shown in the panel's
        message (and None returned). `panel.runs.to_dataframe()` gives the same as a pandas DataFrame.
        """
        try:
            path = Path(validate_value(EXPORT_PATH, path))
            self.runs.to_csv(path)
        except (TypeError, ValueError, OSError) as error:
            news = _("The runs could not be saved: {error}").format(error=html.escape(str(error)))
            self.message.value = f"<p style='color:{ERROR_COLOUR};margin:2px 0'><b>{news}</b></p>"
            return None
        # TRANSLATORS: {path} is the file written (in <code>); keep <code>lab.runs.to_dataframe()</code>.
        news = _("Saved {count} runs to {path}; <code>lab.runs.to_dataframe()</code> gives them as a table "
                 "in Python.").format(count=len(self.runs),
                                      path=f"<code>{html.escape(str(path.resolve()))}</code>")
        self.message.value = f"<p style='margin:2px 0'>{news}</p>"
        return path

    # --- a sweep -------------------------------------------------------------------------------

    def _sweep_setting_changed(self, change) -> None:
        self.sweep_values.value = suggested_values(change["new"])
        self.show_sweep_estimate()

    def show_sweep_estimate(self) -> float | None:
        """Show (and return) how long the sweep described by the sweep controls should take here.

        Shows the reason instead, and returns None, when the values cannot be swept.
        """
        try:
            seconds = validate_sweep_time(self.settings(), self.sweep_setting.value,
                                          parse_values(self.sweep_setting.value, self.sweep_values.value))
        except (TypeError, ValueError, DataUnavailableError) as error:
            self.sweep_estimate.value = f"<span style='color:{ERROR_COLOUR}'>{html.escape(str(error))}</span>"
            return None
        here = MACHINE_SPEED.seconds(sum(seconds))
        self.sweep_estimate.value = _("{count} runs, about {seconds:.0f} s on this machine.").format(
            count=len(seconds), seconds=here)
        return here

    def sweep(self):
        """Do what Sweep does: one run per value of the chosen setting; return the `SweepResult` (or None).

        The estimate is checked first (each run and the whole within `d2lmini.lab.sweep`'s limits);
        every run joins the table and the chart as it finishes; ■ stops the sweep, keeping the
        runs so far.
        """
        with interruptible() as self._stop:
            try:
                return self._sweep()
            except KeyboardInterrupt:
                self._stopped_outside_a_run()
                return None

    def _sweep(self):
        name = self.sweep_setting.value
        try:
            settings = self.settings()
            values = parse_values(name, self.sweep_values.value)
            plans = plan_sweep(settings, name, values)
        except (TypeError, ValueError, DataUnavailableError) as error:
            self._refuse(LabResult(self.base, error=str(error)))
            return None
        self.run = PanelRun(self, plans)
        with controls_disabled(self._all_controls()), stop_enabled(self.stop_button):
            sweep = run_sweep(settings, name, values, on_run=self._sweep_run_done, plans=plans,
                              on_checkpoint=self.run.checkpoint, should_stop=self._stop_requested)
        self.run.end(sweep.results[-1] if sweep.results else None)
        self.sweep_result = sweep
        lines = plans[0].data.strong_baselines()
        self.sweep_plot.value = sweep_png(sweep, lines)
        self.access.describe(self.sweep_plot, sweep_alt(sweep, lines))
        self.message.value = _sweep_message(sweep, lines)
        return sweep

    def _sweep_run_done(self, index: int, result: LabResult) -> None:
        self.run.run_done(result)
        if result.history.step_loss or result.diverged:
            self._show(result, self.run.plans[index].data)


def _sweep_message(sweep, lines: dict[str, float]) -> str:
    best = sweep.best()
    label = LAB_SETTINGS[sweep.name].shown_label()
    if best is not None:
        # TRANSLATORS: {label} is the setting swept ("hidden size"), {value} its best value.
        text = _("Sweep of the {label}: the lowest validation perplexity, {perplexity:.2f}, came at "
                 "{value}.").format(label=label, perplexity=best[1], value=value_text(best[0], sweep.name))
    else:
        text = _("Sweep of the {label}: no run finished with a number.").format(label=label)
    # TRANSLATORS: {lines} lists the baselines with their perplexities ("Kneser-Ney 5-gram 4.12, ...").
    comparison = _("For comparison: {lines}.").format(
        lines=", ".join(f"{baseline_name(name)} {value:.2f}" for name, value in lines.items()))
    # TRANSLATORS: two sentences, one after the other (Chinese needs no space between them).
    text = _("{first} {second}").format(first=text, second=comparison)
    if sweep.stopped:
        text = _("{first} {second}").format(first=text, second=sweep.stopped)
    colour = WARN_COLOUR if sweep.stopped else OK_COLOUR
    return f"<p style='color:{colour};margin:2px 0'>{html.escape(text)}</p>"


def _html(value: str, css_class: str | None = None) -> widgets.HTML:
    widget = widgets.HTML(value)
    if css_class:
        widget.add_class(css_class)
    return widget


def _temperature_words(temperature: float | None) -> str:
    return _("greedy") if temperature is None else _("temperature "
                                                     "{temperature:g}").format(temperature=temperature)


def make_lab(settings: LabSettings | None = None) -> LabPanel:
    """Return the perplexity lab of notebook 08 (default settings: `LabSettings()`); display `.widget`."""
    return LabPanel(settings)
