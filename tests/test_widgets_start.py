"""The temperature panel of notebook 00."""

import math

import pytest

from d2lmini.widgets.start import EXAMPLE_SCORES, make_temperature_panel, softmax_with_temperature

pytestmark = pytest.mark.torch_dependent


def test_probabilities_sum_to_one_and_follow_the_scores():
    probs = softmax_with_temperature(EXAMPLE_SCORES, 1.0)
    assert math.isclose(sum(probs.values()), 1.0)
    assert probs["e"] > probs["a"] > probs["o"] > probs["z"]
    assert math.isclose(probs["e"] / probs["a"], math.e)  # scores differ by 1


def test_low_temperature_sharpens_and_high_temperature_flattens():
    cold = softmax_with_temperature(EXAMPLE_SCORES, 0.1)
    hot = softmax_with_temperature(EXAMPLE_SCORES, 10.0)
    assert cold["e"] > 0.99
    assert max(hot.values()) - min(hot.values()) < 0.1
    with pytest.raises(ValueError):
        softmax_with_temperature(EXAMPLE_SCORES, 0)


def test_moving_the_slider_redraws():
    panel = make_temperature_panel()
    assert panel.shown == softmax_with_temperature(EXAMPLE_SCORES, 1.0)
    seen = []
    panel.slider.observe(lambda change: seen.append(panel.slider.disabled), names="disabled")
    panel.slider.value = 0.2
    assert panel.shown == softmax_with_temperature(EXAMPLE_SCORES, 0.2)
    assert seen == [True, False] and not panel.slider.disabled  # disabled while redrawing
    assert panel.update() is panel.shown and panel.slider in panel.widget.children


def test_the_temperature_label_is_shown_in_full():
    panel = make_temperature_panel()
    assert panel.slider.description == "temperature"
    assert panel.slider.style.description_width == "initial"  # not cut to the default 80 px
