"""The warm-up panel of notebook 00: how a slider changes a softmax (temperature)."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from d2lmini.i18n import N_, _
from d2lmini.palette import SERIES_COLOURS
from d2lmini.plot import figure_html, figure_png
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

EXAMPLE_SCORES = {"e": 2.0, "a": 1.0, "o": 0.5, "z": -1.0}
SUMMARY = N_("Softmax with a temperature: move the temperature slider and the bar chart shows how the "
           "probabilities of four characters sharpen (below 1) or flatten (above 1).")


def softmax_with_temperature(scores: dict[str, float], temperature: float) -> dict[str, float]:
    """Return softmax(score / temperature) for each key of `scores`; temperature must be > 0."""
    if not temperature > 0:
        raise ValueError(_("temperature must be positive, not {temperature}").format(temperature=temperature))
    probs = torch.softmax(torch.tensor(list(scores.values()), dtype=torch.float64) / temperature, 0)
    return dict(zip(scores, probs.tolist(), strict=True))


class TemperaturePanel:
    """A temperature slider over a bar chart of the probabilities it gives (notebook 00).

    `panel.widget` is what the notebook displays, `panel.slider` the control and
    `panel.shown` the probabilities currently drawn (tests set the slider and read it).
    """

    def __init__(self, scores: dict[str, float] = EXAMPLE_SCORES):
        self.scores = scores
        self.slider = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                             description=_("temperature"), continuous_update=False,
                                             style={"description_width": "initial"},  # the label in full
                                             layout=widgets.Layout(width="420px"))
        self.access = Access()
        # TRANSLATORS: the slider's accessible name; it must contain the slider's label, "temperature".
        self.access.follow(self.slider, _("temperature: divides every score before the softmax"),
                           lambda value: f"{value:.2f}")
        # An <img alt> whose text says every probability, in a live region: a screen reader reads it.
        self.chart = self.access.announce(widgets.HTML())
        self.shown: dict[str, float] = {}
        self.widget = PanelBox([panel_summary(_(SUMMARY)), self.slider, self.chart, self.access.widget])
        self.slider.observe(lambda change: self.update(), names="value")
        self.update()

    def update(self) -> dict[str, float]:
        """Recompute the probabilities for the slider's temperature, redraw the bars, return them.

        The slider is disabled meanwhile.
        """
        with controls_disabled((self.slider,)):
            self.shown = softmax_with_temperature(self.scores, self.slider.value)
            figure = bars_figure(self.shown, self.slider.value)
            alt = bars_alt(self.shown, self.slider.value)
            self.chart.value = figure_html(figure_png(figure, dpi=100), alt)
        return self.shown


def bars_figure(probs: dict[str, float], temperature: float):
    """Return the panel's bar chart: one bar per character, its probability written above it."""
    figure, ax = plt.subplots(figsize=(4, 2.2))
    bars = ax.bar(list(probs), list(probs.values()), color=SERIES_COLOURS[0])
    ax.bar_label(bars, labels=[f"{p:.0%}" for p in probs.values()], fontsize=8)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel(_("probability"))
    ax.set_title(_("temperature {temperature:.2f}").format(temperature=temperature))
    return figure


def bars_alt(probs: dict[str, float], temperature: float) -> str:
    """Return the text alternative of the panel's bar chart: each character's probability."""
    listed = ", ".join(f"'{char}' {p:.0%}" for char, p in probs.items())
    # TRANSLATORS: {listed} is each character with its probability: 'e' 64%, 'a' 24%, ...
    return _("Bar chart of the softmax at temperature {temperature:.2f}: {listed}.").format(
        temperature=temperature, listed=listed)


def make_temperature_panel(scores: dict[str, float] = EXAMPLE_SCORES) -> TemperaturePanel:
    """Return notebook 00's temperature panel, already drawn; display its `.widget`."""
    return TemperaturePanel(scores)
