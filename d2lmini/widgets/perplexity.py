"""The confidence panel of notebook 07: how sharpening or flattening probabilities moves perplexity."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from d2lmini.i18n import N_, _
from d2lmini.plot import figure_html, figure_png
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("Temperature and perplexity: move the temperature slider to make the model's probabilities "
           "sharper or flatter; the text and the curve show the perplexity at that temperature.")

TEMPERATURES = np.geomspace(0.1, 10, 61)


def bigram_log_probs(train_ids: torch.Tensor, size: int) -> torch.Tensor:
    """Return the (size, size) table log p(b | a) of an add-one bigram of `train_ids` (notebook 07)."""
    counts = torch.ones(size, size, dtype=torch.float64)
    pairs = train_ids[:-1].long() * size + train_ids[1:].long()
    counts.view(-1).index_add_(0, pairs, torch.ones(len(pairs), dtype=torch.float64))
    return (counts / counts.sum(dim=1, keepdim=True)).log()


def tempered_perplexity(log_probs: torch.Tensor, targets: torch.Tensor, temperature: float) -> float:
    """Return the perplexity of softmax(log_probs / temperature) (n, |V|) on `targets` (n,) (notebook 07).

    Temperature 1 is the model itself; below 1 it is more confident, above 1 less.
    """
    if not temperature > 0:
        raise ValueError(_("temperature must be positive, not {temperature}").format(temperature=temperature))
    return float(torch.exp(F.cross_entropy(log_probs / temperature, targets)))


def perplexity_curve(log_probs: torch.Tensor, targets: torch.Tensor,
                     temperatures=TEMPERATURES) -> list[tuple[float, float]]:
    """Return (temperature, perplexity) for each of `temperatures` (notebook 07)."""
    return [(float(t), tempered_perplexity(log_probs, targets, float(t))) for t in temperatures]


class ConfidencePanel:
    """A temperature slider over the perplexity curve of a model's tempered probabilities (notebook 07).

    `panel.widget` is what the notebook displays, `panel.slider` the control, and
    `panel.shown` the (temperature, perplexity) currently marked (tests set the slider and read it).
    """

    def __init__(self, log_probs: torch.Tensor, targets: torch.Tensor):
        self.log_probs, self.targets = log_probs, targets
        self.curve = perplexity_curve(log_probs, targets)
        self.slider = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                             description=_("temperature"), continuous_update=False,
                                             style={"description_width": "initial"},
                                             layout=widgets.Layout(width="420px"))
        self.readout = widgets.HTML()
        self.chart = widgets.HTML()  # an <img alt> that says what the curve shows
        self.access = Access()
        # TRANSLATORS: the slider's accessible name; it must contain the slider's label, "temperature".
        self.access.follow(self.slider, _("temperature: divides the model's log-probabilities"),
                           lambda value: f"{value:.2f}")
        self.access.announce(self.readout)
        self.shown: tuple[float, float] = (1.0, self.curve_at_one())
        self.widget = PanelBox([panel_summary(_(SUMMARY)), self.slider, self.readout, self.chart,
                                self.access.widget])
        self.slider.observe(lambda change: self.update(), names="value")
        self.update()

    def curve_at_one(self) -> float:
        """Return the perplexity of the model itself (temperature 1)."""
        return tempered_perplexity(self.log_probs, self.targets, 1.0)

    def update(self) -> tuple[float, float]:
        """Recompute the perplexity at the slider's temperature, redraw; return (temperature, perplexity)."""
        with controls_disabled((self.slider,)):
            temperature = float(self.slider.value)
            self.shown = (temperature, tempered_perplexity(self.log_probs, self.targets, temperature))
            best_t, best_ppl = min(self.curve, key=lambda point: point[1])
            self.readout.value = _("temperature {temperature:.2f}: perplexity {perplexity:.2f} (the model "
                                   "itself, temperature 1: {itself:.2f}; lowest {lowest:.2f} at temperature "
                                   "{best:.2f})").format(temperature=temperature, perplexity=self.shown[1],
                                                         itself=self.curve_at_one(), lowest=best_ppl,
                                                         best=best_t)
            self.chart.value = figure_html(figure_png(self.draw(), dpi=100), self.alt())
        return self.shown

    def alt(self) -> str:
        """Return the text alternative of the chart: the curve's ends, its lowest point and the marked one."""
        (t0, p0), (t1, p1) = self.curve[0], self.curve[-1]
        best_t, best_ppl = min(self.curve, key=lambda point: point[1])
        return _("Log-log plot of perplexity against temperature from {t0:g} ({p0:.3g}) to {t1:g} "
                 "({p1:.3g}), lowest {lowest:.3g} at temperature {best:.2f}; marked: temperature "
                 "{temperature:.2f}, perplexity {perplexity:.3g}.").format(
            t0=t0, p0=p0, t1=t1, p1=p1, lowest=best_ppl, best=best_t, temperature=self.shown[0],
            perplexity=self.shown[1])

    def draw(self):
        """Return the figure of the perplexity curve with the slider's temperature marked."""
        fig, ax = plt.subplots(figsize=(5.5, 3))
        ts, ppls = zip(*self.curve, strict=True)
        ax.plot(ts, ppls, label=_("perplexity on the validation text"))
        ax.plot(*self.shown, "ko", label=_("temperature {temperature:.2f}").format(temperature=self.shown[0]))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(_("temperature (below 1: more confident; above 1: less)"))
        ax.set_ylabel(_("perplexity"))
        ax.legend()
        return fig


def make_confidence_panel(log_probs: torch.Tensor, targets: torch.Tensor) -> ConfidencePanel:
    """Return notebook 07's confidence panel for `log_probs` (n, |V|) on `targets`; display its `.widget`."""
    return ConfidencePanel(log_probs, targets)
