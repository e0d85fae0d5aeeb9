"""Gradients flowing back through time: the panel of notebook 05.

The notebook's static figures (`draw_bptt_graph`, `draw_reach_curves`) are in
`d2lmini.figures`; `reach_view` computes what the gradient-reach panel shows for one spectral radius and
one truncation length, and `GradientReachPanel` wires it to two sliders.
"""

import math
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt

from d2lmini.gradcheck import gradient_norms_back_in_time
from d2lmini.palette import REFERENCE_LINE_COLOUR, SERIES_COLOURS
from d2lmini.plot import figure_png, show_png
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = ("How far back a gradient reaches: set ρ(W_hh), the truncation and the token inputs; the plot "
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
        raise ValueError(f"the spectral radius must be positive, not {radius}")
    if not 1 <= truncation <= max_k + 1:
        raise ValueError(f"the truncation length must be between 1 and {max_k + 1}, not {truncation}")
    norms = gradient_norms_back_in_time(radius, max_k, input_scale=1.0 if inputs else 0.0)
    ks = list(range(max_k + 1))
    kept = [k < truncation for k in ks]
    total = sum(norms)
    dropped = sum(n for n, keep in zip(norms, kept, strict=True) if not keep)
    share = dropped / total if total > 0 else 0.0
    summary = (f"ρ = {radius:.2f}{' with token inputs' if inputs else ', no inputs'}: "
               f"{describe_change(norms)}; truncating after {truncation} steps drops {share:.1%} "
               "of the summed gradient norms.")
    return ReachView(ks, norms, [radius**k for k in ks], kept, share, summary)


def describe_change(norms: list[float]) -> str:
    """Return a phrase saying how much ||dL/dH_{T-k}|| changed from k = 0 to the last k, as measured.

    The factor is norms[-1] / norms[0]; "vanishes" / "explodes" are added only beyond a factor
    of 1000, "stays within a factor of 2" only when that is what the numbers show.
    """
    steps, first, last = len(norms) - 1, norms[0], norms[-1]
    if not (first > 0 and last > 0):
        return f"the gradient norm goes from {first:.1e} to {last:.1e} over {steps} steps back"
    ratio = last / first
    if 0.5 <= ratio <= 2:
        how = f"stays within a factor of 2 ({ratio:.2f}×)"
    elif ratio < 1:
        how = f"falls {1 / ratio:.3g}-fold" + (" (it vanishes)" if ratio < 1e-3 else "")
    else:
        how = f"grows {ratio:.3g}-fold" + (" (it explodes)" if ratio > 1e3 else "")
    return (f"going {steps} steps back, ‖dL/dH‖ {how}, from {first:.2g} to {last:.1e} "
            f"(×{ratio ** (1 / steps):.3f} per step on average)")


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
                label="kept by truncated BPTT")
    if cut < len(ks):
        ax.semilogy(ks[cut - 1 :], norms[cut - 1 :], "o--", markersize=3, color=REFERENCE_LINE_COLOUR,
                    label="dropped")
        ax.axvspan(cut - 0.5, ks[-1] + 0.5, color="gray", alpha=0.12)
    ax.semilogy(ks, view.reference, ":", color=SERIES_COLOURS[3], label=r"$\rho^k$")
    ax.axhline(1.0, color=REFERENCE_LINE_COLOUR, linewidth=0.8)
    ax.set_ylim(*reach_limits(view))
    ax.set_xlim(-0.5, ks[-1] + 0.5)
    ax.set_xlabel("k: steps back in time")
    ax.set_ylabel(r"$\|\partial L / \partial H_{T-k}\|$")
    ax.legend(loc="upper left", fontsize=8)


def reach_alt(view: ReachView) -> str:
    """Return the text alternative of `draw_reach(ax, view)`: the curve's ends and the part kept."""
    cut = sum(view.kept)
    dropped = (f"; dashed grey, dropped by truncation, from k = {cut - 1} on" if cut < len(view.k) else
               "; nothing dropped by truncation")
    return (f"Gradient norm against steps back in time k, log scale: from {view.norms[0]:.3g} at k = 0 to "
            f"{view.norms[-1]:.3g} at k = {view.k[-1]}; solid, kept by truncated BPTT, for k = 0 to "
            f"{cut - 1}{dropped}; dotted, rho to the power k, for comparison.")


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
                                            description="truncation", continuous_update=False)
        self.inputs = widgets.Checkbox(value=True, description="token inputs (tanh can saturate)",
                                       indent=False, layout=widgets.Layout(width="auto"))
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.view: ReachView | None = None
        self.controls = (self.radius, self.truncation, self.inputs)
        self.access = Access()
        self.access.follow(self.radius, "ρ(W_hh): spectral radius of the recurrent weights")
        self.access.follow(self.truncation, "truncation: time steps kept by truncated BPTT")
        self.access.name(self.inputs, self.inputs.description)
        self.access.announce(self.status)
        self.widget = PanelBox([panel_summary(SUMMARY), widgets.HBox([self.radius, self.truncation]),
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
