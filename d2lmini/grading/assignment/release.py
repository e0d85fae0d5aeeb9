"""Release the class's notebooks with numbers drawn from the instructor's seed.

    python -m d2lmini.grading release --config points.toml --out released/ [--notebooks notebooks]

A question whose answer is computed (how many parameters has an RNN with |V| = 28 and h = 64?)
has its numbers written twice in its notebook: in the question's text and as keyword arguments of
its check call (`ex.check_rnn_parameter_count(answer, vocab_size=28, num_hiddens=64)`). The
release draws new numbers for each such question from the seed and writes them in both places,
so the self-check judges with the numbers the student reads, and the answers of the public
`solutions/` do not fit. The released folder also holds `exercises.json`, the released checks'
arguments, with which the grader judges: `--manifest released/exercises.json`.

A question whose answer is a fact (which scheme may carry the state across minibatches?) or the
student's own example (two strings with the same bag of characters) has no numbers to draw:
`FACTS` names them.
"""

import argparse
import ast
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import load_config
from d2lmini.grading.assignment.manifest import Exercise
from d2lmini.i18n import _


@dataclass(frozen=True)
class Number:
    """One number of a question: the check's keyword, how the release draws it, where the text says it.

    `draw(rng, drawn)` gets the numbers already drawn for the same question (a step must lie
    within the sequence). Each item of `text` is a regular expression with one group, where the
    text says the number, or a pair (expression, say) where it says `say(drawn)` instead (a
    number derived from it, or written with a thousands separator); each must match the
    question's text exactly once (a space in it matches any run of white space). `shared` names
    a number that several questions of a notebook share ("the same minibatch"): it is drawn once.
    """

    parameter: str
    draw: Callable[[random.Random, dict], object]
    text: tuple = ()
    shared: str | None = None


def _one_of(*values) -> Callable[[random.Random, dict], int | float]:
    return lambda rng, drawn: rng.choice(values)


def _markov_floor_perplexity() -> float:
    from d2lmini.markov import make_markov_source

    return 2 ** make_markov_source().entropy_rate_bits()


VOCABS = (20, 24, 28, 32, 36, 40, 48, 56, 60, 64, 72, 80)
HIDDENS = (16, 24, 32, 48, 64, 96, 128, 160, 192, 256)

RELEASED: dict[str, tuple[Number, ...]] = {
    "check_ngram_order": (
        Number(
            "vocab_size",
            _one_of(30, 40, 50, 60, 200, 300, 500),  # n is never 5
            (r"\$\|V\| = (\d+)\$",),
        ),
    ),
    "check_rnn_parameter_count": (
        Number("vocab_size", _one_of(*VOCABS), (r"\$\|V\| = (\d+)\$",)),
        Number("num_hiddens", _one_of(*HIDDENS), (r"\$h = (\d+)\$",)),
    ),
    "check_hidden_state_shape": (
        Number("batch_size", _one_of(2, 4, 6, 8, 10, 12, 16, 32), (r"holds (\d+) sequences",)),
        Number("num_hiddens", _one_of(*HIDDENS), (r"the RNN has (\d+) hidden units",)),
    ),
    "check_stacked_weight_shape": (
        Number("num_inputs", _one_of(*VOCABS), (r"has (\d+) inputs",)),
        Number("num_hiddens", _one_of(*HIDDENS), (r"inputs \(one-hot\) and (\d+) hidden",)),
    ),
    "check_multiplication_count": (
        Number("batch", _one_of(8, 16, 24, 32, 48, 64), (r"For batch (\d+),",)),
        Number("num_inputs", _one_of(*VOCABS), (r", (\d+) inputs and",)),
        Number("num_hiddens", _one_of(*HIDDENS), (r"inputs and (\d+) hidden units",)),
    ),
    "check_gru_weight_shape": (
        Number("num_inputs", _one_of(*VOCABS), (r"GRU\((\d+), \d+\)",)),
        Number("num_hiddens", _one_of(*HIDDENS), (r"GRU\(\d+, (\d+)\)",)),
    ),
    "check_output_row": (
        Number("batch_size", _one_of(3, 4, 5, 6, 8), (r"A minibatch of (\d+) sequences",)),
        Number("step", lambda rng, drawn: rng.randrange(1, 10), (r"scores for time step (\d+)",)),
        Number(
            "example",
            lambda rng, drawn: rng.randrange(1, drawn["batch_size"]),
            (r"of sequence (\d+) \(both",),
        ),
    ),
    "check_hidden_term_std": (
        Number(
            "num_hiddens",
            _one_of(16, 25, 36, 49, 64, 81, 100, 144),
            (r"\$h = (\d+)\$ hidden units", r"\$1/\\sqrt\{(\d+)\}\$"),
        ),
        Number(
            "state_std",
            _one_of(0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
            (r"standard deviation (\d\.\d+), what",),
        ),
    ),
    "check_temperature_probability": (
        Number(
            "temperature",
            _one_of(0.25, 0.4, 0.5, 0.75, 1.5, 2.0, 3.0),
            (r"With temperature \$\\tau = ([\d.]+)\$",),
        ),
    ),
    "check_initial_loss": (
        Number(
            "vocab_size",
            _one_of(40, 50, 60, 70, 80, 96, 100, 128),
            (r"vocabulary of \*\*(\d+)\*\* characters",),
        ),
    ),
    "check_bits_above_floor": (
        Number(
            "perplexity",
            lambda rng, drawn: round(_markov_floor_perplexity() * rng.uniform(1.05, 1.6), 1),
            (r"validation perplexity of ([\d.]+)\.",),
        ),
    ),
    # 03: the same one-hot minibatch in exercises 1 and 2
    "check_one_hot_bytes": (
        Number(
            "batch", _one_of(16, 32, 48, 64, 100, 128), (r"A minibatch of (\d+) subsequences",), "minibatch"
        ),
        Number(
            "steps", _one_of(20, 25, 32, 35, 40, 50, 64), (r"subsequences of (\d+) characters",), "minibatch"
        ),
        Number("vocab", _one_of(*VOCABS), (r"with the (\d+)-entry vocabulary",), "minibatch"),
    ),
    "check_multiply_adds": (
        Number("batch", _one_of(16, 32, 48, 64, 100, 128), (r"reshaped to \$\((\d+) \\cdot",), "minibatch"),
        Number("steps", _one_of(20, 25, 32, 35, 40, 50, 64), (r"\\cdot (\d+), \d+\)\$",), "minibatch"),
        Number(
            "vocab", _one_of(*VOCABS), (r"\\cdot \d+, (\d+)\)\$", r"of shape \$\((\d+), \d+\)\$"), "minibatch"
        ),
        Number("hiddens", _one_of(*HIDDENS), (r"of shape \$\(\d+, (\d+)\)\$",)),
    ),
    "check_sequential_start": (
        Number(
            "num_tokens",
            _one_of(600, 800, 1000, 1200, 1500, 2000),
            ((r"a text of ([\d,]+) tokens", lambda v: f"{v['num_tokens']:,}"), r"torch\.arange\((\d+)\)"),
        ),
        Number("batch_size", _one_of(3, 4, 5, 6, 8), (r"with batch size (\d+) and",)),
        Number("num_steps", _one_of(5, 8, 10, 12), (r"and (\d+) steps;",)),
        Number("offset", lambda rng, drawn: rng.randrange(1, drawn["num_steps"]), (r"came out as (\d+)\.",)),
        Number("row", lambda rng, drawn: rng.randrange(1, drawn["batch_size"]), (r"does row (\d+) of",)),
        Number("minibatch", lambda rng, drawn: rng.randrange(1, 5), (r"of minibatch (\d+) start",)),
    ),
    # 05
    "check_tanh_backward": (
        Number("h", _one_of(-0.8, -0.5, -0.3, 0.2, 0.4, 0.5, 0.7, 0.8, 0.9), (r"value \$h = ([-\d.]+)\$",)),
        Number("grad", _one_of(0.5, 1.5, 2.5, 3, 4, -1, -2), (r"\\partial h = ([-\d.]+)\$",)),
    ),
    "check_vanishing_steps": (
        Number(
            "w",
            _one_of(0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.95),
            (r"\$h_t = ([\d.]+)\\, h", r"the Jacobian \$([\d.]+)\$"),
        ),
    ),
    "check_truncation_reach": (
        Number(
            "loss_step",
            lambda rng, drawn: rng.choice([t for t in range(12, 60) if t % 10 not in (0, 1)]),
            (
                r"loss at step (\d+) sends",
                r"states \$H_\{(\d+)\}, H",
                (r", H_\{(\d+)\}, \\dots", lambda v: str(v["loss_step"] - 1)),
            ),
        ),
    ),
    # 09
    "check_saturated_gate_slope": (
        Number("pre_activation", _one_of(2, 2.5, 3), (r"with \$a = ([\d.]+)\$", r"at \$a = ([\d.]+)\$")),
    ),
    # 06
    "check_clipped_entry": (
        Number(
            "theta",
            _one_of(1, 2, 2.6, 3.9, 5.2, 6.5, 7.8, 9.1, 10.4),
            (r"clipping with \$\\theta = ([\d.]+)\$",),
        ),
    ),
    "check_per_tensor_bound": (
        Number("theta", _one_of(0.5, 1, 2, 3, 5, 10), (r"at most \$\\theta = ([\d.]+)\$",)),
    ),
    "check_value_clip_bound": (
        Number("clip", _one_of(0.01, 0.02, 0.05, 0.1, 0.2, 0.5), (r"clipping at \$c = ([\d.]+)\$",)),
    ),
    "check_max_step": (
        Number("lr", _one_of(0.1, 0.5, 1, 2, 2.5, 4), (r"\$\\eta = ([\d.]+)\$",)),
        Number("theta", _one_of(0.25, 0.5, 1, 2, 5), (r"clipping at \$\\theta = ([\d.]+)\$",)),
    ),
    # 07
    "check_sequence_perplexity": (
        Number(
            "probs",
            lambda rng, drawn: tuple(rng.choice((0.5, 0.25, 0.125, 0.2, 0.4, 0.8, 0.1)) for _ in range(4)),
            (
                (
                    r"came the probabilities ([\d.]+, [\d.]+, [\d.]+ and [\d.]+)\.",
                    lambda v: (
                        ", ".join(_literal(p) for p in v["probs"][:3]) + f" and {_literal(v['probs'][3])}"
                    ),
                ),
            ),
        ),
    ),
    "check_bits_to_perplexity": (
        Number("bits", _one_of(1.2, 1.5, 1.6, 2.0, 2.2, 2.5, 3.0), (r"reaches ([\d.]+) bits",)),
    ),
    "check_compressed_bytes": (
        Number("perplexity", _one_of(3, 4, 5, 8, 10, 12), (r"validation perplexity (\d+) drives",)),
    ),
}

FACTS = {  # questions with no number to draw, and why (notes for the maintainers, shown to nobody)
    "check_same_bag": "the student's own example: any two different strings with the same characters",
    "check_carry_state": "a fact: only sequential partitioning continues each row's text across minibatches",
    "check_zero_probability": "a fact: one probability of 0 makes the perplexity infinite, at any length",
}


def draw(seed: int, notebook: str, check: str, public: dict | None = None) -> dict:
    """The numbers of one question, drawn from the instructor's seed (the same seed, the same numbers).

    Each differs from its `public` value (the one in the course's notebook, which `solutions/` answers).
    """
    drawn: dict = {}
    for number in RELEASED[check]:
        rng = random.Random(f"{seed}:{notebook}:{number.shared or check}:{number.parameter}")
        for _attempt in range(100):
            drawn[number.parameter] = number.draw(rng, drawn)
            if drawn[number.parameter] != (public or {}).get(number.parameter):
                break
    return drawn


def public_values(call: ast.Call) -> dict:
    """The keyword arguments a check call writes as literals (the notebook's own numbers)."""
    values = {}
    for keyword in call.keywords:
        try:
            values[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            continue
    return values


def _literal(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ")"
    return f"{value:g}" if isinstance(value, float) else str(value)


def rewrite_text(text: str, check: str, values: dict) -> str:
    """The question's text with each of its numbers replaced; raise ValueError if one is not found once."""
    for number in RELEASED[check]:
        for item in number.text:
            pattern, say = item if isinstance(item, tuple) else (item, None)
            matches = list(re.finditer(pattern.replace(" ", r"\s+"), text))  # a line may break anywhere
            if len(matches) != 1:
                # TRANSLATORS: {pattern} is a regular expression; RELEASED is a table in the file named.
                raise ValueError(
                    _("the text of {check} says {pattern!r} {count} times, not once: update RELEASED in "
                      "d2lmini/grading/assignment/release.py with the notebook").format(
                          check=check, pattern=pattern, count=len(matches))
                )
            match = matches[0]
            said = say(values) if say is not None else _literal(values[number.parameter])
            text = text[: match.start(1)] + said + text[match.end(1) :]
    return text


def rewrite_call(source: str, check: str, values: dict) -> str:
    """The cell's source with the check call's keyword arguments set to `values`."""
    tree = ast.parse(source)
    calls = manifest.check_calls(tree, {check})
    if len(calls) != 1:
        raise ValueError(
            _("a cell has {count} calls of {check}, not one").format(count=len(calls), check=check))
    keywords = {k.arg: k.value for k in calls[0].keywords}
    missing = sorted(set(values) - set(keywords))
    if missing:
        raise ValueError(_("the call of {check} must write {names}=... for the release to set it").format(
            check=check, names=", ".join(missing)))
    lines = source.splitlines(keepends=True)
    for name in sorted(values, key=lambda n: (keywords[n].lineno, keywords[n].col_offset), reverse=True):
        node = keywords[name]
        if node.lineno != node.end_lineno:
            raise ValueError(_("{check}'s {name}=... must be on one line").format(check=check, name=name))
        line = lines[node.lineno - 1].encode()
        lines[node.lineno - 1] = (
            line[: node.col_offset] + _literal(values[name]).encode() + line[node.end_col_offset :]
        ).decode()
    return "".join(lines)


def release_notebook(path: Path, seed: int):
    """The notebook at `path` with each computed question's numbers drawn from `seed`, and those checks."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    released = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            calls = manifest.check_calls(ast.parse(cell.source), RELEASED)
        except SyntaxError:
            continue
        for call in calls:
            check = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
            question = next((c for c in reversed(notebook.cells[:index]) if c.cell_type == "markdown"), None)
            if question is None:
                raise ValueError(_("{file}: {check} has no question text above it").format(
                    file=path.name, check=check))
            values = draw(seed, path.stem, check, public_values(call))
            question.source = rewrite_text(question.source, check, values)
            cell.source = rewrite_call(cell.source, check, values)
            cell.outputs, cell.execution_count = [], None  # an old verdict would show the old numbers
            released.append(check)
    return notebook, released


def release(notebooks: Path, out: Path, seed: int, force: bool = False) -> list[Exercise]:
    """Write every notebook of `notebooks` into `out` with numbers from `seed`, and out/exercises.json."""
    import nbformat

    paths = sorted(Path(notebooks).glob("*.ipynb"))
    if not paths:
        raise ValueError(_("{folder} holds no notebook (.ipynb) to release").format(folder=notebooks))
    targets = [Path(out) / p.name for p in paths] + [Path(out) / "exercises.json"]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not force:
        raise ValueError(_("{paths} exist(s): nothing was written (give --force to replace)").format(
            paths=", ".join(existing[:3])))
    made = {path: release_notebook(path, seed)[0] for path in paths}  # every check before any write
    Path(out).mkdir(parents=True, exist_ok=True)
    for path, notebook in made.items():
        nbformat.write(notebook, Path(out) / path.name)
    exercises = manifest.discover(out)
    manifest.save(exercises, Path(out) / "exercises.json")
    return exercises


def main(argv: list[str]) -> int:
    """`python -m d2lmini.grading release ...`: return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m d2lmini.grading release",
        description=_(
            "Write the class's notebooks with the computed questions' numbers drawn from your config's seed."
        ),
    )
    parser.add_argument(
        "--config", type=Path, required=True, help=_("your points.toml (its seed draws the numbers)")
    )
    parser.add_argument("--out", type=Path, required=True, help=_("the folder of the released notebooks"))
    parser.add_argument("--notebooks", type=Path, default=Path("notebooks"), help=_("the course's notebooks"))
    parser.add_argument("--force", action="store_true", help=_("replace notebooks already in OUT"))
    args = parser.parse_args(argv)
    try:
        seed = load_config(args.config, manifest.load()).seed
        exercises = release(args.notebooks, args.out, seed, args.force)
    except (ValueError, OSError) as error:
        print(_("error: {error}").format(error=error), file=sys.stderr)
        return 2
    drawn = sum(1 for e in exercises if e.check in RELEASED)
    print(
        _("released {count} notebooks into {out}: {drawn} questions with numbers from your seed; grade with "
          "--manifest {manifest}").format(count=len(list(args.out.glob("*.ipynb"))), out=args.out,
                                          drawn=drawn, manifest=args.out / "exercises.json")
    )
    return 0
