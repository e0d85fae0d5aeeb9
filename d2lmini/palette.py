"""The course palette: colours, line styles and markers that every figure draws with (every notebook).

Each series differs from the others by colour *and* by line style and marker, so a figure reads
the same in greyscale and under any colour-vision deficiency. Every colour here has a contrast of
at least 4.5:1 against the white figure background (WCAG 2.1: 3:1 is enough for a line, 4.5:1 for
text), so a series' colour may also be used for its label. Matplotlib's default orange (2.5:1)
and pale fills are not used.

`contrast_ratio` is WCAG 2.1's; `simulate` applies the colour-vision-deficiency matrices of
Machado, Oliveira and Fernandes (2009, severity 1) in linear RGB, so tests can check that what a
figure draws stays visible to a reader with protanopia, deuteranopia or tritanopia.
"""

import matplotlib.colors as mcolors
import numpy as np
from cycler import cycler

from d2lmini.fonts import cjk_family

BACKGROUND = "#ffffff"
# Blue, dark orange, bluish green, reddish purple, near-black, brown: at least 4.5:1 on white.
SERIES_COLOURS = ("#0072b2", "#a35200", "#007a5e", "#b8007a", "#333333", "#8c510a")
LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)))
MARKERS = ("o", "s", "^", "D", "v", "x")
TEXT_COLOUR = "#222222"
MUTED_TEXT_COLOUR = "#595959"  # 7:1 on white: secondary labels, baselines' names
REFERENCE_LINE_COLOUR = "#666666"  # 5.7:1: baselines and reference lines
ERROR_COLOUR = "#b30000"
HIGHLIGHT_COLOUR = "#b8007a"  # the one marked item of a figure (a predicted character, a strongest bar)

MIN_LINE_CONTRAST = 3.0  # WCAG 2.1 SC 1.4.11, graphical objects
MIN_TEXT_CONTRAST = 4.5  # WCAG 2.1 SC 1.4.3, normal-size text

# Machado et al. (2009), severity 1.0, applied to linear RGB.
DEFICIENCY_MATRICES = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
# Rec. 709 luminance weights: what a greyscale print keeps.
LUMINANCE_WEIGHTS = np.array([0.2126, 0.7152, 0.0722])
VISIONS = ("normal", *DEFICIENCY_MATRICES, "greyscale")


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _srgb(linear: np.ndarray) -> np.ndarray:
    linear = np.clip(linear, 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def relative_luminance(colour) -> float:
    """Return the WCAG 2.1 relative luminance (0 black to 1 white) of a matplotlib colour."""
    return float(_linear(np.asarray(mcolors.to_rgb(colour))) @ LUMINANCE_WEIGHTS)


def contrast_ratio(foreground, background=BACKGROUND) -> float:
    """Return the WCAG 2.1 contrast ratio (1 to 21) between two matplotlib colours."""
    dark, light = sorted((relative_luminance(foreground), relative_luminance(background)))
    return (light + 0.05) / (dark + 0.05)


def simulate(rgb: np.ndarray, vision: str) -> np.ndarray:
    """Return sRGB values `rgb` (..., 3), floats in [0, 1], as seen with `vision` (one of `VISIONS`).

    Works on one colour or on a whole rendered image; "greyscale" keeps only the luminance.
    """
    rgb = np.asarray(rgb, dtype=float)
    if rgb.shape[-1] != 3:
        raise ValueError(f"rgb must end in 3 channels (R, G, B), not shape {rgb.shape}")
    if vision == "normal":
        return rgb
    linear = _linear(rgb)
    if vision == "greyscale":
        grey = linear @ LUMINANCE_WEIGHTS
        return _srgb(np.repeat(grey[..., None], 3, axis=-1))
    if vision not in DEFICIENCY_MATRICES:
        raise ValueError(f"vision must be one of {', '.join(VISIONS)}, not {vision!r}")
    return _srgb(linear @ DEFICIENCY_MATRICES[vision].T)


def seen_contrast(foreground, background, vision: str) -> float:
    """Return the contrast between two matplotlib colours as a reader with `vision` sees them."""
    seen = [simulate(np.asarray(mcolors.to_rgb(c)), vision) for c in (foreground, background)]
    return contrast_ratio(tuple(seen[0]), tuple(seen[1]))


def series_style(index: int) -> dict:
    """Return the colour, line style and marker of series `index` (0, 1, ...), for `ax.plot(**style)`."""
    if index < 0:
        raise ValueError(f"index must be 0 or more, not {index}")
    return {"color": SERIES_COLOURS[index % len(SERIES_COLOURS)],
            "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
            "marker": MARKERS[index % len(MARKERS)]}


def course_cycler():
    """Return the property cycle of the course: colour and line style change together.

    No markers: a line of hundreds of points drawn without a format string would be a row of
    them. Figures of a few points add `series_style(i)["marker"]`.
    """
    return cycler(color=list(SERIES_COLOURS), linestyle=list(LINE_STYLES))


def course_rc() -> dict:
    """Return matplotlib settings for the course's figures (`plt.rcParams.update(course_rc())`).

    "C0", "C1", ... then name the course's colours, and lines drawn without a format string
    differ in line style too; text is near-black; Chinese text is drawn with the CJK font the
    package ships (`d2lmini.fonts`), after matplotlib's own sans-serif fonts.
    """
    # matplotlib falls back glyph by glyph along font.family only, not along font.sans-serif
    return {"axes.prop_cycle": course_cycler(), "lines.markersize": 4,
            "font.family": ["sans-serif", cjk_family()],
            "text.color": TEXT_COLOUR, "axes.labelcolor": TEXT_COLOUR, "axes.edgecolor": TEXT_COLOUR,
            "xtick.color": TEXT_COLOUR, "ytick.color": TEXT_COLOUR, "figure.facecolor": BACKGROUND,
            "axes.facecolor": BACKGROUND, "savefig.facecolor": BACKGROUND}
