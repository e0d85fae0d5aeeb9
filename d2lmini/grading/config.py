"""The instructor's grading settings: points per exercise, the seed of the graded inputs, the limits.

A small TOML file (`d2lmini/grading/points.toml` is the default; copy it and edit):

    [grading]
    seed = 2026            # graded inputs differ from the self-checks' (any whole number)
    cell_seconds = 120     # a cell still running after this is stopped
    notebook_seconds = 900 # the whole notebook, all its cells
    memory_mb = 2048       # the memory a student's kernel may allocate

    [points]
    "01:ngram_order" = 1   # exercise id = notebook number : check name without check_
    "01:all_states" = 2

Only the exercises listed under [points] are graded, so a config with the exercises of one
notebook grades that notebook's assignment.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from d2lmini.grading.kernel import Limits
from d2lmini.grading.manifest import Exercise

DEFAULT_CONFIG = Path(__file__).with_name("points.toml")
QUESTION_POINTS, CODING_POINTS, CAPSTONE_POINTS = 1, 2, 5
PUBLIC_SEED = 2026  # the shipped config's seed: anyone can read it, so an instructor writes their own
LIMIT_KEYS = ("cell_seconds", "notebook_seconds", "memory_mb")


@dataclass
class Config:
    """Points per exercise id, the seed of the graded inputs, and the kernel's limits."""

    points: dict[str, float]
    seed: int
    limits: Limits


def validate_config(data: dict, exercises: list[Exercise], source: str) -> Config:
    """Return the Config that `data` (a parsed TOML file) describes; raise ValueError naming what is wrong."""
    known = {e.id for e in exercises}
    grading, points = data.get("grading", {}), data.get("points", {})
    unknown = set(data) - {"grading", "points"} | set(grading) - {"seed", *LIMIT_KEYS}
    if unknown:
        raise ValueError(f"{source}: unknown setting(s) {', '.join(sorted(unknown))}; "
                         f"expected [grading] (seed, {', '.join(LIMIT_KEYS)}) and [points]")
    if not points:
        raise ValueError(f"{source}: [points] lists no exercise; give at least one, "
                         "e.g. \"01:ngram_order\" = 1")
    missing = sorted(set(points) - known)
    if missing:
        raise ValueError(f"{source}: no exercise called {', '.join(missing)}; the exercises are "
                         f"{', '.join(sorted(known))}")
    for key, value in points.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ValueError(f"{source}: the points of {key} must be a number >= 0, not {value!r}")
    seed = grading.get("seed", PUBLIC_SEED)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"{source}: seed must be a whole number between 0 and 2**31 - 1, not {seed!r}")
    limits = Limits()
    for key in LIMIT_KEYS:
        value = grading.get(key, getattr(limits, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{source}: {key} must be a number > 0, not {value!r}")
        setattr(limits, key, type(getattr(limits, key))(value))
    return Config({e.id: float(points[e.id]) for e in exercises if e.id in points}, seed, limits)


def load_config(path: Path | None, exercises: list[Exercise]) -> Config:
    """Read and validate the TOML file at `path` (the default config when None)."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: cannot read the config ({error})") from None
    return validate_config(data, exercises, str(path))


def default_points(exercise: Exercise) -> int:
    """The default points: 1 for a question, 2 for a coding exercise, 5 for the capstone."""
    if exercise.check == "check_capstone":
        return CAPSTONE_POINTS
    return CODING_POINTS if exercise.kind == "coding" else QUESTION_POINTS


def config_text(exercises: list[Exercise], seed: int = PUBLIC_SEED) -> str:
    """A config file giving every exercise its default points (what `--write-config` writes)."""
    limits = Limits()
    lines = [
        "# d2lmini grading: points per exercise and the grader's limits. Edit and pass with --config.",
        "# Only the exercises listed under [points] are graded; remove a notebook's lines to leave it out.",
        "[grading]",
        f"seed = {seed}  # graded inputs differ from the self-checks' (any whole number)",
        f"cell_seconds = {limits.cell_seconds:g}  # a cell still running after this is stopped",
        f"notebook_seconds = {limits.notebook_seconds:g}  # all the cells of one notebook",
        f"memory_mb = {limits.memory_mb}  # memory a student's kernel may allocate",
        "",
        "[points]",
    ]
    notebook = None
    for exercise in exercises:
        if exercise.notebook != notebook:
            notebook = exercise.notebook
            lines.append(f"# {notebook}")
        lines.append(f'"{exercise.id}" = {default_points(exercise)}  # {exercise.kind}')
    return "\n".join(lines) + "\n"
