"""Every grading setting, declared once: name, type, default, range and help.

`config.py` validates `[grading]` against this table, `config_text` writes `points.toml`'s
comments from it, the command's `--help` lists it, `docs/instructors.md`'s table is
`markdown_table()` and `Limits` (what a submission may use) is built from it.
"""

import math
from dataclasses import dataclass, field, make_dataclass

from d2lmini.i18n import N_, _


@dataclass(frozen=True)
class Setting:
    """One setting of `[grading]` (or of the command line, for `jobs`)."""

    name: str
    type: type  # int, float or bool
    default: int | float | bool
    low: int | float
    high: int | float
    help: str  # English, marked with `N_`; shown translated (`_(setting.help)`)
    limit: bool = True  # part of `Limits`, the bounds on a submission's run

    def check(self, value, source: str) -> int | float | bool:
        """Return `value` as this setting's type; raise ValueError naming the setting otherwise."""
        if self.type is bool:
            if not isinstance(value, bool):
                # TRANSLATORS: {source} is the config file, {name} a setting's name (keep it), {help} what it
                # does.
                raise ValueError(_("{source}: {name} must be true or false ({help}), not {value!r}").format(
                    source=source, name=self.name, help=_(self.help), value=value))
            return value
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if (
            not number
            or (self.type is int and not isinstance(value, int))
            or not math.isfinite(value)
            or not self.low <= value <= self.high
        ):
            if self.type is int:
                # TRANSLATORS: {source} is the config file, {name} a setting's name (keep it), {help} what it
                # does.
                template = _("{source}: {name} must be a whole number from {low:,} to {high:,} ({help}), not "
                             "{value!r}")
            else:
                # TRANSLATORS: {source} is the config file, {name} a setting's name (keep it), {help} what it
                # does.
                template = _("{source}: {name} must be a number from {low:,} to {high:,} ({help}), not "
                             "{value!r}")
            raise ValueError(template.format(source=source, name=self.name, low=self.low, high=self.high,
                                             help=_(self.help), value=value))
        return self.type(value)

    def range_text(self) -> str:
        """The values it takes, in words: "1 to 3,600", or "true or false"."""
        if self.type is bool:
            return _("true or false")
        # TRANSLATORS: the range of a setting's values, e.g. "1 to 3,600".
        return _("{low:,} to {high:,}").format(low=self.low, high=self.high)


PUBLIC_SEED = 2026  # the shipped config's seed: anyone can read it, so an instructor writes their own

SETTINGS = (
    Setting(
        "seed",
        int,
        PUBLIC_SEED,
        0,
        2**31 - 1,
        N_("the seed of the graded inputs, which differ from the self-checks'; keep yours private"),
        limit=False,
    ),
    Setting(
        "cell_seconds",
        float,
        120.0,
        1,
        3600,
        N_("a cell still running after this many seconds is stopped (its exercise scores 0)"),
    ),
    Setting(
        "notebook_seconds",
        float,
        600.0,
        10,
        86400,
        N_("seconds for all the cells of one notebook; later cells are not run"),
    ),
    Setting("memory_mb", int, 2048, 128, 2**20, N_("MB of memory a student's kernel may allocate")),
    Setting("file_mb", int, 64, 1, 2**16, N_("MB of the largest file a student's kernel may write")),
    Setting("scratch_mb", int, 256, 16, 2**16,
            N_("MB of files a student's kernel may keep in its scratch folder (and again in /tmp)")),
    Setting("restarts", int, 2, 0, 10, N_("fresh kernels after cells that end one (os._exit, a crash)")),
    Setting(
        "late_per_day",
        float,
        0.0,
        0,
        1,
        N_("the fraction of a late student's total taken off per day late ([late] lists the days)"),
        limit=False,
    ),
    Setting(
        "partial_credit",
        bool,
        False,
        0,
        1,
        N_("a coding exercise earns the fraction of its graded cases it passes (false: all or nothing)"),
        limit=False,
    ),
)
JOBS = Setting("jobs", int, 1, 1, 64, N_("students graded at once; each needs a kernel's memory"),
               limit=False)
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
    return [f"{s.name} = {literal(values[s.name])}  # {_(s.help)}" for s in SETTINGS]


def markdown_table() -> str:
    """The settings as a Markdown table (docs/instructors.md holds this text)."""
    # TRANSLATORS: the header of a Markdown table; keep the | signs.
    rows = [_("| setting | default | range | what |"), "|---|---|---|---|"]
    rows += [f"| `{s.name}` | {literal(s.default)} | {s.range_text()} | {_(s.help)} |" for s in SETTINGS]
    # TRANSLATORS: a row of a Markdown table; keep the | signs and the backquotes.
    rows.append(_("| `--{name}` (command line) | {default} | {low} to {high} | {help} |").format(
        name=JOBS.name, default=JOBS.default, low=JOBS.low, high=JOBS.high, help=_(JOBS.help)))
    return "\n".join(rows)


def help_text() -> str:
    """The settings as plain lines for the command's --help."""
    # TRANSLATORS: one setting in the command's --help: its name (keep it), default, range and what it does.
    line = _("  {name} (default {default}, {range}): {help}")
    return "\n".join(
        line.format(name=s.name, default=literal(s.default), range=s.range_text(), help=_(s.help))
        for s in SETTINGS
    )
