"""Tests for the drawn figures of notebooks 01, 02, 03 and 05."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from d2lmini.figures import (  # noqa: E402
    UNUSED,
    block_layout,
    draw_batch_transpose,
    draw_block_matmul,
    draw_bptt_graph,
    draw_partition,
    draw_reach_curves,
    draw_shift,
    draw_unrolled_rnn,
    grid_step_for,
    position_owner,
)
from d2lmini.plot import figure_png, png_size  # noqa: E402
from d2lmini.widgets.one_hot import minibatch_positions  # noqa: E402

pytestmark = pytest.mark.torch_dependent


@pytest.mark.parametrize("num_steps", [1, 3, 5])
def test_unrolled_rnn_has_every_node_and_three_arrows_per_step(ax, num_steps):
    drawn = draw_unrolled_rnn(ax, num_steps)
    expected = {"$H_0$"} | {f"${k}_{t}$" for t in range(1, num_steps + 1) for k in "XHO"}
    assert set(drawn["nodes"]) == expected
    assert len(drawn["arrows"]) == 3 * num_steps
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("$W_{hh}$") == num_steps  # one shared W_hh label per step
    assert all(patch in ax.patches for patch in drawn["arrows"])


def test_unrolled_rnn_rejects_zero_steps(ax):
    with pytest.raises(ValueError):
        draw_unrolled_rnn(ax, 0)


def test_unrolled_rnn_hidden_chain_runs_left_to_right(ax):
    drawn = draw_unrolled_rnn(ax, 3)
    xs = [drawn["nodes"][f"$H_{t}$"].get_x() for t in range(4)]
    assert xs == sorted(xs) and len(set(xs)) == 4


def test_block_layout_shapes():
    shapes = block_layout(3, 1, 4)
    assert shapes["X"] == (3, 1) and shapes["W_xh"] == (1, 4)
    assert shapes["H"] == (3, 4) and shapes["W_hh"] == (4, 4)
    assert shapes["XH"] == (3, 5) and shapes["W"] == (5, 4) and shapes["out"] == (3, 4)
    with pytest.raises(ValueError):
        block_layout(0, 1, 1)


@pytest.mark.parametrize("batch, num_inputs, num_hiddens", [(3, 1, 4), (1, 4, 4), (8, 28, 16), (2, 3, 40)])
def test_block_rectangles_are_drawn_to_scale(ax, batch, num_inputs, num_hiddens):
    rects = draw_block_matmul(ax, batch, num_inputs, num_hiddens)
    unit = rects["X"].get_height() / batch
    sizes = {"X": (batch, num_inputs), "W_xh": (num_inputs, num_hiddens), "H": (batch, num_hiddens),
             "W_hh": (num_hiddens, num_hiddens), "XH:X": (batch, num_inputs), "XH:H": (batch, num_hiddens),
             "W:W_xh": (num_inputs, num_hiddens), "W:W_hh": (num_hiddens, num_hiddens)}
    for name, (rows, cols) in sizes.items():
        assert rects[name].get_height() == pytest.approx(rows * unit), name
        assert rects[name].get_width() == pytest.approx(cols * unit), name
    # the concatenation: H starts where X ends; W_hh sits right under W_xh
    assert rects["XH:H"].get_x() == pytest.approx(rects["XH:X"].get_x() + rects["XH:X"].get_width())
    assert rects["W:W_hh"].get_y() + rects["W:W_hh"].get_height() == pytest.approx(rects["W:W_xh"].get_y())
    assert rects["W:W_hh"].get_x() == pytest.approx(rects["W:W_xh"].get_x())


def test_grid_step_keeps_at_most_twelve_squares_per_side():
    assert [grid_step_for(n) for n in (1, 12, 13, 24, 25, 32, 48, 49)] == [1, 1, 2, 2, 4, 4, 4, 8]


@pytest.mark.parametrize("batch, num_inputs, num_hiddens, step",
                         [(3, 1, 4, 1), (16, 32, 32, 4), (2, 3, 40, 4)])
def test_block_grid_stays_visible_at_large_sizes(ax, batch, num_inputs, num_hiddens, step):
    draw_block_matmul(ax, batch, num_inputs, num_hiddens)
    white = [line for line in ax.get_lines() if line.get_color() == "white"]
    # one line between every `step` entries, in each direction of every block drawn
    blocks = [(batch, num_inputs), (num_inputs, num_hiddens), (batch, num_hiddens),
              (num_hiddens, num_hiddens)]
    expected = 2 * sum((rows - 1) // step + (cols - 1) // step for rows, cols in blocks)
    assert len(white) == expected and expected > 0
    assert (f"one square per {step}×{step} entries" if step > 1 else "one square per entry") in ax.get_title()


def test_png_size_reads_the_header(ax):
    figure = ax.figure
    figure.set_size_inches(5, 2)
    assert png_size(figure_png(figure, dpi=80)) == (400, 160)
    with pytest.raises(ValueError, match="PNG"):
        png_size(b"GIF89a" + bytes(30))


def test_position_owner():
    positions = [torch.tensor([[1, 2], [5, 6]]), torch.tensor([[3, 4], [7, 8]])]
    owner = position_owner(10, positions)
    assert owner[0] is None and owner[9] is None
    assert owner[2] == (0, 0) and owner[6] == (0, 1) and owner[3] == (1, 0) and owner[8] == (1, 1)


def _rectangles(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_draw_shift_pairs_and_boxes():
    fig, ax = plt.subplots()
    pairs = draw_shift(ax, "machine")
    assert "".join(a for a, _ in pairs) == "machin"
    assert "".join(b for _, b in pairs) == "achine"
    assert len(_rectangles(ax)) == 7 + 6 + 6
    with pytest.raises(ValueError):
        draw_shift(ax, "m")
    plt.close(fig)


def test_draw_batch_transpose_counts_cells(bundled):
    fig, ax = plt.subplots()
    shape = draw_batch_transpose(ax, ["abc", "def"], bundled.vocab)
    v = len(bundled.vocab)
    assert shape == (3, 2, v)
    rects = _rectangles(ax)
    assert len(rects) == 2 * 6 + 3 * 2 * v
    hot = [r for r in rects[12:] if r.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert len(hot) == 6  # one coloured cell per (step, row)
    with pytest.raises(ValueError):
        draw_batch_transpose(ax, ["abc", "de"], bundled.vocab)
    plt.close(fig)


def test_draw_partition_colours_only_inputs():
    text = "abcdefghijklmnopqrstuvwxyz" * 2
    positions = minibatch_positions(len(text), "sequential", 2, 4, seed=2)
    fig, ax = plt.subplots()
    draw_partition(ax, text, positions, "sequential", width=13)
    rects = _rectangles(ax)
    assert len(rects) == len(text)
    grey = matplotlib.colors.to_rgba(UNUSED)
    used = {p for X in positions for p in X.flatten().tolist()}
    for p, rect in enumerate(rects):
        assert (rect.get_facecolor() == grey) == (p not in used)
    plt.close(fig)


@pytest.mark.parametrize("num_steps", [1, 3, 4])
def test_bptt_graph_has_a_loss_per_step_and_three_backward_arrows_per_step(ax, num_steps):
    drawn = draw_bptt_graph(ax, num_steps)
    assert {f"$L_{t}$" for t in range(1, num_steps + 1)} <= set(drawn["nodes"])
    assert "$H_0$" in drawn["nodes"]
    # L_t -> O_t, O_t -> H_t and H_t -> H_{t-1} for every step
    assert len(drawn["backward"]) == 3 * num_steps
    assert len(drawn["forward"]) == 3 * num_steps
    assert all(patch in ax.patches for patch in drawn["backward"])


def test_reach_curves_draw_one_line_per_radius(ax):
    curves = draw_reach_curves(ax, [0.5, 1.5], max_k=10, input_scale=0.0)
    assert set(curves) == {0.5, 1.5} and len(ax.get_lines()) == 3  # two curves and the line at 1
    assert curves[0.5][10] < 1e-2 < 1e2 < curves[1.5][10] * 1e2
