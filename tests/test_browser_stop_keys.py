"""Notebook 04's training cell stops from the keyboard, as its text and 00's say (issue 35).

Opens notebook 04 without its stored outputs, cut after the training cell, in JupyterLab at 1366x768
in headless Chromium. The training runs for 200 passes instead of 7, so it is still running when the
test presses Esc, then I, I (JupyterLab's interrupt in command mode; no mouse). The run must end within
10 s, keep what it trained, say so, leave gradients on, and the cell after it must run.

Skips (saying why) without Chromium or Playwright, unless D2LMINI_REQUIRE_BROWSER=1, as in CI.
"""

import json
import re
import tempfile
import time
from pathlib import Path

import pytest
from browser.jupyterlab import notebook_page, run_all_cells, strip_outputs

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "04_rnn_scratch.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1366, "height": 768}
TRAINING = "history = train(net, train_indices, valid_indices, main_config"
LONGER = ("TrainConfig(num_epochs=7)", "TrainConfig(num_epochs=200)")
AFTER = ('print("after the stop:", len(history.step_loss), "minibatches,", len(history.epoch), "passes;",\n'
         '      "gradients on:", torch.is_grad_enabled(), "|", history.stopped)')
KEYS_IN_TEXT = re.compile(r"Esc.{0,40}I, I", re.DOTALL)

pytestmark = pytest.mark.browser


def _cut_after_training(target: Path) -> int:
    """Write 04 to its training cell (200 passes) and a check cell to `target`; return the cell's index."""
    strip_outputs(NOTEBOOK, target)
    notebook = json.loads(target.read_text("utf-8"))
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    training = next(i for i, source in enumerate(sources) if TRAINING in source)
    assert KEYS_IN_TEXT.search(sources[training - 1]), "the text before the training cell names no keys"
    setup = next(i for i, source in enumerate(sources) if LONGER[0] in source)
    notebook["cells"][setup]["source"] = sources[setup].replace(*LONGER)
    check = {"cell_type": "code", "execution_count": None, "id": "stopcheck", "metadata": {}, "outputs": [],
             "source": AFTER}
    notebook["cells"] = notebook["cells"][:training + 1] + [check]
    target.write_text(json.dumps(notebook, indent=1), "utf-8")
    return training


def test_escape_i_i_stops_the_training_cell_and_keeps_what_it_trained():
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="d2lmini-notebooks-") as root:
        training = _cut_after_training(Path(root) / NOTEBOOK.name)
        failure = ARTIFACTS / "stop_keys_failure.png"
        with notebook_page(Path(root), VIEWPORT, failure) as (page, base, token):
            run_all_cells(page, base, token, NOTEBOOK.name, idle_timeout_ms=120_000)
            cell = page.locator(".jp-Notebook .jp-Cell").nth(training)
            # Training: the cell has started (its prompt shows *) and drawn its first checkpoint.
            cell.locator(".jp-OutputArea-output").first.wait_for(timeout=300_000)
            page.wait_for_timeout(2_000)
            assert "[*]" in cell.locator(".jp-InputPrompt").inner_text(), "the training had ended already"
            page.locator(".jp-Notebook").first.focus()
            page.keyboard.press("Escape")
            pressed = time.perf_counter()
            page.keyboard.press("i")
            page.keyboard.press("i")
            after = page.locator(".jp-Notebook .jp-Cell").nth(training + 1).locator(".jp-OutputArea-output")
            after.first.wait_for(timeout=60_000)
            stopped_after = time.perf_counter() - pressed
            said = after.first.inner_text()
            page.screenshot(path=str(ARTIFACTS / "stop_keys.png"))
            assert stopped_after < 10, f"the check cell ran {stopped_after:.1f} s after Esc, I, I"
            assert "gradients on: True" in said, said
            assert "stopped by an interrupt" in said, said
            counts = re.search(r"after the stop: (\d+) minibatches, (\d+) passes", said)
            minibatches, passes = map(int, counts.groups())
            assert minibatches >= 1 and passes < 200, said
            assert "Traceback" not in cell.inner_text()
