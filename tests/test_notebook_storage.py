"""How notebooks are stored: an install cell for Colab, no saved widget state, readable placeholders."""

import json
import re
import tomllib
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from d2lmini.i18n import translate
from d2lmini.widgets.preview import PLACEHOLDER

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHINESE = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))  # tools/translations.py
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def edition_id(path: Path) -> str:
    """'03_one_hot' for the English notebook, 'zh/03_one_hot' for the Chinese."""
    return path.relative_to(ROOT / "notebooks").with_suffix("").as_posix()


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def repository_url() -> str:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["urls"]["Repository"]


def test_the_repository_address_is_a_github_repository():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", repository_url())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_code_cell_installs_d2lmini_only_where_it_is_missing(path):
    code = [c for c in load(path)["cells"] if c["cell_type"] == "code"]
    first = "".join(code[0]["source"])
    with open(ROOT / "pyproject.toml", "rb") as handle:
        version = tomllib.load(handle)["project"]["version"]
    assert f'RELEASE = "d2lmini=={version}"' in first, "run: python tools/colab_cell.py"
    assert f'REPOSITORY = "{repository_url()}"' in first, "run: python tools/colab_cell.py"
    assert 'if importlib.util.find_spec("d2lmini") is None:' in first
    assert "--no-deps" in first, "the install must not replace Colab's own torch"
    assert "pyppmd" in first, "the one dependency Colab lacks must be named"
    assert not code[0].get("outputs"), "where d2lmini is installed the cell prints nothing"


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=edition_id)
def test_no_saved_widget_state_and_readable_widget_placeholders(path):
    notebook = load(path)
    assert "widgets" not in notebook["metadata"], "re-execute with: python tools/run_notebooks.py"
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            assert WIDGET_VIEW not in data
            assert not "".join(data.get("text/plain", "")).startswith(("VBox(", "HBox(", "interactive("))


def test_the_readme_links_every_notebook_to_colab():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    owner_repo = repository_url().removeprefix("https://github.com/")
    for path in NOTEBOOKS + CHINESE:
        relative = path.relative_to(ROOT).as_posix()
        for link in (f"https://colab.research.google.com/github/{owner_repo}/blob/main/{relative}",
                     f"https://kaggle.com/kernels/welcome?src=https://github.com/{owner_repo}/blob/main/{relative}"):
            assert link in readme, f"README: add the badge of {relative}: {link}"


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=edition_id)
def test_the_stored_kernel_name_is_the_one_jupyterlab_sees(path):
    """An older display name makes JupyterLab rewrite the metadata, marking the notebook modified on open."""
    expected = KernelSpecManager().get_kernel_spec("python3").display_name
    assert load(path)["metadata"]["kernelspec"]["display_name"] == expected


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=edition_id)
def test_every_panel_output_stores_its_static_preview(path):
    """A reader without a kernel (GitHub, nbviewer, the course site) sees each panel's preview,
    beside a placeholder in the notebook's language."""
    placeholder = translate(PLACEHOLDER, "zh_CN" if path in CHINESE else "en")
    assert (placeholder == PLACEHOLDER) == (path not in CHINESE)
    for cell in load(path)["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "".join(data.get("text/plain", "")) in (PLACEHOLDER, translate(PLACEHOLDER, "zh_CN")):
                assert "".join(data["text/plain"]) == placeholder, "re-execute: python tools/run_notebooks.py"
                assert 'class="d2l-panel-preview"' in "".join(data.get("text/html", "")), \
                    "re-execute: python tools/run_notebooks.py"


def test_a_notebook_named_to_the_rerun_tool_is_rerun_in_each_chosen_edition(tmp_path):
    """`run_notebooks.py notebooks/09_x.ipynb` re-executes 09 in both editions (it ran only the English,
    and the Chinese kept outputs of code that had changed); `--edition en` only the English."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    english, chinese = NOTEBOOKS[-1], ROOT / "notebooks" / "zh" / NOTEBOOKS[-1].name
    assert tool.in_editions([english], ["en", "zh"]) == [english, chinese]
    assert tool.in_editions([chinese], ["en", "zh"]) == [english, chinese]
    assert tool.in_editions([english, chinese], ["en"]) == [english]
    elsewhere = tmp_path / NOTEBOOKS[-1].name
    assert tool.in_editions([elsewhere], ["en", "zh"]) == [elsewhere]
