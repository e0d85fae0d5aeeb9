"""Checks that a figure can be read without sight and without colour (every notebook's figures).

`alt_problems(alt, figure)` finds what is wrong with a text alternative: generic, HTML-escaped,
or stating a number the figure does not draw (a stale description). `colour_problems(figure)`
finds text under 4.5:1 and lines or bars under 3:1 against what lies behind them, for normal
vision and as simulated for protanopia, deuteranopia, tritanopia and greyscale
(`d2lmini.palette.simulate`), and series in one plot told apart by colour alone.
`show_figure` refuses a figure with any of them, so a notebook cannot show one.

A Chinese text alternative is judged as an English one: its Han characters count as words (two
to a word), and a number written against them ("共3个") is read as a number.
"""

import html
import re

import matplotlib.colors as mcolors
import numpy as np
from matplotlib.collections import Collection
from matplotlib.container import BarContainer
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.text import Text

from d2lmini.i18n import N_, _
from d2lmini.palette import MIN_LINE_CONTRAST, MIN_TEXT_CONTRAST, VISIONS, seen_contrast

# Texts that name a kind of picture and nothing it shows (English and Chinese).
GENERIC_ALTS = {"figure", "image", "plot", "chart", "graph", "picture", "diagram", "heatmap", "img",
                "a figure", "an image", "a plot", "a chart", "the figure", "the plot", "png", "output",
                "图", "图像", "图片", "图表", "示意图", "热图", "曲线图", "一张图", "该图", "输出"}
MIN_ALT_WORDS = 8
# Chinese (CJK) characters and full-width punctuation: no spaces separate Chinese words, and a number
# may stand right against them ("共3个"), so they are read as spaces where numbers are looked for.
CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
HAN_PER_WORD = 2  # about two Han characters make a Chinese word
# How a problem names each vision of `d2lmini.palette.VISIONS` (translated where it is shown).
VISION_NAMES = {"normal": N_("normal"), "protanopia": N_("protanopia"), "deuteranopia": N_("deuteranopia"),
                "tritanopia": N_("tritanopia"), "greyscale": N_("greyscale")}
# A number as people write it: 12, -0.98, 1,234, 3.5e+04, 37% (not the 2 of "log2" or "X_2").
NUMBER = re.compile(r"(?<![\w.^])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", re.I)
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]+\d*);|<[a-z/!][^>]*>", re.I)
DECORATION = "decoration"  # the gid of lines and shapes that only structure a drawing (a block's grid lines)


def numbers_in(text: str) -> list[tuple[float, float]]:
    """Return each number written in `text` as (value, tolerance): half a unit of its last digit."""
    found = []
    for match in NUMBER.finditer(CJK.sub(" ", text.replace("\u2212", "-"))):
        token = match.group().replace(",", "")
        mantissa, _e, exponent = token.lower().partition("e")
        decimals = len(mantissa.partition(".")[2])
        scale = 10.0 ** int(exponent) if exponent else 1.0
        found.append((float(token), 0.5 * 10.0 ** -decimals * scale))
    return found


def _artist_values(artist) -> list[np.ndarray]:
    if isinstance(artist, Line2D):
        return [np.asarray(artist.get_xdata(), dtype=object), np.asarray(artist.get_ydata(), dtype=object)]
    if isinstance(artist, Rectangle):
        return [np.array([artist.get_x(), artist.get_y(), artist.get_width(), artist.get_height()])]
    if isinstance(artist, AxesImage):
        return [np.asarray(artist.get_array(), dtype=float)]
    if isinstance(artist, Collection):
        return [np.asarray(artist.get_offsets())] + [path.vertices for path in artist.get_paths()]
    if isinstance(artist, Text):
        return [np.array([value for value, _tolerance in numbers_in(artist.get_text())])]
    return []


def figure_numbers(figure) -> np.ndarray:
    """Return every number `figure` draws: its lines', bars' and images' data and the numbers in its texts."""
    figure.draw_without_rendering()  # tick labels exist only once the figure is laid out
    values = []
    for artist in figure.findobj():
        for array in _artist_values(artist):
            try:
                numeric = np.asarray(array, dtype=float).ravel()
            except (TypeError, ValueError):
                continue  # categorical data (bar names)
            values.append(numeric[np.isfinite(numeric)])
    return np.unique(np.concatenate(values)) if values else np.array([])


def word_count(text: str) -> int:
    """Return how many words `text` has: those between spaces, and one per two Han characters."""
    return len(CJK.sub(" ", text).split()) + -(-len(HAN.findall(text)) // HAN_PER_WORD)


def alt_problems(alt: str, figure) -> list[str]:
    """Return what is wrong with `alt` as the text alternative of `figure` ([] when nothing is).

    It must be plain text (no HTML entity or tag: it is escaped where it is put into a page),
    say more than what kind of picture this is, and state only numbers the figure draws:
    each must equal, to the digits written, a value drawn, its size, or 100 times it (a percentage).
    """
    text = (alt or "").strip()
    problems = []
    if ENTITY.search(text):
        problems.append(_("the alt text holds HTML ({markup}); give plain text").format(
            markup=ENTITY.search(text).group()))
    if html.unescape(text).lower().rstrip(".。") in GENERIC_ALTS or word_count(text) < MIN_ALT_WORDS:
        problems.append(_("the alt text {text} does not say what the figure shows").format(text=repr(text)))
    drawn = figure_numbers(figure)
    candidates = np.concatenate([drawn, np.abs(drawn), 100 * drawn])
    for value, tolerance in numbers_in(text):
        if not np.any(np.abs(candidates - value) <= tolerance * (1 + 1e-9)) and not np.any(
                np.abs(candidates + value) <= tolerance * (1 + 1e-9)):
            problems.append(_("the alt text states {value:g}, which the figure does not draw").format(
                value=value))
    return problems


def _rgba(colour) -> np.ndarray:
    return np.asarray(mcolors.to_rgba(colour), dtype=float)


def _over(colour, background) -> tuple:
    """Return `colour` blended by its alpha over the opaque `background`, as RGB."""
    top, bottom = _rgba(colour), _rgba(background)
    return tuple(top[:3] * top[3] + bottom[:3] * (1 - top[3]))


def _background_at(ax, figure, x: float, y: float) -> tuple:
    """Return the colour behind display point (x, y): the filled patches there over the axes and figure."""
    behind = _over(figure.get_facecolor(), "white")
    if ax is None:
        return behind
    behind = _over(ax.get_facecolor(), behind)
    # Arrows are thin strokes, never what text sits on.
    patches = sorted((p for p in ax.patches if not isinstance(p, FancyArrowPatch)
                      and p.get_visible() and p.get_fill()
                      and _rgba(p.get_facecolor())[3] > 0), key=lambda p: p.get_zorder())
    for patch in patches:
        if patch.contains_point((x, y)):
            behind = _over(patch.get_facecolor(), behind)
    return behind


def _low_contrast(what: str, colour, behind, minimum: float) -> list[str]:
    worst = min(VISIONS, key=lambda vision: seen_contrast(colour, behind, vision))
    ratio = seen_contrast(colour, behind, worst)
    if ratio < minimum:
        # TRANSLATORS: {what} is the faint thing ("text 'epoch'", "line 'train'"); {vision} a colour vision
        # ("protanopia"); {ratio:.2f}:1 and {minimum:g}:1 are contrast ratios.
        return [_("{what}: contrast {ratio:.2f}:1 ({vision}), needs {minimum:g}:1").format(
            what=what, ratio=ratio, vision=_(VISION_NAMES.get(worst, worst)), minimum=minimum)]
    return []


def _text_problems(figure) -> list[str]:
    problems = []
    for text in figure.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or not text.get_figure():
            continue
        box = text.get_window_extent()
        x, y = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
        ax = next((a for a in figure.axes if a.bbox.contains(x, y)), None)
        backdrop = text.get_bbox_patch()
        behind = (_over(backdrop.get_facecolor(), "white") if backdrop is not None and backdrop.get_fill()
                  else _background_at(ax, figure, x, y))
        colour = _over(mcolors.to_rgba(text.get_color(), text.get_alpha()), behind)
        problems += _low_contrast(_("text {text}").format(text=repr(text.get_text())), colour, behind,
                                  MIN_TEXT_CONTRAST)
    return problems


def _series_lines(ax) -> list[Line2D]:
    return [line for line in ax.get_lines() if line.get_visible() and line.get_gid() != DECORATION
            and (line.get_linestyle() not in ("None", "", " ") or line.get_marker() not in ("None", "", " "))
            and len(np.atleast_1d(line.get_xdata())) > 0]


def _line_problems(ax) -> list[str]:
    problems, figure = [], ax.figure
    for line in _series_lines(ax):
        behind = _over(ax.get_facecolor(), figure.get_facecolor())
        colour = _over(mcolors.to_rgba(line.get_color(), line.get_alpha()), behind)
        problems += _low_contrast(_("line {name}").format(name=repr(line.get_label())), colour, behind,
                                  MIN_LINE_CONTRAST)
    behind = _over(ax.get_facecolor(), figure.get_facecolor())
    in_bars = set()
    for container in ax.containers:
        if not isinstance(container, BarContainer) or not container.patches:
            continue
        in_bars.update(container.patches)
        # Every bar, not only the first: a colour map may be palest where the bars are tallest.
        faint = [problem for bar in container.patches for problem in _faint_patch(bar, behind)][:1]
        # TRANSLATORS: {name} is the bars' name, quoted; {problem} says how faint the fill is.
        problems += [_("bars {name}: neither fill nor edge stands out ({problem})").format(
            name=repr(container.get_label()), problem=problem) for problem in faint]
    shapes = [patch for patch in ax.patches
              if patch not in in_bars and not isinstance(patch, FancyArrowPatch)]
    faint = [problem for patch in shapes for problem in _faint_patch(patch, behind)]
    if faint:
        # TRANSLATORS: {count} filled shapes (a grid's cells, boxes) are faint; {problem} is the first one.
        message = _("{count} filled shapes: neither fill nor edge stands out (first: {problem})")
        problems.append(message.format(count=len(faint), problem=faint[0]))
    return problems


def _faint_patch(patch, behind) -> list[str]:
    """Return a problem if `patch` is filled with something other than `behind` and neither its fill
    nor its edge reaches 3:1 against `behind` (WCAG 1.4.11: what a filled shape shows must be seen)."""
    if (not patch.get_visible() or not patch.get_fill() or _rgba(patch.get_facecolor())[3] == 0
            or patch.get_gid() == DECORATION):
        return []
    face_colour = _over(patch.get_facecolor(), behind)
    if np.allclose(face_colour, behind):
        return []  # no fill to see: a box the background's colour, drawn by its edge (checked as a line)
    face = _low_contrast(_("fill"), face_colour, behind, MIN_LINE_CONTRAST)
    edge = (_low_contrast(_("edge"), _over(patch.get_edgecolor(), behind), behind, MIN_LINE_CONTRAST)
            if patch.get_linewidth() > 0 else face)
    return face if face and edge else []


def _dashes(line: Line2D):
    # get_linestyle() reads "--" for every custom dash pattern; the pattern itself tells them apart.
    offset, pattern = getattr(line, "_unscaled_dash_pattern", (0, line.get_linestyle()))
    return line.get_linestyle() if pattern is None else (offset, tuple(pattern))


def _told_apart_by_colour_only(ax) -> list[str]:
    """Return a problem for each pair of named series in `ax` that differ in nothing but colour."""
    seen: dict[tuple, str] = {}
    problems = []
    named = [(line.get_label(), (_dashes(line), line.get_marker())) for line in _series_lines(ax)
             if not line.get_label().startswith("_")]
    named += [(bars.get_label(), ("bar", bars.patches[0].get_hatch() or "")) for bars in ax.containers
              if isinstance(bars, BarContainer) and bars.patches and not bars.get_label().startswith("_")]
    for label, look in named:
        if look in seen and seen[look] != label:
            problems.append(_("{first} and {second} differ by colour only (same style and marker)").format(
                first=repr(seen[look]), second=repr(label)))
        seen.setdefault(look, label)
    return problems


def colour_problems(figure) -> list[str]:
    """Return every place where `figure` relies on colour or lacks contrast ([] when none).

    Text must reach 4.5:1 and lines and bars 3:1 against what lies behind them, for normal
    vision and for every simulated deficiency and greyscale; named series in one plot must
    differ by line style, marker or hatch, not by colour alone.
    """
    figure.draw_without_rendering()
    problems = _text_problems(figure)
    for ax in figure.axes:
        problems += _line_problems(ax) + _told_apart_by_colour_only(ax)
    return problems


def figure_problems(figure, alt: str) -> list[str]:
    """Return `alt_problems(alt, figure)` and `colour_problems(figure)` together."""
    return alt_problems(alt, figure) + colour_problems(figure)

