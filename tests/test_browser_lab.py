"""The perplexity lab in a real browser: JupyterLab on 127.0.0.1, driven by headless Chromium.

Runs notebook 07 top to bottom in JupyterLab, moves the hidden-size and learning-rate
sliders, presses Train and checks that the validation perplexity shown in the page changes
to another finite number, presses Train again and checks that the same settings give the same
perplexity and sample; then sets a learning rate that diverges and checks the message.
A screenshot of the panel goes to test-artifacts/lab.png.

Skips (saying why) without Chromium (on the PATH or at $D2LMINI_CHROMIUM) or Python Playwright, unless
D2LMINI_REQUIRE_BROWSER=1, as in CI, where their absence is a failure. Never runs
`playwright install`: the browser is the system's.
"""

import math
import re
import tempfile
from pathlib import Path

import pytest
from browser.jupyterlab import CHROMIUM_ARGS, CHROMIUM_ENV, require_browser, running_jupyterlab, strip_outputs

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "07_perplexity.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
NUMBER = re.compile(r"validation perplexity:\s*(\d+(?:\.\d+)?)\s*$")

pytestmark = pytest.mark.browser


def _shown_perplexity(page) -> float | None:
    match = NUMBER.search(page.locator(".lab-valid-ppl").inner_text().strip())
    return float(match.group(1)) if match else None


def _slider_readout(page, label: str):
    """The editable number next to the slider whose description is `label`."""
    slider = page.locator(".perplexity-lab .widget-slider", has=page.locator("label", has_text=label))
    return slider.locator(".widget-readout")


def _type_into(readout, value: str) -> None:
    readout.fill(value)
    readout.press("Enter")


def _train_and_wait(page, expected_text: str) -> None:
    page.locator(".perplexity-lab button.lab-train").click()
    page.locator(".lab-message", has_text=expected_text).wait_for(timeout=60_000)


def test_without_chromium_the_test_skips_unless_ci_requires_it(monkeypatch):
    monkeypatch.setenv(CHROMIUM_ENV, "/nonexistent/chromium")
    monkeypatch.delenv("D2LMINI_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="missing"):
        require_browser()
    monkeypatch.setenv("D2LMINI_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="D2LMINI_REQUIRE_BROWSER=1"):
        require_browser()


def test_lab_retrains_in_jupyterlab():
    sync_playwright, chromium = require_browser()
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="d2lmini-notebooks-") as root:
        strip_outputs(NOTEBOOK, Path(root) / NOTEBOOK.name)  # fresh: every number shown comes from this run
        with running_jupyterlab(Path(root)) as (base, token), sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS,
                                                 headless=True)
            page = None
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{base}/lab/tree/{NOTEBOOK.name}?token={token}")
                page.get_by_text(re.compile(r"\| Idle")).wait_for(timeout=60_000)  # the kernel is ready

                page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
                page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
                page.locator(".lab-valid-ppl").wait_for(state="attached", timeout=90_000)
                page.wait_for_function(
                    "() => /validation perplexity:\\s*\\d+\\.\\d+\\s*$/"
                    ".test(document.querySelector('.lab-valid-ppl').innerText.trim())", timeout=60_000)
                first = _shown_perplexity(page)
                assert first is not None and math.isfinite(first) and first > 1
                assert "hidden size 128" in page.locator(".lab-message").inner_text()

                page.locator(".perplexity-lab").scroll_into_view_if_needed()
                _type_into(_slider_readout(page, "hidden size"), "64")
                _type_into(_slider_readout(page, "learning rate"), "0.03")
                _train_and_wait(page, "hidden size 64")
                message = page.locator(".lab-message").inner_text()
                assert "learning rate 0.0316" in message  # the log slider snaps 0.03 to 10 ** -1.5
                second = _shown_perplexity(page)
                assert second is not None and math.isfinite(second) and second > 1
                assert second != first
                page.locator(".perplexity-lab").screenshot(path=str(ARTIFACTS / "lab.png"))

                # The same settings again: the same numbers and sample (the budget counts minibatches).
                sample = page.locator(".lab-sample").inner_text()
                page.locator(".perplexity-lab button.lab-train").click()
                page.locator(".lab-message", has_text="Training").wait_for(timeout=30_000)  # run 3 started
                page.locator(".lab-message", has_text="hidden size 64").wait_for(timeout=60_000)
                page.wait_for_timeout(1_000)  # the sample is set just after the message
                assert _shown_perplexity(page) == second
                assert page.locator(".lab-sample").inner_text() == sample and "A sample" in sample

                _type_into(_slider_readout(page, "learning rate"), "1000")
                clipping = page.locator(".perplexity-lab .widget-dropdown",
                                        has=page.locator("label", has_text="clipping"))
                clipping.locator("select").select_option(label="off")
                _train_and_wait(page, "diverged")
                message = page.locator(".lab-message").inner_text()
                assert "Training diverged at minibatch" in message and "smaller" in message
                assert _shown_perplexity(page) is None  # no number for a model that blew up
                page.locator(".perplexity-lab").screenshot(path=str(ARTIFACTS / "lab_diverged.png"))
            except Exception:
                if page is not None:
                    page.screenshot(path=str(ARTIFACTS / "lab_failure.png"))
                raise
            finally:
                browser.close()
