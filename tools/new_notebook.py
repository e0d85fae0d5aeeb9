"""Add a notebook to the course: every entry it needs, from one declaration.

    python tools/new_notebook.py 10_demo --title "A demo" --title-zh "演示" \\
        --idea "What it teaches, in one sentence." --idea-zh "一句话说明它教什么。" --exercises demo
    # edit notebooks/10_demo.ipynb, translate notebooks/locale/zh_CN/10_demo.po, then again:
    python tools/new_notebook.py 10_demo

The first run writes a skeleton notebook (Colab cell, imports, the required headings, the closing
navigation cell), its row in tests/course.py (the declaration: a later run reads it from there), its
row in 00_start_here's course map and in README's two course tables (badges), its page in site/index.md's
toctree, its entry in docs/book_sections.toml, solutions/notebook_NN.py for a core notebook with
exercises, and the "Next:" links of the notebooks before it; each English cell it changes in an
existing notebook gets its Chinese in that notebook's catalog at the same time.

Every run (the first and each after editing) then re-derives what follows from the notebooks: the
reader cells (tools/reader_cells.py), the study times in 00's map and the README, English and Chinese
(tools/study_time.py), the grader's exercise list and points (tools/grading_files.py), the catalogs
(tools/translations.py extract; the skeleton's own cells come translated), the Chinese edition
(translations.py notebooks), and it executes the new notebook in both editions
(tools/run_notebooks.py; `--no-run` skips that). It prints what is left to do by hand.
Everything is written under the repository this file lies in.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import reader_cells  # noqa: E402
import translations  # noqa: E402
from course_table import (  # noqa: E402
    NOTEBOOKS,
    STEM,
    Declaration,
    add_course_row,
    course_rows,
    declaration_from_course,
)
from notebook_entries import (  # noqa: E402
    MAP_STEM,
    add_book_sections,
    add_readme_rows,
    add_site_page,
    add_solutions,
    closing_lines,
    known_translations,
    relink_predecessors,
    update_map,
    write_skeleton,
)


def run_tool(*arguments: str) -> None:
    """Run one of tools/ on this repository (its d2lmini first on the path); stop if it fails."""
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    }
    result = subprocess.run([sys.executable, *arguments], cwd=ROOT, env=env, check=False)
    if result.returncode:
        raise SystemExit(f"{' '.join(arguments)} failed (exit status {result.returncode})")


def fill_known(spec: Declaration, known: dict[str, str]) -> list[str]:
    """Give the new notebook's catalog the Chinese of the cells the tool wrote; return what is left."""
    path = translations.NOTEBOOK_LOCALE / f"{spec.stem}.po"
    catalog = translations.read_catalog(path)
    left = []
    for message in catalog:
        if not message.id:
            continue
        if not message.string and message.id in known:
            message.string = known[message.id]
        if not message.string or message.fuzzy:
            left.append(message.id.split("\n", 1)[0][:70])
    translations.write_catalog(catalog, path)
    return left


def derive(spec: Declaration, known: dict[str, str], touched: set[str], execute: bool) -> list[str]:
    """Run the tools that follow from the notebooks; return the new notebook's untranslated cells.

    The catalogs of the notebooks in `touched` have their changed cells already (`retranslate`); only
    their Chinese notebooks are rebuilt here.
    """
    run_tool("tools/reader_cells.py")
    run_tool("tools/grading_files.py")
    paths = [NOTEBOOKS / f"{stem}.ipynb" for stem in sorted(touched | {spec.stem})]
    translations.update(
        translations.notebook_template(spec.path), translations.NOTEBOOK_LOCALE / f"{spec.stem}.po"
    )
    left = fill_known(spec, known | known_translations(spec, closing_lines(spec, course_rows())))
    translations.write_chinese_notebooks(paths)
    if execute:
        run_tool("tools/run_notebooks.py", f"notebooks/{spec.stem}.ipynb", f"notebooks/zh/{spec.stem}.ipynb")
    return left


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("stem", help="NN_name: the notebook's file stem (05b_name to go between 05 and 06)")
    parser.add_argument("--title", help="its name in the course map, README and links (first run)")
    parser.add_argument("--title-zh", help="the same in Chinese")
    parser.add_argument("--idea", default="", help="one sentence: what it teaches")
    parser.add_argument("--idea-zh", default="", help="the same in Chinese")
    parser.add_argument(
        "--exercises", help="its d2lmini.exercises module (none for a notebook without questions)"
    )
    parser.add_argument("--optional", action="store_true", help="outside the core path")
    parser.add_argument(
        "--sections",
        nargs="*",
        default=[],
        metavar="BOOK=N,N",  # first run
        help=f"the books' sections it covers, BOOK one of {', '.join(reader_cells.BOOKS)}",
    )
    parser.add_argument("--no-run", action="store_true", help="do not execute the notebook")
    return parser.parse_args(argv)


def declare(args) -> Declaration:
    """The declaration from the command line (first run) or from tests/course.py (later runs)."""
    if not STEM.match(args.stem):
        raise SystemExit(
            f"{args.stem!r}: a notebook's stem is NN_name (digits, an optional letter, lowercase name)"
        )
    if args.title is None:
        return declaration_from_course(args.stem)
    if not (args.title_zh and args.idea and args.idea_zh):
        raise SystemExit(
            "a new notebook needs --title, --title-zh, --idea and --idea-zh (the course map's row)"
        )
    if {s.split("=", 1)[0] for s in args.sections} != set(reader_cells.BOOKS):
        raise SystemExit(
            f"a new notebook needs --sections {' '.join(b + '=N,N' for b in reader_cells.BOOKS)}: "
            "the books' sections it covers (numbers titled in docs/book_sections.toml)"
        )
    return Declaration(
        args.stem, args.title, args.title_zh, args.idea, args.idea_zh, args.exercises, args.optional
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    spec = declare(args)
    written, touched = [], {MAP_STEM}
    known: dict[str, str] = {}
    if spec.title:  # the first run: the entries a notebook needs
        if add_course_row(spec):
            written.append("tests/course.py")
        rows = course_rows()
        stems = [s for s, _ in rows]
        closing = closing_lines(spec, rows)
        known = known_translations(spec, closing)
        sections = {book: numbers.split(",") for book, numbers in (s.split("=", 1) for s in args.sections)}
        steps = [
            (f"notebooks/{spec.stem}.ipynb", lambda: write_skeleton(spec, closing)),
            ("README.md", lambda: add_readme_rows(spec, stems)),
            ("site/index.md", lambda: add_site_page(spec, stems)),
            ("docs/book_sections.toml", lambda: add_book_sections(spec, sections)),
            (f"solutions/notebook_{spec.number}.py", lambda: add_solutions(spec)),
        ]
        written += [name for name, step in steps if step()]
        relinked = relink_predecessors(spec, rows)
        touched |= set(relinked)
        written += [f"notebooks/{stem}.ipynb" for stem in relinked]
    else:
        stems = [s for s, _ in course_rows()]
    if update_map(spec, stems):
        written.append(f"notebooks/{MAP_STEM}.ipynb (course map, study times)")
    left = derive(spec, known, touched, execute=not args.no_run)
    print(
        "wrote: " + (", ".join(written) or "nothing new") + "; re-derived reader cells, study times, "
        "grading files, catalogs and the Chinese edition"
    )
    print(
        f"by hand: write notebooks/{spec.stem}.ipynb; its panels' keyboard steps in its tests/course.py row; "
        f"new terms in docs/glossary.md; answers in solutions/notebook_{spec.number}.py; then run this again."
    )
    if left:
        print(
            f"translate in notebooks/locale/zh_CN/{spec.stem}.po ({len(left)} cells), then run this again: "
            + "; ".join(left[:5])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
