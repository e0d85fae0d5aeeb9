"""Print the pip requirements of the lowest versions d2lmini supports, read from pyproject.toml.

    python tools/lowest_versions.py     # e.g. torch~=2.10.0 numpy~=2.0.0 ... ipywidgets==7.7.1

Each runtime dependency's lower bound becomes a pin: a bound with three parts (ipywidgets>=7.7.1)
is pinned exactly; one with two (torch>=2.10) becomes that release's newest patch (torch~=2.10.0),
as a platform such as Google Colab ships it. `.ci/run` and the GitHub workflow install these in
their Colab-like step, so the bounds in pyproject.toml are what is tested, by construction.
"""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lowest_pins(dependencies: list[str]) -> list[str]:
    """Return one pip requirement per dependency that pins its lower bound (see the module docstring)."""
    pins = []
    for dependency in dependencies:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([\d.]+)\s*(,.*)?", dependency)
        if match is None:
            raise ValueError(f"pyproject.toml: {dependency!r} needs a lower bound written as name>=X.Y")
        name, floor = match.group(1), match.group(2)
        pins.append(f"{name}=={floor}" if floor.count(".") >= 2 else f"{name}~={floor}.0")
    return pins


def main() -> None:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        print(" ".join(lowest_pins(tomllib.load(handle)["project"]["dependencies"])))


if __name__ == "__main__":
    main()
