"""The gradient-clipping panel of notebook 06: train with and without clipping, compare.

`run_clipping_experiment(theta, lr, ...)` trains a small seeded scratch RNN on the
bundled corpus and returns a `ClippingResult` (gradient norms and losses per minibatch, how
many steps were clipped, final perplexities, and a status with a message).
`make_clipping_panel()` wires it to a threshold slider (with "off") and a learning-rate
slider that retrain and redraw; tests set the slider values from Python.
"""

import functools
import html
import itertools
import math
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from d2lmini.corpus import Corpus, load_corpus
from d2lmini.i18n import N_, _
from d2lmini.palette import MUTED_TEXT_COLOUR, REFERENCE_LINE_COLOUR, SERIES_COLOURS
from d2lmini.plot import figure_png, show_png
from d2lmini.settings import TRAIN_SETTINGS, validate_value
from d2lmini.train import (
    TrainConfig,
    TrainingDiverged,
    make_model,
    train,
)
from d2lmini.verdicts import VERDICT_COLOURS, judge_perplexity, text_baselines
from d2lmini.widgets import controls_disabled, menu_options, parse_menu_choice
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("Gradient clipping: choose a clipping θ (or off), a learning rate and a seed; each change "
           "retrains a small model, then plots its loss and gradient norms.")

NUM_HIDDENS = 32
DEFAULT_LR = 2.5
NUM_EPOCHS = 2
# The slider menus: the declared menus of `d2lmini.settings` (rates from 0.5 up: plain SGD).
THETA_CHOICES = tuple(menu_options(TRAIN_SETTINGS["theta"], None)[0])
LR_CHOICES = tuple(lr for lr in TRAIN_SETTINGS["lr"].menu if 0.5 <= lr <= 100)
SEED_CHOICES = (0, 1, 2, 3, 4)
# How the panel writes a run's status (`ClippingResult.status`, compared by the code in English).
STATUS_WORDS = {
    # TRANSLATORS: a run's verdict, in bold before its message: it beats every baseline.
    "ok": N_("ok"),
    # TRANSLATORS: a run's verdict: better than a uniform guess, not better than every baseline.
    "weak": N_("weak"),
    # TRANSLATORS: a run's verdict: its loss exploded (no better than a uniform guess).
    "exploded": N_("exploded"),
    # TRANSLATORS: a run's verdict: training blew up and was stopped.
    "diverged": N_("diverged"),
}
GRAD_NORMS_TITLE = N_("Gradient norm per minibatch (before clipping)")
LOSSES_TITLE = N_("Training loss per minibatch")


@functools.lru_cache(maxsize=1)
def _bundled() -> Corpus:
    return load_corpus("bundled")


def parse_theta(choice) -> float | None:
    """Return the threshold a slider choice stands for: None for "off" (or None), else a positive float.

    Raises TypeError/ValueError (from `d2lmini.settings`) for anything else.
    """
    return parse_menu_choice(TRAIN_SETTINGS["theta"], choice)


def clipping_config(theta: float | None, lr: float, num_epochs: int = NUM_EPOCHS,
                    seed: int = 0, clip_mode: str = "norm") -> TrainConfig:
    """Return the notebook-06 training settings: a 32-unit scratch RNN, plain SGD at a constant rate.

    `clip_mode="norm"` clips the joint gradient norm at `theta`; "value" clamps every
    gradient entry to [-theta, theta].
    """
    return TrainConfig(num_hiddens=NUM_HIDDENS, lr=lr, optimizer="sgd", batch_size=32, num_steps=35,
                       theta=theta, clip_mode=clip_mode, num_epochs=num_epochs, sampling="sequential",
                       lr_schedule="constant", seed=seed)


@dataclass
class ClippingResult:
    """One notebook-06 training run, as `run_clipping_experiment` returns it.

    `step_grad_norm` is measured before clipping; `step_cosine` is filled by value clipping
    only; the perplexities are those of the last epoch, None when training diverged.
    `status` is the verdict of `d2lmini.verdicts.judge_perplexity` on the validation perplexity
    beside the uniform and unigram baselines ("ok", "weak" or "exploded"), or "diverged"
    (`d2lmini.train` judged the run blown up); `message` says it in plain text.
    """

    method: str
    theta: float | None
    lr: float
    seed: int
    vocab_size: int
    steps: int
    step_grad_norm: list[float]
    step_loss: list[float]
    clipped_steps: int
    step_cosine: list[float]
    status: str = "ok"
    message: str = ""
    train_perplexity: float | None = None
    valid_perplexity: float | None = None


def run_clipping_experiment(theta, lr: float = DEFAULT_LR, num_epochs: int = NUM_EPOCHS, seed: int = 0,
                            method: str = "norm", corpus: Corpus | None = None,
                            device: torch.device | str = "cpu") -> ClippingResult:
    """Train the notebook-06 model once and return what happened as a `ClippingResult`.

    `method="norm"` clips the global gradient norm at `theta` with `d2lmini.train.train`
    (`theta` None or "off": no clipping); `method="value"` clips every gradient entry
    to [-theta, theta]. A run is "diverged" on the same verdict on every CPU path: a loss
    above `divergence_limit`, a non-finite gradient or optimizer state, or a final model
    that is non-finite or past the limit. Never raises because training went wrong.
    """
    theta = parse_theta(theta)
    validate_value(TRAIN_SETTINGS["clip_mode"], method)
    if method == "value" and theta is None:
        raise ValueError(_("per-element clipping needs a clip value"))
    corpus = corpus or _bundled()
    train_indices, valid_indices = corpus.split()
    config = clipping_config(theta, lr, num_epochs, seed, clip_mode=method)
    model = make_model("scratch", len(corpus.vocab), config, device)
    diverged = None
    try:
        history = train(model, train_indices, valid_indices, config)
    except TrainingDiverged as error:
        history, diverged = error.history, error
    result = ClippingResult(method, theta, lr, seed, len(corpus.vocab), steps=len(history.step_loss),
                            step_grad_norm=list(history.step_grad_norm), step_loss=list(history.step_loss),
                            clipped_steps=history.clipped_steps, step_cosine=list(history.step_clip_cosine))
    if diverged is not None:
        result.status, result.message = "diverged", str(diverged)
        return result
    result.train_perplexity = history.train_perplexity[-1]
    result.valid_perplexity = history.valid_perplexity[-1]
    verdict = judge_perplexity(result.valid_perplexity, text_baselines(*corpus.split_text()))
    result.status = verdict.status
    result.message = describe_result(result, verdict.text)
    return result


def result_label(result: ClippingResult) -> str:
    """Return a short legend label such as "θ = 1", "no clipping" or "per element, c = 0.01"."""
    if result.theta is None:
        return _("no clipping")
    if result.method == "value":
        # TRANSLATORS: a legend label: every gradient entry clipped to [-c, c].
        return _("per element, c = {c:g}").format(c=result.theta)
    return f"θ = {result.theta:g}"


def describe_result(result: ClippingResult, verdict: str = "") -> str:
    """Return a one-paragraph plain-text summary of a finished (not diverged) run and its `verdict`."""
    steps, clipped = result.steps, result.clipped_steps
    # TRANSLATORS: {label} is the run's clipping ("θ = 1", "no clipping"); {share} a percentage.
    what = _("{label}, learning rate {lr:g}: {clipped} of {steps} steps clipped ({share:.1f} %), largest "
             "gradient norm {largest:.3g}.").format(label=result_label(result), lr=result.lr, clipped=clipped,
                                                    steps=steps, share=100 * clipped / max(steps, 1),
                                                    largest=max(result.step_grad_norm, default=0))
    ppl = _("Final perplexity: training {train:.3g}, validation {valid:.3g}.").format(
        train=result.train_perplexity, valid=result.valid_perplexity)
    if result.status == "exploded":
        # TRANSLATORS: {what} and {ppl} are the two sentences before ("θ = 1, learning rate 2.5: ...",
        # "Final perplexity: ..."); {vocab} is the number of characters.
        return _("{what} {ppl} The loss exploded: that is worse than guessing uniformly among {vocab} "
                 "characters (perplexity {vocab}). Clip the gradients or lower the learning rate.").format(
            what=what, ppl=ppl, vocab=result.vocab_size)
    if result.status == "weak":
        # TRANSLATORS: {verdict} says how the validation perplexity compares with the baselines
        # ("perplexity 9.1: better than guessing, but worse than the unigram (8.2)").
        return _("{what} {ppl} Validation {verdict}: the model learned less than the text's letter "
                 "counts.").format(what=what, ppl=ppl, verdict=verdict)
    # TRANSLATORS: two sentences, one after the other (Chinese needs no space between them).
    return _("{first} {second}").format(first=what, second=ppl)


# Runs drawn together differ by line style too, not only by colour (greyscale, colour blindness).
RUN_STYLES = ("-", (0, (5, 2)), (0, (1, 1.5)), "-.")


def result_alt(result: ClippingResult) -> str:
    """Return the text alternative of `draw_result`'s figure: what its two panels show, in numbers."""
    if not result.steps:
        return _("No minibatch finished, so nothing is plotted; the message above says why.")
    norms, losses = result.step_grad_norm, result.step_loss
    return _("Two plots over {steps} minibatches, {label}, learning rate {lr:g}. Left, gradient norm "
             "before clipping (log scale): from {first_norm:.3g} to {last_norm:.3g}, largest {largest:.3g}; "
             "{clipped} steps clipped. Right, training loss: from {first_loss:.3g} to {last_loss:.3g} nats, "
             "against {uniform:.3g} for a uniform guess.").format(
        steps=result.steps, label=result_label(result), lr=result.lr, first_norm=norms[0],
        last_norm=norms[-1], largest=max(norms), clipped=result.clipped_steps, first_loss=losses[0],
        last_loss=losses[-1], uniform=math.log(result.vocab_size))


def _run_colour(index: int) -> str:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def losses_alt(results: list[ClippingResult]) -> str:
    """Return the text alternative of `plot_losses` drawn for `results`: each run's loss, first and last."""
    parts = [_("{label}: from {first:.3g} to {last:.3g} nats over {steps} minibatches").format(
        label=result_label(result), first=result.step_loss[0], last=result.step_loss[-1], steps=result.steps)
        if result.steps else _("{label}: no minibatch").format(label=result_label(result))
        for result in results]
    # TRANSLATORS: {runs} lists each run's loss ("θ = 1: from 3.3 to 2.1 nats over 90 minibatches"),
    # separated by "; ".
    return _("Training loss per minibatch, one line style per run, against {uniform:.3g} nats for a uniform "
             "guess. {runs}.").format(uniform=math.log(results[0].vocab_size), runs="; ".join(parts))


def runs_alt(results: list[ClippingResult]) -> str:
    """Return the text alternative of `plot_grad_norms` and `plot_losses` drawn for `results` side by side."""
    parts = []
    for result in results:
        norms, losses = result.step_grad_norm, result.step_loss
        if not result.steps:
            parts.append(_("{label}: no minibatch finished").format(label=result_label(result)))
            continue
        parts.append(_("{label} (learning rate {lr:g}): largest gradient norm {largest:.3g}, {clipped} of "
                       "{steps} steps clipped, loss from {first:.3g} to {last:.3g} nats").format(
            label=result_label(result), lr=result.lr, largest=max(norms), clipped=result.clipped_steps,
            steps=result.steps, first=losses[0], last=losses[-1]))
    # TRANSLATORS: {runs} lists each run ("θ = 1 (learning rate 2.5): largest gradient norm ..."),
    # separated by "; ".
    return _("Gradient norm per minibatch before clipping (log scale) and training loss per minibatch, one "
             "line style per run. {runs}.").format(runs="; ".join(parts))


def plot_grad_norms(ax, results: list[ClippingResult], title: str = GRAD_NORMS_TITLE):
    """Draw each run's gradient-norm trace (log scale), its threshold, and its clipped steps.

    The `title` is shown translated when the catalog knows it (the default does).
    """
    for index, (result, style) in enumerate(zip(results, itertools.cycle(RUN_STYLES))):
        norms = result.step_grad_norm
        (line,) = ax.plot(range(1, len(norms) + 1), norms, linewidth=1, linestyle=style,
                          color=_run_colour(index), label=result_label(result))
        theta = result.theta
        if theta is not None and result.method == "norm":
            ax.axhline(theta, color=line.get_color(), linestyle="--", linewidth=1)
            clipped = [(i, n) for i, n in enumerate(norms, 1) if n > theta]
            if clipped:
                ax.plot(*zip(*clipped, strict=True), "v", color=line.get_color(), markersize=4)
    ax.set_yscale("log")
    ax.set_xlabel(_("minibatch"))
    ax.set_ylabel("‖g‖")
    ax.set_title(_(title))
    ax.legend(loc="upper right", fontsize=8)


def plot_losses(ax, results: list[ClippingResult], title: str = LOSSES_TITLE):
    """Draw each run's loss per minibatch, with the loss of a uniform guess as a dotted line.

    The `title` is shown translated when the catalog knows it (the default does).
    """
    for index, (result, style) in enumerate(zip(results, itertools.cycle(RUN_STYLES))):
        ax.plot(range(1, len(result.step_loss) + 1), result.step_loss, linewidth=1, linestyle=style,
                color=_run_colour(index), label=result_label(result))
    uniform = math.log(results[0].vocab_size)
    ax.axhline(uniform, color=REFERENCE_LINE_COLOUR, linestyle=":", linewidth=1)
    ax.annotate(_("uniform guess {loss:.3g}").format(loss=uniform), (1, uniform),
                xycoords=("axes fraction", "data"), ha="right", va="bottom", fontsize=9,
                color=MUTED_TEXT_COLOUR)
    ax.set_ylim(0, 3 * uniform)
    ax.set_xlabel(_("minibatch"))
    ax.set_ylabel(_("cross-entropy (nats)"))
    ax.set_title(_(title))
    ax.legend(loc="upper right", fontsize=8)


def draw_result(result: ClippingResult):
    """Return a figure with the gradient-norm trace and the loss curve of one run."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    if result.steps:
        plot_grad_norms(left, [result])
        plot_losses(right, [result])
    else:
        for ax in (left, right):
            ax.axis("off")
        left.text(0, 0.5, _("No minibatch finished: see the message above."), fontsize=11)
    figure.tight_layout()
    plt.close(figure)
    return figure


def readout_label(slider: widgets.SelectionSlider) -> widgets.Label:
    """Return a Label that shows `slider`'s value (its label) and follows it (notebook 06's θ and rate).

    The panel's SelectionSliders hide their own readout: ipywidgets 8 makes it editable, yet
    ignores what is typed into it, so a student could type a θ that nothing used.
    The label cannot be typed into; the slider is the one way to choose.
    """
    label = widgets.Label(value=slider.label, layout=widgets.Layout(width="3.5em"))
    slider.observe(lambda change: setattr(label, "value", change["new"]), names="label")
    return label


class ClippingPanel:
    """Sliders for θ (with "off"), the learning rate and the seed; each change retrains and redraws.

    `panel.widget` is what the notebook shows; `panel.result` is the latest
    `run_clipping_experiment` result and `panel.status.value` the message shown above the plot.
    The sliders' values are shown by `readouts` (labels that cannot be typed into).
    """

    def __init__(self, corpus: Corpus | None = None, device: torch.device | str = "cpu",
                 num_epochs: int = NUM_EPOCHS):
        self.corpus, self.device, self.num_epochs = corpus, device, num_epochs
        style = {"description_width": "initial"}
        # THETA_CHOICES with "off" in the language d2lmini speaks now (`parse_theta` reads either).
        theta_choices = tuple(menu_options(TRAIN_SETTINGS["theta"], None)[0])
        self.theta = widgets.SelectionSlider(options=theta_choices, value="1", continuous_update=False,
                                             readout=False, description=TRAIN_SETTINGS["theta"].shown_label(),
                                             style=style)
        self.lr = widgets.SelectionSlider(options=LR_CHOICES, value=DEFAULT_LR, continuous_update=False,
                                          readout=False, description=TRAIN_SETTINGS["lr"].shown_label(),
                                          style=style)
        self.readouts = (readout_label(self.theta), readout_label(self.lr))
        self.seed = widgets.Dropdown(options=SEED_CHOICES, value=0, description=_("seed"),
                                     layout=widgets.Layout(width="140px"))
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.access = Access()
        # TRANSLATORS: accessible names; each must contain its control's label ({label}, "seed").
        self.access.follow(self.theta, _("{label}: clipping threshold, or off").format(
            label=self.theta.description))
        self.access.follow(self.lr, _("{label} of plain SGD").format(label=self.lr.description))
        self.access.name(self.seed, _("seed of the initial weights and minibatch order"))
        self.access.announce(self.status)
        self.result: ClippingResult | None = None
        for control in (self.theta, self.lr, self.seed):
            control.observe(lambda change: self.update(), names="value")
        sliders = widgets.HBox([self.theta, self.readouts[0], self.lr, self.readouts[1], self.seed])
        self.widget = PanelBox([panel_summary(_(SUMMARY)), sliders, self.status, self.image,
                                self.access.widget])

    def update(self) -> ClippingResult:
        """Retrain with the current slider values, redraw, and return the result."""
        self.status.value = "<i>" + _("training…") + "</i>"
        with controls_disabled((self.theta, self.lr, self.seed)):
            self.result = run_clipping_experiment(self.theta.value, self.lr.value, self.num_epochs,
                                                  self.seed.value, corpus=self.corpus, device=self.device)
        colour = VERDICT_COLOURS[self.result.status]
        status = _(STATUS_WORDS.get(self.result.status, self.result.status))
        self.status.value = (f"<span style='color:{colour}'><b>{status}</b></span>: "
                             f"{html.escape(self.result.message)}")
        show_png(self.image, figure_png(draw_result(self.result)))
        self.access.describe(self.image, result_alt(self.result))
        return self.result


def make_clipping_panel(corpus: Corpus | None = None, device: torch.device | str = "cpu",
                        num_epochs: int = NUM_EPOCHS) -> ClippingPanel:
    """Return a `ClippingPanel` that has already trained once with the default settings."""
    panel = ClippingPanel(corpus, device, num_epochs)
    panel.update()
    return panel
