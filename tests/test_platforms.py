"""Where students open the course: the README's badges, Binder's and the devcontainer's
requirements, and what tools/simulate_platforms.py installs as each platform (the simulation
itself runs in .ci/run: it installs, downloads and runs every notebook, minutes of work)."""

import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
SPEC = importlib.util.spec_from_file_location("simulate_platforms", ROOT / "tools" / "simulate_platforms.py")
simulate_platforms = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(simulate_platforms)


def repository() -> str:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["urls"]["Repository"].removeprefix("https://github.com/")


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_colab_badge_has_a_kaggle_badge_beside_it():
    lines = readme().splitlines()
    for path in NOTEBOOKS:
        colab = f"https://colab.research.google.com/github/{repository()}/blob/main/notebooks/{path.name}"
        kaggle = f"https://kaggle.com/kernels/welcome?src=https://github.com/{repository()}/blob/main/notebooks/{path.name}"
        (line,) = [line for line in lines if colab in line]
        assert kaggle in line, f"README: a Kaggle badge beside {path.name}'s Colab badge"


def test_the_readme_says_kaggle_needs_a_verified_phone_for_the_internet():
    text = " ".join(readme().split())
    assert re.search(r"Kaggle keeps a notebook's internet off until the account's phone number is\s*verified",
                     text.replace("**", ""))


def test_the_binder_badge_opens_the_course_map():
    assert f"https://mybinder.org/v2/gh/{repository()}/main?urlpath=lab/tree/notebooks/00_start_here.ipynb" \
        in readme()


def test_binder_installs_the_cpu_torch_and_the_quick_starts_requirements():
    lines = [line for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    assert simulate_platforms.TORCH_CPU_INDEX in lines
    assert "-r ../requirements.txt" in lines, "Binder installs what the README's quick start installs"
    (torch,) = [line for line in lines if line.startswith("torch")]
    with open(ROOT / "pyproject.toml", "rb") as handle:
        assert torch in tomllib.load(handle)["project"]["dependencies"], "the same range as pyproject.toml"


def test_binder_names_a_python_that_pyproject_accepts_and_the_check_builds_with_it(tmp_path, monkeypatch):
    """Without binder/runtime.txt the builder's default Python (3.10 in its newest source read here) meets
    requires-python >= 3.11 and the build stops; the simulation must use the runtime's Python, not its own."""
    from packaging.specifiers import SpecifierSet
    version = simulate_platforms.binder_python_version()
    with open(ROOT / "pyproject.toml", "rb") as handle:
        required = SpecifierSet(tomllib.load(handle)["project"]["requires-python"])
    assert f"{version}.0" in required, f"binder/runtime.txt's Python {version} is refused by {required}"
    monkeypatch.setattr(simulate_platforms, "ROOT", tmp_path)
    (tmp_path / "binder").mkdir()
    with pytest.raises(simulate_platforms.SimulationFailed, match="runtime.txt is missing"):
        simulate_platforms.binder_python_version()
    (tmp_path / "binder" / "runtime.txt").write_text("python-3.99\n")
    with pytest.raises(simulate_platforms.SimulationFailed, match="lacks"):
        simulate_platforms.binder_python()


def test_the_devcontainer_is_python_3_11_with_binders_requirements():
    config = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())
    assert re.fullmatch(r"mcr\.microsoft\.com/devcontainers/python:1-3\.11-\w+", config["image"])
    assert config["postCreateCommand"] == "python -m pip install -r binder/requirements.txt"


def test_the_colab_like_venv_is_the_lowest_versions_without_what_the_cell_must_install():
    requirements = simulate_platforms.base_requirements("colab", None)
    assert "ipywidgets==7.7.1" in requirements and any(r.startswith("torch~=2.") for r in requirements)
    named = {re.match(r"[\w-]+", r).group(0) for r in requirements}
    assert not named & set(simulate_platforms.CELL_INSTALLS)
    assert simulate_platforms.base_requirements("colab", "torch==2.13.0")[0] == "torch==2.13.0"


def test_the_kaggle_like_venv_has_the_newest_torch_in_range_ipywidgets_8_and_no_anywidget():
    requirements = simulate_platforms.base_requirements("kaggle", None)
    assert "ipywidgets>=8,<9" in requirements and "-c" not in requirements  # the newest, not the lock
    torch_range = next(r for r in requirements if r.startswith("torch"))
    assert torch_range in simulate_platforms.declared_dependencies()
    assert not {r.split(">")[0] for r in requirements} & set(simulate_platforms.CELL_INSTALLS)


def test_a_reused_venv_must_already_hold_the_platforms_packages():
    """.ci/run hands its lowest and newest venvs to the Colab- and Kaggle-like runs; pip checks them."""
    here = Path(sys.executable)
    assert simulate_platforms.lacking(here, ["pytest"], "pytest is here") == []
    with pytest.raises(simulate_platforms.SimulationFailed, match="no such pytest"):
        simulate_platforms.lacking(here, ["pytest==0.0.0.1"], "no such pytest")


def test_the_chinese_edition_a_platform_runs_has_every_notebook_with_the_same_install_cell():
    """.ci/run runs the Chinese edition under nbval at the newest (--edition zh) and checks the install
    cells on the English notebooks: both hold only if the editions pair up, cell for cell."""
    english, chinese = simulate_platforms.EDITIONS["en"], simulate_platforms.EDITIONS["zh"]
    assert [p.name for p in chinese] == [p.name for p in english]
    for en, zh in zip(english, chinese, strict=True):
        codes = [c for c in json.loads(zh.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        assert "D2LMINI_LANG" in "".join(codes[0]["source"]), zh.name
        assert "".join(codes[1]["source"]) == simulate_platforms.first_cell(en), zh.name


def test_the_readme_and_notebook_00_link_the_course_site_in_both_languages():
    """The site (pyproject's Documentation address, published from main by site.yml) is linked at README's top
    and in 00."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        site = tomllib.load(handle)["project"]["urls"]["Documentation"]
    owner, name = repository().split("/")
    assert site == f"https://{owner}.github.io/{name}/", "GitHub Pages' address of this repository"
    top = readme().split("## The course")[0]
    assert f"<{site}>" in top and f"<{site}zh/>" in top
    start = (ROOT / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8")
    assert f"<{site}>" in start and f"<{site}zh/>" in start, "notebook 00 links the site too"
    workflow = (ROOT / ".github" / "workflows" / "site.yml").read_text(encoding="utf-8")
    assert "actions/deploy-pages" in workflow and "main" in workflow
