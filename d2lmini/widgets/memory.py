"""A scrubber of memory: how strongly each earlier character sways a model's next prediction (notebook 05).

For a position p of a text, the model has read the characters before p and predicts the one
at p. `influence_by_lag` returns, for each lag j = 1, 2, ..., the norm of the gradient of
log P(x_p | x_<p) with respect to the one-hot input x_{p-j}: how much the prediction would
move if the character j places back were different. It is the `dX_t` of notebook 05's one-step
backward, carried back through the trained model's own Jacobians, so it shows vanishing
gradients on a model the student trained. `memory_view` computes what the panel shows and
`MemoryPanel` puts it under a slider along the text.
"""

import math
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from d2lmini.i18n import N_, _
from d2lmini.one_hot_steps import one_hot_cell, states_along
from d2lmini.palette import HIGHLIGHT_COLOUR, SERIES_COLOURS
from d2lmini.plot import figure_png, show_png
from d2lmini.settings import Setting, validate_value
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("What a trained model remembers: pick a model and move the position slider; bars show how "
           "strongly each earlier character sways the prediction at that position.")

# A position in a text: the index of the character predicted (its range is checked per text).
POSITION = Setting("position", N_("position"), N_("index of the character predicted"), int, low=0)


def validate_positions(indices: torch.Tensor, positions: list[int], max_lag: int) -> list[int]:
    """Return `positions` as plain ints (numpy's too, by the settings' one validation); raise ValueError
    unless every position p has max_lag characters before it and one at it."""
    if not (isinstance(max_lag, int) and max_lag >= 1):
        raise ValueError(_("max_lag must be a whole number of characters >= 1, not {max_lag}").format(
            max_lag=repr(max_lag)))
    plain = []
    for p in positions:
        try:
            plain.append(validate_value(POSITION, p))
        except (TypeError, ValueError):
            plain.append(None)
        if plain[-1] is None or not max_lag <= plain[-1] < len(indices):
            raise ValueError(_("position {position} must be a whole number from max_lag = {max_lag} to "
                               "{last} (the last character of the text)").format(
                position=repr(p), max_lag=max_lag, last=len(indices) - 1))
    return plain


def influence_by_lag(model, indices: torch.Tensor, positions: list[int], max_lag: int) -> torch.Tensor:
    """Return ||d log P(x_p | x_<p) / d onehot(x_{p-j})|| for each position p and lag j = 1..max_lag.

    `indices`: the text as token indices (1-D). The model reads the text from its start with a
    zero state; the gradient is taken through the last `max_lag` characters before each p (what
    came earlier enters as a fixed state). Returns a CPU float tensor (len(positions), max_lag),
    column j - 1 for lag j (notebook 05).
    """
    validate_positions(indices, positions, max_lag)
    cell = one_hot_cell(model)
    text = indices.to(cell.device)
    # The state after each character before the last window, without gradients; row i is
    # the state after reading character i.
    before = states_along(cell, text[: max(positions) - max_lag])
    zero = cell.zero_state()[0]
    states = torch.stack([before[p - max_lag - 1] if p > max_lag else zero for p in positions])
    windows = torch.stack([text[p - max_lag : p] for p in positions])  # (positions, max_lag)
    one_hot = F.one_hot(windows, cell.vocab_size).to(cell.dtype).requires_grad_(True)
    with torch.enable_grad():
        H = states
        for t in range(max_lag):
            H = cell.step(one_hot[:, t], H)
        log_probs = torch.log_softmax(cell.readout(H), dim=1)
        targets = text[torch.tensor(positions, device=cell.device)]
        chosen = log_probs[torch.arange(len(positions), device=cell.device), targets]
        (grad,) = torch.autograd.grad(chosen.sum(), one_hot)
    return torch.linalg.vector_norm(grad, dim=2).flip(1).cpu()


def peak_lags(influence: torch.Tensor) -> list[int]:
    """Return, for each row of `influence_by_lag`'s result, the lag j (from 1) with the largest influence."""
    return [int(j) + 1 for j in influence.argmax(dim=1)]


def share_peaking_at(influence: torch.Tensor, lag: int) -> float:
    """Return the share of the rows of `influence_by_lag`'s result whose largest influence is at `lag`."""
    peaks = peak_lags(influence)
    return sum(peak == lag for peak in peaks) / len(peaks)


@dataclass
class MemoryView:
    """What the memory panel of notebook 05 shows for one position of one text: the characters
    read before it (oldest first, `context[-j]` at lag j), the character predicted and its
    probability, the influence of lags 1..max_lag (index j - 1), the peak lag and one sentence."""

    position: int
    context: list[str]
    target: str
    probability: float
    influence: list[float]
    peak_lag: int
    summary: str


def diverged(view: MemoryView) -> bool:
    """Whether `view` holds NaN or infinity: the model's weights do (its training diverged)."""
    return not (math.isfinite(view.probability) and all(math.isfinite(v) for v in view.influence))


def unswayed(view: MemoryView) -> bool:
    """Whether no earlier character sways the prediction of `view` at all (every influence exactly 0, as
    for a model whose weights are all zero): there is no strongest character to name."""
    return not diverged(view) and not any(view.influence)


def next_probability(model, indices: torch.Tensor, position: int) -> float:
    """Return the model's P(x_position | x_<position), reading the text from its start with a zero state."""
    cell = one_hot_cell(model)
    text = indices.to(cell.device)
    state = states_along(cell, text[:position])[-1:] if position > 0 else cell.zero_state()
    return float(torch.softmax(cell.readout(state), dim=1)[0, text[position]])


def memory_view(model, text: str, vocab, position: int, max_lag: int = 20) -> MemoryView:
    """Return the `MemoryView` of `text` at `position`, the index of the character predicted (notebook 05)."""
    indices = torch.tensor(vocab.indices(text), dtype=torch.long)
    (position,) = validate_positions(indices, [position], max_lag)
    influence = influence_by_lag(model, indices, [position], max_lag)[0]
    peak = peak_lags(influence[None])[0]
    probability = next_probability(model, indices, position)
    shown = text[position - peak].replace(" ", "␣")
    # TRANSLATORS: {target} and {shown} are characters, quoted; {peak} how many places back the one that
    # sways the prediction most is; "lag j" is the character j places back.
    summary = _("Predicting {target} at position {position} (P = {probability:.2f}): the character that "
                "sways it most is {shown}, {peak} back; lag 1 has {first:.2g}, lag {max_lag} "
                "{last:.2g}.").format(
        target=repr(text[position]), position=position, probability=probability, shown=repr(shown),
        peak=peak, first=float(influence[0]), max_lag=max_lag, last=float(influence[-1]))
    view = MemoryView(position, list(text[position - max_lag : position]), text[position], probability,
                      [float(v) for v in influence], peak, summary)
    if diverged(view):
        view.summary = _("The model's weights hold NaN or infinity (its training diverged), so it predicts "
                         "nothing here: train it again with a smaller learning rate, or with clipping.")
    elif unswayed(view):
        # TRANSLATORS: {target} is a character, quoted; "lag j" is the character j places back.
        view.summary = _("Predicting {target} at position {position} (P = {probability:.2f}): no character "
                         "before it sways the prediction at all (every lag has 0), so the model uses no "
                         "memory here, as when its weights are all zero.").format(
            target=repr(text[position]), position=position, probability=probability)
    return view


def draw_memory(ax, view: MemoryView) -> None:
    """Draw `view`: a bar per earlier character (its height = its influence), the characters under it.

    Every bar has one dark colour (4.5:1 on white, WCAG 1.4.11): a colour map by height was palest,
    1.3:1, where the bars were tallest, and said nothing the height does not.

    A diverged model's view (NaN or infinity) draws no bars, only a sentence saying why; one where no
    character sways the prediction draws its bars at 0 with no strongest one marked.
    """
    ax.clear()
    if diverged(view):
        ax.set_axis_off()
        ax.text(0.5, 0.5, _("No bars: the model's weights hold NaN or infinity (its training diverged)."),
                ha="center", va="center", transform=ax.transAxes, fontsize=10)
        return
    lags = len(view.influence)
    xs = list(range(-lags, 0))  # x = -j for lag j
    heights = view.influence[::-1]  # oldest first, as the text reads
    top = max(heights) if any(heights) else 1.0
    ax.bar(xs, heights, color=SERIES_COLOURS[0], width=0.85)
    if unswayed(view):
        ax.text(-lags / 2, 0.5, _("every bar is 0: no earlier character sways this prediction"),
                ha="center", va="center", fontsize=10)
    else:
        ax.bar([-view.peak_lag], [view.influence[view.peak_lag - 1]], width=0.85, fill=False,
               edgecolor=HIGHLIGHT_COLOUR, linewidth=2,
               label=_("strongest: {peak} back").format(peak=view.peak_lag))
    for x, char in zip(xs, view.context, strict=True):
        ax.text(x, -0.06 * top, char.replace(" ", "␣"), ha="center", va="top", fontsize=11,
                family="monospace")
    ax.text(0, -0.06 * top, view.target.replace(" ", "␣"), ha="center", va="top", fontsize=11,
            family="monospace", color=HIGHLIGHT_COLOUR, fontweight="bold")
    ax.set_xlim(-lags - 0.6, 0.6)
    ax.set_ylim(-0.16 * top, 1.12 * top)
    ax.set_xticks(xs[::-1][::5] if lags > 10 else xs)
    ax.set_xticklabels([str(-x) for x in (xs[::-1][::5] if lags > 10 else xs)])
    ax.set_xlabel(_("characters back (the bold character at 0 is the one predicted)"))
    ax.set_ylabel(r"$\|\partial \log P / \partial x_{p-j}\|$")
    if not unswayed(view):
        ax.legend(loc="upper left", fontsize=8)
    ax.set_title(_("what sways the prediction of {target} (probability {probability:.2f})").format(
        target=repr(view.target), probability=view.probability), fontsize=10)


def memory_alt(view: MemoryView) -> str:
    """Return the text alternative of the memory panel's bar chart for `view` (notebook 05)."""
    if diverged(view):
        return _("No bar chart: the model's weights hold NaN or infinity (its training diverged), so nothing "
                 "can be measured at position {position}.").format(position=view.position)
    if unswayed(view):
        return _("Bar chart of the {lags} characters before position {position}: every bar is 0, no "
                 "character sways the prediction of {target} (probability {probability:.2f}).").format(
            lags=len(view.influence), position=view.position, target=repr(view.target),
            probability=view.probability)
    strongest = sorted(range(len(view.influence)), key=lambda j: -view.influence[j])[:3]
    # TRANSLATORS: one bar: the character {lag} places back (quoted) and its influence.
    bars = "; ".join(_("{lag} back ({char}): {influence:.2g}").format(
        lag=j + 1, char=repr(view.context[-(j + 1)]), influence=view.influence[j]) for j in strongest)
    # TRANSLATORS: {bars} lists the three strongest bars ("1 back ('e'): 0.31; ..."), separated by "; ".
    return _("Bar chart of how strongly each of the {lags} characters before position {position} sways the "
             "prediction of {target} (probability {probability:.2f}); strongest: {bars}.").format(
        lags=len(view.influence), position=view.position, target=repr(view.target),
        probability=view.probability, bars=bars)


class MemoryPanel:
    """A slider along a text over the influence bars of `memory_view`, for one or more trained models.

    `sources` maps a name to (model, text, vocab). `panel.widget` is what the notebook displays;
    `panel.source` (a menu) and `panel.position` (a slider) are the controls; `panel.view` is the
    latest `MemoryView` (tests set the controls and read it); `panel.status` shows its summary.
    """

    def __init__(self, sources: dict, position: int | None = None, max_lag: int = 20):
        if not sources:
            raise ValueError(_("give at least one (model, text, vocab) to show"))
        for name, (_model, text, _vocab) in sources.items():
            if len(text) <= max_lag:
                raise ValueError(_("the text of {name} needs more than max_lag = {max_lag} "
                                   "characters").format(name=repr(name), max_lag=max_lag))
        self.sources, self.max_lag = sources, max_lag
        self.source = widgets.Dropdown(options=list(sources), description=_("model"))
        text = sources[self.source.value][1]
        self.position = widgets.IntSlider(value=max_lag if position is None else position, min=max_lag,
                                          max=len(text) - 1, description=_("position"),
                                          continuous_update=False)
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.access = Access()
        # TRANSLATORS: accessible names; each must contain its control's label (model, position).
        self.access.name(self.source, _("model: the trained model whose memory is shown"))
        self.access.name(self.position, _("position: the character whose prediction is explained"))
        self.access.announce(self.status)
        self.view: MemoryView | None = None
        self.controls = (self.source, self.position)
        self.widget = PanelBox([panel_summary(_(SUMMARY)), widgets.HBox([self.source, self.position]),
                                self.status, self.image, self.access.widget])
        self.source.observe(lambda change: self.switch_source(), names="value")
        self.position.observe(lambda change: self.update(), names="value")
        self.update()

    def switch_source(self) -> MemoryView:
        """Fit the slider to the chosen text (keeping the position where it fits) and redraw."""
        text = self.sources[self.source.value][1]
        with self.position.hold_trait_notifications():
            self.position.max = len(text) - 1
        return self.update()

    def update(self) -> MemoryView:
        """Recompute the view for the current controls, redraw, return it.

        Only the position slider is disabled meanwhile: a disabled menu drops the keyboard's focus
        to the page, and a new choice simply redraws again.
        """
        with controls_disabled((self.position,)):
            model, text, vocab = self.sources[self.source.value]
            self.view = memory_view(model, text, vocab, self.position.value, self.max_lag)
            self.status.value = self.view.summary
            figure, ax = plt.subplots(figsize=(9, 2.8))
            draw_memory(ax, self.view)
            show_png(self.image, figure_png(figure))
            self.access.describe(self.image, memory_alt(self.view))
        return self.view


def make_memory_panel(sources: dict, position: int | None = None, max_lag: int = 20) -> MemoryPanel:
    """Return notebook 05's memory scrubber over `sources` (name -> (model, text, vocab)), drawn.

    Display its `.widget`.
    """
    return MemoryPanel(sources, position, max_lag)
