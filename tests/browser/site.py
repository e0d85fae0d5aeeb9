"""Serve the built course site on 127.0.0.1 and check its pages in headless Chromium (tests/test_site.py).

`find_site()` returns the built site's folder (`$D2LMINI_SITE`, else build/site/html), or skips
(fails when D2LMINI_REQUIRE_BROWSER=1) saying how to build it. `serving(folder)` serves it with
Python's http.server on a free 127.0.0.1 port. `page_problems(page, url, folder)` opens one page
and returns what is wrong with it: a failed load, a script error, a request that left
127.0.0.1, a formula not typeset when the page loaded or without speech text (`formula_problems`), an image
without alt or that did not load, an internal link to a file or anchor that
does not exist. `site_axe(page, axe_js)` runs axe-core and tells the course's content (the
page's article) from the theme's chrome.
"""

import contextlib
import functools
import http.server
import os
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE_ENV = "D2LMINI_SITE"
COURSE = "article.bd-article"  # what the course writes; the rest is the theme's navigation and header

AXE_SITE_RUN = """async ([tags, course]) => {
  const options = {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']};
  const result = await axe.run(document, options);
  const describe = (el) => {
    if (!el) return '?';
    const cls = [...el.classList].find(c => /^(bd|pst|sbt|navbar|search|btn|theme|sidebar|toc)/.test(c));
    return el.tagName.toLowerCase() + (cls ? '.' + cls : '');
  };
  return result.violations.flatMap(v => v.nodes.map(n => {
    const el = document.querySelector(n.target[0]);
    return {rule: v.id, element: describe(el), course: !!(el && el.closest(course)),
            target: n.target.join(' '), html: n.html.slice(0, 200)};
  }));
}"""

PAGE_FACTS = """() => ({
  noAlt: [...document.querySelectorAll('img')].filter(i => !i.hasAttribute('alt'))
           .map(i => i.outerHTML.slice(0, 120)),
  unloaded: [...document.querySelectorAll('img')].filter(i => !(i.complete && i.naturalWidth > 0))
               .map(i => (i.getAttribute('src') || '').slice(0, 120)),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
})"""


def find_site() -> Path:
    """Return the built site's folder, or skip (fail when D2LMINI_REQUIRE_BROWSER=1) saying how to make it."""
    folder = Path(os.environ.get(SITE_ENV) or ROOT / "build" / "site" / "html")
    if (folder / "index.html").exists():
        return folder
    problem = (f"no built site at {folder}: in a venv with site/requirements.txt run "
               f"python tools/build_site.py (or set {SITE_ENV} to the built html folder)")
    if os.environ.get("D2LMINI_REQUIRE_BROWSER") == "1":
        pytest.fail(problem)
    pytest.skip(problem)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@contextlib.contextmanager
def serving(folder: Path):
    """Serve `folder` on a free 127.0.0.1 port in a thread; yield its base URL (ending in /)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def local_file(folder: Path, base: str, url: str) -> Path | None:
    """Return the file under `folder` that `url` names, if it is on the site at `base`; else None."""
    if not url.startswith(base):
        return None
    path = unquote(urlsplit(url).path[len(urlsplit(base).path):])
    target = folder / path
    return target / "index.html" if path == "" or path.endswith("/") else target


# Each formula of the page (Sphinx's .math), as it is when the page has loaded: typeset (its
# mjx-container) or still TeX, what a screen reader is given to say for it, whether MathJax could read it.
FORMULA_SPEECH = """() => [...document.querySelectorAll('.math')].map(math => {
  const formula = math.querySelector('mjx-container');
  return {typeset: !!formula, label: formula ? (formula.getAttribute('aria-label') || '').trim() : '',
          error: !!(formula && formula.querySelector('mjx-merror')),
          text: math.textContent.trim().slice(0, 60)};
})"""


def formula_problems(page) -> list[str]:
    """Formulas not typeset when the page has loaded (the site typesets them when it is built, so the
    browser runs no MathJax), typeset with a TeX error, or without speech (an empty aria-label)."""
    problems = []
    for formula in page.evaluate(FORMULA_SPEECH):
        if not formula["typeset"]:
            problems.append(f"a formula not typeset when the page loaded: {formula['text']!r}")
        elif formula["error"]:
            problems.append(f"a formula MathJax could not read: {formula['text']!r}")
        elif not formula["label"]:
            problems.append(f"a formula without speech text: {formula['text']!r}")
    return problems


def page_problems(page, url: str, folder: Path, base: str, ids_of) -> list[str]:
    """Open `url` in `page` and return each problem found on it (see the module's docstring).

    `ids_of(path)` returns the element ids of the site's page at `path` (for links to anchors).
    """
    errors, outside = [], []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
               else (outside.append(route.request.url), route.abort()))
    response = page.goto(url, wait_until="load")
    # Every image settled (loaded or failed), not Playwright's "networkidle" (500 ms without a request),
    # which a loaded machine can miss for 30 s on a page that requests nothing more.
    page.wait_for_function("[...document.images].every(image => image.complete)", timeout=60_000)
    problems = [] if response and response.ok else [f"load: HTTP {response.status if response else '?'}"]
    problems += formula_problems(page)
    facts = page.evaluate(PAGE_FACTS)
    problems += [f"script error: {error}" for error in errors]
    problems += [f"a request left the site: {address}" for address in outside]
    problems += [f"image without alt: {html}" for html in facts["noAlt"]]
    problems += [f"image did not load: {src}" for src in facts["unloaded"]]
    for link in facts["links"]:
        target = local_file(folder, base, link)
        if target is None:
            continue
        if not target.is_file():
            problems.append(f"broken link: {link}")
            continue
        anchor = unquote(urlsplit(link).fragment)
        if anchor and anchor not in ids_of(target):
            problems.append(f"link to a missing anchor: {link}")
    return problems


def site_axe(page, axe_js: Path, tags: list[str]) -> list[dict]:
    """Run axe-core on `page`; one dict per violating node, `course` True inside the page's article."""
    page.add_script_tag(content=axe_js.read_text("utf-8"))
    return page.evaluate(AXE_SITE_RUN, [tags, COURSE])
