"""Regenerate the grader's shipped files after a notebook's exercises or a grading setting changed.

    python tools/grading_files.py

Writes `d2lmini/grading/assignment/exercises.json` (the exercises of `notebooks/`), the shipped
`d2lmini/grading/assignment/points.toml` and the settings table of `docs/instructors.md` (between its
`<!-- settings -->` markers), all from `d2lmini.grading.assignment.settings` and the notebooks.
The grading command itself never writes into the installed package.
"""

import re
from pathlib import Path

from d2lmini.grading.assignment import manifest
from d2lmini.grading.assignment.config import DEFAULT_CONFIG, config_text
from d2lmini.grading.assignment.settings import markdown_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "instructors.md"
MARKERS = re.compile(r"(<!-- settings -->\n).*?(<!-- /settings -->)", re.S)


def main() -> None:
    """Write the three files; refuse to write an empty exercise list."""
    exercises = manifest.discover(ROOT / "notebooks")
    if not exercises:
        raise SystemExit("notebooks/ has no check cells: nothing written")
    manifest.save(exercises)
    DEFAULT_CONFIG.write_text(config_text(exercises), "utf-8")
    docs = DOCS.read_text("utf-8")
    if not MARKERS.search(docs):
        raise SystemExit(f"{DOCS} has no <!-- settings --> ... <!-- /settings --> markers")
    DOCS.write_text(MARKERS.sub(lambda m: m[1] + markdown_table() + "\n" + m[2], docs), "utf-8")
    print(
        f"{len(exercises)} exercises; wrote {manifest.MANIFEST}, {DEFAULT_CONFIG} and {DOCS}'s settings table"
    )


if __name__ == "__main__":
    main()
