"""Gradients flowing back through time: the figures and the panel of notebook 05.

`draw_bptt_graph` draws the unrolled RNN with its losses and the backward arrows;
`draw_reach_curves` plots ||dL/dH_{T-k}|| against k for several spectral radii;
`reach_view` computes what the gradient-reach panel shows for one spectral radius and
one truncation length, and `GradientReachPanel` wires it to two sliders.
"""


import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from d2lmini.figures import draw_unrolled_rnn
from d2lmini.gradcheck import gradient_norms_back_in_time
from d2lmini.plot import figure_png, show_png
from d2lmini.widgets import controls_disabled

BACKWARD_COLOR = "#cc0000"


def _center(patch) -> tuple[float, float]:
    return patch.get_x() + patch.get_width() / 2, patch.get_y() + patch.get_height() / 2


def draw_bptt_graph(ax, num_steps: int = 3) -> dict:
    """Draw the unrolled RNN with a loss L_t on every output and the backward pass in red.

    Builds on `d2lmini.figures.draw_unrolled_rnn` (forward arrows in black), adds the loss
    nodes and, in dashed red, the paths the gradient takes: from each L_t down to O_t and
    H_t, and from every H_t back to H_{t-1}. Returns {"nodes": {label: patch},
    "forward": [arrows], "backward": [arrows]}.
    """
    drawn = draw_unrolled_rnn(ax, num_steps)
    nodes = dict(drawn["nodes"])
    backward = []

    def red_arrow(start, end, bend=0.0):
        arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, linewidth=1.4,
                                color=BACKWARD_COLOR, linestyle="--", connectionstyle=f"arc3,rad={bend}")
        ax.add_patch(arrow)
        backward.append(arrow)

    for t in range(1, num_steps + 1):
        ox, oy = _center(nodes[f"$O_{t}$"])
        hx, hy = _center(nodes[f"$H_{t}$"])
        box = FancyBboxPatch((ox - 0.45, oy + 1.0 - 0.27), 0.9, 0.54,
                             boxstyle="round,pad=0.02,rounding_size=0.1",
                             facecolor="#f4cccc", edgecolor="black", linewidth=1.2)
        ax.add_patch(box)
        ax.text(ox, oy + 1.0, f"$L_{t}$", ha="center", va="center", fontsize=12)
        nodes[f"$L_{t}$"] = box
        ax.add_patch(FancyArrowPatch((ox, oy + 0.3), (ox, oy + 0.73), arrowstyle="-|>", mutation_scale=14,
                                     linewidth=1.2, color="black"))
        red_arrow((ox - 0.25, oy + 0.73), (ox - 0.25, oy + 0.3))
        red_arrow((hx - 0.25, oy - 0.3), (hx - 0.25, hy + 0.3))
        px, py = _center(nodes[f"$H_{t - 1}$"])
        red_arrow((hx - 0.3, hy - 0.3), (px + 0.3, py - 0.3), bend=-0.35)
    ax.text(num_steps * 1.8 / 2, -1.05, "gradients flow back along the red arrows; where two arrive "
            "at one $H_t$ they are added", ha="center", va="center", fontsize=9, color=BACKWARD_COLOR)
    ax.set_ylim(-1.3, 4.6)
    ax.set_title(f"Backpropagation through time over {num_steps} steps: forward in black, backward in red")
    return {"nodes": nodes, "forward": drawn["arrows"], "backward": backward}


def draw_reach_curves(ax, radii, max_k: int = 50, input_scale: float = 1.0,
                      **kwargs) -> dict[float, list[float]]:
    """Plot ||dL/dH_{T-k}|| against k on a log scale, one curve per spectral radius in `radii`.

    Returns {radius: norms} as computed by `d2lmini.bptt.gradient_norms_back_in_time`
    (extra keyword arguments are passed on to it).
    """
    curves = {}
    for radius in radii:
        curves[radius] = gradient_norms_back_in_time(radius, max_k, input_scale=input_scale, **kwargs)
        ax.semilogy(range(max_k + 1), curves[radius], label=f"ρ = {radius:g}")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xlabel("k: steps back in time")
    ax.set_ylabel(r"$\|\partial L / \partial H_{T-k}\|$")
    ax.set_title("no inputs (H stays 0, tanh' = 1)" if input_scale == 0 else "random token inputs")
    ax.legend(fontsize=8)
    return curves


def reach_view(radius: float, truncation: int, max_k: int = 50, inputs: bool = True) -> dict:
    """Return what the gradient-reach panel shows for spectral radius `radius` of W_hh.

    Truncated BPTT over `truncation` steps keeps dL/dH_{T-k} only for k < truncation.
    Keys: "k", "norms" (||dL/dH_{T-k}||, k = 0..max_k), "reference" (radius^k),
    "kept" (k < truncation), "dropped_share" (the share of the summed norms that
    truncation drops) and "summary" (one sentence for the panel).
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
    return {"k": ks, "norms": norms, "reference": [radius**k for k in ks], "kept": kept,
            "dropped_share": share, "summary": summary}


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


def draw_reach(ax, view: dict) -> None:
    """Draw `view` (from `reach_view`): kept part solid, truncated part grey, radius^k dotted."""
    ax.clear()
    ks, norms, kept = view["k"], view["norms"], view["kept"]
    cut = sum(kept)
    ax.semilogy(ks[:cut], norms[:cut], "o-", markersize=3, color="C0", label="kept by truncated BPTT")
    if cut < len(ks):
        ax.semilogy(ks[cut - 1 :], norms[cut - 1 :], "o--", markersize=3, color="gray", label="dropped")
        ax.axvspan(cut - 0.5, ks[-1] + 0.5, color="gray", alpha=0.12)
    ax.semilogy(ks, view["reference"], ":", color="C3", label=r"$\rho^k$")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylim(1e-12, 1e12)
    ax.set_xlim(-0.5, ks[-1] + 0.5)
    ax.set_xlabel("k: steps back in time")
    ax.set_ylabel(r"$\|\partial L / \partial H_{T-k}\|$")
    ax.legend(loc="upper left", fontsize=8)


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
        self.view: dict | None = None
        self.controls = (self.radius, self.truncation, self.inputs)
        self.widget = widgets.VBox([widgets.HBox([self.radius, self.truncation]), self.inputs,
                                    self.status, self.image])
        for control in self.controls:
            control.observe(lambda change: self.update(), names="value")
        self.update()

    def update(self, change=None) -> dict:
        """Recompute the view for the current controls, redraw (controls disabled meanwhile), return it."""
        with controls_disabled(self.controls):
            self.view = reach_view(self.radius.value, self.truncation.value, self.max_k, self.inputs.value)
            self.status.value = self.view["summary"]
            figure, ax = plt.subplots(figsize=(7, 3.2))
            draw_reach(ax, self.view)
            show_png(self.image, figure_png(figure))
        return self.view


def make_gradient_reach_panel(radius: float = 0.9, truncation: int = 20,
                              max_k: int = 50) -> GradientReachPanel:
    """Return notebook 05's reach panel, already drawn; display `.widget`."""
    return GradientReachPanel(radius, truncation, max_k)
