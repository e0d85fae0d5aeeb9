"""Notebook 04's text generator, typed into as a student types: every character must stay in the box.

`typed_prefix_problems(page, screenshot)` works on a page where notebook 04 has run: it clicks
into the generator's prefix box, clears it, types a 25-character prefix at 100 ms per key,
presses Enter, and returns what went wrong: the box lost characters (a panel that regenerated
and disabled its controls on every keystroke took the focus away: the box kept "th" or
nothing), the generated text does not start with the prefix, or the box is left disabled. A
screenshot of the panel goes to `screenshot`. tests/test_browser_notebooks.py calls it in
notebook 04's case, so the notebook runs once for both.
"""

from pathlib import Path

PREFIX = "the time traveller saw it"  # only characters of the bundled corpus's vocabulary
# The generated text: the only widget HTML that wraps text in the panel's pre-wrap style.
GENERATED = ".jp-OutputArea-output .widget-html div[style*='pre-wrap']"


def typed_prefix_problems(page, screenshot: Path) -> list[str]:
    """Type PREFIX into notebook 04's prefix box and press Enter; what went wrong, if anything."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # the caller checked it is there

    shown = page.locator(GENERATED)
    shown.wait_for(state="attached", timeout=60_000)
    labelled = page.locator("label", has_text="prefix")
    box = page.locator(".widget-text", has=labelled).locator("input")
    box.scroll_into_view_if_needed()
    box.click()
    box.fill("")
    box.press_sequentially(PREFIX, delay=100)
    box.press("Enter")
    try:
        page.wait_for_function(
            "([selector, prefix]) => (document.querySelector(selector)?.innerText || '')"
            ".startsWith(prefix)", arg=[GENERATED, PREFIX], timeout=60_000)
    except PlaywrightTimeout:
        pass  # the checks below say what went wrong
    page.wait_for_timeout(500)  # anything still queued by the keystrokes has arrived
    problems = []
    kept = box.input_value()
    if kept != PREFIX:
        problems.append(f"typed {PREFIX!r} at 100 ms per key into the prefix box; it kept {kept!r}")
    text = shown.inner_text()
    if not (text.startswith(PREFIX) and len(text) > len(PREFIX)):
        problems.append(f"after Enter the generated text does not continue the prefix: {text[:60]!r}")
    if not box.is_enabled():
        problems.append("the prefix box was left disabled")
    page.locator(".widget-vbox", has=box).last.screenshot(path=str(screenshot))
    return problems
