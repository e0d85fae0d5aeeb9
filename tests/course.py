"""The course, one row per notebook: every test that lists notebooks, exercises or panels reads it.

Adding a notebook is a row here plus the notebook (CONTRIBUTING.md, "Add a notebook"). A row names
the notebook's file stem, the `d2lmini.exercises` module that holds its self-checks (None for a
notebook without question exercises), and the keyboard steps that drive its panels in the browser
test (tests/browser/keyboard.py explains the steps; none for a notebook without a panel).
`test_navigation.py` checks that the rows and the files in notebooks/ agree, so a notebook without a
row, or a row without a notebook, fails.
"""

from dataclasses import dataclass
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

# A keyboard step that starts the steps of a further panel of the same notebook (a later cell).
NEXT_PANEL = ("next panel",)


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course, in course order."""

    stem: str  # "01_hidden_state": the file notebooks/<stem>.ipynb
    exercises: str | None = None  # "hidden_state": d2lmini.exercises.<exercises> holds its self-checks
    keyboard: tuple[tuple, ...] = ()  # (role, accessible name, keys[, announces]) for each control
    optional: bool = False  # outside the core path (issue #36): stored executed, no exercises required

    @property
    def number(self) -> str:
        """The part of the stem before the first underscore: "01", or "05b" for a notebook added after 05."""
        return self.stem.split("_", 1)[0]

    @property
    def path(self) -> Path:
        """The notebook's file."""
        return NOTEBOOKS / f"{self.stem}.ipynb"


COURSE: tuple[Notebook, ...] = (
    Notebook("00_start_here", keyboard=(
        ("slider", "temperature: divides every score", ["ArrowLeft", "ArrowLeft"]),
    )),
    Notebook("01_hidden_state", "hidden_state", keyboard=(
        ("textbox", "sentence the model reads", "type: machine"),
        ("slider", "step: how many characters", ["ArrowRight"]),
    )),
    Notebook("02_concat_matmul", "concat_matmul", keyboard=(
        ("slider", "batch: rows of X and H", ["ArrowRight"]),
        ("slider", "inputs: columns of X", ["ArrowRight"]),
        ("slider", "hiddens: columns of H", ["ArrowLeft"]),
        ("slider", "seed of the random matrices", ["ArrowRight"]),
    )),
    Notebook("03_one_hot", "one_hot", keyboard=(
        ("textbox", "text to encode", "leave: again"),
        ("checkbox", "preprocess", [" "]),
        ("button", "random sampling", ["Enter"]),
        ("slider", "batch size: subsequences", ["ArrowRight"]),
        ("slider", "steps: characters per subsequence", ["ArrowLeft"]),
        ("slider", "seed (offset, order)", ["ArrowRight"]),
        ("button", "tokens, indices and one-hot vectors", ["Enter"]),
    )),
    Notebook("04_rnn_scratch", "rnn_scratch", keyboard=(
        ("textbox", "prefix the text starts with", "type: and"),
        ("slider", "characters to generate", ["ArrowLeft"]),
        ("spinbutton", "temperature of the sampling", ["ArrowUp", "Enter"]),
        ("spinbutton", "seed of the sampling", ["ArrowUp", "Enter"]),
        ("checkbox", "greedy (always the most likely", [" "]),
    )),
    Notebook("05_bptt", "bptt", keyboard=(
        ("slider", "ρ(W_hh): spectral radius", ["ArrowRight"]),
        ("slider", "truncation: time steps kept", ["ArrowLeft"]),
        ("checkbox", "token inputs", [" "]),
        NEXT_PANEL,
        ("combobox", "model: the trained model", ["ArrowDown"]),
        ("slider", "position: the character whose prediction", ["ArrowLeft"]),
    )),
    Notebook("05b_bptt_fast", optional=True),  # 05's "Making it fast", optional
    Notebook("06_gradient_clipping", "clipping", keyboard=(
        ("slider", "clipping θ: clipping threshold", ["ArrowLeft"]),
        ("slider", "learning rate of plain SGD", ["ArrowLeft"]),
        ("combobox", "seed of the initial weights", ["ArrowDown"]),
    )),
    Notebook("07_perplexity", "perplexity", keyboard=(
        ("slider", "temperature: divides the model's log-probabilities", ["ArrowRight"]),
    )),
    # 08's exercise is the capstone (d2lmini.exercises.capstone), which asks no question.
    Notebook("08_perplexity_lab", keyboard=(
        ("combobox", "optimizer: how gradients become updates", ["ArrowUp"], False),
        ("slider", "minibatches: minibatches to train", ["ArrowLeft"], False),
        ("button", "Train a new model", ["Enter"]),
    )),
)

MAP = COURSE[0]  # 00_start_here: the course map every notebook links back to
CHAPTERS = tuple(n for n in COURSE[1:] if not n.optional)  # the core notebooks, each ending with exercises
OPTIONAL = tuple(n for n in COURSE if n.optional)  # optional notebooks: executed and stored like the rest
WITH_EXERCISES = tuple(notebook for notebook in COURSE if notebook.exercises)


def by_number(number: str) -> Notebook:
    """The row of the notebook numbered `number` ("01", "05b")."""
    rows = [notebook for notebook in COURSE if notebook.number == number]
    if not rows:
        raise KeyError(f"number {number!r} names no notebook in tests/course.py's COURSE")
    return rows[0]
