"""The instructor's grading settings: points per exercise, the seed of the graded inputs, the limits.

A small TOML file (`d2lmini/grading/assignment/points.toml` is the default; `--write-config` writes your own):

    [grading]              # every setting of `settings.SETTINGS`, each optional
    seed = 81723           # graded inputs differ from the self-checks' (keep yours private)
    [points]
    "01:ngram_order" = 1   # exercise id = notebook number : check name without check_
    "01:all_states" = 2
    [rubric]               # optional: points you give by hand (a rubric CSV, `--rubric`)
    "08:explore" = 3
    [late]                 # optional: days late per student, each costing `late_per_day`
    bob = 2

Only the exercises listed under [points] are graded, so a config with the exercises of one
notebook grades that notebook's assignment.
"""

import math
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from d2lmini.grading.assignment.manifest import Exercise, kind_label
from d2lmini.grading.assignment.settings import BY_NAME, PUBLIC_SEED, SETTINGS, Limits, toml_lines
from d2lmini.i18n import N_, _

DEFAULT_CONFIG = Path(__file__).with_name("points.toml")
QUESTION_POINTS, CODING_POINTS, CAPSTONE_POINTS = 1, 2, 5
MAX_POINTS = 1000  # points of one exercise or rubric item
MAX_CONFIG_BYTES = 1_000_000
TABLES = {  # each table's name (a TOML key) and what it holds, in words (shown with `_`)
    "grading": N_("the settings"),
    "points": N_("points per exercise"),
    "rubric": N_("hand-graded items"),
    "late": N_("days late per student"),
}

__all__ = ["DEFAULT_CONFIG", "PUBLIC_SEED", "Config", "config_text", "load_config", "validate_config"]


@dataclass
class Config:
    """Points per exercise id, the seed of the graded inputs, the kernel's limits and the hand-kept parts."""

    points: dict[str, float]
    seed: int
    limits: Limits
    rubric: dict[str, float] = field(default_factory=dict)  # item -> its maximum
    late: dict[str, float] = field(default_factory=dict)  # student -> days late
    late_per_day: float = 0.0
    partial_credit: bool = False  # a coding exercise earns the fraction of its graded cases it passes


def _table(data: dict, name: str, source: str) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        # TRANSLATORS: {name} is a TOML table's name (keep it and the brackets), {what} what it holds,
        # {type_name} a Python type.
        raise ValueError(
            _("{source}: [{name}] must be one table ({what}), written `[{name}]`, not {type_name} "
              "(`[[{name}]]` or `{name} = ...`)").format(
                source=source, name=name, what=_(TABLES[name]), type_name=type(value).__name__)
        )
    return value


def _number(value, what: str, high: float, source: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= high
    ):
        # TRANSLATORS: {what} is "the points of 01:ngram_order", "the rubric item ..." or "the days late
        # of ...".
        raise ValueError(_("{source}: {what} must be a number from 0 to {high:,}, not {value!r}").format(
            source=source, what=what, high=high, value=value))
    return float(value)


def validate_config(data: dict, exercises: list[Exercise], source: str) -> Config:
    """Return the Config that `data` (a parsed TOML file) describes; raise ValueError naming what is wrong."""
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        # TRANSLATORS: {table} is a TOML table's name (keep it), {what} what it holds.
        expected = ", ".join(_("[{table}] ({what})").format(table=t, what=_(what))
                             for t, what in TABLES.items())
        raise ValueError(_("{source}: unknown table(s) {names}; expected {expected}").format(
            source=source, names=", ".join(unknown), expected=expected))
    grading, points, rubric, late = (_table(data, name, source) for name in TABLES)
    unknown = sorted(set(grading) - set(BY_NAME))
    if unknown:
        raise ValueError(
            _("{source}: unknown setting(s) {names} in [grading]; the settings are {settings}").format(
                source=source, names=", ".join(unknown), settings=", ".join(BY_NAME))
        )
    if not points:
        raise ValueError(
            _('{source}: [points] lists no exercise; give at least one, e.g. "01:ngram_order" = 1').format(
                source=source)
        )
    known = {e.id for e in exercises}
    missing = sorted(set(points) - known)
    if missing:
        raise ValueError(
            _("{source}: no exercise called {names}; the exercises are {exercises}").format(
                source=source, names=", ".join(missing), exercises=", ".join(sorted(known)))
        )
    clash = sorted(set(rubric) & known)
    if clash:
        raise ValueError(
            _("{source}: [rubric] item(s) {names} are graded exercises; give a hand-graded item a name of "
              "its own").format(source=source, names=", ".join(clash))
        )
    values = {s.name: s.check(grading.get(s.name, s.default), source) for s in SETTINGS}
    return Config(
        {
            e.id: _number(points[e.id], _("the points of {exercise}").format(exercise=e.id), MAX_POINTS,
                          source)
            for e in exercises
            if e.id in points
        },
        values["seed"],
        Limits(**{s.name: values[s.name] for s in SETTINGS if s.limit}),
        {
            item: _number(value, _("the rubric item {item}").format(item=item), MAX_POINTS, source)
            for item, value in rubric.items()
        },
        {
            student: _number(days, _("the days late of {student}").format(student=student), 365, source)
            for student, days in late.items()
        },
        values["late_per_day"],
        values["partial_credit"],
    )


def read_config(path: Path) -> dict:
    """Parse the TOML file at `path`; raise ValueError (never hang) on what is not a small text file."""
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(
                _("{path}: the config must be a file (TOML), not a device, folder or pipe").format(path=path))
        if info.st_size > MAX_CONFIG_BYTES:
            raise ValueError(_("{path}: {size:,} bytes is not a config (at most {limit:,})").format(
                path=path, size=info.st_size, limit=MAX_CONFIG_BYTES))
        return tomllib.loads(path.read_bytes()[:MAX_CONFIG_BYTES].decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(
            _("{path}: cannot read the config ({error})").format(path=path, error=error)) from None


def load_config(path: Path | None, exercises: list[Exercise]) -> Config:
    """Read and validate the TOML file at `path` (the default config when None)."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    return validate_config(read_config(path), exercises, str(path))


def default_points(exercise: Exercise) -> int:
    """The default points: 1 for a question, 2 for a coding exercise, 5 for the capstone."""
    if exercise.check == "check_capstone":
        return CAPSTONE_POINTS
    return CODING_POINTS if exercise.kind == "coding" else QUESTION_POINTS


def config_text(exercises: list[Exercise], seed: int = PUBLIC_SEED) -> str:
    """A config file giving every exercise its default points (what `--write-config` writes)."""
    lines = [
        # TRANSLATORS: the first comments of a TOML file (keep the "# " and the options).
        _("# d2lmini grading: points per exercise and the grader's limits. Edit and pass with --config."),
        _("# Only the exercises listed under [points] are graded; remove a notebook's lines to leave it "
          "out."),
        _("# Each setting's range: python -m d2lmini.grading --help."),
        "[grading]",
        *toml_lines(seed),
        "",
        "[points]",
    ]
    notebook = None
    for exercise in exercises:
        if exercise.notebook != notebook:
            notebook = exercise.notebook
            lines.append(f"# {notebook}")
        lines.append(f'"{exercise.id}" = {default_points(exercise)}  # {kind_label(exercise.kind)}')
    return "\n".join(lines) + "\n"
