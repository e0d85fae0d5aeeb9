"""Where a matplotlib figure's text lands on screen, for the tests of figures and panels.

`drawn_texts(figure)` draws the figure and returns every text it shows (titles, axis and tick
labels when the axes are on, texts and annotations, texts of added artists, legend entries),
each with its window extent; `overlapping_texts(figure)` names the pairs whose boxes overlap; `outside_figure`
names the texts that stick out of the figure (a clipped label).
"""

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text


def _tick_labels(axis) -> list[Text]:
    """The tick labels `axis` draws: those of its ticks inside the view (matplotlib keeps others)."""
    low, high = sorted(axis.get_view_interval())
    slack = (high - low) * 1e-9
    return [tick.label1 for tick in axis.get_major_ticks() if low - slack <= tick.get_loc() <= high + slack]


def _texts_of(ax) -> list[Text]:
    texts = [ax.title, *ax.texts, *(t for a in ax.artists for t in a.get_children() if isinstance(t, Text))]
    if ax.axison:
        texts += [ax.xaxis.label, ax.yaxis.label, *_tick_labels(ax.xaxis), *_tick_labels(ax.yaxis)]
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        texts += list(legend.get_texts())
    return texts


def drawn_texts(figure) -> list[tuple[Text, object]]:
    """Draw `figure` and return (text, window extent) for every visible, non-empty text it shows."""
    if not hasattr(figure.canvas, "get_renderer"):  # a closed pyplot figure keeps a bare canvas
        FigureCanvasAgg(figure)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = [*figure.texts, *(t for ax in figure.axes for t in _texts_of(ax))]
    return [(t, t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text().strip()]


def overlapping_texts(figure, slack: float = 0.5) -> list[tuple[str, str]]:
    """Return the (text, text) pairs of `figure` whose boxes overlap by more than `slack` pixels."""
    shown = drawn_texts(figure)
    pairs = []
    for i, (a, box_a) in enumerate(shown):
        for b, box_b in shown[i + 1:]:
            if (min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0) > slack
                    and min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0) > slack):
                pairs.append((a.get_text(), b.get_text()))
    return pairs


def outside_figure(figure, slack: float = 0.5) -> list[str]:
    """Return the texts of `figure` whose boxes reach more than `slack` pixels past the figure's edge."""
    edge = figure.bbox
    return [t.get_text() for t, box in drawn_texts(figure)
            if box.x0 < edge.x0 - slack or box.y0 < edge.y0 - slack
            or box.x1 > edge.x1 + slack or box.y1 > edge.y1 + slack]
