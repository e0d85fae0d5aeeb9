"""Plots for the notebooks: a live training plot and a heatmap (notebooks 01, 04, 06, 07).

Panels draw figures to PNG bytes (`figure_png`) and show them with `show_png`, which sizes the
`Image` widget to the PNG's own pixel width, so the browser never stretches (blurs) it; the
panel's `Access` gives the image its text alternative. A notebook shows a figure with
`show_figure(figure, alt)`: an HTML `<img alt>` (JupyterLab's PNG renderer drops any alt), so a
screen reader reads what the figure shows, in JupyterLab, Colab and an HTML export alike.
"""

import base64
import html
import io
import struct

import matplotlib.pyplot as plt
from IPython.display import HTML, display
from matplotlib.artist import Artist
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox, IdentityTransform

from d2lmini.figure_checks import figure_problems
from d2lmini.i18n import N_, _
from d2lmini.palette import MUTED_TEXT_COLOUR, REFERENCE_LINE_COLOUR, series_style
from d2lmini.train import History

# Diverging scale for signed values whose lightness rises from -1 (dark) to +1 (light), so the
# sign survives greyscale and every colour-vision deficiency.
SIGNED_CMAP = "cividis"
# The perplexity plot's title unless the caller gives one (translated where it is drawn).
PERPLEXITY_TITLE = N_("Perplexity during training")


def spread_apart(positions: list[float], gap: float) -> list[float]:
    """Return `positions` moved as little as possible so that any two are at least `gap` apart.

    Labels too close together are gathered into a group centred on their mean; groups that
    then touch merge. The order is kept and each result is at its own index.
    """
    groups: list[tuple[list[int], float]] = []  # (indices, centre), from the lowest up
    for i in sorted(range(len(positions)), key=positions.__getitem__):
        groups.append(([i], positions[i]))
        while len(groups) > 1:
            (low, low_centre), (high, high_centre) = groups[-2], groups[-1]
            if (high_centre - (len(high) - 1) * gap / 2) - (low_centre + (len(low) - 1) * gap / 2) >= gap:
                break
            merged = low + high
            groups[-2:] = [(merged, sum(positions[k] for k in merged) / len(merged))]
    placed = [0.0] * len(positions)
    for members, centre in groups:
        for j, k in enumerate(members):
            placed[k] = centre + (j - (len(members) - 1) / 2) * gap
    return placed


class LineLabels(Artist):
    """Names of horizontal lines, written just right of the axes at their lines' heights.

    Placed when the figure is drawn, from the axes' limits at that moment, and moved apart
    (`spread_apart`) so no two overlap, however close the lines; outside the plot, so no curve
    runs through them. A line outside the y-limits gets no label. `get_children()` are the texts.
    """

    def __init__(self, ax, labels: dict[str, float], fontsize: float = 9, color: str = MUTED_TEXT_COLOUR):
        super().__init__()
        self.values = list(labels.values())
        self.texts = [Text(0, 0, name, fontsize=fontsize, color=color, ha="left", va="center",
                           transform=IdentityTransform()) for name in labels]
        ax.add_artist(self)
        self.set_clip_on(False)  # it lives outside the axes
        for text in self.texts:
            text.set_figure(ax.figure)

    def get_children(self):
        return list(self.texts)

    def _place(self, renderer) -> list[Text]:
        ax = self.axes
        box = ax.get_window_extent(renderer)
        low, high = sorted(ax.get_ylim())
        shown = [(t, v) for t, v in zip(self.texts, self.values, strict=True) if low <= v <= high]
        for text in self.texts:
            text.set_visible(any(text is t for t, _value in shown))
        if not shown:
            return []
        gap = 1.15 * max(t.get_window_extent(renderer).height for t, _value in shown)
        heights = spread_apart([ax.transData.transform((0, v))[1] for _text, v in shown], gap)
        left = box.x1 + 4 * ax.figure.dpi / 72
        for (text, _value), y in zip(shown, heights, strict=True):
            text.set_position((left, y))
        return [t for t, _value in shown]

    def draw(self, renderer):
        for text in self._place(renderer):
            text.draw(renderer)

    def get_window_extent(self, renderer=None):
        shown = self._place(renderer)
        return Bbox.union([t.get_window_extent(renderer) for t in shown]) if shown else Bbox.null()


def plot_perplexity(ax, history: History, baselines: dict[str, float] | None = None,
                    title: str = PERPLEXITY_TITLE) -> None:
    """Draw train and validation perplexity per epoch on `ax`, with horizontal baseline lines.

    The baselines are named to the right of the plot (`LineLabels`), never on top of each
    other or of a curve (notebooks 04, 07). `title` is shown translated where a catalog has it.
    """
    ax.clear()
    # TRANSLATORS: legend entries of the perplexity plot: the training text's curve, the validation text's.
    ax.plot(history.epoch, history.train_perplexity, label=_("train"), **series_style(0))
    ax.plot(history.epoch, history.valid_perplexity, label=_("validation"), **series_style(1))
    for value, style in zip((baselines or {}).values(), ["--", ":", "-.", "--"], strict=False):
        ax.axhline(value, linestyle=style, color=REFERENCE_LINE_COLOUR, linewidth=1)
    LineLabels(ax, {f"{name} {value:.2f}": value for name, value in (baselines or {}).items()})
    ax.margins(y=0.12)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(_("epoch"))
    ax.set_ylabel(_("perplexity"))
    ax.set_title(_(title) if title else title)  # _("") would be the catalog's header
    ax.legend(loc="best")


class LivePlot:
    """A perplexity figure that redraws in place after every epoch.

    Pass `live.update` as `train(..., on_checkpoint=live.update)`. The figure is shown
    through a display handle, so nothing is printed to stdout.
    """

    def __init__(self, baselines: dict[str, float] | None = None, title: str = PERPLEXITY_TITLE):
        self.baselines, self.title = baselines, title
        self.figure, self.ax = plt.subplots(figsize=(6, 3.2))
        plt.close(self.figure)
        self.handle = None

    def update(self, history: History) -> None:
        """Redraw the curves of `history` and refresh the displayed figure (an `<img alt>`)."""
        plot_perplexity(self.ax, history, self.baselines, self.title)
        self.figure.tight_layout()
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        shown = HTML(figure_html(buffer.getvalue(), perplexity_alt(history, self.baselines, self.title)))
        if self.handle is None:
            self.handle = display(shown, display_id=True)
        else:
            self.handle.update(shown)


def perplexity_alt(history: History, baselines: dict[str, float] | None = None,
                   title: str = PERPLEXITY_TITLE) -> str:
    """Return the text alternative of `plot_perplexity`'s figure: the curves' first and last values.

    The epochs are the x-axis's span (a checkpoint may fall inside an epoch), not a count of points.
    """
    title = _(title) if title else title
    if not history.epoch:
        return _("{title}: no epoch finished yet.").format(title=title)
    first, last = history.epoch[0], history.epoch[-1]
    parts = [_("{title}: epochs {first:.3g} to {last:.3g}").format(title=title, first=first, last=last)]
    curves = ((_("train perplexity from {first:.3g} to {last:.3g}"), history.train_perplexity),
              (_("validation perplexity from {first:.3g} to {last:.3g}"), history.valid_perplexity))
    for template, values in curves:
        if values:
            parts.append(template.format(first=values[0], last=values[-1]))
    # TRANSLATORS: the parts of a figure's description, one after another ("...; ...").
    text = _("; ").join(parts)
    if baselines:
        # TRANSLATORS: {lines} names each horizontal line with its height ("unigram 8.21, KN n=2 6.5").
        text = _("{text}; lines at {lines}").format(
            text=text, lines=", ".join(f"{name} {value:.3g}" for name, value in baselines.items()))
    # TRANSLATORS: the end of a figure's description: its text, then a full stop.
    return _("{text}.").format(text=text)


def heatmap(ax, matrix, row_labels=None, col_labels=None, title: str = "", cmap: str = SIGNED_CMAP,
            vmin: float | None = -1.0, vmax: float | None = 1.0):
    """Draw `matrix` (2-D array or tensor) as a heatmap on `ax`; return the image for a colorbar.

    The default colours go from dark blue (-1) to light yellow (+1), so a greyscale print keeps
    the sign: dark is negative, light positive.
    """
    values = matrix.detach().cpu().numpy() if hasattr(matrix, "detach") else matrix
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if row_labels is not None:
        ax.set_yticks(range(len(row_labels)), labels=list(row_labels))
    if col_labels is not None:
        ax.set_xticks(range(len(col_labels)), labels=list(col_labels))
    ax.set_title(title)
    return image



def figure_png(figure, dpi: int = 80) -> bytes:
    """Lay out `figure`, return it as PNG bytes (for an ipywidgets `Image`) and close it.

    Panels draw into an `Image` widget rather than an `Output`, so they print nothing
    to stdout and a browser shows exactly what tests can read.
    """
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    plt.close(figure)
    return buffer.getvalue()


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def figure_html(png: bytes, alt: str) -> str:
    """Return an HTML `<img>` of the PNG bytes `png` at its own pixel width, with the text `alt`.

    `alt` says what the figure shows (its key numbers where the figure is a result); it must
    not be empty.
    """
    if not alt or not alt.strip():
        raise ValueError(_("a figure needs a text alternative that says what it shows"))
    width, _height = png_size(png)
    data = base64.b64encode(png).decode("ascii")
    return (f'<img alt="{html.escape(alt.strip(), quote=True)}" src="data:image/png;base64,{data}" '
            f'style="width:{width}px; max-width:100%; height:auto">')


def show_figure(figure, alt: str, dpi: int = 100) -> None:
    """Display `figure` as an `<img>` with the text alternative `alt`, then close it (every notebook).

    Use it instead of `plt.show()`: JupyterLab drops the alt of a PNG output, not of HTML.
    Refuses (ValueError) a figure that `d2lmini.figure_checks.figure_problems` finds fault with: an
    alt that is generic, holds HTML or states a number the figure does not draw; text or lines
    too faint; series told apart by colour only.
    """
    problems = figure_problems(figure, alt)
    if problems:
        # TRANSLATORS: {problems} lists what is wrong with the figure, separated by "; ".
        raise ValueError(_("this figure cannot be shown as it is: {problems}").format(
            problems=_("; ").join(problems)))
    display(HTML(figure_html(figure_png(figure, dpi=dpi), alt)))


def png_size(png: bytes) -> tuple[int, int]:
    """Return the (width, height) in pixels of the PNG image `png`, read from its header."""
    if png[:8] != PNG_SIGNATURE or png[12:16] != b"IHDR":
        raise ValueError(_("png must be the bytes of a PNG image (as returned by figure_png)"))
    return struct.unpack(">II", png[16:24])


def show_png(image, png: bytes) -> None:
    """Show `png` in the ipywidgets `Image` widget `image` at its natural width (never upscaled).

    The width is the PNG's own pixel width and may shrink (keeping the aspect ratio) to fit a
    narrower page, so a figure is sharp on a laptop screen. Works with ipywidgets 7 and 8.
    """
    width, _height = png_size(png)
    image.value = png
    image.layout.width = f"{width}px"
    image.layout.max_width = "100%"
    image.layout.height = "auto"
