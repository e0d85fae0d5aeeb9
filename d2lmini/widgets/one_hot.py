"""Notebook 03's panel: text -> tokens -> indices -> one-hot -> minibatches.

Plain functions compute everything the panel shows, so tests can call them directly:

- `encode_text(text, vocab)`: tokens, indices and the one-hot matrix of a text;
- `transpose_batch(text, vocab, batch_size, num_steps)`: a (batch, steps) minibatch and
  its (steps, batch, vocab) one-hot form;
- `minibatch_positions` / `minibatch_layout`: which text positions (characters) land in
  which minibatch under random sampling or sequential partitioning.

`OneHotPanel` (built by `make_one_hot_panel`) wires them to ipywidgets. The notebook's
static figures (`draw_shift`, `draw_batch_transpose`, `draw_partition`) are in `d2lmini.figures`.
"""

import html
from dataclasses import dataclass

import ipywidgets as widgets
import torch
import torch.nn.functional as F

from d2lmini.batching import make_batches
from d2lmini.figures import PALETTE, UNUSED, position_owner, show_char
from d2lmini.i18n import N_, _
from d2lmini.text import Vocab, preprocess, tokenize
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("From text to minibatches: edit the text, choose how minibatches are cut, the batch size, steps "
           "and seed; the panel shows the one-hot encoding and each minibatch's characters.")

DEFAULT_TEXT = "a hidden state carries the past into the present"
# How the summary names a sampling (the values of `d2lmini.settings.SAMPLINGS`' keys).
SAMPLING_WORDS = {
    # TRANSLATORS: in "random minibatches of 2 rows x 5 steps": minibatches cut by random sampling.
    "random": N_("random"),
    # TRANSLATORS: in "sequential minibatches of 2 rows x 5 steps": cut by sequential partitioning.
    "sequential": N_("sequential"),
}


# --------------------------------------------------------------------------- plain functions


@dataclass
class Encoding:
    """What `encode_text` computes: the text encoded, its tokens, their indices, the characters
    mapped to `<unk>` and the (tokens, vocab) one-hot matrix (notebook 03)."""

    text: str
    tokens: list[str]
    indices: list[int]
    unknown: list[str]
    one_hot: torch.Tensor


@dataclass
class TransposedBatch:
    """What `transpose_batch` computes: X (batch, steps), X_T (steps, batch), one_hot (steps, batch,
    vocab), and the characters as strings, one per batch row (`rows`) and one per time step (`steps`)."""

    X: torch.Tensor
    X_T: torch.Tensor
    one_hot: torch.Tensor
    rows: list[str]
    steps: list[str]


@dataclass
class OneHotView:
    """What the notebook 03 panel shows; a field is None when it could not be computed."""

    encoding: Encoding | None = None
    batch: TransposedBatch | None = None
    positions: list[torch.Tensor] | None = None
    layout: list[list[str]] | None = None



def encode_text(text: str, vocab: Vocab, preprocess_text: bool = False) -> Encoding:
    """Return the character `Encoding` of `text` under `vocab` (notebook 03).

    Its `text` is the text encoded (after `preprocess` if `preprocess_text`), `tokens` its
    characters, `indices` one int per token (unknown ones give 0), `unknown` the distinct
    characters mapped to `<unk>` and `one_hot` a long tensor of shape (len(tokens), len(vocab))
    with a single 1 per row.
    """
    if preprocess_text:
        text = preprocess(text)
    tokens = tokenize(text, "char")
    indices = vocab.indices(tokens)
    one_hot = F.one_hot(torch.tensor(indices, dtype=torch.long), len(vocab))
    return Encoding(text, tokens, indices, vocab.unknown_characters(text), one_hot)


def transpose_batch(text: str, vocab: Vocab, batch_size: int, num_steps: int) -> TransposedBatch:
    """Cut the start of `text` into one (batch_size, num_steps) minibatch and transpose it (notebook 03).

    Row i of the minibatch holds characters i*num_steps ... (i+1)*num_steps - 1. Returns a
    `TransposedBatch`: X (batch, steps) indices, X_T (steps, batch), one_hot (steps, batch,
    vocab), and the characters of both as strings (as typed, even where the index is `<unk>`):
    `rows` (one per batch row) and `steps` (one per time step). Raises ValueError when the
    text is too short.
    """
    if batch_size < 1 or num_steps < 1:
        raise ValueError(_("batch size and steps must be positive, not {batch_size} and {num_steps}.").format(
            batch_size=batch_size, num_steps=num_steps))
    needed = batch_size * num_steps
    if len(text) < needed:
        raise ValueError(_("A minibatch of {batch_size} x {num_steps} = {needed} characters needs a text of "
                           "at least {needed} characters; this one has {length}.").format(
            batch_size=batch_size, num_steps=num_steps, needed=needed, length=len(text)))
    X = torch.tensor(vocab.indices(text[:needed]), dtype=torch.long).reshape(batch_size, num_steps)
    X_T = X.T
    rows = [text[i * num_steps: (i + 1) * num_steps] for i in range(batch_size)]
    steps = ["".join(row[t] for row in rows) for t in range(num_steps)]
    return TransposedBatch(X, X_T, F.one_hot(X_T, len(vocab)), rows, steps)


def minibatch_positions(num_tokens: int, sampling: str, batch_size: int, num_steps: int,
                        seed: int = 0) -> list[torch.Tensor]:
    """Return the text positions of the inputs of every minibatch, each (batch, steps).

    It runs `d2lmini.batching.make_batches` on the positions 0 ... num_tokens-1 themselves,
    so the result shows exactly where each input of each minibatch comes from.
    Raises ValueError (with the batching module's message) when the text is too short.
    """
    generator = torch.Generator().manual_seed(seed)
    batches = make_batches(sampling, torch.arange(num_tokens), batch_size, num_steps, generator=generator)
    return [X for X, _Y in batches]


def minibatch_layout(text: str, sampling: str, batch_size: int, num_steps: int,
                     seed: int = 0) -> list[list[str]]:
    """Return the inputs of every minibatch of `text` as strings: one list of rows per minibatch."""
    positions = minibatch_positions(len(text), sampling, batch_size, num_steps, seed)
    return [["".join(text[p] for p in row) for row in X.tolist()] for X in positions]


# --------------------------------------------------------------------------- HTML views


def _cell(content: str, background: str = "white", bold: bool = False, title: str = "",
          color: str = "black", header: str = "") -> str:
    """Return a table cell; `header` "col" or "row" makes it a header cell of its column or row."""
    weight = "bold" if bold else "normal"
    tip = f' title="{html.escape(title)}"' if title else ""
    tag, scope = ("th", f' scope="{header}"') if header else ("td", "")
    style = (f"background:{background};color:{color};border:1px solid #ccc;padding:1px 4px;"
             f"text-align:center;font-family:monospace;font-weight:{weight}")
    return f'<{tag}{scope}{tip} style="{style}">{content}</{tag}>'


def _table(rows: list[list[str]], caption: str = "") -> str:
    body = "".join("<tr>" + "".join(row) + "</tr>" for row in rows)
    return (f'<div style="margin:4px 16px 4px 0"><div>{caption}</div>'
            f'<table style="border-collapse:collapse">{body}</table></div>')


def encoding_html(encoding: Encoding, vocab: Vocab, max_tokens: int = 24) -> str:
    """Return an HTML view of `encode_text`'s result: tokens, indices and the one-hot matrix."""
    tokens, indices = encoding.tokens[:max_tokens], encoding.indices[:max_tokens]
    header = [_cell(_("token"), "#eee", True, header="col"), _cell(_("index"), "#eee", True, header="col")]
    header += [_cell(html.escape(show_char(t)), "#eee", True, header="col") for t in vocab.idx_to_token]
    rows = [header]
    for token, index in zip(tokens, indices, strict=True):
        row = [_cell(html.escape(show_char(token)), bold=True, header="row"), _cell(str(index))]
        # Contrast at least 4.5:1 (WCAG AA): white on #08519c is 7.6:1, #707070 on white 4.9:1.
        row += [_cell("1", "#08519c", True, color="white") if j == index else _cell("0", color="#707070")
                for j in range(len(vocab))]
        rows.append(row)
    shown = len(encoding.tokens)
    if shown > max_tokens:
        caption = _("one-hot matrix: {tokens} tokens x {entries} vocabulary entries (first {most} of "
                    "{tokens} shown); columns are the vocabulary in index order")
    else:
        caption = _("one-hot matrix: {tokens} tokens x {entries} vocabulary entries; columns are the "
                    "vocabulary in index order")
    caption = caption.format(tokens=shown, entries=len(vocab), most=max_tokens)
    unknown = encoding.unknown
    # TRANSLATORS: {characters} lists the characters, each in <code>; keep &lt;unk&gt; (it shows <unk>).
    note = ("" if not unknown else "<p>" + _("Mapped to &lt;unk&gt; (index 0): {characters}").format(
        characters=", ".join(f"<code>{html.escape(repr(c))}</code>" for c in unknown)) + "</p>")
    return note + _table(rows, caption)


def batch_html(batch: TransposedBatch) -> str:
    """Return an HTML view of `transpose_batch`'s result: the minibatch before and after `.T`."""
    before = [[_cell(_("row {row}").format(row=i), "#eee", header="row")]
              + [_cell(html.escape(show_char(c))) for c in row] for i, row in enumerate(batch.rows)]
    after = [[_cell(f"t={t}", "#eee", header="row")] + [_cell(html.escape(show_char(c))) for c in step]
             for t, step in enumerate(batch.steps)]
    b, s = batch.X.shape
    v = batch.one_hot.shape[-1]
    return ('<div style="display:flex;flex-wrap:wrap;align-items:flex-start">'
            + _table(before, _("X: (batch, steps) = ({batch}, {steps}); row = one subsequence").format(
                batch=b, steps=s))
            + _table(after, _("X.T: (steps, batch) = ({steps}, {batch}); row = one time step").format(
                batch=b, steps=s))
            + "<p>" + _("one_hot(X.T): (steps, batch, vocab) = ({steps}, {batch}, {vocab})").format(
                steps=s, batch=b, vocab=v) + "</p></div>")


def layout_html(text: str, positions: list[torch.Tensor], max_batches: int = 12) -> str:
    """Return an HTML view of where each character of `text` goes: coloured text plus minibatch tables."""
    owner = position_owner(len(text), positions)
    spans = []
    for p, char in enumerate(text):
        where = owner[p]
        color = UNUSED if where is None else PALETTE[where[0] % len(PALETTE)]
        tip = (_("not an input") if where is None
               else _("minibatch {minibatch}, row {row}").format(minibatch=where[0], row=where[1]))
        spans.append(f'<span title="{tip}" style="background:{color};font-family:monospace;'
                     f'padding:0 1px">{html.escape(show_char(char))}</span>')
    tables = []
    for k, X in enumerate(positions[:max_batches]):
        color = PALETTE[k % len(PALETTE)]
        rows = [[_cell(_("row {row}").format(row=i), "#eee", header="row")]
                + [_cell(html.escape(show_char(text[p])), color) for p in row]
                for i, row in enumerate(X.tolist())]
        tables.append(_table(rows, _("minibatch {minibatch}").format(minibatch=k)))
    more = ("<p>" + _("(first {most} of {count} minibatches shown)").format(most=max_batches,
                                                                           count=len(positions)) + "</p>"
            if len(positions) > max_batches else "")
    legend = ("<p>" + _("{count} minibatches; each colour is one minibatch, grey characters are not inputs "
                        "of any minibatch (before the random offset, or left over at the end). Hover over a "
                        "character to see its minibatch and row.").format(count=len(positions)) + "</p>")
    return (legend + '<p style="line-height:1.8">' + "".join(spans) + "</p>"
            + '<div style="display:flex;flex-wrap:wrap;align-items:flex-start">' + "".join(tables) + "</div>"
            + more)


# --------------------------------------------------------------------------- the panel


def summary_text(text: str, preprocessed: bool, sampling: str, batch_size: int, num_steps: int, seed: int,
                 positions) -> str:
    """Return the panel's one-line summary: the text read, and how many minibatches it makes."""
    if not text:
        return ""
    made = (_("no minibatch") if positions is None
            else _("{count} minibatches").format(count=len(positions)))
    start = text if len(text) <= 24 else text[:24] + "…"
    # TRANSLATORS: {start} is the start of the text, quoted; {sampling} is "random" or "sequential";
    # {made} is "no minibatch" or "12 minibatches".
    template = (_("{length} characters after preprocessing, starting {start}; {sampling} minibatches of "
                  "{batch_size} rows x {num_steps} steps, seed {seed}: {made}.") if preprocessed else
                _("{length} characters, starting {start}; {sampling} minibatches of {batch_size} rows x "
                  "{num_steps} steps, seed {seed}: {made}."))
    return template.format(length=len(text), start=html.escape(repr(start)),
                           sampling=_(SAMPLING_WORDS.get(sampling, sampling)), batch_size=batch_size,
                           num_steps=num_steps, seed=seed, made=made)


class OneHotPanel:
    """The notebook 03 panel: type text, see tokens / indices / one-hot, the batch transpose
    and which characters land in which minibatch.

    The widgets are attributes (`text`, `preprocess`, `sampling`, `batch_size`, `num_steps`,
    `seed`); after every change `state` holds what was computed (a `OneHotView`, whose
    fields are None when they could not be computed) and `problems` says why not. The panel has
    one live region, `summary`: what was read and made, after the problems if there are any, set
    once per change so that a screen reader announces each change once.
    `widget` is the box to display.
    """

    def __init__(self, vocab: Vocab, text: str = DEFAULT_TEXT):
        self.vocab = vocab
        style = {"description_width": "initial"}  # every label in full
        # Sent when the box loses the focus, not on every key: a redraw disables the other
        # controls, and disabling the box a student types into would take the focus away.
        self.text = widgets.Textarea(value=text, description=_("text"), continuous_update=False,
                                     placeholder=_("type, then click outside the box"),
                                     layout=widgets.Layout(width="95%"))
        self.preprocess = widgets.Checkbox(
            value=True, description=_("preprocess (lower-case, non-letters to space)"), indent=False,
            layout=widgets.Layout(width="auto"))
        self.sampling = widgets.ToggleButtons(
            options=[(_("random sampling"), "random"), (_("sequential partitioning"), "sequential")],
            value="sequential", description=_("minibatches"),
            style={"description_width": "initial", "button_width": "auto"})
        self.batch_size = widgets.IntSlider(value=2, min=1, max=8, description=_("batch size"), style=style)
        self.num_steps = widgets.IntSlider(value=5, min=1, max=12, description=_("steps"), style=style)
        # TRANSLATORS: the seed chooses the random offset and the order of the minibatches.
        self.seed = widgets.IntSlider(value=0, min=0, max=9, description=_("seed (offset, order)"),
                                      style=style, layout=widgets.Layout(width="340px"))
        self.problems: list[str] = []
        self.summary = widgets.HTML()  # the one region a screen reader announces after every change
        self.encoding_view = widgets.HTML()
        self.batch_view = widgets.HTML()
        self.layout_view = widgets.HTML()
        self.state = OneHotView()
        controls = [self.text, self.preprocess, self.sampling,
                    widgets.HBox([self.batch_size, self.num_steps, self.seed])]
        self.controls = (self.text, self.preprocess, self.sampling,
                         self.batch_size, self.num_steps, self.seed)
        for control in self.controls:
            control.observe(lambda change: self.update(), names="value")
        # Closed at first, so the minibatch views below stay on screen; a click opens it.
        # set_title (not the titles= argument) works with ipywidgets 7 as well as 8.
        self.encoding_box = widgets.Accordion(children=[self.encoding_view], selected_index=None)
        self.encoding_box.set_title(0, _("tokens, indices and one-hot vectors (click to open)"))
        self.access = Access()
        # TRANSLATORS: accessible names; each must contain its control's label (text, minibatches, batch
        # size, steps, seed (offset, order)).
        names = (_("text to encode (sent when you leave the box)"), self.preprocess.description,
                 _("minibatches: random sampling or sequential partitioning"),
                 _("batch size: subsequences per minibatch"), _("steps: characters per subsequence"),
                 _("seed (offset, order) of the minibatches"))
        for control, name in zip(self.controls, names, strict=True):
            if isinstance(control, widgets.IntSlider):
                self.access.follow(control, name)
            else:
                self.access.name(control, name)
        self.access.expandable(self.encoding_box)
        self.access.announce(self.summary)
        self.widget = PanelBox([panel_summary(_(SUMMARY)), *controls,
            self.summary, self.encoding_box,
            widgets.HTML("<b>" + _("The start of the text as one (batch, steps) block, before and after the "
                                   "transpose") + "</b>"),
            self.batch_view,
            widgets.HTML("<b>" + _("Which characters land in which minibatch") + "</b>"), self.layout_view,
            self.access.widget,
        ])
        self.update()

    def update(self) -> OneHotView:
        """Recompute everything from the current widget values, refresh the views, return the view.

        The controls are disabled meanwhile, except the text box (never disabled: it may have the focus).
        """
        with controls_disabled(self.controls[1:]):
            self.state = self._redraw()
        return self.state

    def _redraw(self) -> OneHotView:
        problems = []
        encoding = encode_text(self.text.value, self.vocab, self.preprocess.value)
        text = encoding.text
        batch = positions = layout = None
        if not text:
            problems.append(_("Type some text above to see its tokens, indices and one-hot vectors."))
        else:
            try:
                batch = transpose_batch(text, self.vocab, self.batch_size.value, self.num_steps.value)
            except ValueError as error:
                problems.append(_("Transpose: {error}").format(error=error))
            try:
                positions = minibatch_positions(len(text), self.sampling.value, self.batch_size.value,
                                                self.num_steps.value, self.seed.value)
                layout = [["".join(text[p] for p in row) for row in X.tolist()] for X in positions]
            except ValueError as error:
                problems.append(_("Minibatches: {error} Type a longer text.").format(error=error))
        self.encoding_view.value = encoding_html(encoding, self.vocab) if text else ""
        self.batch_view.value = (batch_html(batch) if batch is not None
                                 else "<p>" + _("(no minibatch)") + "</p>")
        self.layout_view.value = (layout_html(text, positions) if positions is not None
                                  else "<p>" + _("(no minibatches)") + "</p>")
        self.problems = problems
        shown = "".join(f'<p style="color:#b30000">{html.escape(p)}</p>' for p in problems)
        self.summary.value = shown + summary_text(text, self.preprocess.value, self.sampling.value,
                                                  self.batch_size.value, self.num_steps.value,
                                                  self.seed.value, positions)
        return OneHotView(encoding if text else None, batch, positions, layout)


def make_one_hot_panel(vocab: Vocab, text: str = DEFAULT_TEXT) -> OneHotPanel:
    """Return notebook 03's panel for `vocab`; display its `.widget`."""
    return OneHotPanel(vocab, text)
