"""Tests of notebook 03's panel and its plain functions (its figures: test_figures.py)."""

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from d2lmini.text import Vocab, tokenize  # noqa: E402
from d2lmini.widgets.one_hot import (  # noqa: E402
    OneHotView,
    batch_html,
    encode_text,
    encoding_html,
    layout_html,
    make_one_hot_panel,
    minibatch_layout,
    minibatch_positions,
    transpose_batch,
)

pytestmark = pytest.mark.torch_dependent


@pytest.fixture
def small_vocab():
    # counts: b 3, a 2, c 1  ->  <unk> 0, b 1, a 2, c 3
    return Vocab(tokenize("aabbbc"))


def test_encode_text_indices_unknown_and_one_hot(small_vocab):
    enc = encode_text("cab?", small_vocab)
    assert enc.tokens == ["c", "a", "b", "?"]
    assert enc.indices == [3, 2, 1, 0]
    assert enc.unknown == ["?"]
    expected = torch.tensor([[0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]])
    assert torch.equal(enc.one_hot, expected)


def test_encode_text_preprocesses_on_request(bundled):
    raw = encode_text("Hi, You!", bundled.vocab)
    assert raw.text == "Hi, You!" and set(raw.unknown) == {"H", ",", "Y", "!"}
    clean = encode_text("Hi, You!", bundled.vocab, preprocess_text=True)
    assert clean.text == "hi you " and clean.unknown == []
    assert clean.one_hot.shape == (7, len(bundled.vocab))
    assert 0 not in clean.indices


def test_encode_empty_text(small_vocab):
    enc = encode_text("", small_vocab)
    assert enc.tokens == [] and enc.one_hot.shape == (0, len(small_vocab))


def test_transpose_batch_rows_and_steps(bundled):
    batch = transpose_batch("abcdefgh", bundled.vocab, 2, 4)
    assert batch.rows == ["abcd", "efgh"]
    assert batch.steps == ["ae", "bf", "cg", "dh"]
    assert batch.X.shape == (2, 4) and batch.X_T.shape == (4, 2)
    assert batch.one_hot.shape == (4, 2, len(bundled.vocab))
    # the 1 of step t, row i sits at the index of character i*steps + t
    assert batch.one_hot[2, 1, bundled.vocab["g"]] == 1
    assert batch.one_hot.sum() == 8


def test_transpose_batch_keeps_unknown_characters_as_typed(bundled):
    batch = transpose_batch("Ab,dEfgh", bundled.vocab, 2, 4)
    assert batch.rows == ["Ab,d", "Efgh"]
    assert batch.steps == ["AE", "bf", ",g", "dh"]
    assert batch.X[0].tolist() == [0, bundled.vocab["b"], 0, bundled.vocab["d"]]
    assert batch.one_hot[2, 0, 0] == 1


def test_transpose_batch_too_short(small_vocab):
    with pytest.raises(ValueError, match="at least 12 characters"):
        transpose_batch("abcab", small_vocab, 3, 4)
    with pytest.raises(ValueError, match="positive"):
        transpose_batch("abcab", small_vocab, 0, 4)


def test_sequential_rows_continue_across_minibatches():
    positions = minibatch_positions(200, "sequential", 3, 7, seed=1)
    assert len(positions) >= 2
    for X in positions:
        assert X.shape == (3, 7)
        assert torch.equal(X[:, 1:] - X[:, :-1], torch.ones(3, 6, dtype=torch.long))
    for before, after in zip(positions, positions[1:], strict=False):
        assert torch.equal(after[:, 0], before[:, -1] + 1)


def test_random_sampling_uses_each_position_once_and_breaks_continuity():
    positions = minibatch_positions(200, "random", 3, 7, seed=1)
    flat = torch.cat([X.flatten() for X in positions])
    assert len(flat) == len(set(flat.tolist()))
    for X in positions:  # every row is still a contiguous piece of text
        assert torch.equal(X[:, 1:] - X[:, :-1], torch.ones(3, 6, dtype=torch.long))
    continues = [torch.equal(b[:, 0], a[:, -1] + 1) for a, b in zip(positions, positions[1:], strict=False)]
    assert not all(continues)


def test_minibatch_layout_matches_positions():
    text = "the river was high and brown in the late winter"
    layout = minibatch_layout(text, "sequential", 2, 5, seed=0)
    positions = minibatch_positions(len(text), "sequential", 2, 5, seed=0)
    assert len(layout) == len(positions)
    for rows, X in zip(layout, positions, strict=True):
        assert rows == [text[row[0]: row[0] + 5] for row in X.tolist()]
    # row 0 read across all minibatches is one unbroken piece of the text
    stream = "".join(rows[0] for rows in layout)
    assert stream in text


def test_layout_too_short_raises():
    with pytest.raises(ValueError, match="does not fit"):
        minibatch_layout("short", "random", 2, 5)
    with pytest.raises(ValueError, match="sampling"):
        minibatch_layout("a long enough text for this", "shuffled", 1, 2)


def test_panel_computes_from_widget_values(bundled, capsys):
    panel = make_one_hot_panel(bundled.vocab, text="Hello there, general reader")
    assert panel.state.encoding.text == "hello there general reader"
    panel.batch_size.value, panel.num_steps.value = 3, 4
    assert panel.state.batch.X.shape == (3, 4)
    assert panel.state.batch.rows == ["hell", "o th", "ere "]
    assert all(X.shape == (3, 4) for X in panel.state.positions)
    panel.sampling.value = "sequential"
    seq = panel.state.positions
    assert all(torch.equal(b[:, 0], a[:, -1] + 1) for a, b in zip(seq, seq[1:], strict=False))
    panel.sampling.value = "random"
    text = panel.state.encoding.text
    expected = minibatch_layout(text, "random", 3, 4, panel.seed.value)
    assert panel.state.layout == expected
    assert panel.problems == [] and "color:#b30000" not in panel.summary.value
    assert "minibatch 0" in panel.layout_view.value
    assert "(3, 4)" in panel.batch_view.value
    assert capsys.readouterr().out == ""


def test_panel_preprocess_toggle_shows_unknown(bundled):
    panel = make_one_hot_panel(bundled.vocab, text="Big Cat")
    panel.preprocess.value = False
    assert panel.state.encoding.unknown == ["B", "C"]
    assert panel.state.encoding.indices[0] == 0
    assert "&lt;unk&gt;" in panel.encoding_view.value


def test_panel_handles_empty_and_short_text(bundled, capsys):
    panel = make_one_hot_panel(bundled.vocab)
    panel.text.value = ""
    assert panel.state == OneHotView()
    assert "Type some text" in panel.summary.value
    panel.text.value = "!!!?"  # preprocesses to a single space
    assert panel.state.encoding.text == " "
    assert panel.state.batch is None and panel.state.layout is None
    assert "at least 10 characters" in panel.summary.value
    assert "does not fit" in panel.summary.value
    assert len(panel.problems) == 2
    panel.text.value = "a text that is long enough"
    assert panel.problems == [] and panel.state.layout is not None
    assert panel.summary.value.startswith("26 characters")
    assert capsys.readouterr().out == ""


def test_panel_layout_shows_labels_in_full_and_opens_with_the_table_closed(bundled):
    panel = make_one_hot_panel(bundled.vocab)
    assert panel.encoding_box.selected_index is None  # closed: the minibatch views stay above the fold
    assert panel.encoding_box.get_title(0).startswith("tokens, indices and one-hot vectors")
    assert panel.sampling.style.button_width == "auto"  # "sequential partitioning", not "sequential partiti…"
    assert not panel.preprocess.indent and panel.preprocess.layout.width == "auto"
    for slider in (panel.batch_size, panel.num_steps, panel.seed):
        assert slider.style.description_width == "initial"
    children = panel.widget.children
    assert children.index(panel.encoding_box) < children.index(panel.batch_view)


def test_update_disables_the_controls_but_not_the_text_box_and_returns_the_view(bundled):
    panel = make_one_hot_panel(bundled.vocab, text="a text long enough for two rows of five")
    assert panel.controls[0] is panel.text and panel.text.continuous_update is False  # sent on blur
    seen = []
    panel.layout_view.observe(lambda change: seen.append([c.disabled for c in panel.controls]), names="value")
    panel.num_steps.value = 4
    panel.text.value = "another text long enough for two rows"
    assert seen == [[False] + [True] * 5] * 2 and not any(c.disabled for c in panel.controls)
    assert panel.update() is panel.state and isinstance(panel.state, OneHotView)
    assert all(len(row) == 4 for batch in panel.state.layout for row in batch)


def test_every_table_of_the_panel_has_header_cells(bundled):
    """A screen reader names each cell by its row and column headers (the 24 x 30 one-hot had none)."""
    views = [encoding_html(encode_text("the cat", bundled.vocab), bundled.vocab),
             batch_html(transpose_batch("the time machine", bundled.vocab, 2, 3)),
             layout_html("abcdefghijklmnop", minibatch_positions(16, "sequential", 2, 3, seed=0))]
    for view in views:
        tables = re.findall(r"<table.*?</table>", view, flags=re.S)
        assert tables and all('<th scope="row"' in table for table in tables)
    assert view.count("<table") == len(re.findall('<th scope="row"[^>]*>[^<]*row 0<', view))
    assert '<th scope="col"' in views[0]
