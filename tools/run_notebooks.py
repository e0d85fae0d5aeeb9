"""Re-execute the course notebooks in place, each in a fresh kernel, top to bottom.

    python tools/run_notebooks.py                  # every notebook: notebooks/ and the Chinese notebooks/zh/
    python tools/run_notebooks.py --edition zh     # the Chinese edition only (tools/translations.py makes it)
    python tools/run_notebooks.py notebooks/03_one_hot.ipynb ...   # 03 of both editions (--edition en: one)
    python tools/run_notebooks.py --alone          # run each copied alone into an empty folder

Prints one line per notebook with the time it took; exits non-zero if any cell fails
(the failing notebook is left unchanged on disk).

Notebooks are stored in a form that keeps diffs readable (CONTRIBUTING.md, "Stored
notebooks"): the outputs stay, but not the saved state of the widgets (hundreds of KB that
change on every run and that no test reads); a widget's output keeps only a short
plain-text placeholder instead of the `VBox(children=(...` text that JupyterLab would show
before the cell runs, and a panel's output also its static HTML preview
(`d2lmini.widgets.preview`), which GitHub, nbviewer and the course site show; and the
kernel's display name is the one JupyterLab will see, so a notebook is not marked modified
the moment it opens.

`--alone` runs a copy of each notebook under nbval in a fresh empty folder, with nothing saved
back: it checks that a notebook runs on its own with the d2lmini that is installed, as it does
when a student opens it on Google Colab, and gives the stored outputs of its tagged cells (the
same runner as tools/simulate_platforms.py's Colab- and Kaggle-like venvs).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.util import ensure_async

from d2lmini.i18n import translate
from d2lmini.widgets.preview import PLACEHOLDER

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EDITIONS = {"en": NOTEBOOKS, "zh": NOTEBOOKS / "zh"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def normalise_for_storage(notebook, language: str = "en") -> None:
    """Store `notebook` as JupyterLab will see it, so that opening it does not mark it modified.

    Drops the saved widget state, replaces each widget view by a plain-text placeholder (a
    panel's static `text/html` preview stays beside it), and records the kernel's display
    name as the installed python3 kernel gives it (an older name makes JupyterLab rewrite
    the metadata the moment the notebook opens). The placeholder is in the notebook's `language`.
    """
    placeholder = translate(PLACEHOLDER, language)
    notebook.metadata.pop("widgets", None)
    notebook.metadata.setdefault("kernelspec", {})["display_name"] = (
        KernelSpecManager().get_kernel_spec("python3").display_name)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                preview = {"text/html": data["text/html"]} if "text/html" in data else {}
                output["data"] = {"text/plain": placeholder, **preview}


class PreviewingClient(NotebookClient):
    """A NotebookClient that stores each panel's preview as the cell that displayed it left it.

    A panel's preview (`d2lmini.widgets.preview`) is made when it is displayed; a cell may go on
    to change the panel (notebook 08 displays its lab, then trains), so after such a cell the
    kernel is asked, by a silent request, for each of its panels' previews now.
    """

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        cell = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        panels = [output["data"] for output in cell.get("outputs", [])
                  if {WIDGET_VIEW, "text/html"} <= set(output.get("data", {}))]
        if panels:
            previews = await self.panel_previews([data[WIDGET_VIEW]["model_id"] for data in panels])
            for data in panels:
                data["text/html"] = previews.get(data[WIDGET_VIEW]["model_id"], data["text/html"])
        return cell

    async def panel_previews(self, model_ids: list[str]) -> dict[str, str]:
        """Return {model id: preview HTML} from the kernel for the displayed panels in `model_ids`."""
        expression = (f"__import__('d2lmini.widgets.preview', fromlist=['previews_json'])"
                      f".previews_json({model_ids!r})")
        msg_id = await ensure_async(self.kc.execute("", silent=True, store_history=False,
                                                    user_expressions={"previews": expression}))
        reply = await self.async_wait_for_reply(msg_id)
        result = reply["content"]["user_expressions"]["previews"]
        if result["status"] != "ok":
            raise RuntimeError(f"the panels' previews: {result.get('ename')}: {result.get('evalue')}")
        return result["data"]["application/json"]


def execute(path: Path, timeout: int) -> float:
    """Execute the notebook at `path` beside its file in a fresh kernel, save it back in the stored
    form, and return the seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    client = PreviewingClient(notebook, timeout=timeout, kernel_name="python3",
                              resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    normalise_for_storage(notebook, "zh_CN" if path.resolve().parent == EDITIONS["zh"] else "en")
    nbformat.write(notebook, path)
    return seconds


def run_alone(paths: list[Path]) -> int:
    """Run each notebook under nbval, alone in an empty folder, with this Python; save nothing."""
    from simulate_platforms import SimulationFailed, run_notebooks_alone  # tools/ is this script's folder

    with tempfile.TemporaryDirectory(prefix="d2lmini-alone-") as work:
        try:
            run_notebooks_alone(Path(sys.executable), paths, Path(work))
        except SimulationFailed as error:
            print(error)
            return 1
    print(f"{len(paths)} notebooks ran alone under nbval")
    return 0


def in_editions(paths: list[Path], editions: list[str]) -> list[Path]:
    """Each named notebook of the course in every chosen edition (`notebooks/03_x.ipynb` with "both" is
    also `notebooks/zh/03_x.ipynb`, where it exists); a notebook from elsewhere runs as named."""
    found = []
    for path in paths:
        course = path.resolve().parent in {folder.resolve() for folder in EDITIONS.values()}
        copies = [EDITIONS[edition] / path.name for edition in editions] if course else [path]
        found += [copy for copy in copies if copy not in found and (copy.exists() or not course)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="default: every notebook; a named one runs in each chosen edition")
    parser.add_argument("--edition", choices=[*EDITIONS, "both"], default="both",
                        help="en: notebooks/*.ipynb, zh: notebooks/zh/*.ipynb (default: both)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    parser.add_argument("--alone", action="store_true",
                        help="run a copy of each notebook alone in an empty folder under nbval "
                             "(stored outputs compared); save nothing")
    args = parser.parse_args()
    editions = list(EDITIONS) if args.edition == "both" else [args.edition]
    paths = in_editions(args.notebooks, editions) if args.notebooks else [
        path for edition in editions for path in sorted(EDITIONS[edition].glob("*.ipynb"))]
    # The kernels inherit this environment: an English notebook must speak English whatever the shell
    # says; a Chinese one sets the language in its own first cell.
    os.environ.pop("D2LMINI_LANG", None)
    if args.alone:
        return run_alone([path.resolve() for path in paths])
    failed = []
    for index, path in enumerate(paths, 1):
        print(f"[{index}/{len(paths)}] {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ...",
              end=" ", flush=True)
        try:
            seconds = execute(path, args.timeout)
            print(f"{seconds:.1f} s", flush=True)
        except Exception as error:  # report every notebook, then fail
            print(f"FAILED: {type(error).__name__}: {str(error)[-2000:]}", flush=True)
            failed.append(path.name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
