"""The perplexity lab in a real browser: JupyterLab on 127.0.0.1, driven by headless Chromium.

`test_lab_retrains_in_jupyterlab` runs notebook 08 top to bottom in JupyterLab (its learning-rate
sweep included), moves the hidden-size and learning-rate sliders, presses Train and checks that
the validation perplexity shown in the page changes to another finite number, presses Train again
and checks that the same settings give the same perplexity and sample; then sets a learning rate
that diverges and checks the message. A screenshot of the panel goes to test-artifacts/lab.png.

`test_lab_keeps_runs_sweeps_and_stops_at_the_interrupt_in_jupyterlab` opens 08's lab cell alone at
1366x768 and checks that Train, the perplexity and the chart are in sight with the panel at the
top; that two runs with different settings give two rows and two curves (read from the chart's
pixels); that a three-value sweep draws its plot; and that ■ during a long run stops it within a
second, shows what was trained and enables the controls again.

Skips (saying why) without Chromium (on the PATH or at $D2LMINI_CHROMIUM) or Python Playwright, unless
D2LMINI_REQUIRE_BROWSER=1, as in CI, where their absence is a failure. Never runs
`playwright install`: the browser is the system's.
"""

import io
import json
import math
import re
import tempfile
import time
from pathlib import Path

import pytest
from browser.jupyterlab import CHROMIUM_ENV, notebook_page, require_browser, run_all_cells, strip_outputs
from browser.lab_controls import LONG_RUN, set_sliders, slider_readout, type_into
from matplotlib.colors import to_rgb

from d2lmini.palette import SERIES_COLOURS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "08_perplexity_lab.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
NUMBER = re.compile(r"validation perplexity:\s*(\d+(?:\.\d+)?)\s*$")

pytestmark = pytest.mark.browser


def _shown_perplexity(page) -> float | None:
    match = NUMBER.search(page.locator(".lab-valid-ppl").inner_text().strip())
    return float(match.group(1)) if match else None


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
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="d2lmini-notebooks-") as root:
        strip_outputs(NOTEBOOK, Path(root) / NOTEBOOK.name)  # fresh: every number shown comes from this run
        viewport = {"width": 1400, "height": 1000}
        with notebook_page(Path(root), viewport, ARTIFACTS / "lab_failure.png") as (page, base, token):
            run_all_cells(page, base, token, NOTEBOOK.name)
            page.locator(".lab-valid-ppl").wait_for(state="attached", timeout=90_000)
            page.wait_for_function(
                "() => /validation perplexity:\\s*\\d+\\.\\d+\\s*$/"
                ".test(document.querySelector('.lab-valid-ppl').innerText.trim())", timeout=60_000)
            # The notebook's last lab cell runs section 8's learning-rate sweep; wait for it to end.
            page.locator(".lab-message", has_text="Sweep of the learning rate").wait_for(timeout=120_000)
            assert "lowest validation perplexity" in page.locator(".lab-message").inner_text()
            assert _rows(page) == 4  # the first run and the sweep's three
            first = _shown_perplexity(page)
            assert first is not None and math.isfinite(first) and first > 1

            page.locator(".perplexity-lab").scroll_into_view_if_needed()
            type_into(slider_readout(page, "hidden size"), "64")
            type_into(slider_readout(page, "learning rate"), "0.03")
            _train_and_wait(page, "hidden size 64")
            message = page.locator(".lab-message").inner_text()
            shown_rate = float(slider_readout(page, "learning rate").inner_text())
            assert abs(shown_rate - 0.03) < 0.002  # 0.03 (or 10 ** -1.5 where the slider snaps)
            assert f"learning rate {shown_rate:.3g}" in message  # the run used what the slider shows
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

            type_into(slider_readout(page, "learning rate"), "1000")
            clipping = page.locator(".perplexity-lab .widget-dropdown",
                                    has=page.locator("label", has_text="clipping"))
            clipping.locator("select").select_option(label="off")
            _train_and_wait(page, "diverged")
            message = page.locator(".lab-message").inner_text()
            assert "Training diverged at minibatch" in message and "smaller" in message
            assert _shown_perplexity(page) is None  # no number for a model that blew up
            page.locator(".perplexity-lab").screenshot(path=str(ARTIFACTS / "lab_diverged.png"))


VIEWPORT = {"width": 1366, "height": 768}  # a common laptop screen
# The course palette's first two colours: the first and second run's curves.
BLUE, ORANGE = (tuple(round(255 * c) for c in to_rgb(colour)) for colour in SERIES_COLOURS[:2])


def lab_only_notebook(target: Path) -> None:
    """Write a notebook holding notebook 08's lab cell alone (with its import), without outputs."""
    cells = json.loads(NOTEBOOK.read_text("utf-8"))["cells"]
    lab_cell = next(c for c in cells if "".join(c["source"]).startswith("lab = make_lab()"))
    source = ["from d2lmini.widgets.lab import make_lab\n", "\n", *lab_cell["source"]]
    cell = {"cell_type": "code", "execution_count": None, "id": "lab", "metadata": {}, "outputs": [],
            "source": source}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = {"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}
    target.write_text(json.dumps(notebook, indent=1), "utf-8")


def _pixels_near(png: bytes, colour: tuple[int, int, int], tolerance: int = 40) -> int:
    """Count the pixels of the PNG `png` within `tolerance` of `colour` in every channel."""
    import numpy
    from PIL import Image  # installed with matplotlib

    pixels = numpy.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)
    return int((numpy.abs(pixels - numpy.array(colour)) <= tolerance).all(axis=-1).sum())


def _rows(page) -> int:
    return page.locator(".perplexity-lab .lab-runs tr.lab-run").count()


def _run_all(page, base: str, token: str, name: str) -> None:
    run_all_cells(page, base, token, name)
    page.wait_for_function(
        "() => { const e = document.querySelector('.lab-valid-ppl');"
        " return e && /validation perplexity:\\s*\\d+\\.\\d+\\s*$/.test(e.innerText.trim()); }",
        timeout=120_000)


def _key_result_is_above_the_fold(page) -> None:
    """With the panel at the top of the notebook area, Train, the perplexity and the chart are in sight."""
    page.locator(".perplexity-lab").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    area = page.locator(".jp-NotebookPanel-notebook").first.bounding_box()
    bottom = min(area["y"] + area["height"], VIEWPORT["height"])
    for selector in (".lab-train", ".lab-valid-ppl", ".lab-plot", ".lab-progress"):
        box = page.locator(f".perplexity-lab {selector}").first.bounding_box()
        in_sight = box is not None and box["y"] >= area["y"] - 1 and box["y"] + box["height"] <= bottom + 1
        assert in_sight, f"{selector} is out of sight at 1366x768: {box}, the notebook area ends at {bottom}"


def test_lab_keeps_runs_sweeps_and_stops_at_the_interrupt_in_jupyterlab():
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="d2lmini-notebooks-") as root:
        lab_only_notebook(Path(root) / "lab.ipynb")
        failure = ARTIFACTS / "lab_session_failure.png"
        with notebook_page(Path(root), VIEWPORT, failure) as (page, base, token):
            _run_all(page, base, token, "lab.ipynb")
            assert _rows(page) == 1
            _key_result_is_above_the_fold(page)
            page.screenshot(path=str(ARTIFACTS / "lab_1366x768.png"))
            one_run = page.locator(".perplexity-lab .lab-plot").screenshot()
            assert _pixels_near(one_run, BLUE) > 100 and _pixels_near(one_run, ORANGE) < 20

            # Two runs with different settings: two rows, two curves.
            type_into(slider_readout(page, "hidden size"), "64")
            _train_and_wait(page, "hidden size 64")
            page.wait_for_function(
                "() => document.querySelectorAll('.lab-runs tr.lab-run').length == 2", timeout=30_000)
            assert "hidden 64" in page.locator(".lab-runs tr.lab-run").nth(1).inner_text()
            page.wait_for_timeout(500)  # the chart is redrawn with the table
            two_runs = page.locator(".perplexity-lab .lab-plot").screenshot()
            assert _pixels_near(two_runs, BLUE) > 100 and _pixels_near(two_runs, ORANGE) > 100

            # A three-value sweep draws its plot and adds three rows.
            type_into(slider_readout(page, "minibatches"), "100")
            values = page.locator(".perplexity-lab .widget-text",
                                  has=page.locator("label", has_text="values"))
            values.locator("input").fill("16, 32, 48")
            values.locator("input").press("Enter")
            page.locator(".lab-sweep-estimate", has_text="3 runs, about").wait_for(timeout=30_000)
            page.locator(".perplexity-lab button.lab-sweep").click()
            page.locator(".lab-message", has_text="Sweep of the hidden size").wait_for(timeout=120_000)
            assert _rows(page) == 5
            sweep_plot = page.locator(".perplexity-lab .lab-sweep-plot")
            assert sweep_plot.evaluate("img => img.naturalWidth") > 100
            sweep_plot.screenshot(path=str(ARTIFACTS / "lab_sweep.png"))

            # ■ during a long run: it stops within a second, shows what was trained, enables controls.
            set_sliders(page, {**LONG_RUN, "hidden size": "128"})
            page.locator(".perplexity-lab button.lab-train").click()
            page.locator(".lab-progress", has_text="minibatch").wait_for(timeout=60_000)  # training
            page.locator("[data-jp-item-name='interrupt']").first.click()  # the notebook toolbar's ■
            clicked = time.perf_counter()
            page.locator(".lab-message", has_text="stopped by an interrupt").wait_for(timeout=30_000)
            stopped_after = time.perf_counter() - clicked
            (ARTIFACTS / "lab_interrupt_seconds.txt").write_text(f"{stopped_after:.3f}\n")
            assert stopped_after < 1.0, f"the run stopped {stopped_after:.2f} s after ■"
            assert "(stopped)" in page.locator(".lab-valid-ppl").inner_text()
            enabled = "() => !document.querySelector('.perplexity-lab button.lab-train').disabled"
            page.wait_for_function(enabled, timeout=10_000)
            assert _rows(page) == 6
            assert "(stopped)" in page.locator(".lab-runs tr.lab-run").nth(5).inner_text()
            assert page.locator(".perplexity-lab button.lab-sweep").is_enabled()
            assert "Traceback" not in page.locator(".jp-OutputArea").first.inner_text()
