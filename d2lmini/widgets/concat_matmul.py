"""The block-matrix panel of notebook 02: X W_xh + H W_hh versus [X, H] [W_xh; W_hh].

`check_concat_equality` draws random matrices of the chosen sizes and compares the two
ways of computing the pre-activation; `ConcatMatmulPanel` puts sliders for the sizes
and the seed over the block picture (`d2lmini.figures.draw_block_matmul`) and the check;
`make_concat_matmul_panel` builds it.
"""


from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from d2lmini.figures import block_matmul_alt, draw_block_matmul
from d2lmini.i18n import N_, _
from d2lmini.plot import figure_png, show_png
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("Concatenate, then multiply: set the batch, inputs, hiddens and seed sliders; the panel checks "
           "that one matrix product of the joined blocks equals two products added, and draws them.")


def two_matmuls(X: torch.Tensor, H: torch.Tensor, W_xh: torch.Tensor, W_hh: torch.Tensor) -> torch.Tensor:
    """Return X W_xh + H W_hh, computed as two matrix products and a sum."""
    return X @ W_xh + H @ W_hh


def fused_matmul(X: torch.Tensor, H: torch.Tensor, W_xh: torch.Tensor, W_hh: torch.Tensor) -> torch.Tensor:
    """Return [X, H] [W_xh; W_hh]: X and H side by side, times W_xh stacked on top of W_hh."""
    return torch.cat((X, H), dim=1) @ torch.cat((W_xh, W_hh), dim=0)


@dataclass
class ConcatCheck:
    """What `check_concat_equality` finds (notebook 02): the `shapes` of every matrix by name
    ("X", "H", "W_xh", "W_hh", "[X, H]", "[W_xh; W_hh]", "result"), the largest difference of
    the two ways, the largest difference allowed, whether every entry is within its bound, and
    the fused product (on the CPU)."""

    shapes: dict[str, tuple[int, ...]]
    max_abs_diff: float
    tolerance: float
    equal: bool
    result: torch.Tensor


def check_concat_equality(batch: int, num_inputs: int, num_hiddens: int, seed: int = 0,
                          device: torch.device | str = "cpu",
                          dtype: torch.dtype = torch.float32) -> ConcatCheck:
    """Draw X, H, W_xh, W_hh from N(0, 1) with `seed` and compare `two_matmuls` with `fused_matmul`.

    Random numbers are drawn on the CPU and moved to `device`. "Equal" means equal up to
    rounding: each entry is a sum of k = inputs + hiddens products, and two summation
    orders of such a sum differ by at most about k * eps * sum(|x_i w_i|) (eps: the
    machine epsilon of `dtype`), so entry (i, j) may differ by k * eps * (|X| |W_xh| + |H| |W_hh|)_ij.
    Returns a `ConcatCheck`.
    """
    for name, value in (("batch", batch), ("num_inputs", num_inputs), ("num_hiddens", num_hiddens)):
        if value < 1:
            raise ValueError(_("{name} must be at least 1, not {value}").format(name=name, value=value))
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=dtype).to(device)

    X, H = draw(batch, num_inputs), draw(batch, num_hiddens)
    W_xh, W_hh = draw(num_inputs, num_hiddens), draw(num_hiddens, num_hiddens)
    separate, fused = two_matmuls(X, H, W_xh, W_hh), fused_matmul(X, H, W_xh, W_hh)
    eps = torch.finfo(dtype).eps
    bound = (num_inputs + num_hiddens) * eps * two_matmuls(X.abs(), H.abs(), W_xh.abs(), W_hh.abs())
    difference = (separate - fused).abs()
    shapes = {"X": tuple(X.shape), "H": tuple(H.shape), "W_xh": tuple(W_xh.shape),
              "W_hh": tuple(W_hh.shape), "[X, H]": (batch, num_inputs + num_hiddens),
              "[W_xh; W_hh]": (num_inputs + num_hiddens, num_hiddens), "result": tuple(fused.shape)}
    return ConcatCheck(shapes, float(difference.max()), float(bound.max()),
                       bool((difference <= bound).all()), fused.cpu())


def describe_check(check: ConcatCheck) -> str:
    """Return a short HTML sentence describing the result of `check_concat_equality`."""
    s = check.shapes
    verdict = _("equal (up to rounding)") if check.equal else _("DIFFERENT")
    # TRANSLATORS: each {field} is a matrix's shape, such as (3, 4); {verdict} is "equal (up to rounding)"
    # or "DIFFERENT". Keep the formulas and the <b> tags.
    return _("X {x} · W_xh {w_xh} + H {h} · W_hh {w_hh} and [X, H] {xh} · [W_xh; W_hh] {w} are "
             "<b>{verdict}</b>; largest difference {difference:.1e}, result {result}.").format(
        x=s["X"], w_xh=s["W_xh"], h=s["H"], w_hh=s["W_hh"], xh=s["[X, H]"], w=s["[W_xh; W_hh]"],
        verdict=verdict, difference=check.max_abs_diff, result=s["result"])


def block_figure(batch: int, num_inputs: int, num_hiddens: int):
    """Return the figure notebook 02's panel shows: `draw_block_matmul` on a 9 x 3.6 inch figure."""
    figure, ax = plt.subplots(figsize=(9, 3.6))
    draw_block_matmul(ax, batch, num_inputs, num_hiddens)
    return figure


class ConcatMatmulPanel:
    """Sliders for batch, input size, hidden size and seed over the block picture and the check.

    `panel.widget` is what the notebook displays; `panel.batch`, `panel.num_inputs`,
    `panel.num_hiddens`, `panel.seed` are the sliders and `panel.check` is the latest
    `check_concat_equality` result (tests set the sliders and read `check`).
    """

    def __init__(self, batch: int = 3, num_inputs: int = 1, num_hiddens: int = 4, seed: int = 0):
        def slider(value: int, description: str, maximum: int) -> widgets.IntSlider:
            return widgets.IntSlider(value=value, min=1, max=maximum, description=description)

        # TRANSLATORS: slider labels: the rows of X and H, the columns of X, the columns of H.
        self.batch = slider(batch, _("batch"), 16)
        self.num_inputs = slider(num_inputs, _("inputs"), 32)
        self.num_hiddens = slider(num_hiddens, _("hiddens"), 32)
        self.seed = widgets.IntSlider(value=seed, min=0, max=99, description=_("seed"))
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.check: ConcatCheck | None = None
        controls = widgets.HBox([widgets.VBox([self.batch, self.num_inputs]),
                                 widgets.VBox([self.num_hiddens, self.seed])])
        self.widget = PanelBox([panel_summary(_(SUMMARY)), controls, self.status, self.image])
        self.controls = (self.batch, self.num_inputs, self.num_hiddens, self.seed)
        self.access = Access()
        # TRANSLATORS: accessible names; each must contain its slider's label (batch, inputs, hiddens, seed).
        for control, name in zip(self.controls, (_("batch: rows of X and H"), _("inputs: columns of X"),
                                                 _("hiddens: columns of H and of the result"),
                                                 _("seed of the random matrices")), strict=True):
            self.access.follow(control, name)
        self.access.announce(self.status)
        self.widget.children = (*self.widget.children, self.access.widget)
        for control in self.controls:
            control.observe(lambda change: self.update(), names="value")
        self.update()

    def update(self) -> ConcatCheck:
        """Re-run the check for the current sliders, redraw the block picture, return the check."""
        with controls_disabled(self.controls):
            self.check = check_concat_equality(self.batch.value, self.num_inputs.value,
                                               self.num_hiddens.value, self.seed.value)
            # The seed is named, so a new seed is announced even when the verdict reads the same.
            # TRANSLATORS: {check} is the sentence that says whether the two products are equal.
            self.status.value = _("Seed {seed}: {check}").format(seed=self.seed.value,
                                                                  check=describe_check(self.check))
            figure = block_figure(self.batch.value, self.num_inputs.value, self.num_hiddens.value)
            show_png(self.image, figure_png(figure))
            self.access.describe(self.image, block_matmul_alt(self.batch.value, self.num_inputs.value,
                                                              self.num_hiddens.value))
        return self.check


def make_concat_matmul_panel(batch: int = 3, num_inputs: int = 1, num_hiddens: int = 4,
                             seed: int = 0) -> ConcatMatmulPanel:
    """Return notebook 02's panel, already drawn for the given shapes; display `.widget`."""
    return ConcatMatmulPanel(batch, num_inputs, num_hiddens, seed)
