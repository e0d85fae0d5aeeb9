"""axe-core and a contrast check for the browser tests (issue 29: WCAG 2.1 AA).

`find_axe()` returns axe-core's `axe.min.js` (`$D2LMINI_AXE_CORE`, else `node_modules/axe-core`
at the repository root; `.ci/run` installs `axe-core@AXE_VERSION` from the npm registry), or
skips (fails when D2LMINI_REQUIRE_BROWSER=1). `axe_violations(page)` injects it into the
JupyterLab page and returns one (rule, element, course, target) per violating node: `course` is
True for what the course writes (rendered Markdown, outputs, widgets, figures), False for
JupyterLab's own interface, whose known violations are listed in `jupyterlab_axe.toml`.
`low_contrast(page)` computes the contrast of every text in the course's content itself: axe
leaves most of the notebook's scrolled area "incomplete".
"""

import os
import tomllib
from pathlib import Path

import pytest

AXE_VERSION = "4.14.1"
ROOT = Path(__file__).resolve().parents[2]
KNOWN_FILE = Path(__file__).with_name("jupyterlab_axe.toml")
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
COURSE = ".jp-OutputArea-output, .jp-RenderedMarkdown"  # not the prompts beside the outputs


def find_axe() -> Path:
    """Return the path of axe.min.js, or skip (fail when D2LMINI_REQUIRE_BROWSER=1) saying how to get it."""
    named = os.environ.get("D2LMINI_AXE_CORE")
    path = Path(named) if named else ROOT / "node_modules" / "axe-core" / "axe.min.js"
    if path.exists():
        return path
    problem = (f"axe-core is missing at {path}: npm install axe-core@{AXE_VERSION} at the repository root, "
               "or set D2LMINI_AXE_CORE to its axe.min.js")
    if os.environ.get("D2LMINI_REQUIRE_BROWSER") == "1":
        pytest.fail(problem)
    pytest.skip(problem)


# One entry per violating node: the rule, the element as "tag.first-jp-or-lm-class" (stable across
# notebooks, unlike axe's nth-child selectors), whether it is the course's, and axe's selector.
AXE_RUN = """async (tags) => {
  const options = {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']};
  const result = await axe.run(document, options);
  const describe = (el) => {
    if (!el) return '?';
    const cls = [...el.classList].find(c => /^(jp|lm|cm|jupyter)-/.test(c));
    return el.tagName.toLowerCase() + (cls ? '.' + cls : '');
  };
  return result.violations.flatMap(v => v.nodes.map(n => {
    const el = document.querySelector(n.target[0]);
    return {rule: v.id, element: describe(el), course: !!(el && el.closest('COURSE_SELECTOR')),
            target: n.target.join(' '), html: n.html.slice(0, 200)};
  }));
}""".replace("COURSE_SELECTOR", COURSE)

# Text in the course's content whose contrast against its background is below WCAG AA.
LOW_CONTRAST = """() => {
  const lum = (rgb) => {
    const c = rgb.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const parse = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const style = getComputedStyle(e);
      if (style.backgroundImage !== 'none') return null;
      const c = parse(style.backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.99)) return c;
    }
    return [255, 255, 255];
  };
  const found = [];
  for (const root of document.querySelectorAll('COURSE_SELECTOR')) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || !el) continue;
      if (el.closest('svg, .MathJax, mjx-container, [aria-hidden=true]')) continue;
      if (el.offsetParent === null && getComputedStyle(el).position !== 'fixed') continue;
      const style = getComputedStyle(el);
      const fg = parse(style.color), bg = background(el);
      if (!bg || (fg.length > 3 && fg[3] < 1)) continue;
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight) >= 700;
      const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
      if (ratio < needed) {
        const text = node.textContent.trim().slice(0, 30);
        found.push(`"${text}" ${style.color} on rgb(${bg.slice(0, 3)}) ${ratio.toFixed(2)}:1`);
      }
    }
  }
  return found;
}""".replace("COURSE_SELECTOR", COURSE)


def axe_violations(page, axe_js: Path) -> list[dict]:
    """Run axe-core (WCAG 2.0/2.1 A and AA) on `page`; return one dict per violating node (see above)."""
    page.add_script_tag(content=axe_js.read_text("utf-8"))
    return page.evaluate(AXE_RUN, WCAG_TAGS)


def low_contrast(page) -> list[str]:
    """Return each text in the course's content with contrast below 4.5:1 (3:1 for large text)."""
    return page.evaluate(LOW_CONTRAST)


def known_jupyterlab_violations() -> set[tuple[str, str]]:
    """Return the (rule, element) pairs of JupyterLab's own interface listed in jupyterlab_axe.toml."""
    known = tomllib.loads(KNOWN_FILE.read_text("utf-8"))["known"]
    return {(entry["rule"], entry["element"]) for entry in known}


def new_problems(violations: list[dict]) -> list[str]:
    """Return the course's violations and JupyterLab's that jupyterlab_axe.toml does not list."""
    known = known_jupyterlab_violations()
    problems = [f"course content: {v['rule']} at {v['target']} ({v['html']})"
                for v in violations if v["course"]]
    problems += sorted({f"JupyterLab, not listed in {KNOWN_FILE.name}: {v['rule']} at {v['element']}"
                        for v in violations if not v["course"] and (v["rule"], v["element"]) not in known})
    return problems
