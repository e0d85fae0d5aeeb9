"""Tests for the gradient-reach panel of notebook 05 (its static figures: test_figures.py)."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from d2lmini.gradcheck import gradient_norms_back_in_time  # noqa: E402
from d2lmini.plot import png_size  # noqa: E402
from d2lmini.widgets.gradients import (  # noqa: E402
    GradientReachPanel,
    describe_change,
    draw_reach,
    reach_limits,
    reach_view,
)

pytestmark = pytest.mark.torch_dependent


def test_reach_view_keeps_exactly_the_steps_inside_the_window():
    view = reach_view(0.9, truncation=5, max_k=20)
    assert view.k == list(range(21))
    assert view.kept == [k < 5 for k in range(21)]
    assert view.reference[3] == pytest.approx(0.9**3)
    assert view.norms == gradient_norms_back_in_time(0.9, 20)
    dropped = sum(view.norms[5:]) / sum(view.norms)
    assert view.dropped_share == pytest.approx(dropped)
    assert reach_view(0.9, truncation=21, max_k=20).dropped_share == 0.0
    with pytest.raises(ValueError, match="between 1 and 21"):
        reach_view(0.9, truncation=0, max_k=20)
    with pytest.raises(ValueError, match="positive"):
        reach_view(0.0, truncation=3)


def test_reach_view_summary_names_the_regime():
    assert "vanishes" in reach_view(0.4, 10).summary
    assert "explodes" in reach_view(2.0, 10, inputs=False).summary
    assert "drops 0.0% of" in reach_view(1.0, 51, inputs=False).summary  # nothing truncated


def test_draw_reach_greys_out_the_truncated_part(ax):
    draw_reach(ax, reach_view(1.2, truncation=8, max_k=30))
    labels = [line.get_label() for line in ax.get_lines()]
    assert "kept by truncated BPTT" in labels and "dropped" in labels
    draw_reach(ax, reach_view(1.2, truncation=31, max_k=30))  # nothing truncated: no grey part
    assert "dropped" not in [line.get_label() for line in ax.get_lines()]


def test_panel_follows_its_sliders():
    panel = GradientReachPanel(radius=0.9, truncation=20, max_k=30)
    first = panel.image.value
    assert panel.view.kept.count(True) == 20 and first
    panel.truncation.value = 4
    assert panel.view.kept.count(True) == 4
    assert "truncating after 4 steps" in panel.status.value
    panel.radius.value = 1.5
    assert panel.view.reference[2] == pytest.approx(1.5**2)
    with_inputs = panel.view.norms
    panel.inputs.value = False
    assert panel.view.norms == gradient_norms_back_in_time(1.5, 30, input_scale=0.0)
    assert panel.view.norms != with_inputs
    assert panel.image.value != first


def test_summary_states_the_measured_change_not_a_fixed_claim():
    view = reach_view(1.0, 20)  # spectral radius 1 with inputs: tanh saturates and the norm falls
    factor = view.norms[0] / view.norms[-1]
    assert factor > 10 and f"falls {factor:.3g}-fold" in view.summary
    assert "moderate" not in view.summary
    assert describe_change([1.0, 0.9, 0.8]).startswith("going 2 steps back, ‖dL/dH‖ stays within a factor")
    assert "grows 4-fold" in describe_change([1.0, 2.0, 4.0]) and "explodes" not in describe_change([1, 2, 4])
    assert "(it explodes)" in describe_change([1.0, 1e4]) and "(it vanishes)" in describe_change([1.0, 1e-4])
    assert "×0.500 per step" in describe_change([1.0, 0.5, 0.25])


def test_panel_disables_its_controls_while_computing_and_fits_a_laptop():
    panel = GradientReachPanel(radius=0.9, truncation=20, max_k=20)
    seen = []
    panel.status.observe(lambda change: seen.append([c.disabled for c in panel.controls]), names="value")
    panel.radius.value = 1.2
    assert seen == [[True, True, True]] and not any(c.disabled for c in panel.controls)
    assert not panel.inputs.indent and panel.inputs.layout.width == "auto"  # the label in full
    assert panel.image.layout.width == f"{png_size(panel.image.value)[0]}px"


@pytest.mark.parametrize("inputs", [True, False])
@pytest.mark.parametrize("end", ["min", "max"])
def test_every_curve_stays_on_the_plot_at_the_ends_of_the_radius_slider(ax, end, inputs):
    # With a fixed axis of 1e-12 ... 1e12, rho = 0.3 and rho = 2.5 ran off the plot (issue #19).
    panel = GradientReachPanel(radius=0.9, truncation=20, max_k=50)
    radius = getattr(panel.radius, end)
    for truncation in (panel.truncation.min, panel.truncation.max):
        view = reach_view(radius, truncation, max_k=50, inputs=inputs)
        draw_reach(ax, view)
        low, high = ax.get_ylim()
        drawn = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
        assert drawn and low <= min(drawn) and max(drawn) <= high, (radius, truncation, low, high)
        assert (low, high) == reach_limits(view)
    assert radius in (0.3, 2.5)  # the slider's ends, as the observer reported them
