"""A student's study time for each notebook, core and optional, by one stated formula.

    python tools/study_time.py            # the table, per notebook and in total
    python tools/study_time.py --check    # exit 1 if 00's course map or the README states other times
    python tools/study_time.py --write    # write the computed times into 00's course map and the README
    python tools/study_time.py --notebooks DIR --readme FILE   # another copy of the course

A notebook, the map or the README that cannot be read (missing, not JSON, not a notebook) or
written (read-only) stops the tool with one line naming the file and the problem, exit status 2.

The formula (a timed read, the same for every notebook, printed with the table):

    minutes = prose words / READING_WPM
            + code cells x CODE_CELL_MINUTES            (read the code, run it, read its output)
            + panels x PANEL_MINUTES                    (a cell that builds an interactive panel)
            + questions x QUESTION_MINUTES              (an exercise answered with `answer = ...`)
            + coding exercises x CODING_MINUTES         (an exercise whose cell starts with `def`)
            + explore exercises x EXPLORE_MINUTES       (an "explore, no self-check" exercise)

A section is optional when its heading says "(optional)": it runs until the next heading of the
same or a higher level. A notebook is optional when its title says "(optional)". An explore
exercise (open-ended, no self-check) is always optional. Everything else is the core path.
The course map in `notebooks/00_start_here.ipynb` and the README quote
this tool's numbers; `--check` (and tests/test_study_time.py) fails when they differ.
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MAP_NOTEBOOK = NOTEBOOKS / "00_start_here.ipynb"

READING_WPM = 200  # an everyday reading speed; the code cells and exercises carry the slow work
CODE_CELL_MINUTES = 1.5
PANEL_MINUTES = 5.0
QUESTION_MINUTES = 5.0
CODING_MINUTES = 20.0
EXPLORE_MINUTES = 10.0

HEADING = re.compile(r"^(#{1,6})\s+(.*)$", re.M)
OPTIONAL = "(optional)"
PANEL_CELL = re.compile(r"^\s*\w+\s*=\s*make_\w*panel\(", re.M)
# The mark-up of a language (tools/chinese_spans.py) is not read.
LANG_SPAN = re.compile(r'</?span(?: lang="[\w-]+")?>')
# The "Open in Colab / Kaggle" badges under a title (tools/reader_cells.py): buttons, not prose to read.
LAUNCH_BADGES = re.compile(r"<!-- open-in:.*?<!-- /open-in -->", re.S)
EXPLORE = re.compile(r"\*\*Exercise \d+ \(explore")


@dataclass
class Tally:
    """What one part (core or optional) of a notebook holds, and the minutes the formula gives it."""

    words: int = 0
    code_cells: int = 0
    panels: int = 0
    questions: int = 0
    coding: int = 0
    explore: int = 0

    def minutes(self) -> float:
        """The formula of the module docstring."""
        return (self.words / READING_WPM + self.code_cells * CODE_CELL_MINUTES + self.panels * PANEL_MINUTES
                + self.questions * QUESTION_MINUTES + self.coding * CODING_MINUTES
                + self.explore * EXPLORE_MINUTES)


@dataclass
class NotebookTime:
    """A notebook's core and optional tallies."""

    name: str
    core: Tally = field(default_factory=Tally)
    optional: Tally = field(default_factory=Tally)


def _is_optional_title(notebook) -> bool:
    first = next((c for c in notebook.cells if c.cell_type == "markdown"), None)
    match = HEADING.search(first.source) if first is not None else None
    return bool(match and OPTIONAL in match.group(2))


class CourseFileError(Exception):
    """A notebook, the course map or the README cannot be read or written; the message says which and why."""


def read_notebook(path: Path):
    """Return the notebook at `path`, or raise `CourseFileError` saying why it cannot be read."""
    text = _notebook_text(path)
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise CourseFileError(f"{path}: not a notebook (JSON nested too deeply to read)") from None
    except ValueError as error:
        raise CourseFileError(f"{path}: not a notebook (not JSON: {str(error)[:120]})") from None
    if not isinstance(parsed, dict):
        raise CourseFileError(f"{path}: not a notebook (its JSON is {_json_kind(parsed)}, "
                              "not an object with cells)") from None
    try:
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # nbformat's converters meet any JSON: a v1 cell of no known type is an
        # UnboundLocalError inside them. Whatever they raise, the file is no notebook they can read.
        first_line = (str(error).splitlines() or [""])[0] or type(error).__name__
        raise CourseFileError(f"{path}: not a valid notebook ({first_line[:120]})") from None
    return notebook


def _notebook_text(path: Path) -> str:
    """Return the text of the notebook file at `path`, or raise `CourseFileError` saying why not."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise CourseFileError(f"{path}: no such notebook") from None
    except UnicodeDecodeError:
        raise CourseFileError(f"{path}: not a notebook (not UTF-8 text)") from None
    except OSError as error:
        raise CourseFileError(f"{path}: cannot be read ({error.strerror or error})") from None


def _json_kind(value) -> str:
    """What a parsed JSON value is, in words ("a list", "a number", ...)."""
    kinds = {list: "a list", str: "a string", bool: "true or false", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def notebook_time(path: Path) -> NotebookTime:
    """Return the tallies of the notebook at `path`, its cells split into core and optional."""
    notebook = read_notebook(path)
    result = NotebookTime(path.stem)
    whole_optional = _is_optional_title(notebook)
    optional_level = None  # the heading level of the optional section we are in, if any
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for hashes, title in HEADING.findall(cell.source):
                level = len(hashes)
                if optional_level is not None and level <= optional_level:
                    optional_level = None
                if optional_level is None and OPTIONAL in title:
                    optional_level = level
        tally = result.optional if whole_optional or optional_level is not None else result.core
        _count(cell, tally)
        result.optional.explore += len(EXPLORE.findall(cell.source)) if cell.cell_type == "markdown" else 0
    return result


def _count(cell, tally: Tally) -> None:
    source = cell.source
    if cell.cell_type == "markdown":
        tally.words += len(LANG_SPAN.sub("", LAUNCH_BADGES.sub("", source)).split())
    elif cell.cell_type == "code":
        stripped = source.lstrip()
        if stripped.startswith("answer = None"):
            tally.questions += 1
        elif stripped.startswith("def ") and "return None" in source:
            tally.coding += 1
        else:
            tally.code_cells += 1
            tally.panels += len(PANEL_CELL.findall(source))


def course_times(folder: Path = NOTEBOOKS) -> list[NotebookTime]:
    """Return the tallies of every course notebook (01 onwards; 00 is the map itself), in order."""
    return [notebook_time(path) for path in sorted(folder.glob("[0-9][0-9]*.ipynb"))
            if not path.stem.startswith("00")]


def hours(minutes: float) -> str:
    """Minutes as hours to a tenth, the form the course map states ("1.4 h")."""
    return f"{minutes / 60:.1f} h"


def map_time(entry: NotebookTime) -> str:
    """The course map's time column for one notebook: core hours, and the optional part's minutes."""
    core, optional = entry.core.minutes(), entry.optional.minutes()
    if core == 0:
        return f"optional, {hours(optional)}"
    return hours(core) + (f" + {round(optional)} min optional" if round(optional) else "")


def totals(entries: list[NotebookTime]) -> tuple[float, float]:
    """(core minutes, optional minutes) of the whole course."""
    return (sum(e.core.minutes() for e in entries), sum(e.optional.minutes() for e in entries))


def total_sentence(entries: list[NotebookTime]) -> str:
    """The sentence the course map and the README state, with the totals."""
    core, optional = totals(entries)
    return f"core path {hours(core)}, optional parts {hours(optional)} more"


FORMULA = (f"prose words / {READING_WPM} words a minute + {CODE_CELL_MINUTES:g} min per code cell + "
           f"{PANEL_MINUTES:g} min per panel + {QUESTION_MINUTES:g} min per question + "
           f"{CODING_MINUTES:g} min per coding exercise + {EXPLORE_MINUTES:g} min per explore exercise")


def table(entries: list[NotebookTime]) -> str:
    """The per-notebook table and the totals, as printed."""
    lines = [f"{'notebook':28} {'words':>6} {'code':>5} {'panels':>6} {'quest':>5} {'coding':>6} "
             f"{'core':>7} {'optional':>9}  course map"]
    for e in entries:
        both = Tally(*(getattr(e.core, f) + getattr(e.optional, f) for f in Tally.__dataclass_fields__))
        lines.append(f"{e.name:28} {both.words:6} {both.code_cells:5} {both.panels:6} {both.questions:5} "
                     f"{both.coding:6} {hours(e.core.minutes()):>7} {hours(e.optional.minutes()):>9}  "
                     f"{map_time(e)}")
    lines.append(total_sentence(entries))
    lines.append("formula: " + FORMULA)
    return "\n".join(lines)


def stale_statements(entries: list[NotebookTime], map_text: str, readme: str) -> list[str]:
    """What the course map or the README states that differs from the computed times (empty if none)."""
    problems = []
    for e in entries:
        row = next((line for line in map_text.splitlines() if f"({e.name}.ipynb)" in line), None)
        if row is None:
            problems.append(f"the course map has no row for {e.name}")
        elif not row.rstrip().rstrip("|").rstrip().endswith(map_time(e)):
            problems.append(f"the course map's time for {e.name} is not '{map_time(e)}'")
    sentence = total_sentence(entries)
    for where, text in (("the course map", map_text), ("the README", readme)):
        if sentence not in text:
            problems.append(f"{where} does not state '{sentence}'")
        if FORMULA not in " ".join(text.split()):
            problems.append(f"{where} does not state the formula '{FORMULA}'")
    return problems


def map_text(path: Path = MAP_NOTEBOOK) -> str:
    """The Markdown of the course map notebook, all cells joined."""
    notebook = read_notebook(path)
    return "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")


TOTAL = re.compile(r"core path \d+\.\d h, optional parts \d+\.\d h more")
MAP_ROW = re.compile(r"^(\| \[[^\n]*\]\((\w+)\.ipynb\)[^\n]*\| )([^|\n]*)( \|)[ \t]*$", re.M)


def write_times(entries: list[NotebookTime], readme_path: Path = ROOT / "README.md",
                map_path: Path = MAP_NOTEBOOK) -> None:
    """Write each notebook's time into the course map's rows and the totals into the map and README."""
    by_name = {e.name: e for e in entries}
    sentence = total_sentence(entries)
    notebook = read_notebook(map_path)
    readme = read_text(readme_path)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = MAP_ROW.sub(lambda m: m.group(1) + map_time(by_name[m.group(2)]) + m.group(4)
                                      if m.group(2) in by_name else m.group(0), cell.source)
            cell.source = TOTAL.sub(sentence, cell.source)
    for path, write in ((map_path, lambda: nbformat.write(notebook, map_path)),
                        (readme_path, lambda: readme_path.write_text(TOTAL.sub(sentence, readme),
                                                                     encoding="utf-8"))):
        try:
            write()
        except OSError as error:
            raise CourseFileError(f"{path}: cannot be written ({error.strerror or error})") from None


def read_text(path: Path) -> str:
    """Return the text file at `path`, or raise `CourseFileError` saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CourseFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CourseFileError(f"{path}: cannot be read ({type(error).__name__})") from None


def main(argv: list[str] | None = None) -> int:
    """Print the table; with --check, also compare it with the course map and the README."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if 00's map or the README disagree")
    parser.add_argument("--write", action="store_true", help="write the times into 00's map and the README")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="the course's notebooks folder")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md",
                        help="the README that states the total")
    args = parser.parse_args(argv)
    map_path = args.notebooks / MAP_NOTEBOOK.name
    try:
        if not args.notebooks.is_dir():
            raise CourseFileError(f"{args.notebooks}: no such folder of notebooks")
        entries = course_times(args.notebooks)
        if not entries:
            raise CourseFileError(f"{args.notebooks}: no course notebooks (01_*.ipynb onwards) there")
        print(table(entries))
        if args.write:
            write_times(entries, args.readme, map_path)
        if args.check:
            problems = stale_statements(entries, map_text(map_path), read_text(args.readme))
            for problem in problems:
                print("stale:", problem, file=sys.stderr)
            return 1 if problems else 0
    except CourseFileError as error:
        print(f"study_time: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
