"""The entries a new notebook needs beyond its row in the course table (tools/new_notebook.py).

Each `add_*` or `update_*` function writes one entry and returns whether it changed anything; an
English cell it changes in an existing notebook gets its Chinese in that notebook's catalog at once.
"""

import re
import tomllib

import colab_cell
import nbformat
import reader_cells
import study_time
import translations
from chinese_spans import mark
from course_table import NOTEBOOKS, ROOT, Declaration, course_rows

MAP_STEM = "00_start_here"
LINK = re.compile(r"\[([^\]]+)\]\(([\w.]+\.ipynb)\)")
MAP_LINK_EN = "back to the [course map](00_start_here.ipynb)"
MAP_LINK_ZH = "返回[课程地图](00_start_here.ipynb)"
END_EN = "That is the course. Back to the [course map](00_start_here.ipynb)."
END_ZH = "本课程到此结束。返回[课程地图](00_start_here.ipynb)。"
ZH_TOTAL = re.compile(r"核心路径共 \d+\.\d h，选读部分另需 \d+\.\d h")


# ---------------------------------------------------------------- the skeleton notebook


def skeleton_cells(spec: Declaration) -> list[tuple[str, str, str]]:
    """(kind, English, Chinese) of each cell of a new notebook; code cells have no Chinese."""
    optional_en, optional_zh = (" (optional)", "（选读）") if spec.optional else ("", "")
    imports = "from d2lmini.device import seed_everything, try_gpu\n"
    if spec.exercises:
        imports += f"from d2lmini.exercises import {spec.exercises} as ex\n"
    cells = [
        (
            "markdown",
            f"# {spec.number} · {spec.title}{optional_en}\n\n{spec.idea}\n\n## What you will learn",
            f"# {spec.number} · {spec.title_zh}{optional_zh}\n\n{spec.idea_zh}\n\n## 你将学到什么",
        ),
        ("code", imports + "\nseed_everything(0)\ndevice = try_gpu()", ""),
        ("markdown", "## Exercises", "## 练习"),
        ("markdown", "## Summary", "## 小结"),
        (
            "markdown",
            "## Glossary\n\n| English | 中文 | meaning |\n|---|---|---|",
            "## 术语表\n\n| 英文 | 中文 | 含义 |\n|---|---|---|",
        ),
    ]
    return cells


def write_skeleton(spec: Declaration, closing: tuple[str, str]) -> bool:
    """Write the new notebook (unless it exists) with its closing navigation cell `closing` (English)."""
    if spec.path.exists():
        return False
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    for kind, english, _ in skeleton_cells(spec):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        notebook.cells.append(make(mark(english) if kind == "markdown" else english))
    notebook.cells.append(nbformat.v4.new_markdown_cell(closing[0]))
    colab_cell.put_install_cell(notebook, colab_cell.repository_url())  # first, before the imports
    nbformat.write(notebook, spec.path)
    return True


def known_translations(spec: Declaration, closing: tuple[str, str]) -> dict[str, str]:
    """The Chinese of every cell the tool writes into the new notebook, as the notebook shows them."""
    if not spec.title:  # a later run: the cells are the contributor's now
        return questions_translation(spec)
    known = {mark(english): chinese for kind, english, chinese in skeleton_cells(spec) if kind == "markdown"}
    known[closing[0]] = closing[1]
    sections = reader_cells.load_sections()
    first_en, first_zh = mark(skeleton_cells(spec)[0][1]), skeleton_cells(spec)[0][2]
    if spec.stem in sections.get("notebooks", {}):
        block = reader_cells.sections_block(sections, spec.stem)
        first_en = reader_cells.with_sections_block(first_en, block)
        first_zh = reader_cells.with_sections_block(first_zh, chinese_sections_block(block))
        known[first_en] = first_zh
    url = colab_cell.repository_url()  # and under the title, the badges that open each edition's notebook
    known[reader_cells.with_launch_block(first_en, reader_cells.launch_block(spec.stem, url))] = (
        reader_cells.with_launch_block(first_zh, reader_cells.launch_block(spec.stem, url, chinese=True))
    )
    known.update(questions_translation(spec))
    return known


def chinese_sections_block(block: str) -> str:
    """The Chinese of reader_cells' book-sections block: the same table, its headings in Chinese."""
    block = re.sub(r'</?span(?: lang="zh")?>', "", block)
    block = re.sub(
        r"^\*\*The same material in the books\*\*.*$",
        "**书中的相同内容**（术语的中文名见末尾的术语表；所有笔记本的对应章节见 README 中的对照表）：",
        block,
        flags=re.M,
    )
    return block.replace("| book | sections |", "| 书 | 章节 |")


def questions_translation(spec: Declaration) -> dict[str, str]:
    """The "Questions?" cell's Chinese, from another notebook's catalog with the notebook's name changed."""
    url = reader_cells.repository_url()
    for stem, _ in course_rows():
        if stem == spec.stem:
            continue
        catalog = translations.read_catalog(translations.NOTEBOOK_LOCALE / f"{stem}.po")
        message = catalog.get(reader_cells.questions_source(stem, url))
        if message is not None and message.string and not message.fuzzy:
            return {reader_cells.questions_source(spec.stem, url): message.string.replace(stem, spec.stem)}
    return {}


# ---------------------------------------------------------------- navigation


def core_after(stem: str, rows: list[tuple[str, bool]]) -> str | None:
    """The first core notebook after `stem` in course order, or None."""
    stems = [s for s, _ in rows]
    return next((s for s, optional in rows[stems.index(stem) + 1 :] if not optional), None)


def closing_lines(spec: Declaration, rows: list[tuple[str, bool]]) -> tuple[str, str]:
    """The new notebook's last line, English and Chinese: the next core notebook and the map, or the end."""
    following = core_after(spec.stem, rows)
    if following is None:
        return END_EN, END_ZH
    title_en, title_zh = titles_of(following)
    return (
        f"Next: **[{title_en}]({following}.ipynb)** · {MAP_LINK_EN}.",
        f"下一节：**[{title_zh}]({following}.ipynb)** · {MAP_LINK_ZH}。",
    )


def titles_of(stem: str) -> tuple[str, str]:
    """A notebook's link text in each language, as the course map names it."""
    english = map_cell_text()
    chinese = catalog_string(MAP_STEM, english)
    found = [re.search(rf"\[([^\]]+)\]\({stem}\.ipynb\)", text) for text in (english, chinese)]
    return tuple(match[1] if match else stem for match in found)


def relink_predecessors(spec: Declaration, rows: list[tuple[str, bool]]) -> list[str]:
    """Point the last line of every notebook whose next core notebook is now the new one at it."""
    if spec.optional:
        return []
    stems = [s for s, _ in rows]
    changed = []
    for stem in stems[: stems.index(spec.stem)]:
        if core_after(stem, rows) == spec.stem and relink(stem, spec):
            changed.append(stem)
    return changed


def relink(stem: str, spec: Declaration) -> bool:
    """Rewrite `stem`'s last line to lead to `spec`, keeping a link to an optional notebook it led to."""
    path = NOTEBOOKS / f"{stem}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    cell = notebook.cells[-1]
    english = cell.source.rstrip("\n").splitlines()
    if spec.link() in english[-1]:
        return False
    chinese = catalog_string(stem, cell.source).rstrip("\n").splitlines()
    old_en, old_zh = LINK.search(english[-1]), LINK.search(chinese[-1])
    new_en = f"Next: **{spec.link()}**"
    new_zh = f"下一节：**{spec.link(zh=True)}**"
    if (
        old_en
        and old_en[2] not in (f"{spec.stem}.ipynb", f"{MAP_STEM}.ipynb")
        and english[-1].startswith("Next")
    ):
        detour = old_en[2].removesuffix(".ipynb")
        if detour < spec.stem:  # an optional notebook between: still offered
            new_en += f" · before it, optionally: [{old_en[1]}]({old_en[2]})"
            new_zh += f" · 在此之前可选读：[{old_zh[1] if old_zh else old_en[1]}]({old_en[2]})"
    english[-1], chinese[-1] = f"{new_en} · {MAP_LINK_EN}.", f"{new_zh} · {MAP_LINK_ZH}。"
    retranslate(stem, cell.source, "\n".join(english), "\n".join(chinese))
    cell.source = "\n".join(english)
    nbformat.write(notebook, path)
    return True


# ---------------------------------------------------------------- catalogs of existing notebooks


def catalog_string(stem: str, english: str) -> str:
    """The Chinese of one of `stem`'s cells; stop if it is missing (translate that first)."""
    message = translations.read_catalog(translations.NOTEBOOK_LOCALE / f"{stem}.po").get(english)
    if message is None or not message.string:
        raise SystemExit(
            f"notebooks/locale/zh_CN/{stem}.po: the cell {english[:60]!r}... has no translation; "
            "run tools/translations.py extract and translate it first"
        )
    return message.string


def retranslate(stem: str, old: str, english: str, chinese: str) -> None:
    """Replace the catalog entry of a cell whose English changes from `old` to `english` by `chinese`."""
    path = translations.NOTEBOOK_LOCALE / f"{stem}.po"
    catalog = translations.read_catalog(path)
    message = catalog.get(old)
    locations, comments = (message.locations, message.auto_comments) if message else ([], [])
    if message is not None:
        catalog.delete(old)
    catalog.add(english, chinese, locations, auto_comments=comments)
    translations.write_catalog(catalog, path)


# ---------------------------------------------------------------- the course map and the study times


def map_notebook():
    """00_start_here, read."""
    return nbformat.read(NOTEBOOKS / f"{MAP_STEM}.ipynb", as_version=4)


def map_cell_index(notebook) -> int:
    """The index of the course map's table cell (the one with the study-time total)."""
    return next(
        i
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "markdown" and study_time.TOTAL.search(c.source)
    )


def map_cell_text() -> str:
    """The course map cell's English."""
    notebook = map_notebook()
    return notebook.cells[map_cell_index(notebook)].source


def with_row(table: str, row: str, stem: str, stems: list[str]) -> str:
    """`table` (Markdown with one row per notebook link) with `row` after the row of the notebook before."""
    if f"]({stem}.ipynb)" in table:
        return table
    lines = table.split("\n")
    earlier = [
        i
        for i, line in enumerate(lines)
        for s in stems[: stems.index(stem)]
        if line.startswith("| [") and f"]({s}.ipynb)" in line
    ]
    lines.insert(max(earlier) + 1, row)
    return "\n".join(lines)


def zh_map_time(entry) -> str:
    """study_time.map_time in the Chinese map's words."""
    core, optional = entry.core.minutes(), entry.optional.minutes()
    if core == 0:
        return f"选读，{study_time.hours(optional)}"
    return study_time.hours(core) + (f" + 选读 {round(optional)} min" if round(optional) else "")


def zh_times(text: str, entries) -> str:
    """The Chinese map `text` with every notebook's time and the totals recomputed."""
    by_name = {e.name: e for e in entries}
    text = study_time.MAP_ROW.sub(
        lambda m: m[1] + zh_map_time(by_name[m[2]]) + m[4] if m[2] in by_name else m[0], text
    )
    core, optional = study_time.totals(entries)
    return ZH_TOTAL.sub(
        f"核心路径共 {study_time.hours(core)}，选读部分另需 {study_time.hours(optional)}", text
    )


def update_map(spec: Declaration | None, stems: list[str]) -> bool:
    """Add the notebook's row to the course map (both languages), then write the study times into both."""
    notebook = map_notebook()
    index = map_cell_index(notebook)
    old_en = notebook.cells[index].source
    old_zh = catalog_string(MAP_STEM, old_en)
    new_en, new_zh = old_en, old_zh
    if spec is not None and spec.title:
        mark_en, mark_zh = (" *(optional)*", " *（选读）*") if spec.optional else ("", "")
        new_en = with_row(old_en, f"| {spec.link()}{mark_en} | {spec.idea} | 0 h |", spec.stem, stems)
        new_zh = with_row(
            old_zh, f"| {spec.link(zh=True)}{mark_zh} | {spec.idea_zh} | 0 h |", spec.stem, stems
        )
        notebook.cells[index].source = new_en
        nbformat.write(notebook, NOTEBOOKS / f"{MAP_STEM}.ipynb")
    entries = study_time.course_times(NOTEBOOKS)
    study_time.write_times(entries)
    new_en = map_cell_text()
    new_zh = zh_times(new_zh, entries)
    if (new_en, new_zh) == (old_en, old_zh):
        return False
    retranslate(MAP_STEM, old_en, new_en, new_zh)
    return True


# ---------------------------------------------------------------- README, site, book sections, solutions


def badges(relative: str, zh: bool) -> str:
    """The Colab and Kaggle badges of the notebook at `relative` (README's form, the notebooks' own)."""
    return reader_cells.launch_badges(relative, colab_cell.repository_url(), zh)


def add_readme_rows(spec: Declaration, stems: list[str]) -> bool:
    """README's English and Chinese course tables: one row each, after the notebook before it."""
    path = ROOT / "README.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    if any(line.startswith(f"| `{spec.stem}`") for line in lines):
        return False
    earlier = stems[: stems.index(spec.stem)]
    english = (
        f"| `{spec.stem}`{' *(optional)*' if spec.optional else ''} "
        f"{badges(f'notebooks/{spec.stem}.ipynb', False)} | {spec.idea} |"
    )
    chinese = (
        f"| [`zh/{spec.stem}`](notebooks/zh/{spec.stem}.ipynb) "
        f"{badges(f'notebooks/zh/{spec.stem}.ipynb', True)} | "
        f"{'*（选学）* ' if spec.optional else ''}{spec.idea_zh} |"
    )
    for prefixes, row in (
        ([f"| `{s}`" for s in earlier], english),
        ([f"| [`zh/{s}`]" for s in earlier], chinese),
    ):
        last = max(i for i, line in enumerate(lines) if line.startswith(tuple(prefixes)) and "badge" in line)
        lines.insert(last + 1, row)
    path.write_text("\n".join(lines), encoding="utf-8")
    return True


def add_site_page(spec: Declaration, stems: list[str]) -> bool:
    """site/index.md's toctree: the notebook's page after the one before it."""
    path = ROOT / "site" / "index.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    if f"notebooks/{spec.stem}" in lines:
        return False
    earlier = [
        i
        for i, line in enumerate(lines)
        if line in {f"notebooks/{s}" for s in stems[: stems.index(spec.stem)]}
    ]
    lines.insert(max(earlier) + 1, f"notebooks/{spec.stem}")
    path.write_text("\n".join(lines), encoding="utf-8")
    return True


def add_book_sections(spec: Declaration, sections: dict[str, list[str]]) -> bool:
    """docs/book_sections.toml: the books' sections the notebook covers (empty lists until known)."""
    path = reader_cells.SECTIONS_FILE
    if spec.stem in reader_cells.load_sections().get("notebooks", {}):
        return False
    entry = "".join(f"{book} = {sections.get(book, [])!r}\n".replace("'", '"') for book in reader_cells.BOOKS)
    text = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f"{text}\n\n[notebooks.{spec.stem}]\n{entry}", encoding="utf-8")
    tomllib.loads(path.read_text(encoding="utf-8"))  # stop here, not in reader_cells, if it broke
    return True


def add_solutions(spec: Declaration) -> bool:
    """solutions/notebook_NN.py, for a core notebook with exercises: ANSWERS and the coding functions."""
    path = ROOT / "solutions" / f"notebook_{spec.number}.py"
    if spec.optional or not spec.exercises or path.exists():
        return False
    path.write_text(
        f'"""Solutions to the exercises of notebook {spec.number} ({spec.title or spec.stem})."""\n\n'
        "# The answer to every question, by the name of its check, as a student would type it;\n"
        "# then one function per coding exercise, with the name and signature of the stub.\n"
        "ANSWERS = {}\n",
        encoding="utf-8",
    )
    return True
