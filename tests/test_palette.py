"""Tests for d2lmini.palette: the course's colours keep their contrast under every simulated vision."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from d2lmini.palette import (  # noqa: E402
    BACKGROUND,
    ERROR_COLOUR,
    HIGHLIGHT_COLOUR,
    MIN_LINE_CONTRAST,
    MIN_TEXT_CONTRAST,
    MUTED_TEXT_COLOUR,
    REFERENCE_LINE_COLOUR,
    SERIES_COLOURS,
    TEXT_COLOUR,
    VISIONS,
    contrast_ratio,
    course_cycler,
    relative_luminance,
    seen_contrast,
    series_style,
    simulate,
)
from d2lmini.plot import SIGNED_CMAP  # noqa: E402


def test_contrast_ratio_matches_wcag_reference_values():
    assert contrast_ratio("black", "white") == pytest.approx(21.0)
    assert contrast_ratio("white", "white") == pytest.approx(1.0)
    assert contrast_ratio("#767676") == pytest.approx(4.54, abs=0.01)  # the lightest grey for text
    assert contrast_ratio("#ff7f0e") == pytest.approx(2.53, abs=0.01)  # matplotlib's default orange
    assert contrast_ratio("#777777", "#ffffff") == contrast_ratio("#ffffff", "#777777")


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("colour", [*SERIES_COLOURS, TEXT_COLOUR, MUTED_TEXT_COLOUR, REFERENCE_LINE_COLOUR,
                                    ERROR_COLOUR, HIGHLIGHT_COLOUR])
def test_every_course_colour_is_readable_as_text_under_every_vision(colour, vision):
    assert seen_contrast(colour, BACKGROUND, vision) >= MIN_TEXT_CONTRAST > MIN_LINE_CONTRAST


def test_no_two_series_share_a_line_style_and_marker():
    styles = [series_style(i) for i in range(len(SERIES_COLOURS))]
    looks = [(str(style["linestyle"]), style["marker"]) for style in styles]
    assert len(set(looks)) == len(looks)
    assert series_style(len(SERIES_COLOURS)) == series_style(0)
    with pytest.raises(ValueError, match="index"):
        series_style(-1)
    assert len(course_cycler()) == len(SERIES_COLOURS)


def test_simulations_keep_black_and_white_and_greyscale_is_grey():
    for vision in VISIONS:
        assert np.allclose(simulate(np.array([1.0, 1.0, 1.0]), vision), 1.0, atol=0.01)
        assert np.allclose(simulate(np.array([0.0, 0.0, 0.0]), vision), 0.0)
    grey = simulate(np.array([[0.8, 0.2, 0.1], [0.1, 0.5, 0.9]]), "greyscale")
    assert np.allclose(grey[:, 0], grey[:, 1]) and np.allclose(grey[:, 1], grey[:, 2])
    with pytest.raises(ValueError, match="vision"):
        simulate(np.zeros(3), "monochromacy")
    with pytest.raises(ValueError, match="3 channels"):
        simulate(np.zeros(4), "greyscale")


def test_red_and_green_merge_for_red_green_deficiencies_but_not_for_normal_vision():
    red, green = np.array([0.84, 0.15, 0.16]), np.array([0.17, 0.63, 0.17])  # matplotlib's C3 and C2
    gap = {vision: np.abs(simulate(red, vision) - simulate(green, vision)).sum() for vision in VISIONS}
    assert gap["normal"] > 1.0
    assert gap["protanopia"] < 0.5 * gap["normal"] and gap["deuteranopia"] < 0.5 * gap["normal"]


def test_simulating_an_image_keeps_its_shape():
    image = np.random.default_rng(0).random((4, 5, 3))
    for vision in VISIONS:
        seen = simulate(image, vision)
        assert seen.shape == image.shape and seen.min() >= 0 and seen.max() <= 1


@pytest.mark.parametrize("vision", VISIONS)
def test_the_signed_heatmap_keeps_its_sign_in_every_vision(vision):
    """Lightness rises from -1 to +1, so dark is negative and light positive even in greyscale."""
    colours = plt.get_cmap(SIGNED_CMAP)(np.linspace(0, 1, 21))[:, :3]
    luminance = [relative_luminance(tuple(c)) for c in simulate(colours, vision)]
    assert all(b > a for a, b in zip(luminance, luminance[1:], strict=False))
    assert luminance[-1] / luminance[0] > 3  # the ends apart by more than 3:1 (after the +0.05 offsets too)
