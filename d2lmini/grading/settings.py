"""Every grading setting, declared once: name, type, default, range and help.

`config.py` validates `[grading]` against this table, `config_text` writes `points.toml`'s
comments from it, the command's `--help` lists it, `docs/instructors.md`'s table is
`markdown_table()` and `Limits` (what a submission may use) is built from it.
"""

import math
from dataclasses import dataclass, field, make_dataclass


@dataclass(frozen=True)
class Setting:
    """One setting of `[grading]` (or of the command line, for `jobs`)."""

    name: str
    type: type  # int, float or bool
    default: int | float | bool
    low: int | float
    high: int | float
    help: str
    limit: bool = True  # part of `Limits`, the bounds on a submission's run

    def check(self, value, source: str) -> int | float | bool:
        """Return `value` as this setting's type; raise ValueError naming the setting otherwise."""
        if self.type is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{source}: {self.name} must be true or false ({self.help}), not {value!r}")
            return value
        kind = "whole number" if self.type is int else "number"
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if (
            not number
            or (self.type is int and not isinstance(value, int))
            or not math.isfinite(value)
            or not self.low <= value <= self.high
        ):
            raise ValueError(
                f"{source}: {self.name} must be a {kind} from {self.low:,} to {self.high:,} "
                f"({self.help}), not {value!r}"
            )
        return self.type(value)

    def range_text(self) -> str:
        """The values it takes, in words: "1 to 3,600", or "true or false"."""
        return "true or false" if self.type is bool else f"{self.low:,} to {self.high:,}"


PUBLIC_SEED = 2026  # the shipped config's seed: anyone can read it, so an instructor writes their own

SETTINGS = (
    Setting(
        "seed",
        int,
        PUBLIC_SEED,
        0,
        2**31 - 1,
        "the seed of the graded inputs, which differ from the self-checks'; keep yours private",
        limit=False,
    ),
    Setting(
        "cell_seconds",
        float,
        120.0,
        1,
        3600,
        "a cell still running after this many seconds is stopped (its exercise scores 0)",
    ),
    Setting(
        "notebook_seconds",
        float,
        600.0,
        10,
        86400,
        "seconds for all the cells of one notebook; later cells are not run",
    ),
    Setting("memory_mb", int, 2048, 128, 2**20, "MB of memory a student's kernel may allocate"),
    Setting("file_mb", int, 64, 1, 2**16, "MB of the largest file a student's kernel may write"),
    Setting("restarts", int, 2, 0, 10, "fresh kernels after cells that end one (os._exit, a crash)"),
    Setting(
        "late_per_day",
        float,
        0.0,
        0,
        1,
        "the fraction of a late student's total taken off per day late ([late] lists the days)",
        limit=False,
    ),
    Setting(
        "partial_credit",
        bool,
        False,
        0,
        1,
        "a coding exercise earns the fraction of its graded cases it passes (false: all or nothing)",
        limit=False,
    ),
)
JOBS = Setting("jobs", int, 1, 1, 64, "students graded at once; each needs a kernel's memory", limit=False)
BY_NAME = {s.name: s for s in SETTINGS}

Limits = make_dataclass(
    "Limits",
    [(s.name, s.type, field(default=s.default)) for s in SETTINGS if s.limit],
    namespace={"__doc__": "How long and how large a submission may run (the limits of `SETTINGS`)."},
)
Limits.__module__ = __name__  # where pickle finds it, so that a Config crosses into --jobs' processes


def literal(value: int | float | bool) -> str:
    """A setting's value as TOML writes it (`false`, `0.5`, `120`)."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def toml_lines(seed: int = PUBLIC_SEED) -> list[str]:
    """The `[grading]` table's lines, each setting at its default with its help as a comment."""
    values = {s.name: s.default for s in SETTINGS} | {"seed": seed}
    return [f"{s.name} = {literal(values[s.name])}  # {s.help}" for s in SETTINGS]


def markdown_table() -> str:
    """The settings as a Markdown table (docs/instructors.md holds this text)."""
    rows = ["| setting | default | range | what |", "|---|---|---|---|"]
    rows += [f"| `{s.name}` | {literal(s.default)} | {s.range_text()} | {s.help} |" for s in SETTINGS]
    rows.append(
        f"| `--{JOBS.name}` (command line) | {JOBS.default} | {JOBS.low} to {JOBS.high} | {JOBS.help} |"
    )
    return "\n".join(rows)


def help_text() -> str:
    """The settings as plain lines for the command's --help."""
    return "\n".join(
        f"  {s.name} (default {literal(s.default)}, {s.range_text()}): {s.help}" for s in SETTINGS
    )
