"""The hidden-state explorer of notebook 01: read a sentence one character at a time.

`hidden_states_for` runs a character model over a text and returns the hidden state
after every character; `explorer_view` computes what the panel shows for a given step;
`HiddenStateExplorer` wires both to a text box and a slider and draws a heatmap with one
row per character read so far.
"""

import html
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from d2lmini.i18n import N_, _
from d2lmini.palette import HIGHLIGHT_COLOUR
from d2lmini.plot import figure_png, heatmap, show_png
from d2lmini.rnn import model_device, validate_prefix
from d2lmini.text import Vocab
from d2lmini.widgets import controls_disabled
from d2lmini.widgets.a11y import Access, panel_summary
from d2lmini.widgets.preview import PanelBox

# What the panel says first (a screen reader meets it before any control).
SUMMARY = N_("The hidden state as the model reads: type a sentence (Enter), then move the step slider; a "
           "heatmap shows each hidden state, and the text the model's next guess.")


@torch.no_grad()
def hidden_states_for(model, vocab: Vocab, text: str) -> torch.Tensor:
    """Return the hidden state after each character of `text`: a CPU tensor (len(text), hiddens).

    The model starts from its zero state and reads one character per call, so row t is
    H_{t+1} = f(x_{t+1}, H_t) exactly as in the step formula. Works for any model with
    `begin_state` and `model(X, state) -> (outputs, state)` (`RNNScratch`, `TorchRNN`).
    """
    validate_prefix(text, vocab)
    device = model_device(model)
    state = model.begin_state(1)
    rows = []
    for index in vocab.indices(text):
        _outputs, state = model(torch.tensor([[index]], device=device), state)
        rows.append(state[0].float().cpu())
    return torch.stack(rows)


@torch.no_grad()
def next_char_probabilities(model, vocab: Vocab, text: str, k: int = 3) -> list[tuple[str, float]]:
    """Return the `k` most likely next characters after reading `text`, with their probabilities."""
    validate_prefix(text, vocab)
    device = model_device(model)
    outputs, _state = model(torch.tensor([vocab.indices(text)], device=device), model.begin_state(1))
    probs = torch.softmax(outputs[-1].float().cpu(), dim=0)
    top = torch.topk(probs, min(k, len(vocab)))
    return [(vocab.idx_to_token[int(i)], float(p)) for p, i in zip(top.values, top.indices, strict=True)]


# The longest sentence the explorer reads: its heatmap grows one row per character, and its
# click time with it (`benchmarks/click_times.py`; README, "Every click is bounded").
MAX_SENTENCE = 200


def validate_sentence(text: str, vocab: Vocab) -> None:
    """Raise ValueError naming the explorer's "sentence" box if `text` is empty, longer than
    `MAX_SENTENCE` characters or has characters the model has never seen (notebook 01)."""
    if not text:
        # TRANSLATORS: "sentence" is the label of the text box (translated the same way there).
        raise ValueError(_("The sentence is empty: type at least one character into the box labelled "
                           "sentence."))
    if len(text) > MAX_SENTENCE:
        raise ValueError(_("The sentence has {length:,} characters; the explorer reads at most {most} (one "
                           "heatmap row each). Type a shorter one.").format(length=len(text),
                                                                            most=MAX_SENTENCE))
    unknown = vocab.unknown_characters(text)
    if unknown:
        known = "".join(vocab.idx_to_token[1:])
        # TRANSLATORS: {unknown} lists the unknown characters, each quoted ('É', '7'); {known} is every
        # character the model knows, quoted.
        raise ValueError(_("The sentence contains characters the model has never seen: {unknown}. Use only "
                           "these characters: {known}.").format(unknown=", ".join(repr(c) for c in unknown),
                                                                known=repr(known)))


@dataclass
class ExplorerView:
    """What the hidden-state explorer of notebook 01 shows: the characters read (`prefix`), the
    hidden state after each one (`states`, a (step, hiddens) CPU tensor), one printable label per
    row (`labels`) and the most likely next characters with their probabilities (`next`)."""

    prefix: str
    states: torch.Tensor
    labels: list[str]
    next: list[tuple[str, float]]


def explorer_view(model, vocab: Vocab, text: str, step: int, k: int = 3) -> ExplorerView:
    """Return the `ExplorerView` after reading the first `step` characters of `text` (notebook 01).

    `next` holds the top-`k` next characters. Raises ValueError naming the sentence or the
    step when either is not usable.
    """
    validate_sentence(text, vocab)
    if not 1 <= step <= len(text):
        raise ValueError(_("The step must be between 1 and {length} (the sentence's length), not "
                           "{step}.").format(length=len(text), step=step))
    prefix = text[:step]
    states = hidden_states_for(model, vocab, prefix)
    labels = [f"{t + 1}: '{c}'" for t, c in enumerate(prefix)]
    return ExplorerView(prefix, states, labels, next_char_probabilities(model, vocab, prefix, k))


ROW_INCHES = 0.2  # height of one heatmap row: 16 px at figure_png's 80 dpi
MAX_SHOWN_HEIGHT = "440px"  # taller heatmaps scroll inside the panel instead of pushing everything down


def draw_view(ax, view: ExplorerView) -> None:
    """Draw the heatmap of `view.states` (one row per character read) on `ax`, its largest entry framed."""
    ax.clear()
    rows, units = view.states.shape
    step, unit = largest_entry(view)
    heatmap(ax, view.states, row_labels=view.labels)
    # TRANSLATORS: a figure's title, two lines (keep the line break \n).
    ax.set_title(_("hidden state after each character read ({rows} × {units})\nframed: the largest in "
                   "size, unit {unit} at row {row}").format(rows=rows, units=units, unit=unit, row=step + 1),
                 fontsize=10)
    ax.figure.colorbar(ax.images[0], ax=ax, label=_("value"), fraction=0.04, pad=0.02)
    ax.add_patch(Rectangle((unit - 0.5, step - 0.5), 1, 1, fill=False, edgecolor=HIGHLIGHT_COLOUR,
                           linewidth=2))
    ax.set_xlabel(_("hidden unit"))
    # Short enough for the one-row heatmap of step 1 ("step: character read" was cut to "rea").
    ax.set_ylabel(_("step"))


def largest_entry(view: ExplorerView) -> tuple[int, int]:
    """Return the (row, unit) of the entry of `view.states` largest in size."""
    states = torch.as_tensor(view.states).detach().cpu()
    return divmod(int(states.abs().argmax()), states.shape[1])


def view_figure(view: ExplorerView):
    """Return the figure of `view`'s heatmap: 7 inches wide, one `ROW_INCHES` row per character."""
    figure, ax = plt.subplots(figsize=(7, 1.3 + ROW_INCHES * len(view.prefix)))
    draw_view(ax, view)
    return figure


def view_alt(view: ExplorerView) -> str:
    """Return the text alternative of `view`'s heatmap: its shape, colour scale and extreme entries."""
    states = torch.as_tensor(view.states).detach().cpu()
    step, unit = largest_entry(view)
    # TRANSLATORS: {text} is the text read, quoted.
    return _("Heatmap of the hidden state: one row per character read ({rows} rows, {text}), one column "
             "per hidden unit ({units}), colour from dark blue (-1) through grey (0) to light yellow (+1). "
             "Values range from {low:.2f} to {high:.2f}; the largest in size is {largest:.2f}, unit {unit} "
             "at row {row}.").format(rows=states.shape[0], text=repr(view.prefix), units=states.shape[1],
                              low=float(states.min()), high=float(states.max()),
                              largest=float(states[step, unit]), unit=unit, row=step + 1)


def view_png(view: ExplorerView) -> bytes:
    """Return the heatmap of `view` (`view_figure`) as PNG bytes."""
    return figure_png(view_figure(view))


class HiddenStateExplorer:
    """A text box and a step slider over a heatmap of the hidden states so far.

    `explorer.widget` is what the notebook displays; `explorer.text`, `explorer.step`
    are the controls and `explorer.view` is the latest `explorer_view` result (tests set
    the controls and read `view`). `explorer.status` shows the next-character guess or,
    for a sentence the model cannot read, what is wrong; the heatmap is then hidden
    (`explorer.plot.layout.display == "none"`), so nothing stale stays on screen.
    A heatmap taller than `MAX_SHOWN_HEIGHT` scrolls inside `explorer.plot`.
    """

    def __init__(self, model, vocab: Vocab, text: str = "the time machine"):
        self.model, self.vocab = model, vocab
        self.text = widgets.Text(value=text, description=_("sentence"), continuous_update=False,
                                 layout=widgets.Layout(width="520px"))
        self.step = widgets.IntSlider(value=1, min=1, max=max(1, len(text)), description=_("step"),
                                      layout=widgets.Layout(width="520px"))
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        scroll = widgets.Layout(max_height=MAX_SHOWN_HEIGHT, overflow="auto")
        self.plot = widgets.Box([self.image], layout=scroll)
        self.view: ExplorerView | None = None
        self.access = Access()
        # TRANSLATORS: accessible names; each must contain its control's label (sentence, step).
        self.access.name(self.text, _("sentence the model reads (press Enter to read it)"))
        self.access.follow(self.step, _("step: how many characters of the sentence are read"))
        self.access.announce(self.status)
        self.widget = PanelBox([panel_summary(_(SUMMARY)), self.text, self.step, self.status, self.plot,
                                self.access.widget])
        self.text.observe(self._on_text, names="value")
        self.step.observe(lambda change: self.update(), names="value")
        self.update()

    def _on_text(self, change) -> None:
        self.step.max = max(1, len(change["new"]))
        self.update()

    def update(self) -> ExplorerView | None:
        """Recompute the view for the current controls and redraw (or show what is wrong, and no plot).

        Returns the view (None for a sentence the model cannot read); the step slider is
        disabled meanwhile, never the text box a student types into (CONTRIBUTING, "Widgets").
        """
        with controls_disabled((self.step,)):
            return self._redraw()

    def _redraw(self) -> ExplorerView | None:
        try:
            self.view = explorer_view(self.model, self.vocab, self.text.value, self.step.value)
        except ValueError as error:
            self.view = None
            cannot = _("Cannot read this sentence:")
            self.status.value = (f'<span style="color:#b30000"><b>{cannot}</b> '
                                 f'{html.escape(str(error))}</span>')
            self.plot.layout.display = "none"
            return None
        guesses = ", ".join(f"'{html.escape(c)}' {p:.0%}" for c, p in self.view.next)
        # TRANSLATORS: {text} is the text read (in <code>), {guesses} the likeliest next characters with
        # their probabilities ('e' 40%, ' ' 21%, ...).
        self.status.value = _("read {text} ({length} characters); the model guesses next: {guesses}").format(
            text=f"<code>{html.escape(repr(self.view.prefix))}</code>", length=len(self.view.prefix),
            guesses=guesses)
        show_png(self.image, view_png(self.view))
        self.access.describe(self.image, view_alt(self.view))
        self.plot.layout.display = None
        return self.view


def make_hidden_state_explorer(model, vocab: Vocab, text: str = "the time machine") -> HiddenStateExplorer:
    """Return notebook 01's hidden-state explorer, already drawn for `text`; display `.widget`."""
    return HiddenStateExplorer(model, vocab, text)
