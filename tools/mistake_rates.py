"""Print, per notebook, how many held-apart wrong answers the self-checks name a cause for.

The wrong answers are `tests/held_apart_wrong_answers.py`, written apart from the catalogue of
mistakes (`d2lmini.exercises.mistakes`). Each is checked by its exercise's self-check, in English:
"named" when the verdict says "Likely cause: ...", "accepted" when it says "Correct!" (which a
wrong answer must never get). Usage: `OMP_NUM_THREADS=1 python tools/mistake_rates.py`.
"""

import importlib
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import held_apart_wrong_answers  # noqa: E402 - the held-apart answers live with the tests

CHECKS = {
    "01": "hidden_state",
    "02": "concat_matmul",
    "03": "one_hot",
    "04": "rnn_scratch",
    "05": "bptt",
    "06": "clipping",
    "07": "perplexity",
    "08": "capstone",
    "09": "gates",
}
NAMES = {
    "sequential_batches": "check_sequential_batches",
    "clip_function": "check_clip_function",
    "perplexity_function": "check_perplexity_function",
}


def check_of(exercise: str):
    """The self-check of the exercise with this id ("09:gru_cell" -> gates.check_gru_cell)."""
    notebook, name = exercise.split(":")
    module = importlib.import_module(f"d2lmini.exercises.{CHECKS[notebook]}")
    return getattr(module, NAMES.get(name, f"check_{name}"))


@dataclass
class Tally:
    """One notebook's held-apart answers: how many, how many named, and the labels of any accepted."""

    answers: int = 0
    named: int = 0
    accepted: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)


def judge_all() -> dict[str, Tally]:
    """Check every held-apart wrong answer; return each notebook's tally."""
    os.environ.pop("D2LMINI_LANG", None)  # the words are matched in English
    tallies = defaultdict(Tally)
    for exercise, label, function in held_apart_wrong_answers.wrong_answers():
        verdict = check_of(exercise)(function)
        tally = tallies[exercise[:2]]
        tally.answers += 1
        if verdict.correct:
            tally.accepted.append(label)
        elif "Likely cause: " in verdict.message:
            tally.named += 1
        else:
            tally.unnamed.append(f"{label} -> {verdict.message[:160]}")
    return dict(sorted(tallies.items()))


def table(tallies: dict[str, Tally]) -> str:
    """The per-notebook table of named-cause rates, with the total."""
    lines = ["notebook  answers  named  rate   accepted"]
    for notebook, tally in tallies.items():
        lines.append(
            f"{notebook:>8}  {tally.answers:>7}  {tally.named:>5}  {tally.named / tally.answers:>5.0%}  "
            f"{len(tally.accepted):>8}"
        )
    answers = sum(t.answers for t in tallies.values())
    named = sum(t.named for t in tallies.values())
    accepted = sum(len(t.accepted) for t in tallies.values())
    lines.append(f"{'all':>8}  {answers:>7}  {named:>5}  {named / answers:>5.0%}  {accepted:>8}")
    return "\n".join(lines)


def main() -> None:
    tallies = judge_all()
    print(table(tallies))
    if "--unnamed" in sys.argv:
        for tally in tallies.values():
            print("\n".join(tally.unnamed + [f"ACCEPTED {label}" for label in tally.accepted]))


if __name__ == "__main__":
    main()
