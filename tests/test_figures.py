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
    show_char,
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


# --------------------------------------------------------------- every figure: its alt from its data
# Each case draws one figure-making function's figure and returns (figure, its alt text, made by the
# function's own alt function from the same data). The checks: every number the alt states is drawn,
# the alt is specific plain text, text and lines keep their contrast under every simulated vision,
# and series differ by more than colour (`d2lmini.figure_checks`).

from d2lmini.figure_checks import alt_problems, colour_problems, figure_problems  # noqa: E402
from d2lmini.figures import (  # noqa: E402
    batch_transpose_alt,
    block_matmul_alt,
    bptt_graph_alt,
    partition_alt,
    reach_curves_alt,
    shift_alt,
    unrolled_rnn_alt,
)
from d2lmini.lab import LabResult, LabSettings  # noqa: E402
from d2lmini.lab.sweep import SweepResult  # noqa: E402
from d2lmini.plot import perplexity_alt, plot_perplexity  # noqa: E402
from d2lmini.train import History  # noqa: E402
from d2lmini.widgets import clipping, gradients, hidden_state, lab_views, memory, start  # noqa: E402
from d2lmini.widgets.perplexity import ConfidencePanel  # noqa: E402

MARKOV = History(epoch=[0.2 * i for i in range(1, 12)],
                 train_perplexity=[5.9, 4.3, 4.15, 4.1, 4.0, 3.98, 3.97, 3.99, 3.97, 3.9, 3.92],
                 valid_perplexity=[4.65, 4.2, 4.15, 4.12, 4.1, 4.07, 4.06, 4.05, 4.05, 4.05, 4.05],
                 minibatches=[20 * i for i in range(1, 12)])
MARKOV_LINES = {"uniform": 9.0, "unigram": 7.8, "entropy floor (a limit)": 3.94}


def _clipping_result(theta, method="norm", seed=0) -> clipping.ClippingResult:
    generator = torch.Generator().manual_seed(seed)
    norms = (torch.rand(40, generator=generator) * 5 + 0.2).tolist()
    losses = torch.linspace(3.3, 1.9, 40).tolist()
    clipped = sum(n > theta for n in norms) if theta is not None else 0
    return clipping.ClippingResult(method, theta, 1.0, seed, 28, steps=40, step_grad_norm=norms,
                                   step_loss=losses, clipped_steps=clipped, step_cosine=[])


def _lab_result(hiddens: int, ppl: list[float]) -> LabResult:
    result = LabResult(LabSettings(num_hiddens=hiddens))
    result.history = History(epoch=[0.5 * (i + 1) for i in range(len(ppl))],
                             minibatches=[50 * (i + 1) for i in range(len(ppl))],
                             train_perplexity=[p - 0.3 for p in ppl], valid_perplexity=ppl,
                             valid_estimated=[False] * len(ppl))
    result.valid_perplexity = ppl[-1]
    return result


def _one_axes(draw):
    figure, ax = plt.subplots(figsize=(8, 4))
    alt = draw(ax)
    return figure, alt


def _unrolled():
    return _one_axes(lambda ax: (draw_unrolled_rnn(ax, 3), unrolled_rnn_alt(3))[1])


def _block(batch, inputs, hiddens):
    return lambda: _one_axes(lambda ax: (draw_block_matmul(ax, batch, inputs, hiddens),
                                         block_matmul_alt(batch, inputs, hiddens))[1])


def _shift():
    return _one_axes(lambda ax: (draw_shift(ax, "machine"), shift_alt("machine"))[1])


def _partition():
    text = "the quick brown fox jumps over the lazy dog, twice" * 2
    positions = minibatch_positions(len(text), "sequential", 3, 5, seed=4)
    return _one_axes(lambda ax: (draw_partition(ax, text, positions, "sequential partitioning"),
                                 partition_alt(text, positions, "sequential partitioning"))[1])


def _bptt():
    return _one_axes(lambda ax: (draw_bptt_graph(ax, 3), bptt_graph_alt(3))[1])


def _reach_curves():
    def draw(ax):
        curves = draw_reach_curves(ax, [0.5, 0.9, 1.0, 1.1, 1.5], max_k=12, input_scale=0.0)
        return reach_curves_alt(curves, 0.0)
    return _one_axes(draw)


def _perplexity():
    title = "Scratch RNN on the synthetic Markov source"
    return _one_axes(lambda ax: (plot_perplexity(ax, MARKOV, MARKOV_LINES, title),
                                 perplexity_alt(MARKOV, MARKOV_LINES, title))[1])


def _hidden_state():
    states = torch.rand(5, 32, generator=torch.Generator().manual_seed(1)) * 1.8 - 0.9
    view = hidden_state.ExplorerView("the t", states, list("the t"), [("i", 0.4)])
    return hidden_state.view_figure(view), hidden_state.view_alt(view)


def _memory():
    influence = [0.9 / (j + 1) for j in range(12)]
    view = memory.MemoryView(40, list("the machine "), "t", 0.61, influence, 1, "summary")
    return _one_axes(lambda ax: (memory.draw_memory(ax, view), memory.memory_alt(view))[1])


def _clipping_one():
    result = _clipping_result(1.0)
    return clipping.draw_result(result), clipping.result_alt(result)


def _clipping_runs():
    results = [_clipping_result(None), _clipping_result(1.0, seed=1), _clipping_result(0.05, "value", 2)]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    clipping.plot_grad_norms(left, results)
    clipping.plot_losses(right, results)
    return figure, clipping.runs_alt(results)


def _clipping_losses():
    results = [_clipping_result(None), _clipping_result(1.0, seed=1), _clipping_result(0.05, "value", 2)]
    figure, ax = plt.subplots(figsize=(6, 3.6))
    clipping.plot_losses(ax, results)
    return figure, clipping.losses_alt(results)


def _gradient_reach():
    view = gradients.reach_view(1.1, 6, max_k=15, inputs=False)
    return _one_axes(lambda ax: (gradients.draw_reach(ax, view), gradients.reach_alt(view))[1])


def _lab_curves():
    curves = [("#1: hidden 16", _lab_result(16, [9.1, 7.2, 6.5])),
              ("#2: hidden 32", _lab_result(32, [8.7, 6.6, 5.9])),
              ("#3: hidden 64", _lab_result(64, [8.5, 6.1, 5.4])),
              ("#4: hidden 128", _lab_result(128, [8.6, 6.0, 5.2]))]
    shown = [(name, result.history) for name, result in curves]
    baselines = {"uniform": 28.0, "unigram": 16.5, "KN n=3": 6.41}
    return lab_views.curves_figure(shown, baselines, 3.2), lab_views.curves_alt(shown, baselines, 3.2)


def _lab_sweep():
    values = [16, 32, 64]
    sweep = SweepResult(LabSettings(), "num_hiddens", values,
                        [_lab_result(v, [8.0, 7.0 - v / 40]) for v in values])
    lines = {"KN n=3": 6.41, "ppmd": 4.9}
    return lab_views.sweep_figure(sweep, lines), lab_views.sweep_alt(sweep, lines)


def _confidence():
    generator = torch.Generator().manual_seed(0)
    log_probs = torch.log_softmax(torch.randn(200, 6, generator=generator) * 2, dim=1)
    targets = torch.randint(0, 6, (200,), generator=generator)
    panel = ConfidencePanel(log_probs, targets)
    return panel.draw(), panel.alt()


def _temperature_bars():
    probs = start.softmax_with_temperature(start.EXAMPLE_SCORES, 0.7)
    return start.bars_figure(probs, 0.7), start.bars_alt(probs, 0.7)


FIGURES = {"unrolled RNN (01)": _unrolled, "block matmul 3x1x4 (02)": _block(3, 1, 4),
           "block matmul 8x28x16 (02)": _block(8, 28, 16), "shift (03)": _shift, "partition (03)": _partition,
           "BPTT graph (05)": _bptt, "reach curves (05)": _reach_curves,
           "gradient reach panel (05)": _gradient_reach,
           "memory panel (05)": _memory, "perplexity plot (04, 07)": _perplexity,
           "hidden-state heatmap (01)": _hidden_state, "clipping panel (06)": _clipping_one,
           "clipping runs (06)": _clipping_runs, "clipping losses (06)": _clipping_losses,
           "lab curves (08)": _lab_curves, "lab sweep (08)": _lab_sweep, "confidence panel (07)": _confidence,
           "temperature bars (00)": _temperature_bars}


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_is_described_by_its_own_data_and_readable_without_colour(name):
    figure, alt = FIGURES[name]()
    try:
        assert figure_problems(figure, alt) == []
    finally:
        plt.close(figure)


def test_batch_transpose_is_described_by_its_own_data(bundled):
    figure, ax = plt.subplots(figsize=(11, 3.2))
    try:
        draw_batch_transpose(ax, ["abc", "def"], bundled.vocab)
        assert figure_problems(figure, batch_transpose_alt(["abc", "def"], bundled.vocab)) == []
    finally:
        plt.close(figure)


# The regressions planted in a copy of the course (issue 35) that passed every test then.

def test_a_meaningless_alt_is_caught():
    figure, alt = _perplexity()
    try:
        assert alt_problems(alt, figure) == []
        assert any("does not say what" in p for p in alt_problems("figure", figure))
        assert any("does not say what" in p for p in alt_problems("Figure.", figure))
    finally:
        plt.close(figure)


def test_a_stale_alt_whose_numbers_are_not_the_figures_is_caught():
    figure, alt = _perplexity()
    try:
        stale = alt.replace("4.05", "4.31")  # the last validation perplexity of an earlier run
        assert stale != alt and any("4.31" in p for p in alt_problems(stale, figure))
        # notebook 07's wrong count: 12 epochs where the axis spans 0.2 to 2.2
        assert any("12" in p for p in alt_problems(alt + " Trained for 12 epochs.", figure))
    finally:
        plt.close(figure)


def test_an_html_escaped_alt_is_caught():
    figure, alt = _perplexity()
    try:
        assert any("HTML" in p for p in alt_problems(alt + " read &#x27;the&#x27;", figure))
        assert any("HTML" in p for p in alt_problems(alt + " read &amp;", figure))
    finally:
        plt.close(figure)


def test_curves_told_apart_by_colour_only_are_caught():
    figure, ax = plt.subplots()
    try:
        for index, colour in enumerate(("#0072b2", "#a35200", "#007a5e")):
            ax.plot([1, 2, 3], [index, index + 1, index + 3], "-", color=colour, label=f"run #{index + 1}")
        assert sum("colour only" in p for p in colour_problems(figure)) == 2
    finally:
        plt.close(figure)


def test_faint_text_and_lines_in_a_figure_are_caught():
    figure, ax = plt.subplots()
    try:
        ax.plot([1, 2], [1, 2], color="#ff7f0e", label="matplotlib's default orange")  # 2.5:1
        ax.text(1.5, 1.5, "baseline", color="#c8c8c8")  # 1.6:1
        problems = colour_problems(figure)
        assert any("'baseline'" in p and "1.6" in p for p in problems)
        assert any("default orange" in p for p in problems)
    finally:
        plt.close(figure)


def test_a_colour_that_fails_only_under_a_deficiency_is_caught():
    figure, ax = plt.subplots()
    try:
        ax.set_facecolor("#042094")  # 3.7:1 for normal vision, 2.3:1 with protanopia
        ax.plot([1, 2], [1, 2], color="#e3641a", label="orange on blue")
        problems = colour_problems(figure)
        assert any("orange on blue" in p and "protanopia" in p for p in problems)
    finally:
        plt.close(figure)


def test_show_figure_refuses_a_figure_with_a_wrong_alt():
    from d2lmini.plot import show_figure
    figure, alt = _perplexity()
    with pytest.raises(ValueError, match="does not draw"):
        show_figure(figure, alt.replace("4.05", "4.31"))
    plt.close(figure)


def test_bars_palest_where_tallest_are_caught():
    """09's influence bars (issue 47): viridis by height, 1.3:1 on white at the tallest; the first bar
    alone (the check's old sample) is dark."""
    figure, ax = plt.subplots()
    try:
        heights = [0.1, 0.2, 0.4, 0.8, 1.0]
        ax.bar(range(5), heights, color=plt.get_cmap("viridis")(heights), label="influence")
        assert any("'influence'" in p and "neither fill nor edge" in p for p in colour_problems(figure))
    finally:
        plt.close(figure)


def test_pale_cells_of_a_grid_are_caught():
    """03's partition figure (issue 47): pale fills (about 2:1 on white) with white edges."""
    figure, ax = plt.subplots()
    try:
        for x, fill in enumerate(("#8dd3c7", "#ffffb3", "#bebada")):
            ax.add_patch(Rectangle((x, 0), 1, 1, facecolor=fill, edgecolor="white"))
        ax.set_xlim(0, 3)
        assert any(p.startswith("3 filled shapes") for p in colour_problems(figure))
    finally:
        plt.close(figure)


def test_partition_numbers_every_input_with_its_minibatch_and_row():
    """Without colour, 03's partition still says which minibatch each character is in: each input's cell
    holds its minibatch's number and its row; the alt text says so."""
    text = "the quick brown fox jumps over the lazy dog, twice" * 2
    positions = minibatch_positions(len(text), "sequential", 3, 5, seed=4)
    figure, ax = plt.subplots(figsize=(9, 2))
    try:
        draw_partition(ax, text, positions, "sequential partitioning", width=30)
        cells = _rectangles(ax)
        for p, where in enumerate(position_owner(len(text), positions)):
            inside = sorted(t.get_text() for t in ax.texts
                            if cells[p].contains_point(ax.transData.transform(t.get_position())))
            numbers = [] if where is None else [str(where[0]), str(where[1])]
            expected = sorted([show_char(text[p]), *numbers])
            assert inside == expected, (p, inside, expected)
        alt = partition_alt(text, positions, "sequential partitioning")
        assert "number of its minibatch" in alt and "row" in alt
    finally:
        plt.close(figure)
