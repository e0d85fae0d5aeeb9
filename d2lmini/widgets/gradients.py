"""Gradients flowing back through time: the panel of notebook 05.

The notebook's static figures (`draw_bptt_graph`, `draw_reach_curves`) are in
`d2lmini.figures`; `reach_view` computes what the gradient-reach panel shows for one spectral radius and
one truncation length, and `GradientReachPanel` wires it to two sliders.
"""

import math
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt

from d2lmini.figure_checks import DECORATION
from d2lmini.gradcheck import gradient_norms_back_in_time
from d2lmini.i18n import N_, _
from d2lmini.palette import REFERENCE_LINE_COLOUR, SERIES_COLOURS
from d2lmini.plot import figure_png, show_png
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("How far back a gradient reaches: set ρ(W_hh), the truncation and the token inputs; the plot "
           "shows the gradient norm against the steps back, and what truncation drops.")


@dataclass
class ReachView:
    """What the gradient-reach panel of notebook 05 shows: for every k = 0..max_k, the norm
    ||dL/dH_{T-k}||, the reference radius^k and whether truncation keeps it; the share of the
    summed norms truncation drops, and one sentence saying so."""

    k: list[int]
    norms: list[float]
    reference: list[float]
    kept: list[bool]
    dropped_share: float
    summary: str


def reach_view(radius: float, truncation: int, max_k: int = 50, inputs: bool = True) -> ReachView:
    """Return the `ReachView` of the gradient-reach panel for spectral radius `radius` of W_hh (notebook 05).

    Truncated BPTT over `truncation` steps keeps dL/dH_{T-k} only for k < truncation.
    """
    if not radius > 0:
        raise ValueError(_("the spectral radius must be positive, not {radius}").format(radius=radius))
    if not 1 <= truncation <= max_k + 1:
        raise ValueError(_("the truncation length must be between 1 and {most}, not {truncation}").format(
            most=max_k + 1, truncation=truncation))
    norms = gradient_norms_back_in_time(radius, max_k, input_scale=1.0 if inputs else 0.0)
    ks = list(range(max_k + 1))
    kept = [k < truncation for k in ks]
    total = sum(norms)
    dropped = sum(n for n, keep in zip(norms, kept, strict=True) if not keep)
    share = dropped / total if total > 0 else 0.0
    # TRANSLATORS: {change} says how the gradient norm changes going back ("going 50 steps back, ‖dL/dH‖
    # falls 12.3-fold, ..."); {share} is a percentage.
    template = (_("ρ = {radius:.2f} with token inputs: {change}; truncating after {truncation} steps drops "
                  "{share:.1%} of the summed gradient norms.") if inputs else
                _("ρ = {radius:.2f}, no inputs: {change}; truncating after {truncation} steps drops "
                  "{share:.1%} of the summed gradient norms."))
    summary = template.format(radius=radius, change=describe_change(norms), truncation=truncation,
                              share=share)
    return ReachView(ks, norms, [radius**k for k in ks], kept, share, summary)


def describe_change(norms: list[float]) -> str:
    """Return a phrase saying how much ||dL/dH_{T-k}|| changed from k = 0 to the last k, as measured.

    The factor is norms[-1] / norms[0]; "vanishes" / "explodes" are added only beyond a factor
    of 1000, "stays within a factor of 2" only when that is what the numbers show.
    """
    steps, first, last = len(norms) - 1, norms[0], norms[-1]
    if not (first > 0 and last > 0):
        return _("the gradient norm goes from {first:.1e} to {last:.1e} over {steps} steps back").format(
            first=first, last=last, steps=steps)
    ratio = last / first
    # TRANSLATORS: how ‖dL/dH‖ changes (a verb phrase: "‖dL/dH‖ falls 12.3-fold"); {factor} is how many
    # times smaller or larger it ends.
    if 0.5 <= ratio <= 2:
        how = _("stays within a factor of 2 ({factor:.2f}×)").format(factor=ratio)
    elif ratio < 1:
        how = (_("falls {factor:.3g}-fold (it vanishes)") if ratio < 1e-3
               else _("falls {factor:.3g}-fold")).format(factor=1 / ratio)
    else:
        how = (_("grows {factor:.3g}-fold (it explodes)") if ratio > 1e3
               else _("grows {factor:.3g}-fold")).format(factor=ratio)
    # TRANSLATORS: {how} is one of the phrases above ("falls 12.3-fold"); {per_step} the average factor
    # per step back.
    return _("going {steps} steps back, ‖dL/dH‖ {how}, from {first:.2g} to {last:.1e} (×{per_step:.3f} per "
             "step on average)").format(steps=steps, how=how, first=first, last=last,
                                        per_step=ratio ** (1 / steps))


def reach_limits(view: ReachView, margin: float = 10.0) -> tuple[float, float]:
    """Return the y-limits (low, high) that fit every positive curve value of `view` and 1 (notebook 05).

    The panel's log axis follows its curves, `margin` (a factor) beyond the extremes, so no
    spectral radius the slider allows draws a curve off the plot.
    """
    values = [v for v in (*view.norms, *view.reference, 1.0) if 0 < v < math.inf]
    return min(values) / margin, max(values) * margin


def draw_reach(ax, view: ReachView) -> None:
    """Draw `view` (from `reach_view`): kept part solid, truncated part grey, radius^k dotted."""
    ax.clear()
    ks, norms, kept = view.k, view.norms, view.kept
    cut = sum(kept)
    ax.semilogy(ks[:cut], norms[:cut], "o-", markersize=3, color=SERIES_COLOURS[0],
                label=_("kept by truncated BPTT"))
    if cut < len(ks):
        ax.semilogy(ks[cut - 1 :], norms[cut - 1 :], "o--", markersize=3, color=REFERENCE_LINE_COLOUR,
                    label=_("dropped"))
        # A faint band behind the dropped part only structures the plot: the dashed line and legend say it.
        ax.axvspan(cut - 0.5, ks[-1] + 0.5, color="gray", alpha=0.12, gid=DECORATION)
    ax.semilogy(ks, view.reference, ":", color=SERIES_COLOURS[3], label=r"$\rho^k$")
    ax.axhline(1.0, color=REFERENCE_LINE_COLOUR, linewidth=0.8)
    ax.set_ylim(*reach_limits(view))
    ax.set_xlim(-0.5, ks[-1] + 0.5)
    ax.set_xlabel(_("k: steps back in time"))
    ax.set_ylabel(r"$\|\partial L / \partial H_{T-k}\|$")
    ax.legend(loc="upper left", fontsize=8)


def reach_alt(view: ReachView) -> str:
    """Return the text alternative of `draw_reach(ax, view)`: the curve's ends and the part kept."""
    cut = sum(view.kept)
    if cut < len(view.k):
        template = _("Gradient norm against steps back in time k, log scale: from {first:.3g} at k = 0 to "
                     "{last:.3g} at k = {last_k}; solid, kept by truncated BPTT, for k = 0 to {kept}; dashed "
                     "grey, dropped by truncation, from k = {kept} on; dotted, rho to the power k, for "
                     "comparison.")
    else:
        template = _("Gradient norm against steps back in time k, log scale: from {first:.3g} at k = 0 to "
                     "{last:.3g} at k = {last_k}; solid, kept by truncated BPTT, for k = 0 to {kept}; "
                     "nothing dropped by truncation; dotted, rho to the power k, for comparison.")
    return template.format(first=view.norms[0], last=view.norms[-1], last_k=view.k[-1], kept=cut - 1)


class GradientReachPanel:
    """Sliders for the spectral radius of W_hh and the truncation length over the reach plot.

    `panel.widget` is what the notebook displays; `panel.radius`, `panel.truncation` and
    `panel.inputs` are the controls; `panel.view` is the latest `reach_view` result
    (tests set the controls and read it); `panel.status` shows its summary.
    """

    def __init__(self, radius: float = 0.9, truncation: int = 20, max_k: int = 50):
        self.max_k = max_k
        self.radius = widgets.FloatSlider(value=radius, min=0.3, max=2.5, step=0.05,
                                          description="ρ(W_hh)", continuous_update=False)
        self.truncation = widgets.IntSlider(value=truncation, min=1, max=max_k + 1,
                                            description=_("truncation"), continuous_update=False)
        self.inputs = widgets.Checkbox(value=True, description=_("token inputs (tanh can saturate)"),
                                       indent=False, layout=widgets.Layout(width="auto"))
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.view: ReachView | None = None
        self.controls = (self.radius, self.truncation, self.inputs)
        self.access = Access()
        # TRANSLATORS: accessible names; each must contain its slider's label (ρ(W_hh), truncation).
        self.access.follow(self.radius, _("ρ(W_hh): spectral radius of the recurrent weights"))
        self.access.follow(self.truncation, _("truncation: time steps kept by truncated BPTT"))
        self.access.name(self.inputs, self.inputs.description)
        self.access.announce(self.status)
        self.widget = PanelBox([panel_summary(_(SUMMARY)), widgets.HBox([self.radius, self.truncation]),
                                self.inputs, self.status, self.image, self.access.widget])
        for control in self.controls:
            control.observe(lambda change: self.update(), names="value")
        self.update()

    def update(self) -> ReachView:
        """Recompute the view for the current controls, redraw (controls disabled meanwhile), return it."""
        with controls_disabled(self.controls):
            self.view = reach_view(self.radius.value, self.truncation.value, self.max_k, self.inputs.value)
            self.status.value = self.view.summary
            figure, ax = plt.subplots(figsize=(7, 3.2))
            draw_reach(ax, self.view)
            show_png(self.image, figure_png(figure))
            self.access.describe(self.image, reach_alt(self.view))
        return self.view


def make_gradient_reach_panel(radius: float = 0.9, truncation: int = 20,
                              max_k: int = 50) -> GradientReachPanel:
    """Return notebook 05's reach panel, already drawn; display `.widget`."""
    return GradientReachPanel(radius, truncation, max_k)
