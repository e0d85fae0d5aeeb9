"""Checks of the panels in a page beyond axe (issue 35), for every notebook and for the lab alone.

Each script takes `root`, a CSS selector of the panels to check: `PANELS_ROOT` (every panel's
output area: a11y.js marks it `.d2l-reflow`) or `.perplexity-lab` (the lab). Each returns a list of
problems in words; an empty list passes.

- `count_announcements(page, root)` starts counting what each live region says anew;
  `announcements(page)` returns [(ms, region index, text)] since then; `most_announcements(seconds)`
  is how often one region may speak during an action that long;
- `reflow_problems(page, root)`: at the current window size, controls outside the window and boxes
  (not figures or data tables) that scroll sideways (WCAG 1.4.10);
- `spacing_problems(page, root)`: with WCAG 1.4.12's text spacing applied, labels or buttons cut off,
  and controls then outside the window (at any window size; `clear_text_spacing(page)` takes it away);
- `structure_problems(page, root)`: data tables without header cells, tooltips that read "null",
  panels with more than one live region (one a panel, the lab's too, so that a change is announced once),
  and live regions whose text runs two sentences together ("1 backGRU": no space at a <br> or </p>);
- `focus_problems(page, root)`: focusable controls whose look does not change when the keyboard
  focuses them (WCAG 2.4.7: a visible focus indicator), measured on screenshots with and without focus;
- `summary_problems(page, root)`: panels where a screen reader, reading in order, meets no text before
  the first control it can focus (nothing says what the panel is), or more than `MOST_WORDS_FIRST`.
"""

import io

from PIL import Image, ImageChops

PANELS_ROOT = ".d2l-reflow"
NARROW = {"width": 320, "height": 640}  # WCAG 1.4.10: 1280 px at 400 % zoom
# Words a screen reader may meet in a panel before its first control (the panel's summary: at most
# d2lmini.widgets.a11y.SUMMARY_MOST_WORDS, with a little room for a heading).
MOST_WORDS_FIRST = 35

COUNT_ANNOUNCEMENTS = """(root) => {
  (window.d2lObservers || []).forEach(observer => observer.disconnect());
  window.d2lObservers = [];
  const announced = window.d2lAnnounced = [];
  [...document.querySelectorAll(root + ' [aria-live]')].forEach((region, index) => {
    let said = region.textContent.trim();
    const observer = new MutationObserver(() => {
      const now = region.textContent.trim();
      if (now !== said) { said = now; announced.push([performance.now(), index, now.slice(0, 80)]); }
    });
    observer.observe(region, {subtree: true, childList: true, characterData: true});
    window.d2lObservers.push(observer);
  });
}"""

# WCAG 1.4.12's text spacing, as its bookmarklet applies it.
TEXT_SPACING = """() => {
  if (document.getElementById('d2l-text-spacing')) return;
  const style = document.createElement('style');
  style.id = 'd2l-text-spacing';
  style.textContent = `* { line-height: 1.5 !important; letter-spacing: 0.12em !important;
                           word-spacing: 0.16em !important; }
                       p { margin-bottom: 2em !important; }`;
  document.head.appendChild(style);
}"""

CLIPPED_CONTROLS = """(root) => [...document.querySelectorAll(
    ['button', 'select', 'input', '.slider-container'].map(s => root + ' ' + s).join(', '))]
  .filter(e => e.offsetParent !== null)
  .map(e => [e, e.getBoundingClientRect()])
  .filter(([e, r]) => r.left < -1 || r.right > window.innerWidth + 1)
  .map(([e, r]) => `${e.tagName.toLowerCase()} "${(e.getAttribute('aria-label') || e.textContent).trim()}"`
                   + ` spans ${Math.round(r.left)}..${Math.round(r.right)}`)"""

SIDEWAYS = """(root) => [...document.querySelectorAll(root + ', ' + root + ' *')]
  .filter(e => e.offsetParent !== null && !e.closest('table, img, .widget-image'))
  .filter(e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => {
    const edge = e.getBoundingClientRect().right;
    const wide = [...e.querySelectorAll('*')].filter(k => !k.parentElement.closest('table, img'))
      .map(k => [k, k.getBoundingClientRect().right - edge]).filter(([k, over]) => over > 1)
      .sort((a, b) => b[1] - a[1]).slice(0, 3)
      .map(([k, over]) => `${k.tagName.toLowerCase()}.${[...k.classList].join('.')}`
                          + ` ${Math.round(over)} px over`);
    return `${e.className || e.tagName}: ${e.scrollWidth} px in ${e.clientWidth} px (${wide.join(', ')})`;
  })"""

CUT_LABELS = """(root) => [...document.querySelectorAll(
    [' label', ' .widget-label', ' button'].map(s => root + s).join(', '))]
  .filter(e => e.offsetParent !== null)
  .filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
  .map(e => `"${e.textContent.trim()}"`)"""

TABLES_WITHOUT_HEADERS = """(root) => [...document.querySelectorAll(root + ' table')]
  .filter(t => t.offsetParent !== null && t.querySelectorAll('th').length === 0)
  .map(t => t.textContent.trim().slice(0, 60))"""

NULL_TOOLTIPS = """(root) => [...document.querySelectorAll(root + ' [title="null"]')]
  .map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.'))"""

# Per panel, the words a screen reader reading in order meets before the first control it can focus
# (text and images' alt in the order of the page, hidden parts skipped), or null if it has no control.
# A control's own label is not counted: it is read as part of that control, and says nothing of the panel.
WORDS_BEFORE_FIRST_CONTROL = r"""(root) => [...document.querySelectorAll(root)].map(panel => {
  const shown = e => e.checkVisibility() && !e.closest('[aria-hidden="true"]');
  const focusable = e => e.matches('button, input, select, textarea, a[href], [tabindex]')
    && e.tabIndex >= 0 && !e.disabled && shown(e);
  const split = text => (text || '').split(/\s+/).filter(w => w);
  const walker = document.createTreeWalker(panel, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  const words = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      const parent = node.parentElement;
      if (shown(parent) && !parent.closest('label, .widget-label')) words.push(...split(node.textContent));
    } else if (focusable(node)) {
      return words.join(' ');
    } else if (node.tagName === 'IMG' && shown(node)) {
      words.push(...split(node.getAttribute('alt')));
    }
  }
  return null;
})"""

LIVE_REGIONS = """(root) => [...document.querySelectorAll(root)]
  .map(panel => panel.querySelectorAll('[aria-live]').length)"""

# Live regions whose textContent (what an announcement is built from) runs two blocks' words together:
# its words differ from those of innerText, which puts a line break between paragraphs and at <br>.
RUN_TOGETHER = """(root) => [...document.querySelectorAll(root + ' [aria-live]')]
  .filter(e => e.checkVisibility())
  .map(e => [e.textContent.split(/\\s+/).filter(w => w), e.innerText.split(/\\s+/).filter(w => w)])
  .filter(([said, shown]) => said.join(' ') !== shown.join(' '))
  .map(([said, shown]) => said.filter(w => !shown.includes(w)).join(' ').slice(0, 80))"""


def most_announcements(seconds: float, progress_every: float = 10.0) -> int:
    """How often one live region may speak during an action that took `seconds` (issue 35: once per
    state change: started, done, and progress at most every `progress_every` seconds between)."""
    return 2 + int(seconds // progress_every)


def count_announcements(page, root: str = PANELS_ROOT) -> None:
    """Start counting the changes of what each live region under `root` says (what is announced)."""
    page.evaluate(COUNT_ANNOUNCEMENTS, root)


def announcements(page) -> list[tuple[float, int, str]]:
    """The announcements since `count_announcements`: (ms since the page opened, region, text)."""
    return [tuple(a) for a in page.evaluate("() => window.d2lAnnounced || []")]


def reflow_problems(page, root: str = PANELS_ROOT) -> list[str]:
    """Controls outside the window, and boxes other than figures and tables that scroll sideways."""
    return ([f"outside the window: {c}" for c in page.evaluate(CLIPPED_CONTROLS, root)]
            + [f"scrolls sideways: {s}" for s in page.evaluate(SIDEWAYS, root)])


def spacing_problems(page, root: str = PANELS_ROOT) -> list[str]:
    """Apply WCAG 1.4.12's text spacing; return the labels cut off and the controls pushed out."""
    page.evaluate(TEXT_SPACING)
    page.wait_for_timeout(500)
    return ([f"cut off with text spacing: {c}" for c in page.evaluate(CUT_LABELS, root)]
            + [f"outside the window with text spacing: {c}" for c in page.evaluate(CLIPPED_CONTROLS, root)])


def clear_text_spacing(page) -> None:
    """Take away the text spacing that `spacing_problems` applied (the page's own spacing again)."""
    page.evaluate("() => document.getElementById('d2l-text-spacing')?.remove()")
    page.wait_for_timeout(300)


def structure_problems(page, root: str = PANELS_ROOT) -> list[str]:
    """Tables without header cells, "null" tooltips, and panels with more than one live region."""
    problems = [f"a table without header cells: {t!r}" for t in page.evaluate(TABLES_WITHOUT_HEADERS, root)]
    problems += [f'a tooltip that reads "null": {e}' for e in page.evaluate(NULL_TOOLTIPS, root)]
    problems += [f"a panel with {n} live regions" for n in page.evaluate(LIVE_REGIONS, root) if n > 1]
    problems += [f"a live region runs sentences together: {words!r}"
                 for words in page.evaluate(RUN_TOGETHER, root)]
    return problems


# Every control the keyboard can focus in the panels (a slider's handle and number box, an accordion's
# headers), marked with its index so that Playwright can find each one again.
MARK_FOCUSABLE = """(root) => [...document.querySelectorAll(root)].flatMap(panel =>
  [...panel.querySelectorAll('button, input, select, textarea, [tabindex]')]
    .filter(e => e.tabIndex >= 0 && !e.disabled && !e.closest('[disabled]') && e.checkVisibility()))
  .map((e, index) => {
    e.setAttribute('data-d2l-focus', String(index));
    return (e.getAttribute('aria-label') || e.textContent || e.tagName).trim().slice(0, 50);
  })"""
# Pixels that must change around a control when it takes the focus: a 1-px outline around a small
# checkbox changes about 60.
FOCUS_CHANGED_PIXELS = 20
FOCUS_MARGIN_PX = 4  # an outline may lie just outside the control


def _changed_pixels(before: bytes, after: bytes) -> int:
    first, second = (Image.open(io.BytesIO(png)).convert("RGB") for png in (before, after))
    if first.size != second.size:
        return first.size[0] * first.size[1]
    difference = ImageChops.difference(first, second).convert("L")
    return sum(count for level, count in enumerate(difference.histogram()) if level > 16)


def _around(page, control) -> bytes:
    box = control.bounding_box()
    clip = {"x": max(box["x"] - FOCUS_MARGIN_PX, 0), "y": max(box["y"] - FOCUS_MARGIN_PX, 0),
            "width": box["width"] + 2 * FOCUS_MARGIN_PX, "height": box["height"] + 2 * FOCUS_MARGIN_PX}
    return page.screenshot(clip=clip, animations="disabled", caret="hide")


def focus_problems(page, root: str = PANELS_ROOT) -> list[str]:
    """Controls under `root` that look the same focused by the keyboard as not (WCAG 2.4.7)."""
    names = page.evaluate(MARK_FOCUSABLE, root)
    problems = []
    for index, name in enumerate(names):
        control = page.locator(f'[data-d2l-focus="{index}"]')
        control.scroll_into_view_if_needed()
        control.focus()  # first, so that its cell is already the active one (JupyterLab marks it)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.mouse.move(0, 0)
        page.wait_for_timeout(100)
        before = _around(page, control)
        page.keyboard.press("Shift")  # the keyboard was used last: the focus is shown as :focus-visible
        control.focus()
        page.wait_for_timeout(100)
        changed = _changed_pixels(before, _around(page, control))
        if changed < FOCUS_CHANGED_PIXELS:
            problems.append(f"no visible focus on {name!r} ({changed} pixels changed)")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    return problems


def words_before_first_control(page, root: str = PANELS_ROOT) -> list[str | None]:
    """Per panel under `root`, the text met before its first focusable control (None: it has none)."""
    return page.evaluate(WORDS_BEFORE_FIRST_CONTROL, root)


def summary_problems(page, root: str = PANELS_ROOT, most: int = MOST_WORDS_FIRST) -> list[str]:
    """Panels not opening with a short summary: no text before the first control, or over `most` words."""
    problems = []
    for index, text in enumerate(words_before_first_control(page, root)):
        if text is None:
            continue  # no control to find (a panel whose controls are all disabled is not checked)
        words = len(text.split())
        if words == 0:
            problems.append(f"panel {index + 1}: a control comes first, so nothing says what the panel is")
        elif words > most:
            problems.append(f"panel {index + 1}: {words} words before the first control (at most {most}): "
                            f"{text[:80]!r}…")
    return problems


def close_left_sidebar(page) -> None:
    """Close JupyterLab's left sidebar (its open tab, clicked again), as notebook 00 tells students."""
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    page.wait_for_function("() => !document.querySelector('#jp-left-stack:not(.lm-mod-hidden)')"
                           " || document.querySelector('#jp-left-stack').offsetWidth === 0", timeout=10_000)
