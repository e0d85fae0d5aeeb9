"""The versions the course supports, tested and documented in one place each (issue #21).

pyproject.toml holds the ranges; tools/lowest_versions.py turns their lower bounds into the pins
that CI's Colab-like step installs; constraints.in pins the locked torch; the README says which
versions are tested, and this file checks that it says what CI runs.
"""

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("lowest_versions", ROOT / "tools" / "lowest_versions.py")
lowest_versions = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(lowest_versions)


def dependencies() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["dependencies"]


def torch_floor() -> str:
    return next(re.search(r">=([\d.]+)", d).group(1) for d in dependencies() if d.startswith("torch"))


def locked_torch() -> str:
    return re.search(r"^torch==([\d.]+)", (ROOT / "constraints.in").read_text(), re.M).group(1)


def test_lower_bounds_become_pins_of_that_release():
    pins = lowest_versions.lowest_pins(["torch>=2.10,<3", "numpy>=2.0", "ipywidgets>=7.7.1,<9"])
    assert pins == ["torch~=2.10.0", "numpy~=2.0.0", "ipywidgets==7.7.1"]


@pytest.mark.parametrize("dependency", ["torch", "torch<3", "torch==2.13.0", "torch>2.10"])
def test_a_dependency_without_a_lower_bound_is_refused_by_name(dependency):
    with pytest.raises(ValueError, match=re.escape(repr(dependency))):
        lowest_versions.lowest_pins([dependency])


def test_every_runtime_dependency_has_a_lower_bound_that_ci_installs():
    pins = lowest_versions.lowest_pins(dependencies())
    assert len(pins) == len(dependencies())
    assert f"torch~={torch_floor()}.0" in pins


def test_the_lowest_torch_supported_is_below_the_locked_one():
    floor, locked = (tuple(int(p) for p in v.split(".")[:2]) for v in (torch_floor(), locked_torch()))
    assert floor < locked, "the Colab-like CI step must test an older torch than the lock"


def test_the_readme_names_the_tested_torch_versions():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("Tested with PyTorch"))
    assert f"{torch_floor()} (the lowest supported" in line
    assert f"{locked_torch()} (the lock" in line
    assert "newest" in line


def test_ci_installs_the_lowest_versions_from_pyproject():
    for path in (ROOT / ".ci" / "run", ROOT / ".github" / "workflows" / "ci.yml"):
        assert "tools/lowest_versions.py" in path.read_text(encoding="utf-8"), path
