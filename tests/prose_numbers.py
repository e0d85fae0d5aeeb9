"""The number scan: every number in a notebook's Markdown must be one its stored outputs show.

Used by tests/test_prose_numbers.py (issue #18). A number in the prose counts as shown when a
stored output of the same notebook prints a number that rounds to it at the digits the prose
gives ("4.55" matches 4.5496; "130,000" matches 130,509, its trailing zeros read as rounding;
"23%" matches 0.23 or 23). What is not a claim is left out before scanning: LaTeX formulas,
code, link targets, notebook and section numbers ("notebook 05", "§6b", "## 6 ·", "04 ·"),
list markers, and the Exercises section (question data, owned by the exercises). Everything
else that no output shows must be on the reviewed list in prose_numbers_allowed.toml.
"""

import json
import re
import tomllib
from pathlib import Path

ALLOWED_FILE = Path(__file__).with_name("prose_numbers_allowed.toml")

NOT_CLAIMS = [
    re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S),                 # LaTeX formulas
    re.compile(r"```.*?```|`[^`\n]+`", re.S),                    # code
    re.compile(r"\]\([^)]*\)|https?://\S+"),                      # link targets
    re.compile(r"(?:§|\b[Nn]otebooks? |\b[Ss]ections? )\d+[a-z]?"
               r"(?:(?:,| and| or|–|-)\s*\d+[a-z]?)*"),            # cross-references in the course
    re.compile(r"\b\d\d(?= ·)"),                                  # "04 · RNN from scratch"
    re.compile(r"^\s*#+\s*\d+[a-z]?\b|^\s*\d+[.)]\s", re.M),      # numbered headings, list markers
]
PROSE_NUMBER = re.compile(r"(?<![\w.\-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)(%?)")
OUTPUT_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?")


def claim_cells(notebook: dict) -> list[str]:
    """Return the Markdown cells' text, without the Exercises section (up to the next `## `)."""
    cells, in_exercises = [], False
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        if re.match(r"\s*## ", text):
            in_exercises = text.lstrip().startswith("## Exercises")
        if not in_exercises:
            cells.append(text)
    return cells


def prose_numbers(text: str) -> list[str]:
    """Return the numbers `text` states as claims, as written (commas dropped, '%' kept)."""
    for pattern in NOT_CLAIMS:
        text = pattern.sub(" ", text)
    return [m.group(0).replace(",", "") for m in PROSE_NUMBER.finditer(text)]


DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
SANITIZE_FILE = Path(__file__).resolve().parents[1] / "notebooks" / "sanitize.cfg"


def machine_dependent() -> list[re.Pattern]:
    """The patterns nbval's sanitize file removes (timings, rates, addresses, devices).

    What they match differs from machine to machine, so a number inside one shows nothing the
    prose could rely on (a timing of "32.13 ms" must not count as showing a setting of 32).
    """
    lines = SANITIZE_FILE.read_text(encoding="utf-8").splitlines()
    return [re.compile(line.split(":", 1)[1].strip()) for line in lines if line.startswith("regex:")]


def output_numbers(notebook: dict) -> set[float]:
    """Return every number printed in the stored outputs (streams and text/* data) of `notebook`."""
    found, unstable = set(), machine_dependent()
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [v for k, v in output.get("data", {}).items()
                                                  if k.startswith("text/")]
            for text in texts:
                # An <img>'s base64 PNG holds digits by chance; its alt text is what it shows.
                text = DATA_URI.sub("", "".join(text))
                for pattern in unstable:
                    text = pattern.sub("", text)
                for m in OUTPUT_NUMBER.finditer(text):
                    found.add(float(m.group(0).replace(",", "")))
    return found


def is_shown(number: str, shown: set[float]) -> bool:
    """Return whether some shown value rounds to `number` at the digits it is written with."""
    percent = number.endswith("%")
    digits = number.rstrip("%")
    value = float(digits)
    if "." in digits:
        places = len(digits.split(".")[1])
    else:
        places = -(len(digits) - len(digits.rstrip("0"))) if len(digits) > 3 else 0
    candidates = shown | ({100 * x for x in shown} if percent else set())
    return any(round(x, places) == round(value, places) for x in candidates)


def load_allowed() -> dict[str, dict[str, str]]:
    """Return {notebook: {number: reason}} from the reviewed allow-list."""
    with open(ALLOWED_FILE, "rb") as handle:
        entries = tomllib.load(handle)["allowed"]
    allowed: dict[str, dict[str, str]] = {}
    for entry in entries:
        for number in entry["numbers"]:
            allowed.setdefault(entry["notebook"], {})[number] = entry["reason"]
    return allowed


def load_shown_elsewhere() -> dict[str, dict[str, str]]:
    """Return {notebook: {number: other notebook}}: numbers the prose quotes from another notebook.

    Each is checked against the stored outputs of the notebook it names (a cross-reference that
    goes stale when that notebook's run changes fails, as a number of the notebook's own would).
    """
    with open(ALLOWED_FILE, "rb") as handle:
        entries = tomllib.load(handle).get("shown_elsewhere", [])
    quoted: dict[str, dict[str, str]] = {}
    for entry in entries:
        for number in entry["numbers"]:
            quoted.setdefault(entry["notebook"], {})[number] = entry["shown_in"]
    return quoted


def load_computed_by() -> dict[str, str]:
    """Return {notebook: tool}: notebooks whose prose quotes what a script under tools/ prints."""
    with open(ALLOWED_FILE, "rb") as handle:
        entries = tomllib.load(handle).get("computed_by", [])
    return {entry["notebook"]: entry["tool"] for entry in entries}


def tool_numbers(tool: str) -> set[float]:
    """Every number that tools/<tool>.py prints in its table (its `main` with no arguments)."""
    import contextlib
    import importlib.util
    import io

    path = Path(__file__).resolve().parents[1] / "tools" / f"{tool}.py"
    spec = importlib.util.spec_from_file_location(f"tool_{tool}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        module.main([])
    return {float(m.group(0).replace(",", "")) for m in OUTPUT_NUMBER.finditer(printed.getvalue())}


def unshown_numbers(path: Path) -> list[str]:
    """Return the numbers in `path`'s prose that no stored output of it shows (nor the tool that
    computes its numbers, where one is named in the allow-list's `computed_by`), in order."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    shown = output_numbers(notebook)
    tool = load_computed_by().get(path.stem)
    if tool:
        shown |= tool_numbers(tool)
    return [n for text in claim_cells(notebook) for n in prose_numbers(text) if not is_shown(n, shown)]
