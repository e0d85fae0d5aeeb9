"""The memory scrubber side by side: one slider along one text, the RNN, GRU and LSTM at once (notebook 09).

`side_by_side_views` computes what the panel shows (one `MemoryView` per model, from
`d2lmini.widgets.memory`), `side_by_side_summary` and `side_by_side_alt` put it in words, and
`SideBySidePanel` draws the models' bars one above the other under a position slider. A model whose
training diverged (NaN or infinity) or whose prediction no character sways (an all-zero model) is said
to be so in its line and its chart; the others are drawn as usual.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt

from d2lmini.i18n import N_, _
from d2lmini.plot import figure_png, show_png
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.memory import MemoryView, diverged, draw_memory, memory_view, unswayed
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("Memory, model by model: move the position slider; one bar chart per model shows how strongly "
           "each earlier character sways its prediction at that position.")


def side_by_side_views(models: dict, text: str, vocab, position: int,
                       max_lag: int = 20) -> dict[str, MemoryView]:
    """Return each model's `MemoryView` of `text` at `position`, by name (models: name -> trained model)."""
    if not models:
        raise ValueError(_("models must name at least one trained model"))
    return {name: memory_view(model, text, vocab, position, max_lag) for name, model in models.items()}


def model_line(name: str, view: MemoryView) -> str:
    """Return the summary's sentence for one model: the influence at the longest lag shown as a share of
    lag 1's, or what stands in for it (a diverged model, no influence at all, none at lag 1)."""
    lag = len(view.influence)
    if diverged(view):
        return _("{name}: its weights hold NaN or infinity (its training diverged), so there is nothing to "
                 "show").format(name=name)
    if unswayed(view):
        return _("{name}: P = {probability:.2f}; no earlier character sways it (every influence is "
                 "0)").format(name=name, probability=view.probability)
    if view.influence[0] == 0:
        return _("{name}: P = {probability:.2f}; 1 back does not sway it, {lag} back sways it "
                 "{last:.1e}").format(name=name, probability=view.probability, lag=lag,
                                      last=view.influence[-1])
    # TRANSLATORS: one model's line: {name} is the model ("GRU"), P the probability of the character
    # predicted; the character {lag} places back sways the prediction {ratio} times as much as the one
    # 1 place back.
    return _("{name}: P = {probability:.2f}; {lag} back sways it {ratio:.1e} times as much as 1 "
             "back").format(name=name, probability=view.probability, lag=lag,
                            ratio=view.influence[-1] / view.influence[0])


def side_by_side_summary(views: dict[str, MemoryView]) -> str:
    """Return one sentence per model (`model_line`), as HTML lines."""
    # "<br> ", not "<br>": the live region is announced as its textContent, where "1 back<br>GRU" read
    # "1 backGRU".
    return "<br> ".join(model_line(name, view) for name, view in views.items())


def model_alt(name: str, view: MemoryView) -> str:
    """Return one model's part of the text alternative: its strongest lag and the first and last bars."""
    if diverged(view):
        return _("{name}: no bars (its weights hold NaN or infinity)").format(name=name)
    if unswayed(view):
        return _("{name}: every bar 0").format(name=name)
    return _("{name}: strongest {peak} back, lag 1 {first:.2g}, lag {lags} {last:.2g}").format(
        name=name, peak=view.peak_lag, first=view.influence[0], lags=len(view.influence),
        last=view.influence[-1])


def side_by_side_alt(views: dict[str, MemoryView]) -> str:
    """Return the text alternative of the stacked bar charts of `views`."""
    first = next(iter(views.values()))
    parts = [model_alt(name, view) for name, view in views.items()]
    # TRANSLATORS: {models} lists each model's bars ("RNN: strongest 1 back, ..."), separated by "; ".
    return _("Bar charts, one per model, of how strongly each of the {lags} characters before position "
             "{position} sways the prediction of {target}: {models}.").format(
        lags=len(first.influence), position=first.position, target=repr(first.target),
        models="; ".join(parts))


class SideBySidePanel:
    """A position slider over the influence bars of several models trained on the same text.

    `panel.widget` is what the notebook displays; `panel.position` is the control; `panel.views`
    holds the latest views by model name (tests set the slider and read them).
    """

    def __init__(self, models: dict, text: str, vocab, position: int | None = None, max_lag: int = 20):
        if len(text) <= max_lag:
            raise ValueError(_("text needs more than max_lag = {max_lag} characters").format(max_lag=max_lag))
        self.models, self.text, self.vocab, self.max_lag = models, text, vocab, max_lag
        self.position = widgets.IntSlider(value=max_lag if position is None else position, min=max_lag,
                                          max=len(text) - 1, description=_("position"),
                                          continuous_update=False)
        self.status, self.image, self.access = widgets.HTML(), widgets.Image(format="png"), Access()
        self.access.name(self.position, _("position: the character whose prediction every model explains"))
        self.access.announce(self.status)
        self.views: dict[str, MemoryView] = {}
        self.widget = PanelBox([panel_summary(_(SUMMARY)), self.position, self.status, self.image,
                                self.access.widget])
        self.position.observe(lambda change: self.update(), names="value")
        self.update()

    def update(self) -> dict[str, MemoryView]:
        """Recompute every model's view at the slider's position, redraw, return the views."""
        with controls_disabled((self.position,)):
            self.views = side_by_side_views(self.models, self.text, self.vocab, self.position.value,
                                            self.max_lag)
            self.status.value = side_by_side_summary(self.views)
            figure, axes = plt.subplots(len(self.views), 1, figsize=(9, 2.4 * len(self.views)), squeeze=False)
            for ax, (name, view) in zip(axes[:, 0], self.views.items(), strict=True):
                draw_memory(ax, view)
                ax.set_title(name, loc="left", fontsize=10)
            figure.tight_layout()
            show_png(self.image, figure_png(figure))
            self.access.describe(self.image, side_by_side_alt(self.views))
        return self.views


def make_side_by_side_panel(models: dict, text: str, vocab, position: int | None = None,
                            max_lag: int = 20) -> SideBySidePanel:
    """Return notebook 09's side-by-side memory scrubber over `models` (name -> trained model), drawn."""
    return SideBySidePanel(models, text, vocab, position, max_lag)
