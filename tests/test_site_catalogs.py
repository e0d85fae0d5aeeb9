"""The course site's Chinese catalogs (site/locale/zh_CN/LC_MESSAGES) are complete and up to date.

The Chinese site's own pages are site/index.md and docs/instructors.md translated through one gettext
catalog each (tools/build_site.py --update-catalogs makes and updates them with Sphinx's gettext
builder and sphinx-intl). Here, without Sphinx: every entry is translated and none is fuzzy; every
message the English pages have today (a paragraph, a list item, a heading, a table cell, a toctree
caption: what Sphinx's gettext builder extracts from MyST Markdown) has its entry and no entry is
left that the pages no longer have; and each translation keeps its English's code spans, link
targets, addresses, numbers and emphasis.
"""

import re
from pathlib import Path

import pytest
from babel.messages import pofile

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "site" / "locale" / "zh_CN" / "LC_MESSAGES"
PAGES = {"index": ROOT / "site" / "index.md", "instructors": ROOT / "docs" / "instructors.md"}
UPDATE = "python tools/build_site.py --update-catalogs (in the site's venv), then translate"

CODE = re.compile(r"`[^`]+`")
LINK_TARGET = re.compile(r"\]\(([^)\s]*)\)")
ADDRESS = re.compile(r"https?://[^\s)）]+")
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
TABLE_RULE = re.compile(r"^[\s|:-]+$")
LIST_ITEM = re.compile(r"^[-*+] +")


def english_messages(markdown: str) -> list[str]:
    """The messages Sphinx's gettext builder takes from a MyST page, in order: each paragraph and list
    item with its lines joined by one space, each heading, each table cell, each toctree caption; not
    code blocks, directives' other content or HTML comments."""
    messages, lines, fence = [], [], None

    def end_block():
        if lines:
            messages.append(" ".join(lines))
            lines.clear()

    for line in markdown.splitlines():
        text = line.strip()
        if fence is not None:
            if text == fence:
                fence = None
            elif text.startswith(":caption:"):
                messages.append(text.removeprefix(":caption:").strip())
            continue
        if text.startswith(("```", "~~~")):
            end_block()
            fence = re.match(r"[`~]+", text).group(0)
        elif not text or text.startswith("<!--"):
            end_block()
        elif text.startswith("#"):
            end_block()
            messages.append(text.lstrip("#").strip())
        elif text.startswith("|"):
            end_block()
            if not TABLE_RULE.match(text):
                messages += [cell.strip() for cell in text.strip("|").split("|")]
        elif LIST_ITEM.match(text):
            end_block()
            lines.append(LIST_ITEM.sub("", text))
        else:
            lines.append(text)
    end_block()
    return [message for message in messages if message]


def read(page: str):
    with (CATALOGS / f"{page}.po").open("rb") as handle:
        return pofile.read_po(handle, abort_invalid=True)


def entries(page: str) -> list:
    return [message for message in read(page) if message.id]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_entry_is_translated_and_none_is_fuzzy(page):
    catalog = read(page)
    assert not catalog.fuzzy, f"{page}.po: its header is marked fuzzy"
    untranslated = [message.id[:70] for message in entries(page) if not message.string]
    fuzzy = [message.id[:70] for message in entries(page) if message.fuzzy]
    assert not untranslated, f"{page}.po: {len(untranslated)} untranslated: {untranslated[:5]}"
    assert not fuzzy, f"{page}.po: {len(fuzzy)} fuzzy (the English changed; check and clear): {fuzzy[:5]}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_catalog_has_an_entry_for_every_english_message_and_no_other(page):
    english = english_messages(PAGES[page].read_text("utf-8"))
    held = {message.id for message in entries(page)}
    missing = [message[:90] for message in english if message not in held]
    stale = [message[:90] for message in held if message not in set(english)]
    assert not missing, f"{page}.po has no entry for {len(missing)} English messages: {missing[:5]}; {UPDATE}"
    assert not stale, f"{page}.po has {len(stale)} entries its page no longer has: {stale[:5]}; {UPDATE}"


def test_a_new_english_paragraph_has_no_entry_until_the_catalog_is_updated():
    """The check above fails on a paragraph added to instructors.md and passes on the page as it is."""
    page = PAGES["instructors"].read_text("utf-8")
    held = {message.id for message in entries("instructors")}
    assert set(english_messages(page)) <= held
    changed = page.replace("\n## 1. Release\n", "\n## 1. Release\n\nA new paragraph,\nover two lines.\n", 1)
    assert set(english_messages(changed)) - held == {"A new paragraph, over two lines."}


# Sphinx reads each translation as Markdown on its own and silently keeps the English where it reads as
# another kind of block than the English's: "1. 发布" for the heading "1. Release" is a list ("1\\. 发布").
BLOCK_START = re.compile(r"^(?:\d+[.)]\s|[-*+]\s|#|>|\||```)")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_translation_reads_as_another_kind_of_block(page):
    wrong = [message.string[:60] for message in entries(page) if BLOCK_START.match(message.string)]
    assert not wrong, f"{page}.po: translations Sphinx would read as a list, heading or quote: {wrong}"


@pytest.mark.parametrize(("markdown", "messages"), [
    ("# Title\n\nOne paragraph\non two lines.\n", ["Title", "One paragraph on two lines."]),
    ("- an item\n  continued\n- another\n", ["an item continued", "another"]),
    ("| a | `b` |\n|---|---|\n| 1 | two |\n", ["a", "`b`", "1", "two"]),
    ("```bash\nls -l\n```\n\n<!-- note -->\n", []),
    ("```{toctree}\n:caption: The course\n:maxdepth: 1\n\nnotebooks/00\n```\n", ["The course"]),
])
def test_the_messages_of_a_page_are_what_sphinx_extracts(markdown, messages):
    assert english_messages(markdown) == messages


def numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in NUMBER.findall(CODE.sub(" ", text))}


def kept(english: str, chinese: str) -> list[str]:
    """What of `english` (code spans, link targets, addresses, numbers, bold and italic marks)
    `chinese` lost."""
    lost = []
    for name, pattern in (("code", CODE), ("link target", LINK_TARGET), ("address", ADDRESS)):
        gone = set(pattern.findall(english)) - set(pattern.findall(chinese))
        lost += [f"{name} {span}" for span in sorted(gone)]
    lost += [f"number {number}" for number in sorted(numbers(english) - numbers(chinese))]
    plain = [CODE.sub(" ", text) for text in (english, chinese)]
    if plain[0].count("**") != plain[1].count("**") or plain[0].count("*") != plain[1].count("*"):
        lost.append("emphasis (* and ** marks)")
    return lost


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_translation_keeps_the_code_links_numbers_and_emphasis_of_its_english(page):
    changed = {message.id[:60]: lost for message in entries(page)
               if message.string and (lost := kept(message.id, message.string))}
    assert not changed, "; ".join(f"{page}.po {english!r}: {lost}" for english, lost in changed.items())


def test_a_translation_that_drops_a_code_span_or_a_number_is_caught():
    english = "Run `python -m d2lmini.grading` with **2** jobs, about 300–500 MB; see [x](../a.md)."
    faithful = "用 **2** 个作业运行 `python -m d2lmini.grading`，约 300–500 MB；见 [x](../a.md)。"
    assert kept(english, faithful) == []
    assert kept(english, "用 **2** 个作业运行评分器，约 300 MB；见 [x](../b.md)。") == [
        "code `python -m d2lmini.grading`", "link target ../a.md", "number 500"]


GLOSSARY = ROOT / "docs" / "glossary.md"
# An English glossary term a site page uses in another sense, and why its 中文 is not used there.
OTHER_SENSES = {"token": "instructors.md's tokens are Python's (tokenize): 词法单元, not a text's 词元"}


def glossary() -> list[tuple[str, str]]:
    rows = [line.strip().strip("|").split("|") for line in GLOSSARY.read_text("utf-8").splitlines()
            if line.startswith("| ") and not line.startswith("| English")]
    return [(re.sub(r"\s*\(.*\)$", "", row[0].strip()), row[1].strip()) for row in rows if len(row) >= 2]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_glossary_term_of_the_english_is_rendered_with_its_chinese(page):
    missing = []
    for message in entries(page):
        prose = CODE.sub(" ", LINK_TARGET.sub("]", message.id))
        for english, chinese in glossary():
            if english in OTHER_SENSES:
                continue
            if re.search(rf"(?<![\w-]){re.escape(english)}s?(?![\w-])", prose, re.IGNORECASE):
                renderings = {chinese, *re.split(r"[（）()]", chinese)} - {""}
                if not any(rendering.strip() in message.string for rendering in renderings):
                    missing.append(f"{english!r} -> {chinese} in {message.id[:50]!r}")
    assert not missing, f"{page}.po: " + "; ".join(missing)
