"""A real screen reader, Orca, reads notebook 01's page on the course site, and what it says is checked.

Chromium runs headed on a private Xvfb display with its accessibility tree on; Orca (GNOME's
screen reader, as Debian ships it) reads it over AT-SPI, and every utterance it sends to
speech-dispatcher is written to a transcript instead of a sound card (tests/browser/screen_reader.py).
Keys go to Orca as a student's would, through X (xdotool): `h` (next heading), `g` (next
graphic) and Tab. The test checks that Orca announces the page, speaks its level-1 heading and
the first section heading with their levels, speaks the first figure's alt text whole, and, when
Tab lands on a formula, speaks MathJax's speech label for it (not nothing, not the TeX).
Expected texts are read from the page itself, so the test follows the course's wording.

The transcript goes to test-artifacts/screen_reader_speech.txt (and Orca's debug log beside it when
the test fails). Skips (saying why) without a built site, Chromium, Playwright or the programs Orca
needs (apt-get install orca xvfb speech-dispatcher xdotool), unless D2LMINI_REQUIRE_BROWSER=1.
"""

import re
import shutil
from pathlib import Path

import pytest
from browser.jupyterlab import CHROMIUM_ARGS, require_browser
from browser.screen_reader import SCREEN, normalized, require_screen_reader, running_orca
from browser.site import find_site, serving

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
PAGE = "notebooks/01_hidden_state.html"

# What the page itself says Orca should speak: the level-1 heading and the next heading of the
# article (their permalink "#" left out), the first figure's alt, and the first formula in the article
# with a speech label, with the focusable element before it (Tab from there lands on the formula).
EXPECTED_JS = """() => {
  const article = document.querySelector('article');
  const text = h => [...h.childNodes].filter(n => !(n.classList && n.classList.contains('headerlink')))
                                      .map(n => n.textContent).join('').trim();
  const headings = [...article.querySelectorAll('h1, h2, h3')];
  const h1 = headings.findIndex(h => h.tagName === 'H1');
  const image = [...article.querySelectorAll('img')].find(img => img.alt.trim());
  const tabbable = [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
                     .filter(e => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length);
  const formula = tabbable.findIndex(e => article.contains(e) && e.matches('mjx-container[aria-label]'));
  if (formula > 0) tabbable[formula - 1].setAttribute('data-before-formula', '');
  const next = headings[h1 + 1];
  return {h1: text(headings[h1]), next: text(next), nextLevel: Number(next.tagName[1]),
          alt: image && image.alt, imageAfterNext: image && !!(next.compareDocumentPosition(image) & 4),
          formula: formula > 0 ? tabbable[formula].getAttribute('aria-label') : null};
}"""
SPEECH_LABELS = """() => [document.querySelectorAll('article mjx-container').length,
                         document.querySelectorAll('article mjx-container[aria-label]').length]"""


def spoken_form(text: str) -> str:
    """`text` as Orca speaks it: whitespace collapsed, "·" read out as Orca does."""
    return normalized(text.replace("·", " middle dot "))


def press_until(reader, key: str, wanted: str, presses: int = 6) -> str:
    """Press `key` until Orca says `wanted` (at most `presses` times); return what it said meanwhile."""
    since = reader.mark()
    for _ in range(presses):
        reader.press(key)
        try:
            return reader.wait_for(wanted, since, timeout=4)
        except AssertionError:
            continue
    raise AssertionError(f"{presses} presses of {key!r}: Orca never said {wanted!r}; "
                         f"it said: {reader.heard(since)!r}")


def test_orca_reads_notebook_01_headings_figure_and_formula(tmp_path):
    folder = find_site()
    sync_playwright, chromium = require_browser()
    require_screen_reader()
    passed, title = False, "?"
    with serving(folder) as base, running_orca(tmp_path) as reader, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), headless=False, env=reader.env,
            args=[*CHROMIUM_ARGS, "--force-renderer-accessibility", "--window-position=0,0",
                  f"--window-size={SCREEN[0]},{SCREEN[1]}"])
        try:
            page = browser.new_page(no_viewport=True)
            loading = reader.mark()
            page.goto(base + PAGE)  # its formulas were typeset with their speech when the site was built
            formulas, labelled = page.evaluate(SPEECH_LABELS)
            assert formulas and labelled == formulas, \
                f"{formulas - labelled} of {formulas} formulas have no speech label (MathJax's aria-label)"
            expected = page.evaluate(EXPECTED_JS)
            title = page.title()

            # Orca announces the page when it has loaded, with its summary.
            summary = reader.wait_for("Page has", loading, timeout=20)
            assert "Finished loading" in summary and re.search(r"Page has .*\d+ headings", summary), summary
            reader.quiet(0.5)

            # h: next heading, as Orca's browse mode has it. The theme's sidebar headings come first.
            assert expected["h1"] and expected["next"], expected
            press_until(reader, "h", f"{spoken_form(expected['h1'])} heading level 1")
            next_heading = f"{spoken_form(expected['next'])} heading level {expected['nextLevel']}"
            press_until(reader, "h", next_heading, presses=1)

            # g: next graphic. The first figure of the article is after that heading; its alt is read whole.
            assert expected["alt"] and expected["imageAfterNext"], expected
            since = reader.mark()
            reader.press("g")
            heard = reader.wait_for(f"{expected['alt']} image", since, timeout=8)
            words = len(normalized(expected["alt"]).split())
            assert words >= 8, f"Orca read the first figure as {heard!r}: {words} words describe nothing"

            # Tab onto a formula: Orca speaks MathJax's speech label for it. The Tab starts from the
            # focusable element just before the formula (focused by script: from the top, the theme's
            # 40-odd links come first); Orca ignores a focus change a script makes right after its own
            # navigation, so the formula itself is reached by a real key press.
            assert expected["formula"], "no formula in the article has a speech label (aria-label)"
            page.focus("[data-before-formula]")
            reader.quiet(0.5)
            since = reader.mark()
            reader.press("Tab")
            heard = reader.wait_for(expected["formula"], since, timeout=8)
            assert "\\" not in heard, f"Orca read TeX source: {heard!r}"
            passed = True
        finally:
            browser.close()
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "screen_reader_speech.txt").write_text(
                f"Orca reading {PAGE} ({title}), one utterance a line:\n"
                + "\n".join(reader.utterances()) + "\n", "utf-8")
            if not passed and reader.debug_file.exists():
                shutil.copy(reader.debug_file, ARTIFACTS / "screen_reader_orca_debug.txt")
