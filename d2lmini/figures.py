"""Static figures drawn in code for the notebooks: the unrolled RNN (01), block matrices (02),
shifted labels, the batch transpose and minibatch partitions (03), the backward pass and
gradient reach (05).

Each function draws on a matplotlib `Axes` that the caller owns and returns the
artists it placed, keyed by name, so tests can check what was drawn.
"""

import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch, Rectangle

from d2lmini.figure_checks import DECORATION
from d2lmini.gradcheck import gradient_norms_back_in_time
from d2lmini.i18n import _
from d2lmini.palette import REFERENCE_LINE_COLOUR, SERIES_COLOURS, TEXT_COLOUR, series_style
from d2lmini.text import Vocab

NODE_COLORS = {"x": "#cfe2f3", "h": "#fde9c4", "o": "#d9ead3"}


def _node(ax, x: float, y: float, label: str, color: str, width: float = 0.9, height: float = 0.55):
    box = FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                         boxstyle="round,pad=0.02,rounding_size=0.1",
                         facecolor=color, edgecolor="black", linewidth=1.2)
    ax.add_patch(box)
    ax.text(x, y, label, ha="center", va="center", fontsize=12)
    return box


def _arrow(ax, start, end, label: str = "", offset=(0.0, 0.0)):
    arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, linewidth=1.2, color="black")
    ax.add_patch(arrow)
    if label:
        mid = ((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1])
        ax.text(mid[0], mid[1], label, ha="center", va="center", fontsize=9, color="#444444")
    return arrow


def unrolled_rnn_alt(num_steps: int = 3) -> str:
    """Return the text alternative of `draw_unrolled_rnn(ax, num_steps)` (notebook 01)."""
    inputs = ", ".join(f"X_{t}" for t in range(1, num_steps + 1))
    # TRANSLATORS: {inputs} lists the inputs ("X_1, X_2, X_3"); W_xh, W_hh, W_hq, H_0, H_t, O_t are the
    # figure's symbols, kept as they are.
    return _("Diagram of an RNN unrolled over {num_steps} time steps. Inputs {inputs} at the bottom each "
             "feed the hidden state above them through W_xh; each hidden state feeds the next through "
             "W_hh, starting from H_0 on the left; each H_t gives the output O_t above it through W_hq. "
             "The same three weight matrices label every step.").format(num_steps=num_steps, inputs=inputs)


def draw_unrolled_rnn(ax, num_steps: int = 3) -> dict:
    """Draw an RNN unrolled over `num_steps` time steps on `ax` (notebook 01).

    Inputs X_t at the bottom, hidden states H_t in the middle (starting from H_0 on the
    left), outputs O_t on top. Every step uses the same weights W_xh, W_hh, W_hq, which
    label the arrows. Returns {"nodes": {label: patch}, "arrows": [patch, ...]}.
    """
    if num_steps < 1:
        raise ValueError(_("num_steps must be at least 1, not {value}").format(value=num_steps))
    nodes, arrows = {}, []
    dx, y_x, y_h, y_o = 1.8, 0.0, 1.5, 3.0
    nodes["$H_0$"] = _node(ax, 0.0, y_h, "$H_0$", NODE_COLORS["h"])
    for t in range(1, num_steps + 1):
        x = t * dx
        nodes[f"$X_{t}$"] = _node(ax, x, y_x, f"$X_{t}$", NODE_COLORS["x"])
        nodes[f"$H_{t}$"] = _node(ax, x, y_h, f"$H_{t}$", NODE_COLORS["h"])
        nodes[f"$O_{t}$"] = _node(ax, x, y_o, f"$O_{t}$", NODE_COLORS["o"])
        arrows.append(_arrow(ax, (x, y_x + 0.3), (x, y_h - 0.3), "$W_{xh}$", (0.32, 0)))
        arrows.append(_arrow(ax, (x - dx + 0.47, y_h), (x - 0.47, y_h), "$W_{hh}$", (0, 0.2)))
        arrows.append(_arrow(ax, (x, y_h + 0.3), (x, y_o - 0.3), "$W_{hq}$", (0.32, 0)))
    ax.text(num_steps * dx + 0.75, y_h, "...", ha="center", va="center", fontsize=14)
    ax.set_xlim(-0.7, num_steps * dx + 1.1)
    ax.set_ylim(-0.6, 3.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(_("An RNN unrolled over {num_steps} time steps: the same weights at every step").format(
        num_steps=num_steps))
    return {"nodes": nodes, "arrows": arrows}


BLOCK_COLORS = {"X": "#9fc5e8", "H": "#f9cb9c", "W_xh": "#6fa8dc", "W_hh": "#f6b26b", "out": "#b6d7a8"}
BLOCK_LABELS = {"X": "$X$", "H": "$H$", "W_xh": "$W_{xh}$", "W_hh": "$W_{hh}$"}


def _block(ax, name: str, x: float, y_top: float, rows: int, cols: int, unit: float,
           color: str, label: str, grid_step: int) -> Rectangle:
    """Draw a rows x cols matrix with its top-left corner at (x, y_top); return its rectangle.

    White grid lines separate every `grid_step` rows and columns (every entry when it is 1).
    """
    width, height = cols * unit, rows * unit
    rect = Rectangle((x, y_top - height), width, height, facecolor=color, edgecolor="black", linewidth=1.2)
    rect.set_label(name)
    ax.add_patch(rect)
    for c in range(grid_step, cols, grid_step):
        ax.plot([x + c * unit] * 2, [y_top - height, y_top], color="white", linewidth=0.6, gid=DECORATION)
    for r in range(grid_step, rows, grid_step):
        ax.plot([x, x + width], [y_top - r * unit] * 2, color="white", linewidth=0.6, gid=DECORATION)
    text = ax.text(x + width / 2, y_top - height / 2, label, ha="center", va="center", fontsize=11)
    text.set_gid(f"label:{name}")
    return rect


def _hide_labels_that_do_not_fit(ax, rects: dict[str, Rectangle], room: float = 1.2) -> None:
    """Hide the label of every block in `rects` that is not `room` times smaller than its block.

    Measured on screen with the axes as they are now; laying the figure out tightly afterwards
    only enlarges the axes. Thin blocks (a hidden size of 1) have no room for their names,
    which would run into each other; the legend names every colour instead.
    """
    ax.apply_aspect()  # the blocks' size on screen, as drawn with an equal aspect
    labels = {text.get_gid().removeprefix("label:"): text for text in ax.texts
              if (text.get_gid() or "").startswith("label:")}
    for name, rect in rects.items():
        box, inside = labels[name].get_window_extent(), rect.get_window_extent()
        labels[name].set_visible(box.width * room <= inside.width and box.height * room <= inside.height)


def block_matmul_alt(batch: int, num_inputs: int, num_hiddens: int) -> str:
    """Return the text alternative of `draw_block_matmul`'s picture for these shapes (notebook 02)."""
    k = num_inputs + num_hiddens
    # TRANSLATORS: "{batch} x {num_inputs}" is a matrix's shape (rows x columns); {k} = inputs + hiddens.
    return _("Block picture of [X, H] times [W_xh; W_hh]: X ({batch} x {num_inputs}) and H ({batch} x "
             "{num_hiddens}) side by side make a {batch} x {k} matrix; W_xh ({num_inputs} x {num_hiddens}) "
             "stacked on W_hh ({num_hiddens} x {num_hiddens}) makes a {k} x {num_hiddens} matrix; their "
             "product is {batch} x {num_hiddens}, the same as X W_xh + H W_hh.").format(
        batch=batch, num_inputs=num_inputs, num_hiddens=num_hiddens, k=k)


def block_layout(batch: int, num_inputs: int, num_hiddens: int) -> dict[str, tuple[int, int]]:
    """Return the (rows, columns) of every matrix in the picture of notebook 02.

    X (batch, inputs), W_xh (inputs, hiddens), H (batch, hiddens), W_hh (hiddens,
    hiddens); the concatenations [X, H] (batch, inputs + hiddens) and [W_xh; W_hh]
    (inputs + hiddens, hiddens); the result (batch, hiddens).
    """
    for name, value in (("batch", batch), ("num_inputs", num_inputs), ("num_hiddens", num_hiddens)):
        if value < 1:
            raise ValueError(_("{name} must be at least 1, not {value}").format(name=name, value=value))
    return {
        "X": (batch, num_inputs), "W_xh": (num_inputs, num_hiddens),
        "H": (batch, num_hiddens), "W_hh": (num_hiddens, num_hiddens),
        "XH": (batch, num_inputs + num_hiddens), "W": (num_inputs + num_hiddens, num_hiddens),
        "out": (batch, num_hiddens),
    }


def grid_step_for(largest: int, grid_limit: int = 12) -> int:
    """Return the entries one grid square spans (1, 2, 4, ...): at most `grid_limit` squares in `largest`."""
    step = 1
    while largest > step * grid_limit:
        step *= 2
    return step


def draw_block_matmul(ax, batch: int, num_inputs: int, num_hiddens: int, grid_limit: int = 12) -> dict:
    """Draw X W_xh + H W_hh = [X, H] [W_xh; W_hh] as blocks to scale on `ax` (notebook 02).

    Every matrix is a rectangle whose sides count its rows and columns. Grid lines mark
    every entry while all sizes are at most `grid_limit`, and every 2, 4, 8, ... entries
    for larger sizes (`grid_step_for`; the title says so), so the grid stays readable.
    The left side shows the two products, the right side the concatenated input times the
    stacked weights. A block too small for its name shows none; a legend below names the
    colours. Returns {name: Rectangle} for "X", "W_xh", "H", "W_hh" (left) and
    "XH:X", "XH:H", "W:W_xh", "W:W_hh" (the blocks of the concatenations, right).
    """
    shapes = block_layout(batch, num_inputs, num_hiddens)
    biggest = max(batch, num_inputs + num_hiddens)
    unit = 1.0 / biggest
    grid = grid_step_for(max(batch, num_inputs, num_hiddens), grid_limit)
    gap, top, rects = 0.25, 1.0, {}
    x = 0.0

    def symbol(text: str) -> None:
        nonlocal x
        ax.text(x + gap / 2, top - batch * unit / 2, text, ha="center", va="center", fontsize=16)
        x += gap

    for name in ("X", "W_xh", "H", "W_hh"):
        rows, cols = shapes[name]
        rects[name] = _block(ax, name, x, top, rows, cols, unit, BLOCK_COLORS[name], BLOCK_LABELS[name], grid)
        x += cols * unit + (0.06 if name in ("X", "H") else 0)
        if name == "W_xh":
            symbol("+")
    symbol("=")
    rects["XH:X"] = _block(ax, "XH:X", x, top, batch, num_inputs, unit, BLOCK_COLORS["X"], "$X$", grid)
    x += num_inputs * unit
    rects["XH:H"] = _block(ax, "XH:H", x, top, batch, num_hiddens, unit, BLOCK_COLORS["H"], "$H$", grid)
    x += num_hiddens * unit + 0.06
    rects["W:W_xh"] = _block(ax, "W:W_xh", x, top, num_inputs, num_hiddens, unit,
                             BLOCK_COLORS["W_xh"], "$W_{xh}$", grid)
    rects["W:W_hh"] = _block(ax, "W:W_hh", x, top - num_inputs * unit, num_hiddens, num_hiddens, unit,
                             BLOCK_COLORS["W_hh"], "$W_{hh}$", grid)
    x += num_hiddens * unit
    legend_band = 0.2  # below the tallest block: the legend, inside the axes
    ax.set_xlim(-0.05, x + 0.05)
    ax.set_ylim(top - biggest * unit - 0.06 - legend_band, top + 0.06)
    ax.set_aspect("equal")
    ax.axis("off")
    squares = (_("one square per entry") if grid == 1
               else _("one square per {grid}×{grid} entries").format(grid=grid))
    # TRANSLATORS: a figure's title; {k} = inputs + hiddens; {squares} says what one grid square is
    # ("one square per entry").
    ax.set_title(_("batch = {batch}, inputs = {num_inputs}, hiddens = {num_hiddens}: [X, H] is {batch}×{k}, "
                   "[W_xh; W_hh] is {k}×{num_hiddens} ({squares})").format(
        batch=batch, num_inputs=num_inputs, num_hiddens=num_hiddens, k=num_inputs + num_hiddens,
        squares=squares), fontsize=10)
    swatches = [Rectangle((0, 0), 1, 1, facecolor=BLOCK_COLORS[name], edgecolor="black", label=label)
                for name, label in BLOCK_LABELS.items()]
    ax.legend(handles=swatches, loc="lower center", ncol=4, fontsize=9, frameon=False,
              handlelength=1.2, columnspacing=1.5, borderaxespad=0.1)
    _hide_labels_that_do_not_fit(ax, rects)
    return rects


# --------------------------------------------------------------------------- notebook 03

SPACE = "\u2423"  # the visible-space symbol, used wherever a space would be invisible
PALETTE = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
           "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f", "#d9d9d9"]
UNUSED = "#f0f0f0"
# The partition figure's minibatch fills: the course's series colours, each 4.5:1 or more against the
# white background (WCAG 1.4.11 asks 3:1 of a fill that carries meaning; PALETTE's tints are 1.1-2.4:1),
# so the characters on them are white. A cell in no minibatch keeps the pale UNUSED fill with a dark edge.
PARTITION_COLOURS = SERIES_COLOURS
PARTITION_TEXT_COLOUR = "#ffffff"


def show_char(token: str) -> str:
    """Return `token` with a space replaced by a visible symbol (notebook 03's tables and figures)."""
    return SPACE if token == " " else token


def position_owner(num_tokens: int, positions: list[torch.Tensor]) -> list[tuple[int, int] | None]:
    """Return, for every text position, (minibatch, row) of the input it becomes, or None (notebook 03)."""
    owner: list[tuple[int, int] | None] = [None] * num_tokens
    for k, X in enumerate(positions):
        for i, row in enumerate(X.tolist()):
            for p in row:
                owner[p] = (k, i)
    return owner


def _box(ax, x: float, y: float, label: str, color: str = "white", size: float = 0.9,
         fontsize: float = 12) -> None:
    ax.add_patch(Rectangle((x - size / 2, y - size / 2), size, size, facecolor=color, edgecolor="black"))
    ax.text(x, y, label, ha="center", va="center", fontsize=fontsize, family="monospace")


def _plain_arrow(ax, start, end, color: str = "black", style: str = "-|>", linestyle: str = "-") -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, color=color,
                                 linestyle=linestyle, shrinkA=0, shrinkB=0))


def shift_alt(word: str = "machine") -> str:
    """Return the text alternative of `draw_shift(ax, word)` (notebook 03)."""
    # TRANSLATORS: {word}, {inputs} and {labels} are quoted texts ('machine', 'machin', 'achine').
    return _("Diagram of the shift by one: the text {word} on top; below it the inputs {inputs}, one "
             "character per box, above the labels {labels}; an arrow from each input to its label, the "
             "character that follows it in the text.").format(word=repr(word), inputs=repr(word[:-1]),
                                                                labels=repr(word[1:]))


def draw_shift(ax, word: str = "machine") -> list[tuple[str, str]]:
    """Draw how shifting `word` by one gives inputs and labels; return the (input, label) pairs (notebook 03).

    Top: the text. Middle: the inputs `word[:-1]`. Bottom: the labels `word[1:]`; a dashed
    line shows where each label comes from in the text, an arrow what each input must predict.
    """
    if len(word) < 2:
        raise ValueError(_("the word needs at least two characters"))
    n = len(word)
    for j, c in enumerate(word):
        _box(ax, j, 2.4, show_char(c), "#eeeeee")
    for j in range(n - 1):
        _box(ax, j, 1.0, show_char(word[j]), "#c6dbef")
        _box(ax, j, -0.6, show_char(word[j + 1]), "#fdd0a2")
        _plain_arrow(ax, (j, 1.9), (j, 1.5), REFERENCE_LINE_COLOUR)
        _plain_arrow(ax, (j, 0.5), (j, -0.1), "black")
        ax.plot([j + 1, j + 0.2], [1.95, -0.15], linestyle=":", color="#e6550d", linewidth=1)
    # TRANSLATORS: the name of the figure's top row: the text the inputs and labels are cut from.
    ax.text(-0.8, 2.4, _("text"), ha="right", va="center", fontsize=11)
    # TRANSLATORS: a row's name before its quoted text ('machin'); two spaces between them.
    ax.text(-0.8, 1.0, _("input  {text}").format(text=repr(word[:-1])), ha="right", va="center", fontsize=11,
            color="#08519c")
    # TRANSLATORS: a row's name before its quoted text ('achine'); two spaces between them.
    ax.text(-0.8, -0.6, _("label  {text}").format(text=repr(word[1:])), ha="right", va="center",
            fontsize=11, color="#a63603")
    # TRANSLATORS: a note beside the arrows, on two lines (\n) of about the same length.
    ax.text(n - 1.45, 0.2, _("predict the\nnext character"), ha="left", va="center", fontsize=9)
    ax.set_xlim(-4.5, n + 2)
    ax.set_ylim(-1.3, 3.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(_("Labels are the inputs shifted one token to the left"))
    return [(word[j], word[j + 1]) for j in range(n - 1)]


def batch_transpose_alt(rows: list[str], vocab: Vocab) -> str:
    """Return the text alternative of `draw_batch_transpose(ax, rows, vocab)` (notebook 03)."""
    batch, steps = len(rows), len(rows[0])
    columns = "; ".join(", ".join(repr(row[t]) for row in rows) for t in range(steps))
    # TRANSLATORS: (batch, steps) and (batch, vocab) name a tensor's dimensions, kept as they are; {rows}
    # lists the quoted rows ('the t', 'ime m'), {columns} the characters of each time step.
    return _("Diagram of a minibatch in three shapes. Left: X, (batch, steps) = ({batch}, {steps}), one row "
             "per subsequence: {rows}. Middle: X.T, ({steps}, {batch}), one row per time step: {columns}. "
             "Right: one (batch, vocab) = ({batch}, {vocab_size}) slab of one-hot vectors per time step, a "
             "single 1 in each row at the character's index.").format(
        batch=batch, steps=steps, rows=", ".join(repr(r) for r in rows), columns=columns,
        vocab_size=len(vocab))


def draw_batch_transpose(ax, rows: list[str], vocab: Vocab) -> tuple[int, int, int]:
    """Draw character `rows` as (batch, steps) -> (steps, batch) -> (steps, batch, vocab) (notebook 03).

    Every row of `rows` is one subsequence (all the same length). Right: for every time
    step, a (batch, vocab) slab of one-hot vectors with the 1 coloured. Returns the
    (steps, batch, vocab) shape drawn.
    """
    batch, steps, v = len(rows), len(rows[0]), len(vocab)
    if any(len(r) != steps for r in rows):
        raise ValueError(_("every row must have the same number of characters"))
    colors = [PALETTE[i % len(PALETTE)] for i in range(batch)]
    top = 0.0
    # (batch, steps): one row per subsequence
    for i, row in enumerate(rows):
        for t, c in enumerate(row):
            _box(ax, t, top - i, show_char(c), colors[i])
    ax.text((steps - 1) / 2, top + 1, f"X: (batch, steps) = ({batch}, {steps})", ha="center", fontsize=10)
    # (steps, batch): one row per time step
    x0 = steps + 2
    for t in range(steps):
        for i in range(batch):
            _box(ax, x0 + i, top - t, show_char(rows[i][t]), colors[i])
        ax.text(x0 - 0.7, top - t, f"t={t}", ha="right", va="center", fontsize=9)
    ax.text(x0 + (batch - 1) / 2, top + 1, f"X.T: ({steps}, {batch})", ha="center", fontsize=10)
    _plain_arrow(ax, (steps - 0.3, top - 0.5), (x0 - 1.3, top - 0.5))
    ax.text((steps + x0) / 2 - 0.8, top - 1.0, ".T", ha="center", fontsize=10)
    # (steps, batch, vocab): one (batch, vocab) slab per time step
    x1, cell = x0 + batch + 2.5, 0.35
    for t in range(steps):
        for i in range(batch):
            hot = vocab[rows[i][t]]
            for j in range(v):
                y = top - t - (i - (batch - 1) / 2) * cell * 1.1
                # The 1 is dark (its row's course colour, 4.5:1 or more), not the row's pale tint.
                ax.add_patch(Rectangle((x1 + j * cell, y - cell / 2), cell, cell,
                                       facecolor=SERIES_COLOURS[i % len(SERIES_COLOURS)] if j == hot
                                       else "white", edgecolor=REFERENCE_LINE_COLOUR, linewidth=0.4))
    ax.text(x1 + v * cell / 2, top + 1, f"one_hot(X.T): ({steps}, {batch}, {v})", ha="center", fontsize=10)
    _plain_arrow(ax, (x0 + batch - 0.3, top - 0.5), (x1 - 0.3, top - 0.5))
    # TRANSLATORS: a note on two lines (\n); (batch, vocab) names a tensor's dimensions, X_t the input at t.
    ax.text(x1 + v * cell + 0.3, top - steps + 1, _("one slab of (batch, vocab)\nper time step X_t"),
            ha="left", va="center", fontsize=8)
    ax.set_xlim(-0.8, x1 + v * cell + 4.5)
    ax.set_ylim(top - max(steps, batch) + 0.3, top + 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    return (steps, batch, v)


def partition_alt(text: str, positions: list[torch.Tensor], title: str = "") -> str:
    """Return the text alternative of `draw_partition(ax, text, positions, title)` (notebook 03).

    `title` is shown translated where a catalog has it (as "random sampling" is), else as given.
    """
    used = sum(where is not None for where in position_owner(len(text), positions))
    rows, steps = tuple(positions[0].shape) if positions else (0, 0)
    # TRANSLATORS: {batches} is how many minibatches there are; each has {rows} rows of {steps} characters.
    described = _("the {length} characters of the text in a grid; each cell that is an input shows the "
                  "number of its minibatch (of {batches}, each {rows} rows of {steps} characters) at its top "
                  "left and its row at its bottom right, on the minibatch's colour; {used} of {length} "
                  "characters are inputs, the rest pale grey and unnumbered.").format(
        length=len(text), batches=len(positions), rows=rows, steps=steps, used=used)
    # TRANSLATORS: a figure's name ("random sampling"), then what it shows.
    return _("{title}: {described}").format(title=_(title), described=described) if title else described


def draw_partition(ax, text: str, positions: list[torch.Tensor], title: str = "", width: int = 30) -> None:
    """Draw `text` as a grid of characters, each marked with the minibatch it is an input of (notebook 03).

    An input's cell shows its minibatch's number at the top left and its row at the bottom right, on
    the minibatch's colour (`PARTITION_COLOURS`), so the figure reads without colour too; pale grey
    cells with a dark edge are not inputs. The title ends with how many characters are inputs
    (`partition_alt` says it in words); `title` is shown translated where a catalog has it.
    `positions` is the result of `minibatch_positions(len(text), ...)`.
    """
    owner = position_owner(len(text), positions)
    used = sum(where is not None for where in owner)
    rows, steps = tuple(positions[0].shape) if positions else (0, 0)
    for p, c in enumerate(text):
        _draw_partition_cell(ax, p % width, -(p // width), show_char(c), owner[p])
    lines = (len(text) + width - 1) // width
    ax.set_xlim(0, width)
    ax.set_ylim(-lines + 1, 1)
    ax.set_aspect("equal")
    ax.axis("off")
    counts = _("{batches} minibatches of {rows} × {steps}; {used} of {length} characters are inputs").format(
        batches=len(positions), rows=rows, steps=steps, used=used, length=len(text))
    ax.set_title(_("{title}: {counts}").format(title=_(title), counts=counts) if title else counts,
                 fontsize=10)


def partition_colour(minibatch: int) -> str:
    """Return the fill of minibatch number `minibatch` in `draw_partition` (and its legend)."""
    return PARTITION_COLOURS[minibatch % len(PARTITION_COLOURS)]


def _draw_partition_cell(ax, x: int, y: int, char: str, where: tuple[int, int] | None) -> None:
    """Draw one cell of `draw_partition`: `char`, and for an input (`where`: (minibatch, row)) both."""
    if where is None:
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=UNUSED, edgecolor=REFERENCE_LINE_COLOUR,
                               linewidth=0.5))
        ax.text(x + 0.5, y + 0.5, char, ha="center", va="center", fontsize=9, family="monospace",
                color=TEXT_COLOUR)
        return
    minibatch, row = where
    ax.add_patch(Rectangle((x, y), 1, 1, facecolor=partition_colour(minibatch), edgecolor="white"))
    ax.text(x + 0.5, y + 0.5, char, ha="center", va="center", fontsize=9, family="monospace",
            color=PARTITION_TEXT_COLOUR)
    ax.text(x + 0.08, y + 0.94, str(minibatch), ha="left", va="top", fontsize=5, color=PARTITION_TEXT_COLOUR)
    ax.text(x + 0.92, y + 0.06, str(row), ha="right", va="bottom", fontsize=5, color=PARTITION_TEXT_COLOUR)


def partition_legend(figure, minibatches: int) -> None:
    """Add `draw_partition`'s key to `figure`, below it: one swatch per minibatch and one for no minibatch."""
    handles = [Patch(facecolor=partition_colour(k), label=_("minibatch {k}").format(k=k))
               for k in range(minibatches)]
    handles.append(Patch(facecolor=UNUSED, edgecolor=REFERENCE_LINE_COLOUR, label=_("in no minibatch")))
    figure.legend(handles=handles, loc="lower center", ncol=minibatches + 1, fontsize=8, frameon=False)


# --------------------------------------------------------------------------- notebook 05

BACKWARD_COLOR = "#cc0000"


def _center(patch) -> tuple[float, float]:
    return patch.get_x() + patch.get_width() / 2, patch.get_y() + patch.get_height() / 2


def bptt_graph_alt(num_steps: int = 3) -> str:
    """Return the text alternative of `draw_bptt_graph(ax, num_steps)` (notebook 05)."""
    return _("Diagram of backpropagation through time over {num_steps} steps. Forward, solid black "
             "arrows: each input X_t feeds the hidden state H_t, which feeds the next hidden state and the "
             "output O_t, which gives the loss L_t. Backward, dashed red arrows: from each L_t to O_t, "
             "from O_t to H_t, and from H_t back to H_(t-1); where two dashed arrows reach one H_t, their "
             "gradients are added.").format(num_steps=num_steps)


def draw_bptt_graph(ax, num_steps: int = 3) -> dict:
    """Draw the unrolled RNN with a loss L_t on every output and the backward pass in red (notebook 05).

    Builds on `draw_unrolled_rnn` (forward arrows in black), adds the loss
    nodes and, in dashed red, the paths the gradient takes: from each L_t down to O_t and
    H_t, and from every H_t back to H_{t-1}. Returns {"nodes": {label: patch},
    "forward": [arrows], "backward": [arrows]}.
    """
    drawn = draw_unrolled_rnn(ax, num_steps)
    nodes = dict(drawn["nodes"])
    backward = []

    def red_arrow(start, end, bend=0.0):
        arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, linewidth=1.4,
                                color=BACKWARD_COLOR, linestyle="--", connectionstyle=f"arc3,rad={bend}")
        ax.add_patch(arrow)
        backward.append(arrow)

    for t in range(1, num_steps + 1):
        ox, oy = _center(nodes[f"$O_{t}$"])
        hx, hy = _center(nodes[f"$H_{t}$"])
        box = FancyBboxPatch((ox - 0.45, oy + 1.0 - 0.27), 0.9, 0.54,
                             boxstyle="round,pad=0.02,rounding_size=0.1",
                             facecolor="#f4cccc", edgecolor="black", linewidth=1.2)
        ax.add_patch(box)
        ax.text(ox, oy + 1.0, f"$L_{t}$", ha="center", va="center", fontsize=12)
        nodes[f"$L_{t}$"] = box
        ax.add_patch(FancyArrowPatch((ox, oy + 0.3), (ox, oy + 0.73), arrowstyle="-|>", mutation_scale=14,
                                     linewidth=1.2, color="black"))
        red_arrow((ox - 0.25, oy + 0.73), (ox - 0.25, oy + 0.3))
        red_arrow((hx - 0.25, oy - 0.3), (hx - 0.25, hy + 0.3))
        px, py = _center(nodes[f"$H_{t - 1}$"])
        red_arrow((hx - 0.3, hy - 0.3), (px + 0.3, py - 0.3), bend=-0.35)
    ax.text(num_steps * 1.8 / 2, -1.05, _("gradients flow back along the dashed red arrows; where two arrive "
                                          "at one $H_t$ they are added"),
            ha="center", va="center", fontsize=9, color=BACKWARD_COLOR)
    ax.set_ylim(-1.3, 4.6)
    ax.set_title(_("Backpropagation through time over {num_steps} steps: forward solid black, backward "
                   "dashed red").format(num_steps=num_steps))
    return {"nodes": nodes, "forward": drawn["arrows"], "backward": backward}


def reach_curves_alt(curves: dict[float, list[float]], input_scale: float = 1.0) -> str:
    """Return the text alternative of `draw_reach_curves`'s plot: each curve at k = 0 and at the end."""
    # TRANSLATORS: {first} is the gradient norm at k = 0, {last} the one at k = {k}; ρ: the spectral radius.
    ends = _("; ").join(_("ρ = {radius:g}: {first:.3g} at k = 0, {last:.3g} at k = {k}").format(
        radius=r, first=norms[0], last=norms[-1], k=len(norms) - 1) for r, norms in curves.items())
    if input_scale == 0:
        # TRANSLATORS: {ends} lists each curve's norms ("ρ = 0.5: 1 at k = 0, 8.9e-16 at k = 50"), by "; ".
        return _("Gradient norm against steps back in time k, log scale, with no inputs. {ends}.").format(
            ends=ends)
    return _("Gradient norm against steps back in time k, log scale, with random token inputs. "
             "{ends}.").format(ends=ends)


def draw_reach_curves(ax, radii, max_k: int = 50, input_scale: float = 1.0,
                      **kwargs) -> dict[float, list[float]]:
    """Plot ||dL/dH_{T-k}|| against k on a log scale, one curve per spectral radius in `radii` (notebook 05).

    Returns {radius: norms} as computed by `d2lmini.gradcheck.gradient_norms_back_in_time`
    (extra keyword arguments are passed on to it).
    """
    curves = {}
    for i, radius in enumerate(radii):
        curves[radius] = gradient_norms_back_in_time(radius, max_k, input_scale=input_scale, **kwargs)
        # Marker and line style tell the curves apart without colour (greyscale, colour blindness).
        ax.semilogy(range(max_k + 1), curves[radius], markevery=5, markersize=4, label=f"ρ = {radius:g}",
                    **series_style(i))
    ax.axhline(1.0, color=REFERENCE_LINE_COLOUR, linewidth=0.8)
    ax.set_xlabel(_("k: steps back in time"))
    ax.set_ylabel(r"$\|\partial L / \partial H_{T-k}\|$")
    ax.set_title(_("no inputs (H stays 0, tanh' = 1)") if input_scale == 0 else _("random token inputs"))
    ax.legend(fontsize=8)
    return curves
