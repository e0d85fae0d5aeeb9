"""The Chinese edition from one source: gettext catalogs for the package and the notebooks (Babel).

    python tools/translations.py extract     # English strings -> catalogs; a changed string turns fuzzy
    python tools/translations.py compile     # the package's .po -> .mo (what d2lmini reads at run time)
    python tools/translations.py notebooks   # notebooks/zh/NN_*.ipynb from the English ones + catalogs
    python tools/translations.py check       # fails on a fuzzy, missing or broken translation, a stale
                                             # .mo or a Chinese notebook the catalogs would not make
    python tools/translations.py all         # extract, compile, notebooks, check

The English is the source. The package's strings (every `_("…")`, `N_("…")` and `ngettext`) go to one
catalog per wing, `d2lmini/locale/zh_CN/LC_MESSAGES/<wing>.po` (`WINGS`); each English notebook's
markdown cells go to `notebooks/locale/zh_CN/<stem>.po`, one message a cell. `extract` updates them
with Babel's own merge, so an English string that changed keeps its old translation marked fuzzy
until a translator checks it, and one that went away becomes obsolete (`#~`).

A Chinese notebook has the English notebook's code cells, unchanged, after one first cell that sets
`D2LMINI_LANG` (`LANGUAGE_CELL`); its markdown cells are the catalog's translations, each inside a
`<div lang="zh-CN">`. When only the
markdown changed, `notebooks` keeps the stored outputs; when code changed, it writes the notebook
without outputs and says to re-execute it (`python tools/run_notebooks.py notebooks/zh/NN.ipynb`).
"""

import argparse
import datetime
import io
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import nbformat
from babel.messages import mofile, pofile
from babel.messages.catalog import Catalog
from babel.messages.extract import extract as extract_messages
from babel.messages.extract import extract_from_file

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "d2lmini"
NOTEBOOKS = ROOT / "notebooks"
LANGUAGE = "zh_CN"
PACKAGE_LOCALE = PACKAGE / "locale" / LANGUAGE / "LC_MESSAGES"
NOTEBOOK_LOCALE = NOTEBOOKS / "locale" / LANGUAGE
EDITION = NOTEBOOKS / "zh"
# The package's wings and the files whose strings each one's catalog holds (the rest: "core").
WINGS = {
    "widgets": ("widgets/", "lab/", "settings.py"),
    "exercises": ("exercises/", "verdicts.py"),
    "grading": ("grading/",),
    "core": (),
    # Not the package's files: what the notebooks' own code cells print and draw through `tr`.
    "notebooks": (),
}
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}
# A notebook imports the package's `_` as `tr` (`from d2lmini.i18n import _ as tr`): in a notebook `_` is
# the usual throwaway name (`out, _ = rnn(X, state)`), which would rebind it for every later cell.
NOTEBOOK_KEYWORDS = {"tr": None}
# Fixed dates, so that a catalog changes only when its messages do.
EPOCH = datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC)
PROJECT = "d2lmini"
LANGUAGE_CELL_ID = "zh-language"
LANGUAGE_CELL = """\
# 中文版：d2lmini 的面板、反馈、图和评分说明都用中文（D2LMINI_LANG）。
import os

os.environ["D2LMINI_LANG"] = "zh_CN"
"""
HEADER = """\
# d2lmini's Simplified Chinese catalog: {domain}.
# Made and updated by `python tools/translations.py extract`; translate each msgstr, keep the English's
# placeholders ({{fields}}), formulas, code and numbers. Terms: docs/glossary.md. Licence: the
# project's (MIT).
#"""
# Each translated markdown cell is marked as Chinese, so a screen reader reads it with a Chinese voice
# (WCAG 3.1.2) though JupyterLab's page says lang="en"; the blank lines keep the Markdown inside it Markdown.
CHINESE_BLOCK = '<div lang="zh-CN">\n\n{}\n\n</div>'
PLACEHOLDER = re.compile(r"(?<!\{)\{[^{}]*\}(?!\})")


def wing_of(path: Path) -> str:
    """Return the wing whose catalog holds the strings of the package file `path`."""
    relative = path.relative_to(PACKAGE).as_posix()
    for wing, prefixes in WINGS.items():
        if any(relative == prefix or relative.startswith(prefix) for prefix in prefixes):
            return wing
    return "core"


def new_catalog(domain: str) -> Catalog:
    """Return an empty zh_CN catalog with fixed dates (diffs show messages, never clocks)."""
    return Catalog(locale=LANGUAGE, domain=domain, project=PROJECT, version="0.1",
                   creation_date=EPOCH, revision_date=EPOCH, fuzzy=False,
                   copyright_holder="the d2lmini authors",
                   msgid_bugs_address="https://github.com/d2lmini/d2lmini/issues",
                   last_translator="the d2lmini authors", language_team="d2lmini <https://github.com/d2lmini/d2lmini>",
                   header_comment=HEADER.format(domain=domain))


def package_templates() -> dict[str, Catalog]:
    """Return each wing's template: every string the package marks for translation, where it is."""
    templates = {wing: new_catalog(wing) for wing in WINGS}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for lineno, message, comments, context in extract_from_file(
                "python", str(path), keywords=KEYWORDS, comment_tags=("TRANSLATORS:",),
                strip_comment_tags=True):
            templates[wing_of(path)].add(message, None, [(relative, lineno)], auto_comments=comments,
                                         context=context)
    for path in english_notebooks():
        for lineno, message, comments, context in notebook_code_messages(path):
            templates["notebooks"].add(message, None, [(f"notebooks/{path.name}", lineno)],
                                       auto_comments=comments, context=context)
    return templates


def notebook_code_messages(path: Path) -> list:
    """Return Babel's (cell number, message, comments, context) for each `tr("...")` in `path`'s code cells.

    A notebook's code prints what a reader reads (a result's sentence, a figure's title and alt text)
    through the package's `_` imported as `tr`, so it is translated like the package's own strings
    (the "notebooks" wing); lines of IPython syntax (`%magic`, `!command`) are left out, they are no
    Python.
    """
    found = []
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        if cell.cell_type != "code" or "tr(" not in cell.source:
            continue
        python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                           for line in cell.source.splitlines())
        for _lineno, message, comments, context in extract_messages(
                "python", io.BytesIO(python.encode()), keywords=NOTEBOOK_KEYWORDS,
                comment_tags=("TRANSLATORS:",), strip_comment_tags=True):
            found.append((number, message, comments, context))
    return found


def english_notebooks() -> list[Path]:
    """Return the English notebooks, the source of the Chinese edition, in course order."""
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def notebook_template(path: Path) -> Catalog:
    """Return a catalog of `path`'s markdown cells, one message a cell, located by cell number."""
    template = new_catalog(path.stem)
    notebook = nbformat.read(path, as_version=4)
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type == "markdown" and cell.source.strip():
            template.add(cell.source, None, [(f"notebooks/{path.name}", number)],
                         auto_comments=[f"cell id {cell.get('id', '?')}"])
    return template


def read_catalog(path: Path) -> Catalog:
    """Return the catalog stored at `path` (an empty one when there is none yet)."""
    if not path.exists():
        return new_catalog(path.stem)
    with path.open("rb") as handle:
        return pofile.read_po(handle, locale=LANGUAGE, domain=path.stem, abort_invalid=True)


def write_catalog(catalog: Catalog, path: Path) -> bool:
    """Write `catalog` as a .po file at `path`; return whether the file changed."""
    catalog.revision_date = catalog.creation_date = EPOCH
    buffer = io.BytesIO()
    # The package's entries name their files without line numbers, which change with every edit;
    # a notebook's name their cell. An entry whose English is gone is dropped, not kept as #~: a
    # catalog says only what the English says now.
    pofile.write_po(buffer, catalog, width=0, sort_output=False, include_previous=True, ignore_obsolete=True,
                    include_lineno=str(catalog.domain) not in WINGS)
    text = buffer.getvalue()
    if path.exists() and path.read_bytes() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return True


def update(template: Catalog, path: Path) -> bool:
    """Merge `template` into the catalog at `path` (Babel's fuzzy matching); return whether it changed."""
    catalog = read_catalog(path)
    catalog.update(template, no_fuzzy_matching=False, update_header_comment=False)
    return write_catalog(catalog, path)


def extract(wings: Iterable[str] = tuple(WINGS), notebooks: bool = True) -> list[Path]:
    """Update the catalogs of `wings` (and of the notebooks) from the English; return those that changed."""
    changed = []
    for wing, template in package_templates().items():
        path = PACKAGE_LOCALE / f"{wing}.po"
        if wing in wings and update(template, path):
            changed.append(path)
    for notebook in english_notebooks() if notebooks else ():
        path = NOTEBOOK_LOCALE / f"{notebook.stem}.po"
        if update(notebook_template(notebook), path):
            changed.append(path)
    return changed


def compiled(catalog: Catalog) -> bytes:
    """Return `catalog` as the bytes of a .mo file (fuzzy entries left out, as gettext does)."""
    buffer = io.BytesIO()
    mofile.write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def compile_package(wings: Iterable[str] = tuple(WINGS)) -> list[Path]:
    """Write each wing's .mo beside its .po; return the .mo files that changed."""
    changed = []
    for wing in wings:
        catalog = read_catalog(PACKAGE_LOCALE / f"{wing}.po")
        path = PACKAGE_LOCALE / f"{wing}.mo"
        data = compiled(catalog)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            changed.append(path)
    return changed


def translated_cells(english, catalog: Catalog) -> list:
    """Return the Chinese notebook's cells: the language cell, then `english`'s cells, markdown translated.

    A markdown cell without a translation (or with a fuzzy one) stays in English; `check` fails on it.
    """
    cells = [nbformat.v4.new_code_cell(LANGUAGE_CELL.rstrip("\n"), id=LANGUAGE_CELL_ID)]
    for cell in english.cells:
        copy = nbformat.from_dict(cell)
        if cell.cell_type == "markdown" and cell.source.strip():
            message = catalog.get(cell.source)
            if message is not None and message.string and not message.fuzzy:
                copy.source = CHINESE_BLOCK.format(message.string.strip("\n"))
        cells.append(copy)
    return cells


def code_sources(notebook) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def chinese_notebook(english_path: Path):
    """Return the Chinese notebook the catalogs make from `english_path`, without outputs."""
    english = nbformat.read(english_path, as_version=4)
    catalog = read_catalog(NOTEBOOK_LOCALE / f"{english_path.stem}.po")
    notebook = nbformat.from_dict(english)
    notebook.cells = translated_cells(english, catalog)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    notebook.metadata["language"] = LANGUAGE  # the notebook's human language (the site's lang="zh-CN")
    return notebook


def write_chinese_notebooks(paths: Iterable[Path] | None = None) -> list[str]:
    """Write notebooks/zh/ from the English notebooks and catalogs; return what needs re-executing.

    A stored Chinese notebook whose code cells are unchanged keeps its outputs (only markdown moved).
    """
    stale = []
    EDITION.mkdir(exist_ok=True)
    for english_path in paths or english_notebooks():
        made = chinese_notebook(english_path)
        target = EDITION / english_path.name
        if target.exists():
            stored = nbformat.read(target, as_version=4)
            if code_sources(stored) == code_sources(made):
                code_cells = iter(cell for cell in stored.cells if cell.cell_type == "code")
                made.cells = [next(code_cells) if cell.cell_type == "code" else cell for cell in made.cells]
                made.metadata = stored.metadata | {"language": LANGUAGE}
            else:
                stale.append(target.relative_to(ROOT).as_posix())
        else:
            stale.append(target.relative_to(ROOT).as_posix())
        nbformat.write(made, target)
    return stale


def placeholders(text: str) -> list[str]:
    """Return the `{fields}` of a message, sorted (what str.format fills in)."""
    return sorted(PLACEHOLDER.findall(text))


def catalog_problems(catalog: Catalog, name: str) -> list[str]:
    """Return what is wrong in `catalog`: untranslated, fuzzy, or a translation that lost a placeholder."""
    problems = []
    for message in catalog:
        if not message.id:
            continue
        msgid = message.id[0] if isinstance(message.id, tuple) else message.id
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        where = f"{name}: {msgid[:60]!r}"
        if not all(strings):
            problems.append(f"{where} is not translated")
        elif message.fuzzy:
            problems.append(f"{where} is fuzzy: its English changed; check the translation, then remove "
                            "the fuzzy flag")
        elif any(placeholders(string) != placeholders(msgid) for string in strings):
            problems.append(f"{where}: the translation's placeholders {placeholders(strings[0])} are not the "
                            f"English's {placeholders(msgid)}")
    return problems


def check() -> list[str]:
    """Return every problem of the Chinese edition (empty when it is complete and up to date)."""
    problems = []
    for wing, template in package_templates().items():
        path = PACKAGE_LOCALE / f"{wing}.po"
        problems += stale_catalog(template, path)
        catalog = read_catalog(path)
        problems += catalog_problems(catalog, path.name)
        mo = PACKAGE_LOCALE / f"{wing}.mo"
        if not mo.exists() or mo.read_bytes() != compiled(catalog):
            problems.append(f"{mo.name} is not {path.name} compiled: "
                            "run `python tools/translations.py compile`")
    for notebook in english_notebooks():
        path = NOTEBOOK_LOCALE / f"{notebook.stem}.po"
        problems += stale_catalog(notebook_template(notebook), path)
        problems += catalog_problems(read_catalog(path), path.name)
        problems += edition_problems(notebook)
    return problems


def stale_catalog(template: Catalog, path: Path) -> list[str]:
    """Return a problem when `path` lacks one of `template`'s messages (run `extract`)."""
    catalog = read_catalog(path)
    missing = [message.id for message in template if message.id and message.id not in catalog]
    if missing:
        first = missing[0][0] if isinstance(missing[0], tuple) else missing[0]
        return [f"{path.name} lacks {len(missing)} English message(s), e.g. {first[:60]!r}: run "
                "`python tools/translations.py extract`"]
    return []


def edition_problems(english_path: Path) -> list[str]:
    """Return how the stored Chinese notebook differs from what the catalogs make of `english_path`."""
    target = EDITION / english_path.name
    if not target.exists():
        return [f"{target.relative_to(ROOT)} is missing: run `python tools/translations.py notebooks`"]
    stored, made = nbformat.read(target, as_version=4), chinese_notebook(english_path)
    shape = [(cell.cell_type, cell.source) for cell in stored.cells]
    wanted = [(cell.cell_type, cell.source) for cell in made.cells]
    if shape != wanted:
        first = next((i for i, (a, b) in enumerate(zip(shape, wanted, strict=False)) if a != b),
                     min(len(shape), len(wanted)))
        return [f"{target.relative_to(ROOT)} differs from what the catalogs make at cell {first + 1}: run "
                "`python tools/translations.py notebooks` (and re-execute it if its code changed)"]
    return []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["extract", "compile", "notebooks", "check", "all"])
    parser.add_argument("--wing", choices=list(WINGS), action="append",
                        help="extract or compile only this wing's package catalog (repeatable), "
                             "not the notebooks'")
    args = parser.parse_args(argv)
    if args.command in ("extract", "all"):
        for path in extract(args.wing or WINGS, notebooks=not args.wing):
            print(f"updated {path.relative_to(ROOT)}")
    if args.command in ("compile", "all"):
        for path in compile_package(args.wing or WINGS):
            print(f"compiled {path.relative_to(ROOT)}")
    if args.command in ("notebooks", "all"):
        stale = write_chinese_notebooks()
        for path in stale:
            print(f"{path}: new, or its code changed: execute it: python tools/run_notebooks.py {path}")
    if args.command in ("check", "all"):
        problems = check()
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(f"{len(problems)} problem(s) in the Chinese edition", file=sys.stderr)
            return 1
        print("the Chinese edition is complete: every catalog translated, none fuzzy, "
              "every notebook as built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
