"""Drive every panel by keyboard alone, from a table (issue 29; used by test_browser_notebooks.py).

`PANELS` maps a notebook's number to its panels' steps (the `keyboard` of its row in
tests/course.py), each (role, accessible name, keys): the control is reached with Tab from the step
before (the first by Shift+Tab from the second, so it is reachable too), the keys are pressed
(arrows on a slider, ArrowDown in a dropdown, Space on a checkbox, Enter on a button or an accordion
header, text then Enter in a text box), and then: the panel's live region (role=status) says
something new (an accordion header: it is expanded), and no live region says more than "started",
"done" and one progress line per 10 s (`most_announcements`); the control still has the focus when
the kernel is idle again (nothing took it to the page), and the notebook's active cell did not move
(JupyterLab's shortcuts did not get the key).
A notebook without an entry has no panel. `NEXT_PANEL` between steps starts the steps of a further
panel of the same notebook (a later cell): its first control is focused directly, as a student
clicking into it would, and the rest are reached with Tab from there.
In the Chinese edition a step's control is found by the Chinese translations (the package's zh_CN
catalogs) of every message that holds its English name; its role tells them apart.
"""

import functools
import re
import sys
import time
from collections import Counter
from pathlib import Path

from course import COURSE, NEXT_PANEL

from browser.panels import announcements, count_announcements, most_announcements

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import translations  # noqa: E402  (tools/ is not a package)

# (role, accessible name as the browser computes it, keys: a list of key names; "type:TEXT" types
# and presses Enter; "leave:TEXT" types, then Tab sends it (a multi-line box) and the focus moves on),
# and optionally False for a setting the panel uses only on a later button (nothing announced yet).
PANELS: dict[str, tuple[tuple, ...]] = {notebook.number: notebook.keyboard
                                        for notebook in COURSE if notebook.keyboard}
# The notebooks of the Chinese edition whose panels the browser test drives by keyboard, through their
# Chinese names: .ci/run leaves their English runs out, so each notebook runs once in JupyterLab. 08's
# lab is driven by keyboard in English by the lab's own browser tests (test_browser_lab,
# test_browser_access).
CHINESE_KEYBOARD = {"03_one_hot"}

KERNEL_IDLE = """() => [...document.querySelectorAll('.jp-StatusBar-TextItem, .jp-StatusBar-Item')]
  .some(e => /\\| Idle/.test(e.textContent))"""
ACTIVE_CELL = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
  .findIndex(c => c.classList.contains('jp-mod-active'))"""
LIVE_TEXT = """(output) => [...output.querySelectorAll('[role=status]')].map(e => e.textContent.trim()
  + [...e.querySelectorAll('img')].map(i => i.alt).join(' ')).join(' | ')"""


def _focused(locator) -> bool:
    return locator.evaluate("e => e === document.activeElement || e.contains(document.activeElement)")


def _tab_to(page, control, backwards: bool = False, limit: int = 12) -> int:
    """Press Tab (Shift+Tab) until `control` has the focus; return the presses, or -1 if never.

    A control the table lists after one that comes later in the page is reached going back.
    """
    if _focused(control):
        return 0
    for presses in range(1, limit + 1):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        if _focused(control):
            return presses
    if not backwards:
        for presses in range(1, 2 * limit + 1):
            page.keyboard.press("Shift+Tab")
            if _focused(control):
                return presses
    return -1


def _within(page, seconds: float, holds) -> bool:
    """True when `holds()` is true now or becomes true within `seconds` (checked every 250 ms)."""
    for _ in range(int(seconds / 0.25)):
        if holds():
            return True
        page.wait_for_timeout(250)
    return holds()


def _focus_comes_back(page, control, seconds: float = 5.0) -> bool:
    """True when `control` has the focus, or gets it back within `seconds`.

    The panel gives the focus back from the browser's event loop after the kernel re-enables the
    control, which on a loaded machine can land after the kernel reports idle.
    """
    return _within(page, seconds, lambda: _focused(control))


def _wait_for_news(page, output, before: str, seconds: float = 30.0) -> None:
    """Wait until the live region says something other than `before`, or `seconds` pass.

    A fixed wait is not enough on a loaded machine: the key press may reach the kernel only after
    the kernel was seen idle, and the panel would be judged silent before it had been asked.
    """
    _within(page, seconds, lambda: output.evaluate(LIVE_TEXT) != before)


def _wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(KERNEL_IDLE, timeout=120_000, polling=250)
    page.wait_for_timeout(700)  # the widgets' last messages, then the focus given back


@functools.cache
def _chinese_messages() -> dict[str, str]:
    """Every message of the package's Chinese catalogs (tools/translations.py's): English -> Chinese."""
    messages = {}
    for path in sorted(translations.PACKAGE_LOCALE.glob("*.po")):
        messages |= {m.id: m.string for m in translations.read_catalog(path)
                     if isinstance(m.id, str) and m.id and m.string}
    return messages


def accessible_name(name: str, language: str = "en") -> re.Pattern | None:
    """What the name of a step's control holds in `language` ("en" or "zh_CN"): `name` itself in
    English, else the translation of any message that holds `name` (None where no message does)."""
    if language == "en":
        return re.compile(re.escape(name))
    found = [chinese for english, chinese in _chinese_messages().items() if name in english]
    return re.compile("|".join(re.escape(text) for text in found)) if found else None


def drive_panels(page, number: str, language: str = "en") -> tuple[list[str], list[str]]:
    """Operate the panels of notebook `number` (its edition in `language`) by keyboard; return
    (problems, what was done)."""
    steps, firsts = [], set()
    for step in PANELS.get(number, []):
        if step == NEXT_PANEL or not steps:
            firsts.add(len(steps))
        if step != NEXT_PANEL:
            steps.append(step)
    problems, done = [], []
    names = [accessible_name(step[1], language) for step in steps]
    problems += [f'{step[0]} "{step[1]}": no {language} message holds this name'
                 for step, name in zip(steps, names, strict=True) if name is None]
    if problems:
        return problems, done
    controls = [page.get_by_role(step[0], name=name).first for step, name in zip(steps, names, strict=True)]
    for index, (step, control) in enumerate(zip(steps, controls, strict=True)):
        role, name, keys = step[:3]
        announces = step[3] if len(step) > 3 else True
        where = f'{role} "{name}"'
        if control.count() == 0:
            problems.append(f"no {where} in the page (its accessible name changed?)")
            continue
        if index in firsts:
            control.scroll_into_view_if_needed()
            control.focus()
            if index == 0 and len(steps) > 1 and not (
                    _tab_to(page, controls[1]) > 0 and _tab_to(page, control, True) > 0):
                problems.append(f"{where}: not reachable with Shift+Tab from the next control")
        elif _tab_to(page, control) < 0:  # 0: a "leave:" step before already moved the focus here
            problems.append(f"{where}: Tab from the previous control never reaches it")
            continue
        output = control.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')]").first
        before, cell = output.evaluate(LIVE_TEXT), page.evaluate(ACTIVE_CELL)
        count_announcements(page)
        started = time.monotonic()
        if isinstance(keys, str):
            action, text = keys.split(":", 1)
            page.keyboard.type(text)
            page.keyboard.press("Enter" if action == "type" else "Tab")
        else:
            for key in keys:
                page.keyboard.press(key)
        header = control.get_attribute("aria-expanded") is not None  # an accordion's: nothing announced
        if announces and not header:
            _wait_for_news(page, output, before)
        _wait_idle(page)
        after = output.evaluate(LIVE_TEXT)
        expanded = control.get_attribute("aria-expanded")
        if expanded is not None:  # an accordion header: it opens, nothing is announced
            if expanded != "true":
                problems.append(f"{where}: {keys} did not open it")
        elif announces and after == before:
            problems.append(f"{where}: the live region did not announce anything new after {keys}")
        said = announcements(page)
        most = most_announcements(time.monotonic() - started)
        if any(count > most for count in Counter(region for _, region, _ in said).values()):
            problems.append(f"{where}: more than {most} announcements by one live region after {keys}: "
                            f"{[text for *_, text in said]}")
        moves_on = isinstance(keys, str) and keys.startswith("leave:")
        if not moves_on and not _focus_comes_back(page, control):
            active = page.evaluate("() => document.activeElement?.outerHTML.slice(0, 80)")
            problems.append(f"{where}: lost the focus after {keys} (now on {active})")
        if page.evaluate(ACTIVE_CELL) != cell:
            problems.append(f"{where}: {keys} moved JupyterLab's active cell")
        done.append(f"{where}: {keys} -> {after[:100]!r}")
    return problems, done
