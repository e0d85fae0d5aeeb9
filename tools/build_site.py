"""Build the course site in English and Simplified Chinese from the stored notebooks (never executed).

    python tools/build_site.py --mathjax node_modules/mathjax-full [--out build/site] [--no-pdf]
    python tools/build_site.py --update-catalogs    # site/index.md, docs/instructors.md -> site/locale

Runs in a venv with `site/requirements.txt` (Sphinx, MyST-NB, the book theme, jieba, sphinx-intl).
Two Sphinx builds from the same sources, one per edition (`EDITIONS`): the English site into
`<out>/html` from `notebooks/*.ipynb`, the Chinese one (`-D language=zh_CN`) into `<out>/html/zh`
from the stored `notebooks/zh/*.ipynb`. The site's own pages (site/index.md, docs/instructors.md)
are the same sources in both; the Chinese build translates them with the gettext catalogs in
`site/locale/zh_CN/LC_MESSAGES/` (`--update-catalogs` brings them up to date with the English:
Sphinx's gettext builder, then `sphinx-intl update`; a changed paragraph turns fuzzy, a new one
is empty, and tests/test_site_catalogs.py fails until a translator fills it in).

Each edition's sources are staged in `<out>/src/<language>`: `site/` (conf.py, index.md, the
links extension, templates, CSS, catalogs), its notebooks, `docs/instructors.md`, pyproject.toml
(the repository's address) and the Chinese search's word list (`search_words`, the glossary's
terms, which jieba's own dictionary splits: 困惑度 would be 困惑 + 度); every notebook is also
copied beside its page for download. (The Chinese search's query splitter, and its fix of Sphinx
9.0's Chinese search script, are in site/_ext/course_links.py.) `--mathjax` names an npm
`mathjax-full@3` folder: after Sphinx, `node tools/typeset_math.mjs` typesets every page's formulas
with it, with their speech (both editions in one run: the speech rule engine starts once, a formula
both have is typeset once), and its CommonHTML fonts are served with each edition, so that a page
needs no MathJax in the browser, nor a CDN. Without `--mathjax`, MathJax from its CDN typesets them
in the reader's browser (a preview; the site's tests fail it: its requests leave the site).
The whole course as one PDF per edition (`PDFS`: `<out>/html/d2lmini-course.pdf`,
`<out>/html/zh/d2lmini-course-zh.pdf`, linked from each home page): Sphinx's singlehtml builder from
the same staged sources and conf.py, with the tag `pdf` (its print stylesheet and the shipped CJK font,
site/_print/), into `<out>/singlehtml/<language>` (not published), its formulas typeset in the same
typeset_math.mjs run, then printed by `chromium --headless --print-to-pdf` from the local file (no
TeX; the PDF's outline is the pages' headings; `$D2LMINI_CHROMIUM` names another Chromium). The PDFs
need --mathjax (Chromium prints what the page holds when it has loaded) and Chromium; `--no-pdf` builds
the site alone, a quicker preview (its home pages' PDF links then lead nowhere).
Prints the seconds each build took and each site's size; exits non-zero when Sphinx fails or warns.
Every argument is checked before anything is deleted or Sphinx starts (`parse_arguments`, then
`missing_program`): a wrong one stops the tool with one line naming it (exit 2), never a traceback.
"""

import argparse
import datetime
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SITE = ROOT / "site"
GLOSSARY = ROOT / "docs" / "glossary.md"
CATALOGS = SITE / "locale"
# language: (the edition's folder under the site's root, its notebooks)
EDITIONS = {"en": ("", NOTEBOOKS), "zh_CN": ("zh", NOTEBOOKS / "zh")}
TRANSLATED = ("zh_CN",)
# The site's own pages and their sources, translated through the catalogs (the notebooks have their own).
SITE_PAGES = {"index": "site/index.md", "instructors": "docs/instructors.md"}
SEARCH_WORDS = "search_words.txt"
# Fixed dates in the catalogs' headers, so that a catalog changes only when its messages do.
EPOCH = datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC)
CATALOG_HEADER = """\
# The course site's Simplified Chinese catalog: {page}.
# Made and updated by `python tools/build_site.py --update-catalogs` (Sphinx's gettext builder, then
# sphinx-intl). Translate each msgstr; keep code, commands, file names, numbers, URLs and the
# Markdown (links, emphasis, code spans) as they are. Sphinx reads each msgstr as Markdown on its
# own: a heading's "1. 发布" would be a list, so write "1\\. 发布". Terms: docs/glossary.md.
# Licence: the project's (MIT).
#"""
CJK = re.compile(r"[\u3400-\u9fff]+")
# Written into --out on its first build: only then are the folders below (OWN) this tool's to replace.
MARKER = ".made-by-build_site"
OWN = ("src", "html", "doctrees", "gettext", "singlehtml")
# Each edition's PDF of the whole course, in its folder of the site (site/_ext/course_links.py's PDFS, which
# the home pages link); the shipped font that prints its Chinese (d2lmini/fonts.py), and its licence.
PDFS = {"en": "d2lmini-course.pdf", "zh_CN": "d2lmini-course-zh.pdf"}
PDF_FONTS = (ROOT / "d2lmini" / "fonts" / "NotoSansCJKsc-Regular-subset.otf",
             ROOT / "d2lmini" / "fonts" / "OFL.txt")
# The Chromium that prints them: $D2LMINI_CHROMIUM if set (as for the site's tests), else the first of these
# on PATH (Debian's chromium; GitHub's runners have google-chrome).
CHROMIUM_ENV = "D2LMINI_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Headless Chromium printing a local file: nothing but that file's folder, no profile left behind.
CHROMIUM_PRINT = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--no-proxy-server",
                  "--no-pdf-header-footer", "--generate-pdf-document-outline", "--virtual-time-budget=30000"]


class OutFolderError(Exception):
    """--out is not a folder this tool may replace folders in; nothing was deleted."""


def path_argument(text: str) -> Path:
    """argparse's type for a folder: refuse an empty name (Path("") is the current folder) or a NUL."""
    if not text:
        raise argparse.ArgumentTypeError("give a folder, not an empty name")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} holds a NUL character, which no path can")
    return Path(text)


def nearest_existing(path: Path) -> Path:
    """Return `path` or the nearest of its parents that exists (or is a link): where creating it starts."""
    path = path.absolute()
    while not (path.exists() or path.is_symlink()) and path != path.parent:
        path = path.parent
    return path


def out_problem(out: Path) -> str | None:
    """Why `out` cannot be this tool's output folder, in one line naming --out, or None; writes nothing.

    It must be (or be creatable as) a folder you may write in, outside the site's sources (a build in
    site/ would be copied into the next build's sources), holding no `src`, `html`, `doctrees` or
    `gettext` this tool did not make.
    """
    try:
        start = nearest_existing(out)
        if out.is_symlink() and not out.exists():
            return f"--out {out} is a link that leads nowhere (to {os.readlink(out)})"
        if start == out.absolute() and not out.is_dir():
            return f"--out {out} is a file, not a folder"
        if not start.is_dir():
            return f"--out {out} is inside {start}, which is a file, not a folder"
        if out.resolve().is_relative_to(SITE.resolve()):
            return f"--out {out} is inside site/, the site's sources: give a folder outside it"
        if not os.access(start, os.W_OK | os.X_OK):
            return f"--out {out}: you may not write in {start}"
        if (out / MARKER).is_file():
            return None
        theirs = [name for name in OWN if (out / name).exists() or (out / name).is_symlink()]
    except OSError as error:  # a name too long, a folder you may not read
        return f"--out {out}: {error.strerror or error}"
    except RuntimeError:  # Path.resolve on a loop of links (Python 3.11)
        return f"--out {out} leads through a loop of links"
    if theirs:
        return (f"--out {out} holds {', '.join(t + '/' for t in theirs)}, which this tool did not make (no "
                f"{MARKER} there): nothing was deleted. Give a new or empty folder, or remove those yourself")
    return None


def claim(out: Path) -> None:
    """Make `out` this tool's (its marker), or raise OutFolderError if a folder it replaces is not its own.

    A folder of yours named `src`, `html`, `doctrees` or `gettext` in --out is never deleted: the
    tool refuses before it deletes or writes anything (`out_problem`).
    """
    problem = out_problem(out)
    if problem:
        raise OutFolderError(problem)
    if (out / MARKER).is_file():
        return
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).write_text("tools/build_site.py replaces src/, html/, doctrees/, gettext/ here\n",
                                  "utf-8")
    except OSError as error:  # what os.access could not foresee: root on a read-only place, a full disk
        raise OutFolderError(f"--out {out}: cannot write there ({error.strerror or error})") from None


def mathjax_problem(mathjax: Path | None) -> str | None:
    """Why `mathjax` is not an npm mathjax-full@3 folder, in one line naming --mathjax, or None."""
    if mathjax is None:
        return None
    install = "the node_modules/mathjax-full that npm install mathjax-full@3.2.2 makes"
    try:
        if not mathjax.exists():
            return f"--mathjax {mathjax} does not exist: give {install}"
        if not mathjax.is_dir():
            return f"--mathjax {mathjax} is a file, not a folder: give {install}"
        if not (mathjax / "js" / "mathjax.js").is_file() or not mathjax_fonts(mathjax).is_dir():
            return f"--mathjax {mathjax}: not an npm mathjax-full@3 folder; give {install}"
    except OSError as error:
        return f"--mathjax {mathjax}: {error.strerror or error}"
    return None


def mathjax_fonts(mathjax: Path) -> Path:
    """The CommonHTML fonts of an npm mathjax-full@3 folder."""
    return mathjax / "es5" / "output" / "chtml" / "fonts" / "woff-v2"


def search_words(glossary: Path = GLOSSARY) -> list[str]:
    """Return the Chinese terms of the glossary's table (its second column), each a word for jieba."""
    words = []
    for line in glossary.read_text("utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and line.startswith("|") and CJK.search(cells[1]):
            # "信息量（自信息）", "一元语法 / 二元语法", "LeCun初始化": each run of Chinese characters.
            words += [word for word in CJK.findall(cells[1]) if len(word) > 1]
    return sorted(set(words))


# A badge, [![alt](image)](address), as each notebook's first cell has them (tools/reader_cells.py).
BADGE = re.compile(r"\[!\[([^\]]*)\]\([^)\s]*\)\]\(([^)\s]*)\)")


def with_text_links(text: str) -> str:
    """`text` (a notebook's JSON) with every image badge written as a text link: no page of the site loads
    an image from another host, so it works offline and tells no one who reads it."""
    return BADGE.sub(r"[\1](\2)", text)


def stage(src: Path, language: str, mathjax: Path | None) -> None:
    """Copy what the `language` edition is built from into the empty folder `src`."""
    notebooks = EDITIONS[language][1]
    shutil.copytree(SITE, src, ignore=shutil.ignore_patterns("__pycache__", "*.mo", "requirements.txt"))
    (src / "_print" / "fonts").mkdir()
    for font_file in PDF_FONTS:  # the PDF build's (`-t pdf`) alone: the site's pages never load it
        shutil.copy(font_file, src / "_print" / "fonts" / font_file.name)
    shutil.copy(ROOT / "pyproject.toml", src / "pyproject.toml")
    shutil.copy(ROOT / "docs" / "instructors.md", src / "instructors.md")
    (src / SEARCH_WORDS).write_text("".join(f"{word} 1000 n\n" for word in search_words()), "utf-8")
    (src / "notebooks").mkdir()
    (src / "_downloads" / "notebooks").mkdir(parents=True)
    for path in sorted(notebooks.glob("*.ipynb")):
        (src / "notebooks" / path.name).write_text(with_text_links(path.read_text("utf-8")), "utf-8")
        shutil.copy(path, src / "_downloads" / "notebooks" / path.name)
    if mathjax is not None:
        # The fonts of the formulas typeset_math.mjs writes (its stylesheet goes beside them); site/conf.py
        # sees this folder and writes the formulas for it instead of loading MathJax.
        shutil.copytree(mathjax_fonts(mathjax), src / "_static" / "mathjax" / "woff-v2")


def folder_size(folder: Path) -> int:
    """Return the bytes of every file under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def sphinx(builder: str, src: Path, out: Path, doctrees: Path, language: str,
           tags: tuple[str, ...] = ()) -> int:
    """Run sphinx-build quietly with warnings as errors, with conf.py's `tags`; return its exit status."""
    command = [sys.executable, "-m", "sphinx", "-b", builder, "-q", "-W", "--keep-going",
               "-d", str(doctrees), "-D", f"language={language}", *(f"-t{tag}" for tag in tags),
               str(src), str(out)]
    return subprocess.run(command, check=False).returncode


def other_editions(html: Path, language: str) -> list[Path]:
    """The folders of the other editions inside `language`'s (the English one holds zh/)."""
    folder = EDITIONS[language][0]
    return [html / other for other, _ in EDITIONS.values()
            if other and other != folder and (html / other).exists()]


def edition_pages(html: Path, language: str) -> list[Path]:
    """Every page of one edition of the site built into `html` (not the theme's fragments in _static/)."""
    target, others = html / EDITIONS[language][0], other_editions(html, language)
    return [path for path in sorted(target.rglob("*.html")) if "_static" not in path.relative_to(target).parts
            and not any(path.is_relative_to(other) for other in others)]


def drop_copies(html: Path) -> None:
    """Remove what the builds leave in the site that no page uses: a second copy of every notebook.

    MyST-NB writes each notebook it renders to jupyter_execute/ beside the build's folder: for the Chinese
    edition (html/zh) that is inside the site. Sphinx makes _sources/ even when conf.py's html_copy_source
    keeps the sources out of it; an empty one is removed.
    """
    shutil.rmtree(html / "jupyter_execute", ignore_errors=True)
    for folder, _ in EDITIONS.values():
        sources = html / folder / "_sources"
        if sources.is_dir() and not any(sources.iterdir()):
            sources.rmdir()


def typeset(html: Path, mathjax: Path, singles: list[Path]) -> int:
    """Typeset the formulas of both editions' pages, and of the one page of each singlehtml build in
    `singles`, with tools/typeset_math.mjs (Node, one run: a formula is typeset once); its exit status."""
    command = ["node", str(ROOT / "tools" / "typeset_math.mjs"), "--mathjax", str(mathjax)]
    for language, (folder, _) in EDITIONS.items():
        command += ["--stylesheet", str(html / folder / "_static" / "mathjax" / "chtml.css")]
        command += [str(page) for page in edition_pages(html, language)]
    for single in singles:
        command += ["--stylesheet", str(single / "_static" / "mathjax" / "chtml.css"),
                    str(single / "index.html")]
    return subprocess.run(command, check=False).returncode


def pdf_pages(pdf: Path) -> int:
    """The number of pages of a PDF Chromium printed (its page objects; Chromium writes no object streams)."""
    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf.read_bytes()))


def find_chromium() -> str | None:
    """The Chromium that prints the PDFs: the one $D2LMINI_CHROMIUM names, else the first of CHROMIUM_NAMES
    on PATH; None if there is none."""
    named = os.environ.get(CHROMIUM_ENV)
    if named:
        return shutil.which(named)
    return next((found for found in map(shutil.which, CHROMIUM_NAMES) if found), None)


def print_pdf(chromium: str, page: Path, pdf: Path, profile: Path) -> str | None:
    """Print the local `page` to `pdf` with headless `chromium`; None, or what went wrong in one line."""
    pdf.unlink(missing_ok=True)
    command = [chromium, *CHROMIUM_PRINT, f"--user-data-dir={profile}", f"--print-to-pdf={pdf}",
               page.as_uri()]
    try:
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return f"{chromium} did not print {page} within 10 minutes"
    if done.returncode or not pdf.is_file() or pdf.stat().st_size == 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{chromium} did not print {page} (exit {done.returncode}): {one_line(last)}"
    return None


def build_singles(out: Path) -> tuple[int, dict[str, float]]:
    """Build each edition's singlehtml page (tag pdf) from its staged sources into `out`/singlehtml; return
    Sphinx's exit status and the seconds of each edition's build."""
    seconds = {}
    for language in EDITIONS:
        start = time.perf_counter()
        status = sphinx("singlehtml", out / "src" / language, out / "singlehtml" / language,
                        out / "doctrees" / language, language, ("pdf",))
        seconds[language] = time.perf_counter() - start
        if status:
            print(f"the {language} PDF's page failed to build (Sphinx exit {status})", file=sys.stderr)
            return status, seconds
    shutil.rmtree(out / "singlehtml" / "jupyter_execute", ignore_errors=True)
    return 0, seconds


def print_pdfs(out: Path, built: dict[str, float]) -> int:
    """Print each edition's singlehtml page into its folder of the site as its PDF; print each one's seconds
    (its singlehtml build's, from `built`, and Chromium's), size and pages."""
    html, chromium = out / "html", find_chromium()
    for language, (folder, _) in EDITIONS.items():
        pdf = html / folder / PDFS[language]
        start = time.perf_counter()
        page = out / "singlehtml" / language / "index.html"
        problem = print_pdf(chromium, page, pdf, out / "singlehtml" / "chromium")
        seconds = time.perf_counter() - start
        if problem:
            print(f"build_site: the {language} PDF: {problem}", file=sys.stderr)
            return 1
        print(f"printed {language}: {pdf} ({pdf_pages(pdf)} pages, {pdf.stat().st_size / 1e6:.1f} MB) in "
              f"{built[language] + seconds:.1f} s (singlehtml {built[language]:.1f} s, "
              f"Chromium {seconds:.1f} s)")
    shutil.rmtree(out / "singlehtml" / "chromium", ignore_errors=True)
    return 0


def build(out: Path, mathjax: Path | None, pdf: bool = False) -> int:
    """Build both editions into `out`/html, and with `pdf` each one's PDF; print each one's time and size,
    then the whole site's."""
    html = out / "html"
    claim(out)
    for folder in (out / "src", html, out / "doctrees", out / "singlehtml"):
        shutil.rmtree(folder, ignore_errors=True)
    total, built = 0.0, {}
    for language, (folder, _) in EDITIONS.items():
        src, target = out / "src" / language, html / folder
        stage(src, language, mathjax)
        start = time.perf_counter()
        status = sphinx("html", src, target, out / "doctrees" / language, language)
        built[language] = time.perf_counter() - start
        total += built[language]
        if status:
            print(f"the {language} site's build failed (Sphinx exit {status})", file=sys.stderr)
            return status
    drop_copies(html)
    singles = {}
    if pdf:
        status, singles = build_singles(out)
        total += sum(singles.values())
        if status:
            return status
    if mathjax is not None:
        start = time.perf_counter()
        status = typeset(html, mathjax, [out / "singlehtml" / language for language in singles])
        seconds = time.perf_counter() - start
        total += seconds
        print(f"typeset the formulas of both editions{' and their PDFs' if pdf else ''} in {seconds:.1f} s")
        if status:
            print(f"typesetting the formulas failed (exit {status})", file=sys.stderr)
            return status
    if pdf:
        start = time.perf_counter()
        status = print_pdfs(out, singles)
        total += time.perf_counter() - start
        if status:
            return status
    for language, seconds in built.items():
        target = html / EDITIONS[language][0]
        size = folder_size(target) - sum(folder_size(other) for other in other_editions(html, language))
        pages = len(edition_pages(html, language))
        print(f"built {language}: {pages} pages into {target} in {seconds:.1f} s; {size / 1e6:.1f} MB")
    pages = sum(len(edition_pages(html, language)) for language in EDITIONS)
    print(f"built {pages} pages into {html} in {total:.1f} s; {folder_size(html) / 1e6:.1f} MB")
    return 0


def update_catalogs(out: Path) -> int:
    """Extract the site's own pages' English messages and merge them into every translated catalog."""
    src, pot = out / "src" / "gettext", out / "gettext"
    claim(out)
    for folder in (src, pot, out / "doctrees" / "gettext"):
        shutil.rmtree(folder, ignore_errors=True)
    stage(src, "en", None)
    status = sphinx("gettext", src, pot, out / "doctrees" / "gettext", "en")
    if status:
        print(f"the gettext build failed (Sphinx exit {status})", file=sys.stderr)
        return status
    # Only the site's own pages: the notebooks' pages have catalogs of their own (tools/translations.py),
    # and the theme's strings (sphinx.pot) come translated with the theme.
    for template in pot.rglob("*.pot"):
        if template.relative_to(pot).with_suffix("").as_posix() not in SITE_PAGES:
            template.unlink()
    for language in TRANSLATED:
        command = [sys.executable, "-m", "sphinx_intl", "update", "-p", str(pot), "-d", str(CATALOGS),
                   "-l", language, "-w", "100"]
        quiet = {**os.environ, "PYTHONWARNINGS": "ignore"}
        status = subprocess.run(command, check=False, env=quiet).returncode
        if status:
            return status
        for page, source in SITE_PAGES.items():
            tidy_header(CATALOGS / language / "LC_MESSAGES" / f"{page}.po", f"{page} ({source})")
    return 0


def tidy_header(path: Path, name: str) -> None:
    """Give the catalog at `path` the course's header, fixed dates and no fuzzy header (Babel)."""
    from babel.messages import pofile  # the site's venv has Babel (Sphinx needs it)

    with path.open("rb") as handle:
        catalog = pofile.read_po(handle, abort_invalid=True)
    catalog.fuzzy = False
    catalog.header_comment = CATALOG_HEADER.format(page=name)
    catalog.creation_date = catalog.revision_date = EPOCH
    catalog.last_translator = "the d2lmini authors"
    catalog.language_team = "Simplified Chinese"
    with path.open("wb") as handle:
        pofile.write_po(handle, catalog, width=100)


def one_line(text: str) -> str:
    """`text` with every character that is not printable (a line break in a path) written as Python
    escapes it, so that a message stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose error stays one line, whatever the arguments it quotes hold."""

    def error(self, message: str):
        super().error(one_line(message))


def make_parser() -> argparse.ArgumentParser:
    """The tool's command line."""
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=path_argument, default=ROOT / "build" / "site",
                        help="default: build/site")
    parser.add_argument("--mathjax", type=path_argument,
                        help="an npm mathjax-full@3 folder (node_modules/mathjax-full): typeset the formulas")
    parser.add_argument("--update-catalogs", action="store_true",
                        help="update site/locale's catalogs from the English pages, then stop")
    parser.add_argument("--no-pdf", action="store_true",
                        help="build the site without its PDFs (a quicker preview; no Chromium needed)")
    return parser


def parse_arguments(argv: list[str] | None, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Return the checked arguments; a wrong one is argparse's error naming it (exit 2). Writes nothing."""
    args = parser.parse_args(argv)
    if args.update_catalogs and args.mathjax is not None:
        parser.error("--mathjax typesets a build's formulas and --update-catalogs builds no pages: "
                     "give one of them")
    if args.update_catalogs and args.no_pdf:
        parser.error("--no-pdf leaves out a build's PDFs and --update-catalogs builds none: give one of them")
    problem = out_problem(args.out) or mathjax_problem(args.mathjax)
    if problem:
        parser.error(problem)
    if not (args.update_catalogs or args.no_pdf or args.mathjax):
        parser.error("the PDFs' formulas are typeset by --mathjax: give --mathjax "
                     "(node_modules/mathjax-full), or --no-pdf for the site alone")
    return args


def missing_program(args: argparse.Namespace) -> str | None:
    """What the run `args` asks for needs and this machine lacks, in one line, or None."""
    needed = {"sphinx": "Sphinx"} | ({"sphinx_intl": "sphinx-intl"} if args.update_catalogs else {})
    for module, name in needed.items():
        if importlib.util.find_spec(module) is None:
            return (f"{name} is not installed in this Python ({sys.executable}): use the site's venv "
                    "(pip install -r site/requirements.txt)")
    if args.mathjax is not None and shutil.which("node") is None:
        return "--mathjax typesets the formulas with Node.js, and there is no node on PATH"
    if not (args.update_catalogs or args.no_pdf) and find_chromium() is None:
        where = (f"${CHROMIUM_ENV} names {os.environ[CHROMIUM_ENV]}, which is no program"
                 if os.environ.get(CHROMIUM_ENV) else f"none of {', '.join(CHROMIUM_NAMES)} is on PATH")
        return f"the PDFs are printed by Chromium, and {where}: apt-get install chromium, or give --no-pdf"
    return None


def main(argv: list[str] | None = None) -> int:
    """Build the site, or update the catalogs; 2 with one line for an argument that cannot work."""
    parser = make_parser()
    args = parse_arguments(argv, parser)
    missing = missing_program(args)
    if missing:
        parser.error(missing)
    try:
        if args.update_catalogs:
            return update_catalogs(args.out)
        return build(args.out, args.mathjax, not args.no_pdf)
    except OutFolderError as error:
        print(f"build_site: {one_line(str(error))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
