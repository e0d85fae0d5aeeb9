"""Plots for the notebooks: a live training plot and a heatmap (notebooks 01, 04, 06, 07).

Panels draw figures to PNG bytes (`figure_png`) and show them with `show_png`, which sizes the
`Image` widget to the PNG's own pixel width, so the browser never stretches (blurs) it.
"""

import io
import struct

import matplotlib.pyplot as plt
from IPython.display import display
from matplotlib.ticker import MaxNLocator

from d2lmini.train import History


def plot_perplexity(ax, history: History, baselines: dict[str, float] | None = None,
                    title: str = "Perplexity during training") -> None:
    """Draw train and validation perplexity per epoch on `ax`, with horizontal baseline lines."""
    ax.clear()
    ax.plot(history.epoch, history.train_perplexity, "o-", label="train")
    ax.plot(history.epoch, history.valid_perplexity, "s-", label="validation")
    for (name, value), style in zip((baselines or {}).items(), ["--", ":", "-.", "--"], strict=False):
        ax.axhline(value, linestyle=style, color="gray", linewidth=1)
        ax.annotate(f"{name} {value:.2f}", (0.01, value), xycoords=("axes fraction", "data"),
                    ha="left", va="bottom", fontsize=8, color="gray")
    ax.margins(y=0.12)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("perplexity")
    ax.set_title(title)
    ax.legend(loc="upper right")


class LivePlot:
    """A perplexity figure that redraws in place after every epoch.

    Pass `live.update` as `train(..., on_checkpoint=live.update)`. The figure is shown
    through a display handle, so nothing is printed to stdout.
    """

    def __init__(self, baselines: dict[str, float] | None = None, title: str = "Perplexity during training"):
        self.baselines, self.title = baselines, title
        self.figure, self.ax = plt.subplots(figsize=(6, 3.2))
        plt.close(self.figure)
        self.handle = None

    def update(self, history: History) -> None:
        """Redraw the curves of `history` and refresh the displayed figure."""
        plot_perplexity(self.ax, history, self.baselines, self.title)
        self.figure.tight_layout()
        if self.handle is None:
            self.handle = display(self.figure, display_id=True)
        else:
            self.handle.update(self.figure)


def heatmap(ax, matrix, row_labels=None, col_labels=None, title: str = "", cmap: str = "RdBu_r",
            vmin: float | None = -1.0, vmax: float | None = 1.0):
    """Draw `matrix` (2-D array or tensor) as a heatmap on `ax`; return the image for a colorbar."""
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


def png_size(png: bytes) -> tuple[int, int]:
    """Return the (width, height) in pixels of the PNG image `png`, read from its header."""
    if png[:8] != PNG_SIGNATURE or png[12:16] != b"IHDR":
        raise ValueError("png must be the bytes of a PNG image (as returned by figure_png)")
    return struct.unpack(">II", png[16:24])


def show_png(image, png: bytes) -> None:
    """Show `png` in the ipywidgets `Image` widget `image` at its natural width (never upscaled).

    The width is the PNG's own pixel width and may shrink (keeping the aspect ratio) to fit a
    narrower page, so a figure is sharp on a laptop screen. Works with ipywidgets 7 and 8.
    """
    width, _ = png_size(png)
    image.value = png
    image.layout.width = f"{width}px"
    image.layout.max_width = "100%"
    image.layout.height = "auto"
