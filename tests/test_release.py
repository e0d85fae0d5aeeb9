"""A release: its version written once (pyproject.toml), the package and the notebooks' install cell
reading it from there, and the release workflow checking the tag against it before it publishes."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

import d2lmini

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def pyproject_version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["version"]


def test_the_package_s_version_is_pyproject_s_through_the_installed_metadata():
    assert d2lmini.__version__ == importlib.metadata.version("d2lmini") == pyproject_version()


def test_no_file_of_the_package_writes_the_version_a_second_time():
    literal = re.compile(r"""["']""" + re.escape(pyproject_version()) + r"""["']""")
    written = [str(path.relative_to(ROOT)) for path in (ROOT / "d2lmini").rglob("*.py")
               if literal.search(path.read_text(encoding="utf-8"))]
    assert written == []


def test_readme_s_install_line_names_this_release():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"pip install d2lmini==([\w.]+)", readme) == [pyproject_version()]


def test_the_release_checks_the_tag_then_builds_checks_and_runs_00_before_it_publishes():
    text = WORKFLOW.read_text(encoding="utf-8")
    dist, publish = text.split("\n  publish:\n")
    assert 'tags: ["v*"]' in text
    assert '"$GITHUB_REF_NAME" != "v$version"' in dist and "python tools/colab_cell.py --check" in dist
    assert "python -m build" in dist and "twine check --strict dist/*" in dist
    assert "00_start_here.ipynb" in dist and "dist/d2lmini-*.whl" in dist
    assert "needs: dist" in publish and "name: pypi" in publish and "id-token: write" in publish
    assert "pypa/gh-action-pypi-publish@" in publish and "password" not in publish, "trusted publishing"
    assert "id-token" not in dist, "only the upload holds the token"


def test_ci_s_dry_run_builds_both_and_checks_them_with_twine():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r'^python -m build --outdir "\$scratch/dist" \.', run, re.M), "the sdist and the wheel"
    assert 'twine check --strict "$scratch"/dist/*' in run
