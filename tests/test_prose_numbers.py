"""Every number in a notebook's prose is shown by one of its stored outputs, or reviewed (#18).

The scan itself is tests/prose_numbers.py; the reviewed exceptions, each with its reason, are
tests/prose_numbers_allowed.toml. A stale exception (a number no longer in the prose, or now
shown by an output) fails too, so the list cannot grow quietly.
"""

import json
from pathlib import Path

import pytest
from prose_numbers import (
    claim_cells,
    is_shown,
    load_allowed,
    load_shown_elsewhere,
    output_numbers,
    prose_numbers,
    unshown_numbers,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_prose_number_is_shown_or_reviewed(path):
    allowed = load_allowed().get(path.stem, {}) | load_shown_elsewhere().get(path.stem, {})
    unexplained = [n for n in unshown_numbers(path) if n not in allowed]
    assert not unexplained, (
        f"{path.name}: the prose states {unexplained}, which no stored output shows: print and "
        "assert it in the cell that measures it, or add it to tests/prose_numbers_allowed.toml "
        "with the reason")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stale_exceptions(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    in_prose = {n for text in claim_cells(notebook) for n in prose_numbers(text)}
    unshown = set(unshown_numbers(path))
    for number in load_allowed().get(path.stem, {}):
        assert number in in_prose, f"{path.name}: {number} is allowed but no longer in the prose"
        assert number in unshown, f"{path.name}: {number} is allowed but an output shows it now"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_numbers_quoted_from_another_notebook_are_shown_there(path):
    quoted = load_shown_elsewhere().get(path.stem, {})
    notebook = json.loads(path.read_text(encoding="utf-8"))
    in_prose = {n for text in claim_cells(notebook) for n in prose_numbers(text)}
    for number, other in quoted.items():
        assert number in in_prose, f"{path.name}: {number} is listed as quoted but is not in the prose"
        source = json.loads((ROOT / "notebooks" / f"{other}.ipynb").read_text(encoding="utf-8"))
        assert is_shown(number, output_numbers(source)), (
            f"{path.name} quotes {number} from {other}, whose stored outputs no longer show it")


def test_a_cross_reference_is_checked_in_the_notebook_it_names():
    def shown_by(stem):
        return output_numbers(json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8")))
    # 06 quotes 04's clipped share: 04's outputs show it; a share 04's run did not print is refused
    quoted = load_shown_elsewhere()["06_gradient_clipping"]
    assert quoted == {"24%": "04_rnn_scratch"}
    assert is_shown("24%", shown_by("04_rnn_scratch")) and not is_shown("93%", shown_by("04_rnn_scratch"))


def test_every_allowed_entry_names_a_notebook_and_a_reason():
    stems = {p.stem for p in NOTEBOOKS}
    for notebook, numbers in load_allowed().items():
        assert notebook in stems
        assert all(len(reason) > 20 for reason in numbers.values())


def test_readme_cross_references_are_in_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for numbers in load_allowed().values():
        for number, reason in numbers.items():
            if reason.startswith("README"):
                assert number in readme, f"{number} is said to come from the README"


@pytest.mark.parametrize("planted", ["The RNN reaches 5.8317 here.", "about 42,017 characters",
                                     "clipped in 37% of the minibatches"])
def test_scan_fails_on_a_planted_number(tmp_path, planted):
    source = ROOT / "notebooks" / "07_perplexity.ipynb"
    notebook = json.loads(source.read_text(encoding="utf-8"))
    notebook["cells"][3]["source"] = ["".join(notebook["cells"][3]["source"]) + "\n" + planted]
    copy = tmp_path / source.name
    copy.write_text(json.dumps(notebook), encoding="utf-8")
    assert unshown_numbers(source) != unshown_numbers(copy)
    assert set(unshown_numbers(copy)) - set(unshown_numbers(source)) == set(prose_numbers(planted))


def test_rounding_to_the_digits_shown():
    shown = {4.5496, 130509.0, 0.2308, 17.94}
    assert is_shown("4.55", shown) and not is_shown("4.56", shown)
    assert is_shown("130000", shown) and not is_shown("132000", shown)
    assert is_shown("23%", shown) and not is_shown("24%", shown)
    assert is_shown("18", shown) and not is_shown("17", shown)


def test_formulas_code_and_cross_references_are_not_claims():
    text = ("## 6 · Section\n1. In notebook 05 and §6b, $\\log_2 27 \\approx 4.75$ and `lr=0.01`, "
            "see [04 · RNN](04_rnn_scratch.ipynb), but 3.14 is a claim.")
    assert prose_numbers(text) == ["3.14"]


def test_output_numbers_reads_streams_and_rich_text():
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["perplexity 6.38, 1,892 positions\n"]},
        {"output_type": "display_data", "data": {"text/markdown": "| KN | 4.55 |"}}]}]}
    assert output_numbers(notebook) == {6.38, 1892.0, 4.55}
