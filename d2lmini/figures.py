"""Figures drawn in code for the notebooks: the unrolled RNN (01) and block matrices (02).

Each function draws on a matplotlib `Axes` that the caller owns and returns the
artists it placed, keyed by name, so tests can check what was drawn.
"""

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

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


def draw_unrolled_rnn(ax, num_steps: int = 3) -> dict:
    """Draw an RNN unrolled over `num_steps` time steps on `ax` (notebook 01).

    Inputs X_t at the bottom, hidden states H_t in the middle (starting from H_0 on the
    left), outputs O_t on top. Every step uses the same weights W_xh, W_hh, W_hq, which
    label the arrows. Returns {"nodes": {label: patch}, "arrows": [patch, ...]}.
    """
    if num_steps < 1:
        raise ValueError(f"num_steps must be at least 1, not {num_steps}")
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
    ax.set_title(f"An RNN unrolled over {num_steps} time steps: the same weights at every step")
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
        ax.plot([x + c * unit] * 2, [y_top - height, y_top], color="white", linewidth=0.6)
    for r in range(grid_step, rows, grid_step):
        ax.plot([x, x + width], [y_top - r * unit] * 2, color="white", linewidth=0.6)
    ax.text(x + width / 2, y_top - height / 2, label, ha="center", va="center", fontsize=11)
    return rect


def block_layout(batch: int, num_inputs: int, num_hiddens: int) -> dict[str, tuple[int, int]]:
    """Return the (rows, columns) of every matrix in the picture of notebook 02.

    X (batch, inputs), W_xh (inputs, hiddens), H (batch, hiddens), W_hh (hiddens,
    hiddens); the concatenations [X, H] (batch, inputs + hiddens) and [W_xh; W_hh]
    (inputs + hiddens, hiddens); the result (batch, hiddens).
    """
    for name, value in (("batch", batch), ("num_inputs", num_inputs), ("num_hiddens", num_hiddens)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, not {value}")
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
    stacked weights. Returns {name: Rectangle} for "X", "W_xh", "H", "W_hh" (left) and
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
    ax.set_xlim(-0.05, x + 0.05)
    ax.set_ylim(top - (num_inputs + num_hiddens) * unit - 0.12, top + 0.12)
    ax.set_aspect("equal")
    ax.axis("off")
    squares = "one square per entry" if grid == 1 else f"one square per {grid}×{grid} entries"
    ax.set_title(f"batch = {batch}, inputs = {num_inputs}, hiddens = {num_hiddens}: "
                 f"[X, H] is {batch}×{num_inputs + num_hiddens}, "
                 f"[W_xh; W_hh] is {num_inputs + num_hiddens}×{num_hiddens} ({squares})", fontsize=10)
    return rects
