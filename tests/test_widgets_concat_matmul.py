"""Tests for the block-matrix panel of notebook 02."""

import itertools

import matplotlib.pyplot as plt
import pytest
import torch
from figure_layout import drawn_texts, overlapping_texts

from d2lmini.plot import png_size
from d2lmini.widgets.concat_matmul import (
    block_figure,
    check_concat_equality,
    describe_check,
    fused_matmul,
    make_concat_matmul_panel,
    two_matmuls,
)

pytestmark = pytest.mark.torch_dependent


@pytest.mark.parametrize("batch, num_inputs, num_hiddens",
                         [(3, 1, 4), (1, 4, 4), (3, 4, 4), (4, 4, 4), (7, 28, 5)])
def test_check_reports_shapes_and_equality(batch, num_inputs, num_hiddens):
    check = check_concat_equality(batch, num_inputs, num_hiddens, seed=1)
    assert check.shapes["[X, H]"] == (batch, num_inputs + num_hiddens)
    assert check.shapes["[W_xh; W_hh]"] == (num_inputs + num_hiddens, num_hiddens)
    assert check.shapes["result"] == (batch, num_hiddens) == check.shapes["H"]
    assert check.equal and 0 <= check.max_abs_diff < 1e-4


def test_large_sums_are_equal_within_a_tight_rounding_bound():
    # 284-term dot products of N(0, 1) numbers: plain rtol/atol 1e-5 is too strict here
    check = check_concat_equality(32, 28, 256, seed=0)
    assert check.equal and check.max_abs_diff <= check.tolerance
    assert check.tolerance < 1e-3 * float(check.result.abs().max()), "the bound must stay small"


def test_float64_gives_a_much_smaller_difference():
    single = check_concat_equality(16, 20, 30, seed=3)
    double = check_concat_equality(16, 20, 30, seed=3, dtype=torch.float64)
    assert double.equal and double.tolerance < 1e-6 * single.tolerance
    assert double.max_abs_diff < 1e-12


def test_result_matches_an_elementwise_sum():
    check = check_concat_equality(2, 3, 2, seed=5)
    generator = torch.Generator().manual_seed(5)
    X, H = torch.randn(2, 3, generator=generator), torch.randn(2, 2, generator=generator)
    W_xh, W_hh = torch.randn(3, 2, generator=generator), torch.randn(2, 2, generator=generator)
    for i in range(2):
        for j in range(2):
            entry = sum(X[i, k] * W_xh[k, j] for k in range(3)) + sum(H[i, k] * W_hh[k, j] for k in range(2))
            assert float(check.result[i, j]) == pytest.approx(float(entry), abs=1e-5)


def test_seed_changes_the_numbers_but_not_the_verdict():
    a, b = check_concat_equality(3, 2, 4, seed=0), check_concat_equality(3, 2, 4, seed=1)
    assert not torch.equal(a.result, b.result) and a.equal and b.equal
    torch.testing.assert_close(a.result, check_concat_equality(3, 2, 4, seed=0).result)


def test_fused_detects_a_wrong_stacking_order():
    # stacking the weights the wrong way round only fits when the sizes match, and then differs
    generator = torch.Generator().manual_seed(0)
    X, H = torch.randn(3, 4, generator=generator), torch.randn(3, 4, generator=generator)
    W_xh, W_hh = torch.randn(4, 4, generator=generator), torch.randn(4, 4, generator=generator)
    assert torch.allclose(fused_matmul(X, H, W_xh, W_hh), two_matmuls(X, H, W_xh, W_hh), atol=1e-5)
    assert not torch.allclose(fused_matmul(X, H, W_hh, W_xh), two_matmuls(X, H, W_xh, W_hh), atol=1e-3)


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="num_hiddens"):
        check_concat_equality(1, 1, 0)


def test_describe_check_mentions_shapes_and_verdict():
    text = describe_check(check_concat_equality(3, 1, 4))
    assert "(3, 5)" in text and "(5, 4)" in text and "equal" in text


def test_panel_sliders_redraw_and_recheck():
    panel = make_concat_matmul_panel()
    assert panel.check.shapes["X"] == (3, 1)
    first_image = panel.image.value
    panel.num_inputs.value = 6
    panel.num_hiddens.value = 2
    panel.batch.value = 5
    assert panel.check.shapes["[X, H]"] == (5, 8)
    assert panel.check.shapes["[W_xh; W_hh]"] == (8, 2)
    assert panel.check.equal and "(5, 8)" in panel.status.value
    assert panel.image.value != first_image and panel.image.value[:4] == b"\x89PNG"
    before = panel.check.result
    panel.seed.value = 7
    assert not torch.equal(before, panel.check.result)


def test_panel_shows_the_picture_at_its_own_pixel_width():
    panel = make_concat_matmul_panel()
    width, _ = png_size(panel.image.value)
    assert panel.image.layout.width == f"{width}px" and panel.image.layout.max_width == "100%"
    panel.num_hiddens.value = 32
    assert panel.image.layout.width == f"{png_size(panel.image.value)[0]}px"


def _ends(slider):
    return (slider.min, slider.max)


def test_block_labels_never_overlap_at_the_ends_of_the_sliders():
    # At hiddens = 1 the names of the thin blocks piled up on each other (issue #19).
    panel = make_concat_matmul_panel()
    sizes = list(itertools.product(_ends(panel.batch), _ends(panel.num_inputs), _ends(panel.num_hiddens)))
    assert (3, 1, 1) not in sizes
    for batch, num_inputs, num_hiddens in [*sizes, (3, 1, 1), (3, 1, 4), (16, 2, 1)]:
        figure = block_figure(batch, num_inputs, num_hiddens)
        figure.tight_layout()
        try:
            assert overlapping_texts(figure) == [], (batch, num_inputs, num_hiddens)
            ax = figure.axes[0]
            blocks = [p for p in ax.patches if p.get_label() and not p.get_label().startswith("_")]
            legend = ax.get_legend().get_window_extent()
            for text, box in drawn_texts(figure):  # a name shown sits inside its block
                if (text.get_gid() or "").startswith("label:"):
                    name = text.get_gid().removeprefix("label:")
                    (block,) = [b.get_window_extent() for b in blocks if b.get_label() == name]
                    assert block.contains(*box.p0) and block.contains(*box.p1), (name, batch, num_inputs)
            assert not any(legend.overlaps(b.get_window_extent()) for b in blocks)
        finally:
            plt.close(figure)


def test_a_block_too_thin_for_its_name_shows_none_and_the_legend_names_the_colours():
    figure = block_figure(16, 32, 1)
    try:
        ax = figure.axes[0]
        shown = {t.get_gid() for t, _ in drawn_texts(figure) if (t.get_gid() or "").startswith("label:")}
        assert "label:X" in shown and "label:W_hh" not in shown  # W_hh is one entry: no room for a name
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["$X$", "$H$", "$W_{xh}$", "$W_{hh}$"]
        wide = block_figure(3, 4, 4)
        assert sum(1 for t, _ in drawn_texts(wide) if (t.get_gid() or "").startswith("label:")) == 8
        plt.close(wide)
    finally:
        plt.close(figure)
