"""Write what every notebook tells a reader about where else to look (or check that it is there).

    python tools/reader_cells.py          # update notebooks/*.ipynb and README.md
    python tools/reader_cells.py --check  # exit 1 if any of them is missing or stale

Four things, each generated so that they cannot drift apart:

- under the title of each notebook's first Markdown cell, its own "Open in Colab" and "Open in Kaggle"
  badges (the Chinese edition's, with Chinese alt text and links to notebooks/zh/, are its catalog's
  translation of that cell: `launch_block(..., chinese=True)` writes them);
- at the end of each notebook's first Markdown cell, the sections of 《动手学深度学习》 (Chinese and
  English numbering) and of 《深度学习进阶：自然语言处理》 it covers, from docs/book_sections.toml;
- README's 对照表, the same map for every notebook, between its `sections` markers;
- a "Questions?" cell just before each notebook's closing navigation cell (which stays last, as
  tests/test_navigation.py requires), pointing to the repository's discussions and issues.

Re-run it after merging notebook changes; it leaves everything else in the notebooks as it is.
"""

import argparse
import re
import sys
import tomllib
from pathlib import Path
from urllib.parse import quote

import nbformat
from chinese_spans import mark

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SECTIONS_FILE = ROOT / "docs" / "book_sections.toml"
README = ROOT / "README.md"
BOOKS = {"d2l_zh": "《动手学深度学习》", "d2l_en": "*Dive into Deep Learning* (d2l.ai)",
         "dlfs2": "《深度学习进阶：自然语言处理》"}
BLOCK_START = "<!-- book-sections: written by tools/reader_cells.py from docs/book_sections.toml -->"
BLOCK_END = "<!-- /book-sections -->"
BLOCK = re.compile(re.escape(BLOCK_START) + r".*?" + re.escape(BLOCK_END), re.S)
LAUNCH_START = "<!-- open-in: written by tools/reader_cells.py -->"
LAUNCH_END = "<!-- /open-in -->"
LAUNCH = re.compile(re.escape(LAUNCH_START) + r".*?" + re.escape(LAUNCH_END), re.S)
BRANCH = "main"  # the branch README's badges open (tests/test_reader_cells.py compares them)
# Per platform: the badge's alt text in English and in Chinese, its image, the address that opens a
# notebook of the GitHub repository there.
PLATFORMS = {"Colab": ("Open in Colab", "在 Colab 中打开", "https://colab.research.google.com/assets/colab-badge.svg",
                       "https://colab.research.google.com/github/{repository}/blob/{branch}/{path}"),
             "Kaggle": ("Open in Kaggle", "在 Kaggle 中打开", "https://kaggle.com/static/images/open-in-kaggle.svg",
                        "https://kaggle.com/kernels/welcome?src=https://github.com/{repository}/blob/{branch}/{path}")}
QUESTIONS_HEADING = "## Questions?"
README_START, README_END = "<!-- sections:begin -->", "<!-- sections:end -->"


def load_sections() -> dict:
    """Return docs/book_sections.toml: section titles per book and sections per notebook."""
    with open(SECTIONS_FILE, "rb") as handle:
        return tomllib.load(handle)


def repository_url() -> str:
    """Return the project's repository address from pyproject.toml."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["urls"]["Repository"]


def section_names(sections: dict, notebook: str, book: str) -> list[str]:
    """Return "§N title" for each section of `book` that `notebook` covers."""
    try:
        numbers = sections["notebooks"][notebook][book]
    except KeyError:
        raise KeyError(f"docs/book_sections.toml: add [notebooks.{notebook}] with {book} = [...]") from None
    titles = sections["titles"][book]
    unknown = [n for n in numbers if n not in titles]
    if unknown:
        raise KeyError(f"docs/book_sections.toml: no title for {book} sections {unknown}")
    return [f"§{number} {titles[number]}" for number in numbers]


def sections_block(sections: dict, notebook: str) -> str:
    """Return the Markdown block that names the books' sections `notebook` covers, its Chinese marked."""
    rows = [f"| {BOOKS[book]} | {' · '.join(section_names(sections, notebook, book))} |" for book in BOOKS]
    return mark("\n".join([BLOCK_START,
                      "**The same material in the books** (terms in Chinese: the glossary at the end; "
                      "every notebook: the 对照表 in the README):", "",
                      "| book | sections |", "|---|---|", *rows, BLOCK_END]))


def with_sections_block(text: str, block: str) -> str:
    """Return `text` with `block` replacing its old one, or appended after a blank line."""
    if BLOCK.search(text):
        return BLOCK.sub(lambda _: block, text)
    return text.rstrip("\n") + "\n\n" + block


def launch_badges(relative: str, url: str, chinese: bool = False) -> str:
    """Return the "Open in Colab" and "Open in Kaggle" badges of the notebook at `relative` (its path in
    the repository at `url`), their alt text in Chinese where `chinese`."""
    repository = url.removeprefix("https://github.com/").rstrip("/")
    badges = []
    for english, chinese_alt, image, link in PLATFORMS.values():
        address = link.format(repository=repository, branch=BRANCH, path=relative)
        badges.append(f"[![{chinese_alt if chinese else english}]({image})]({address})")
    return " ".join(badges)


def launch_block(notebook: str, url: str, chinese: bool = False) -> str:
    """Return the badges that open `notebook` (its stem) of the English edition, or of the Chinese one
    (notebooks/zh/, alt text in Chinese), between their markers."""
    relative = f"notebooks/{'zh/' if chinese else ''}{notebook}.ipynb"
    return "\n".join([LAUNCH_START, launch_badges(relative, url, chinese), LAUNCH_END])


def with_launch_block(text: str, block: str) -> str:
    """Return `text` with `block` replacing its old one, or put after its first line (the title)."""
    if LAUNCH.search(text):
        return LAUNCH.sub(lambda _: block, text)
    title, _, rest = text.partition("\n")
    return f"{title}\n\n{block}\n\n{rest.lstrip(chr(10))}"


def questions_source(notebook: str, url: str) -> str:
    """Return the "Questions?" cell of `notebook`: where to ask and where to report a problem."""
    title = quote(f"{notebook}: ")
    return (f"{QUESTIONS_HEADING}\n\n"
            f"Stuck on a cell, unsure about an exercise, or puzzled by a result? Ask in the course's\n"
            f"[discussions]({url}/discussions), naming this notebook (`{notebook}`) and the section.\n"
            f"To report a problem with this page (a mistake, a cell that fails, a broken link, a barrier\n"
            f"to accessibility), [open an issue]({url}/issues/new?title={title}). Please do not post\n"
            f"answers to the exercises.")


def put_reader_cells(notebook, name: str, sections: dict, url: str) -> bool:
    """Write the sections block and the Questions cell into `notebook`; return True if it changed."""
    before = [cell.source for cell in notebook.cells]
    first = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    first.source = with_sections_block(first.source, sections_block(sections, name))
    first.source = with_launch_block(first.source, launch_block(name, url))
    source = questions_source(name, url)
    existing = [c for c in notebook.cells
                if c.cell_type == "markdown" and c.source.startswith(QUESTIONS_HEADING)]
    cell = existing[0] if existing else nbformat.v4.new_markdown_cell(source)
    cell.source = source
    for old in existing:
        notebook.cells.remove(old)
    notebook.cells.insert(len(notebook.cells) - 1, cell)  # before the closing navigation cell
    return [c.source for c in notebook.cells] != before


def readme_table(sections: dict, names: list[str]) -> str:
    """Return README's 对照表 (between its markers) for `names`, its Chinese marked lang="zh"."""
    header = "| notebook | " + " | ".join(BOOKS.values()) + " |"
    rows = [f"| `{name}` | " + " | ".join("<br>".join(section_names(sections, name, book)) for book in BOOKS)
            + " |" for name in names]
    return mark("\n".join([README_START, header, "|---|---|---|---|", *rows, README_END]))


def with_readme_table(text: str, table: str) -> str:
    """Return README `text` with its 对照表 replaced by `table`; the markers must be there."""
    pattern = re.compile(re.escape(README_START) + r".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"README.md: put {README_START} and {README_END} where the 对照表 goes")
    return pattern.sub(lambda _: table, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report what is missing or stale")
    args = parser.parse_args()
    sections, url, stale = load_sections(), repository_url(), []
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        if put_reader_cells(notebook, path.stem, sections, url):
            stale.append(path.name)
            if not args.check:
                nbformat.write(notebook, path)
    readme = README.read_text(encoding="utf-8")
    updated = with_readme_table(readme, readme_table(sections, [p.stem for p in paths]))
    if updated != readme:
        stale.append(README.name)
        if not args.check:
            README.write_text(updated, encoding="utf-8")
    print(("stale: " if args.check else "updated: ") + (", ".join(stale) or "none"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
