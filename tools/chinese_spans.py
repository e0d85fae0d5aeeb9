"""Mark the Chinese in the English notebooks' Markdown with `lang="zh"`: a screen reader reads it in Chinese.

    python tools/chinese_spans.py            # mark every unmarked run in notebooks/*.ipynb, rekey catalogs
    python tools/chinese_spans.py --check    # exit 1 if a run of Chinese is not marked

WCAG 3.1.2 (language of parts): a page in English that quotes 隐状态 must say that those characters
are Chinese, or a screen reader reads them with an English voice. `mark` wraps each run of Chinese
characters (with the Chinese punctuation and short Latin pieces between them, as in "§8.2 文本预处理"
or "n元语法") in `<span lang="zh">…</span>`, outside code, formulas, link targets, HTML comments
and tags, and what is already marked. `tools/reader_cells.py` marks what it writes; this tool marks
what a person wrote, and renames the notebooks' catalog entries to the marked English
(tools/translations.py), keeping their translations.
"""

import argparse
import re
import sys
from pathlib import Path

import nbformat
from translations import NOTEBOOK_LOCALE, read_catalog, write_catalog

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

HAN = r"[\u2e80-\u2fff\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef《》]"
# A run starts and ends with a Chinese character; a few Latin letters, digits or spaces may sit between.
RUN = re.compile(rf"{HAN}+(?:[ A-Za-z0-9.·]{{1,6}}{HAN}+)*")
# What is never marked inside: code, formulas, HTML comments, existing lang spans and blocks (a
# <div lang="zh-CN"> around a Chinese table, whose image alts no span can mark), tags, link targets.
PROTECTED = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|<!--.*?-->|<span lang=[^>]*>.*?</span>"
                       r"|<div lang=[^>]*>.*?</div>|<[^>]*>|\]\([^)]*\)", re.S)
OPEN, CLOSE = '<span lang="zh">', "</span>"


def mark(text: str) -> str:
    """Return `text` with each unmarked run of Chinese wrapped in a `lang="zh"` span."""
    pieces, last = [], 0
    for protected in PROTECTED.finditer(text):
        pieces.append(RUN.sub(lambda run: OPEN + run.group(0) + CLOSE, text[last:protected.start()]))
        pieces.append(protected.group(0))
        last = protected.end()
    pieces.append(RUN.sub(lambda run: OPEN + run.group(0) + CLOSE, text[last:]))
    return "".join(pieces)


def unmarked(text: str) -> list[str]:
    """Return the runs of Chinese in `text` that are not inside a lang span (nor code or a formula)."""
    return RUN.findall(PROTECTED.sub(" ", text))


def english_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def mark_notebook(path: Path) -> dict[str, str]:
    """Mark `path`'s Markdown cells in place; return {old source: new source} of the cells changed."""
    notebook = nbformat.read(path, as_version=4)
    renamed = {}
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            marked = mark(cell.source)
            if marked != cell.source:
                renamed[cell.source], cell.source = marked, marked
    if renamed:
        nbformat.write(notebook, path)
    return renamed


def rekey_catalog(path: Path, renamed: dict[str, str]) -> None:
    """Give the catalog's entries of the changed cells their marked English, keeping each translation."""
    catalog = read_catalog(path)
    for old, new in renamed.items():
        message = catalog.get(old)
        if message is None:
            continue
        catalog.delete(old)
        catalog.add(new, message.string, message.locations, message.flags, message.auto_comments,
                    message.user_comments)
    write_catalog(catalog, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report unmarked Chinese")
    args = parser.parse_args(argv)
    if args.check:
        problems = [f"{path.name}: {run}" for path in english_notebooks()
                    for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown"
                    for run in unmarked(cell.source)]
        print("\n".join(problems) or "every run of Chinese is marked")
        return 1 if problems else 0
    for path in english_notebooks():
        renamed = mark_notebook(path)
        if renamed:
            rekey_catalog(NOTEBOOK_LOCALE / f"{path.stem}.po", renamed)
            print(f"{path.name}: {len(renamed)} cells marked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
