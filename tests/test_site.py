"""The course site (tools/build_site.py) in headless Chromium: every page loads, nothing is missing.

The built site (build/site/html, or `$D2LMINI_SITE`) is served on 127.0.0.1 and every page is
opened: it loads with no script error and no request leaving the site; every image has an alt
and loaded; every internal link reaches a file and anchor that exist; axe-core (WCAG 2.0/2.1 A
and AA) finds no violation in what the course writes (the page's article) and none in the
theme's own chrome that tests/browser/site_axe.toml does not list. Notebook pages have their
launch links, their download, a static preview of each panel they store, and every exercise
as it is stored (unanswered). Skips (saying why) without a built site, Chromium or Playwright, unless
D2LMINI_REQUIRE_BROWSER=1. A screenshot of each notebook's page goes to test-artifacts/site_NN.png.
"""

import functools
import json
import re
import tomllib
from pathlib import Path

import pytest
from browser.axe import WCAG_TAGS, find_axe
from browser.jupyterlab import CHROMIUM_ARGS, require_browser
from browser.site import find_site, page_problems, serving, site_axe

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
KNOWN_THEME_FILE = ROOT / "tests" / "browser" / "site_axe.toml"
NOTEBOOKS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
LAUNCH_LABELS = ("Open in Colab", "Open in Kaggle", "Open in Binder", "Download the notebook")


@functools.cache
def ids_in(path: Path) -> frozenset[str]:
    return frozenset(re.findall(r'\bid="([^"]+)"', path.read_text("utf-8")))


def exercise_stubs(path: Path) -> list[str]:
    """Return the source of each exercise cell the notebook at `path` stores unanswered."""
    cells = json.loads(path.read_text("utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    return [source for source in sources if "answer = None" in source or "# your code here" in source]


def known_theme_violations() -> set[tuple[str, str]]:
    known = tomllib.loads(KNOWN_THEME_FILE.read_text("utf-8"))["known"]
    return {(entry["rule"], entry["element"]) for entry in known}


@pytest.fixture(scope="module")
def site():
    folder = find_site()
    axe_js = find_axe()
    sync_playwright, chromium = require_browser()
    with serving(folder) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        try:
            yield folder, base, browser, axe_js
        finally:
            browser.close()


def test_the_site_has_a_page_for_every_notebook_and_for_instructors():
    folder = find_site()
    missing = [name for name in NOTEBOOKS if not (folder / "notebooks" / f"{name}.html").exists()]
    assert not missing, f"no page for {missing}: rebuild with python tools/build_site.py"
    assert (folder / "instructors.html").exists() and (folder / "search.html").exists()


def test_every_page_loads_with_alts_links_and_no_axe_violation_in_the_course(site):
    folder, base, browser, axe_js = site
    known = known_theme_violations()
    problems = {}
    # _static/ holds the theme's template fragments, not pages.
    pages = [path for path in sorted(folder.rglob("*.html")) if "_static" not in path.parts]
    for path in pages:
        relative = path.relative_to(folder).as_posix()
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        try:
            found = page_problems(page, base + relative, folder, base, ids_in)
            violations = site_axe(page, axe_js, WCAG_TAGS)
            found += [f"course content: {v['rule']} at {v['target']} ({v['html']})"
                      for v in violations if v["course"]]
            theme = [v for v in violations if not v["course"] and (v["rule"], v["element"]) not in known]
            found += sorted({f"theme, not in {KNOWN_THEME_FILE.name}: {v['rule']} at {v['element']}"
                             for v in theme})
            if relative.startswith("notebooks/"):
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"site_{relative[10:12]}.png"), full_page=False)
        finally:
            page.close()
        if found:
            problems[relative] = found
    assert not problems, "\n".join(f"{page}: {p}" for page, found in problems.items() for p in found)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_page_has_its_launch_links_previews_and_no_answers(site, name):
    folder, base, browser, _ = site
    page = browser.new_page()
    try:
        page.goto(f"{base}notebooks/{name}.html")
        launch = page.locator(".course-launch a")
        assert [launch.nth(i).inner_text() for i in range(launch.count())] == list(LAUNCH_LABELS)
        download = page.locator(".course-launch a[download]").get_attribute("href")
        notebook = ROOT / "notebooks" / f"{name}.ipynb"
        assert (folder / "notebooks" / download).read_bytes() == notebook.read_bytes()
        assert page.locator(".course-report a").count() == 1
        stored = notebook.read_text("utf-8").count('class=\\"d2l-panel-preview\\"')
        assert page.locator(".d2l-panel-preview").count() == stored
        code = "\n".join(page.locator("div.highlight pre").all_inner_texts())
        for stub in exercise_stubs(ROOT / "notebooks" / f"{name}.ipynb"):
            assert stub.strip() in code, f"the exercise is not shown as stored (unanswered): {stub[:80]!r}"
    finally:
        page.close()
