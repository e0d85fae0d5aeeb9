"""The hidden-state explorer of notebook 01: read a sentence one character at a time.

`hidden_states_for` runs a character model over a text and returns the hidden state
after every character; `explorer_view` computes what the panel shows for a given step;
`HiddenStateExplorer` wires both to a text box and a slider and draws a heatmap with one
row per character read so far.
"""


import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from d2lmini.plot import figure_png, heatmap
from d2lmini.rnn import check_prefix, model_device
from d2lmini.text import Vocab


@torch.no_grad()
def hidden_states_for(model, vocab: Vocab, text: str) -> torch.Tensor:
    """Return the hidden state after each character of `text`: a CPU tensor (len(text), hiddens).

    The model starts from its zero state and reads one character per call, so row t is
    H_{t+1} = f(x_{t+1}, H_t) exactly as in the step formula. Works for any model with
    `begin_state` and `model(X, state) -> (outputs, state)` (`RNNScratch`, `TorchRNN`).
    """
    check_prefix(text, vocab)
    device = model_device(model)
    state = model.begin_state(1)
    rows = []
    for index in vocab.indices(text):
        _, state = model(torch.tensor([[index]], device=device), state)
        rows.append(state[0].float().cpu())
    return torch.stack(rows)


@torch.no_grad()
def next_char_probabilities(model, vocab: Vocab, text: str, k: int = 3) -> list[tuple[str, float]]:
    """Return the `k` most likely next characters after reading `text`, with their probabilities."""
    check_prefix(text, vocab)
    device = model_device(model)
    outputs, _ = model(torch.tensor([vocab.indices(text)], device=device), model.begin_state(1))
    probs = torch.softmax(outputs[-1].float().cpu(), dim=0)
    top = torch.topk(probs, min(k, len(vocab)))
    return [(vocab.idx_to_token[int(i)], float(p)) for p, i in zip(top.values, top.indices, strict=True)]


def explorer_view(model, vocab: Vocab, text: str, step: int, k: int = 3) -> dict:
    """Return what the explorer shows after reading the first `step` characters of `text`.

    Keys: "prefix" (the characters read), "states" (step, hiddens) CPU tensor, "labels"
    (one printable label per row) and "next" (the top-`k` next characters).
    """
    if not 1 <= step <= len(text):
        raise ValueError(f"step must be between 1 and {len(text)}, not {step}")
    prefix = text[:step]
    states = hidden_states_for(model, vocab, prefix)
    labels = [f"{t + 1}: '{c}'" for t, c in enumerate(prefix)]
    return {"prefix": prefix, "states": states, "labels": labels,
            "next": next_char_probabilities(model, vocab, prefix, k)}


def draw_view(ax, view: dict) -> None:
    """Draw the heatmap of `view["states"]` (one row per character read) on `ax`."""
    ax.clear()
    heatmap(ax, view["states"], row_labels=view["labels"],
            title=f"hidden state after reading {view['prefix']!r}")
    ax.set_xlabel("hidden unit")
    ax.set_ylabel("step: character read")


class HiddenStateExplorer:
    """A text box and a step slider over a heatmap of the hidden states so far.

    `explorer.widget` is what the notebook displays; `explorer.text`, `explorer.step`
    are the controls and `explorer.view` is the latest `explorer_view` result (tests set
    the controls and read `view`). `explorer.status` shows the next-character guess or,
    for a text the model cannot read, what is wrong.
    """

    def __init__(self, model, vocab: Vocab, text: str = "the time machine"):
        self.model, self.vocab = model, vocab
        self.text = widgets.Text(value=text, description="sentence", continuous_update=False)
        self.step = widgets.IntSlider(value=1, min=1, max=max(1, len(text)), description="step")
        self.status = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.view: dict | None = None
        self.widget = widgets.VBox([self.text, self.step, self.status, self.image])
        self.text.observe(self._on_text, names="value")
        self.step.observe(lambda change: self.refresh(), names="value")
        self.refresh()

    def _on_text(self, change) -> None:
        self.step.max = max(1, len(change["new"]))
        self.refresh()

    def refresh(self) -> None:
        """Recompute the view for the current controls and redraw."""
        try:
            self.view = explorer_view(self.model, self.vocab, self.text.value, self.step.value)
        except ValueError as error:
            self.view = None
            self.status.value = f"<b>Cannot read this sentence:</b> {error}"
            return
        guesses = ", ".join(f"'{c}' {p:.0%}" for c, p in self.view["next"])
        self.status.value = f"read <code>{self.view['prefix']!r}</code>; the model guesses next: {guesses}"
        figure, ax = plt.subplots(figsize=(7, 1.6 + 0.25 * len(self.view["prefix"])))
        draw_view(ax, self.view)
        self.image.value = figure_png(figure)
