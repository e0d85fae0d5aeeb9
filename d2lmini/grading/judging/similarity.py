"""Classmates' graded functions compared pair by pair: evidence for the instructor, never a verdict.

Each student's record keeps the source of every graded function they attempted
(`evidence.graded_sources`, taken from the submitted notebook as `evidence` normalises it: no
comments, no docstrings).
After every grading run, and whenever the outputs are made again, `alike_pairs` compares, for
each coding exercise and function, every two students of all the records in OUT, and the grader
writes the pairs at least `SIMILAR` alike to `similarity.csv`, most alike first. No points change.

What is compared is the function's body as Python tokens, with every name the function binds (its
parameters, variables, loop variables, inner functions) written `_`: renaming, spacing,
comments and docstrings do not hide a copy, while the names it takes from outside (`torch`,
methods, keyword arguments) are kept. The ratio is `evidence.likeness` of the two bodies'
fingerprints (copydetect's winnowing, read the evidence module): each function is fingerprinted
once, and a pair costs a set intersection, so a class of long functions stays cheap. Not compared:
a function that does nothing (`return None`, `pass`), one whose tokens are those of the released
notebook's stub (what every student got), and one shorter than `evidence.MIN_TOKENS`, which has too few
ways to be written for likeness to say anything.
"""

import csv
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from d2lmini.grading.base.files import csv_text as spreadsheet_csv
from d2lmini.grading.judging.evidence import (
    SIMILAR,
    Fingerprint,
    canonical_tokens,
    fingerprint,
    likeness,
)
from d2lmini.i18n import _

HEADER = ("exercise", "function", "student_a", "student_b", "ratio")


@dataclass(frozen=True)
class Pair:
    """Two students whose function `function` of `exercise` is `ratio` alike (`a` sorts before `b`)."""

    exercise: str
    function: str
    a: str
    b: str
    ratio: float


def _items(table) -> list[tuple]:
    """The items of `table`, or none if a record holds something else there."""
    return list(table.items()) if isinstance(table, dict) else []


def _groups(sources: dict[str, dict[str, dict[str, str]]]) -> dict[tuple[str, str], dict[str, Fingerprint]]:
    """(exercise, function) -> student -> fingerprint, for the functions worth comparing."""
    groups: dict[tuple[str, str], dict[str, Fingerprint]] = defaultdict(dict)
    for student, exercises in sources.items():
        for exercise, functions in _items(exercises):
            for function, source in _items(functions):
                found = fingerprint(canonical_tokens(source)) if isinstance(source, str) else None
                if found is not None:
                    groups[(exercise, function)][student] = found
    return groups


def _alike_in(group: dict[str, Fingerprint], threshold: float) -> Iterator[tuple[str, str, float]]:
    """The pairs of students in `group` whose functions are at least `threshold` alike, with the ratio."""
    students = sorted(group)
    for index, b in enumerate(students):
        for a in students[:index]:
            ratio = likeness(group[a], group[b])
            if ratio >= threshold:
                yield a, b, round(ratio, 3)


def alike_pairs(sources: dict[str, dict[str, dict[str, str]]], threshold: float = SIMILAR) -> list[Pair]:
    """Every pair of students whose graded function is at least `threshold` alike, most alike first.

    `sources`: student -> exercise -> function (the check's slot) -> source, as records keep them.
    """
    pairs = [Pair(exercise, function, a, b, ratio)
             for (exercise, function), group in _groups(sources).items()
             for a, b, ratio in _alike_in(group, threshold)]
    return sorted(pairs, key=lambda p: (-p.ratio, p.exercise, p.function, p.a, p.b))


def csv_text(pairs: list[Pair]) -> str:
    """`similarity.csv`: a header, then a row per pair (a header alone when none is alike)."""
    return spreadsheet_csv([HEADER, *((p.exercise, p.function, p.a, p.b, f"{p.ratio:.3f}") for p in pairs)])


def summary(path: Path) -> str:
    """One line for the instructor about the similarity.csv at `path`."""
    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            rows = max(sum(1 for _ in csv.reader(handle)) - 1, 0)
    except OSError:
        # TRANSLATORS: {name} is a file's name (similarity.csv), which is missing.
        return _("no {name}").format(name=Path(path).name)
    if not rows:
        return _("no two students' graded functions are {similar:.0%} alike ({path})").format(
            similar=SIMILAR, path=path)
    return _("{rows} pair(s) of students' graded functions at least {similar:.0%} alike, as evidence to "
             "read, not a verdict: {path}").format(rows=rows, similar=SIMILAR, path=path)
