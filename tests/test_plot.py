"""Tests for d2lmini.plot: the perplexity plot's baseline labels, and PNG helpers."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from figure_layout import drawn_texts, outside_figure, overlapping_texts  # noqa: E402

from d2lmini.plot import LineLabels, LivePlot, plot_perplexity, spread_apart  # noqa: E402
from d2lmini.train import History  # noqa: E402

# What notebook 07 drew when its labels collided: the bundled corpus's baselines (two of them
# 0.4 apart) and the Markov source's, whose floor the curves run into.
BUNDLED = History(epoch=[1, 2, 3, 4], train_perplexity=[9.6, 7.2, 6.4, 6.0],
                  valid_perplexity=[7.8, 6.9, 6.5, 6.4])
BUNDLED_LINES = {"unigram": 16.51, "KN n=2": 9.74, "best n-gram (KN n=6)": 4.55, "ppmd": 4.16}
MARKOV = History(epoch=[0.2 * i for i in range(1, 12)],
                 train_perplexity=[5.9, 4.3, 4.15, 4.1, 4.0, 3.98, 3.97, 3.99, 3.97, 3.9, 3.92],
                 valid_perplexity=[4.65, 4.2, 4.15, 4.12, 4.1, 4.07, 4.06, 4.05, 4.05, 4.05, 4.05])
MARKOV_LINES = {"uniform": 9.0, "unigram": 7.8, "entropy floor (a limit)": 3.94}


def test_spread_apart_keeps_far_positions_and_centres_close_ones():
    assert spread_apart([10.0, 50.0, 30.0], 5) == [10.0, 50.0, 30.0]
    assert spread_apart([100.0, 101.0], 10) == [95.5, 105.5]  # centred on their mean
    placed = spread_apart([0.0, 1.0, 2.0, 40.0, 41.0], 10)
    assert placed[:3] == pytest.approx([-9.0, 1.0, 11.0])
    assert placed[3] - placed[2] >= 10 and placed[4] - placed[3] == pytest.approx(10)
    assert spread_apart([], 3) == []


@pytest.mark.parametrize("history, lines, title", [
    (BUNDLED, BUNDLED_LINES, "Scratch RNN on the bundled corpus"),
    (MARKOV, MARKOV_LINES, "Scratch RNN on the synthetic Markov source"),
])
def test_notebook_07s_perplexity_plots_have_no_overlapping_labels(history, lines, title):
    live = LivePlot(lines, title=title)  # as notebook 07 draws them (section 6 uses LivePlot)
    try:
        plot_perplexity(live.ax, history, lines, title)
        live.figure.tight_layout()
        assert overlapping_texts(live.figure) == []
        assert outside_figure(live.figure) == []
        shown = {t.get_text(): box for t, box in drawn_texts(live.figure)}
        plot_box = live.ax.get_window_extent()
        for name, value in lines.items():
            assert shown[f"{name} {value:.2f}"].x0 >= plot_box.x1  # right of the plot: no curve crosses it
    finally:
        plt.close(live.figure)


def test_labels_follow_limits_set_after_plotting_and_skip_lines_off_the_plot():
    figure, ax = plt.subplots(figsize=(6, 3.2))
    try:
        plot_perplexity(ax, BUNDLED, BUNDLED_LINES)
        ax.set_ylim(1, 10)  # as the lab does: the unigram line (16.51) is now off the plot
        figure.tight_layout()
        shown = {t.get_text(): box for t, box in drawn_texts(figure)}
        assert "unigram 16.51" not in shown and overlapping_texts(figure) == []
        line_height = ax.transData.transform((0, 9.74))[1]
        box = shown["KN n=2 9.74"]
        assert box.y0 <= line_height <= box.y1  # written at its line's height
    finally:
        plt.close(figure)


def test_line_labels_are_the_artists_children(ax):
    labels = LineLabels(ax, {"a 1.00": 1.0, "b 2.00": 2.0})
    assert [t.get_text() for t in labels.get_children()] == ["a 1.00", "b 2.00"]
    assert labels in ax.artists
