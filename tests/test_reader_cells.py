"""What every notebook tells a reader about where else to look: the books' sections it covers
(written from docs/book_sections.toml), a glossary that agrees with the course's shared one
(docs/glossary.md), and a place to ask at its end (tools/reader_cells.py writes the first and
the last; the glossaries are the notebooks' own, checked here against the shared one)."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
sys.path.insert(0, str(ROOT / "tools"))  # reader_cells imports its sibling chinese_spans
SPEC = importlib.util.spec_from_file_location("reader_cells", ROOT / "tools" / "reader_cells.py")
reader_cells = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(reader_cells)
GLOSSARY = ROOT / "docs" / "glossary.md"
LANG_SPAN = re.compile(r'</?span(?: lang="[\w-]+")?>')  # tools/chinese_spans.py marks the Chinese
INTRODUCED = re.compile(r"\[(\d\d[a-z]?)\]\(\.\./notebooks/(\d\d[a-z]?_\w+)\.ipynb\)")


def markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in `text`, as lists of stripped cells."""
    rows, started = [], False
    for line in text.splitlines():
        if line.startswith("|"):
            started = True
            cells = [LANG_SPAN.sub("", cell).strip() for cell in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif started:
            break
    return rows[1:]  # without the header


def notebook_glossary(path: Path) -> list[tuple[str, str]]:
    """(English, 中文) of every row of the notebook's glossary table."""
    markdown = "\n".join(markdown_cells(path))
    heading = re.search(r"^#+ .*Glossary.*$", markdown, re.M)
    assert heading, f"{path.name} has no glossary"
    return [(row[0], row[1]) for row in table_rows(markdown[heading.end():])]


def shared_glossary() -> dict[str, tuple[str, str]]:
    """docs/glossary.md: English → (中文, the notebook that introduces it)."""
    entries = {}
    for english, chinese, introduced in table_rows(GLOSSARY.read_text(encoding="utf-8")):
        link = INTRODUCED.fullmatch(introduced)
        assert link and link.group(1) == link.group(2).split("_")[0], \
            f"docs/glossary.md, {english}: {introduced!r}"
        assert english not in entries, f"docs/glossary.md lists {english!r} twice"
        entries[english] = (chinese, link.group(2))
    return entries


def course_order(stem: str) -> tuple[bool, str]:
    """Notebooks 01… first, in order; 00 (the course glossary) last."""
    return (stem.startswith("00"), stem)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glossary_row_agrees_with_the_shared_glossary(path):
    shared = shared_glossary()
    for english, chinese in notebook_glossary(path):
        number = path.stem.split("_")[0]
        assert english in shared, f"add to docs/glossary.md: | {english} | {chinese} | [{number}](…) |"
        assert shared[english][0] == chinese, \
            f"{path.stem}: {english} is {chinese}, docs/glossary.md says {shared[english][0]}"


def test_each_term_is_introduced_where_it_first_appears_in_course_order():
    first = {}
    for path in sorted(NOTEBOOKS, key=lambda p: course_order(p.stem)):
        for english, _ in notebook_glossary(path):
            first.setdefault(english, path.stem)
    shared = shared_glossary()
    assert {english: where for english, (_, where) in shared.items()} == first


def test_the_glossary_check_catches_a_disagreeing_row(tmp_path, monkeypatch):
    """The check above can fail: a notebook whose glossary gives another Chinese term."""
    path = next(p for p in NOTEBOOKS if p.stem.startswith("01"))
    english, chinese = notebook_glossary(path)[0]
    planted = tmp_path / path.name
    text = path.read_text(encoding="utf-8")
    text = text.replace(f'| {english} | <span lang=\\"zh\\">{chinese}</span> |', f"| {english} | 别的词 |", 1)
    assert "别的词" in text
    planted.write_text(text, encoding="utf-8")
    with pytest.raises(AssertionError, match="docs/glossary.md says"):
        test_every_glossary_row_agrees_with_the_shared_glossary(planted)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_names_the_books_sections(path):
    first = markdown_cells(path)[0]
    block = reader_cells.sections_block(reader_cells.load_sections(), path.stem)
    assert block in first, "run: python tools/reader_cells.py"
    block = LANG_SPAN.sub("", block)
    assert "《动手学深度学习》 | §8" in block or "《动手学深度学习》 | §9" in block
    assert "《深度学习进阶：自然语言处理》 | §5" in block or "《深度学习进阶：自然语言处理》 | §6" in block


BADGE = re.compile(r"\[!\[([^\]]+)\]\((https://[^)]+)\)\]\((https://[^)]+)\)")
CHINESE_EDITION = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]*_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE_EDITION,
                         ids=lambda p: f"{p.parent.name}/{p.stem}" if p.parent.name == "zh" else p.stem)
def test_the_first_cell_opens_this_very_notebook_in_colab_and_kaggle(path):
    """Each edition's own file, from README's branch, with alt text in the edition's language."""
    first = markdown_cells(path)[0]
    title, _, rest = LANG_SPAN.sub("", first).removeprefix('<div lang="zh-CN">\n\n').partition("\n\n")
    assert title.startswith("# ") and rest.startswith(reader_cells.LAUNCH_START), \
        "run: python tools/reader_cells.py (English) or fill the catalog (Chinese), see tools/reader_cells.py"
    chinese = path.parent.name == "zh"
    relative = path.relative_to(ROOT).as_posix()
    on_github = f"{reader_cells.repository_url()}/blob/{reader_cells.BRANCH}/{relative}"
    badges = BADGE.findall(first)
    assert [alt for alt, _, _ in badges] == (["在 Colab 中打开", "在 Kaggle 中打开"] if chinese
                                             else ["Open in Colab", "Open in Kaggle"])
    (_, _, colab), (_, _, kaggle) = badges
    assert colab == on_github.replace("https://github.com/", "https://colab.research.google.com/github/")
    assert kaggle == "https://kaggle.com/kernels/welcome?src=" + on_github


def test_readme_s_badges_open_the_branch_the_notebooks_open():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    colab = BADGE.findall(reader_cells.launch_block("00_start_here", reader_cells.repository_url()))[0]
    assert f"[![{colab[0]}]({colab[1]})]({colab[2]})" in readme


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_end_of_every_notebook_says_where_to_ask(path):
    cells = markdown_cells(path)
    questions = cells[-2]
    assert questions.startswith("## Questions?"), "run: python tools/reader_cells.py"
    url = reader_cells.repository_url()
    assert f"]({url}/discussions)" in questions
    assert f"]({url}/issues/new?title={path.stem}%3A%20)" in questions
    assert "Next: " in cells[-1] or "course map" in cells[-1], "the navigation cell stays last"


def test_readme_has_the_table_of_every_notebook():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert reader_cells.readme_table(reader_cells.load_sections(), [p.stem for p in NOTEBOOKS]) in readme
    assert '## <span lang="zh">对照表</span>' in readme and "docs/glossary.md" in readme


def test_every_section_named_has_a_title_and_every_notebook_has_sections():
    sections = reader_cells.load_sections()
    for name in sections["notebooks"]:
        for book in reader_cells.BOOKS:
            assert reader_cells.section_names(sections, name, book)
    with pytest.raises(KeyError, match=r"add \[notebooks.99_new\]"):
        reader_cells.section_names(sections, "99_new", "d2l_zh")


def test_the_script_finds_nothing_stale():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "reader_cells.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
