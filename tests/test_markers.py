"""Every test module says whether its result depends on torch, so CI's newest and lowest runs miss none.

CI runs each test where its result can change: the modules marked `torch_dependent` at the newest and
the lowest torch (two versions, two CPU paths), every other module once, at the locked versions, and
the grader's sandboxed ones (`sandboxes`, also `torch_dependent`) once, at the lock (README, "Tests").
A module is marked when what it asserts is
computed by torch while the test runs (kernels, random streams, numerical tolerances) or exercises
torch's API (grad and inference modes, devices, default dtype, interrupts inside torch calls,
optimizers, tensors on the grader's wire). Every other module is listed below with the reason its
result cannot change with torch's version, so a new test module must choose one or the other.
"""

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

TORCH_FREE = {
    "test_build_site_arguments": "the site builder's command line, checked before Sphinx runs; no tensor",
    "test_colab_cell": "the install cell's shell logic, run with pip against fake and failing indexes",
    "test_corpus": "downloads, checksums and caches of text files",
    "test_cost": "the time estimate's arithmetic over settings; no tensor is computed",
    "test_exercise_outputs": "reads the stored notebooks' JSON",
    "test_grading_cli": "the grader's command line, config, roster and output files; no kernel runs",
    "test_grading_remote_time": "the time limit sent to a stand-in caller process and its wait; no tensor",
    "test_grading_outputs": "the grader's CSV cells, output folders and rubric files; no kernel runs",
    "test_grading_links": "the grader's opens, copies and owners of files amid links; no check runs",
    "test_grading_retry": "the grader's second try at a kernel that did not start; no kernel runs",
    "test_grading_similarity": "compares functions' source text as tokens (ast, tokenize, difflib)",
    "test_i18n": "gettext's catalogs chosen by an environment variable; no tensor is computed",
    "test_lint": "ruff over the sources",
    "test_markers": "reads the test modules' sources",
    "test_markov": "the Markov source and its entropy rate, in numpy",
    "test_navigation": "reads the notebooks' links and tests/course.py",
    "test_nbval_setup": "the nbval collector's configuration",
    "test_new_notebook": "adds a notebook to a copy of the course with its tools, runs its structure tests",
    "test_ngram": "the n-gram baselines, in numpy, against nltk",
    "test_notebook_storage": "reads the stored notebooks' JSON",
    "test_notebook_structure": "reads the stored notebooks' JSON",
    "test_package_layout": "reads the package's imports and README's module table",
    "test_page_code": "compares the notebooks' page code with the package's source text",
    "test_palette": "colour arithmetic (contrast, colour-vision simulation) and matplotlib figures",
    "test_platforms": "reads README's badges, the requirement files and the simulated platforms' specs",
    "test_plot": "matplotlib figures of given numbers",
    "test_prose_numbers": "reads the notebooks' prose",
    "test_reader_cells": "reads the notebooks' section tables, glossaries and Questions cells",
    "test_site_catalogs": "the site's gettext catalogs against site/index.md and docs/instructors.md (Babel)",
    "test_settings_controls": "ipywidgets controls made from declarations and read back; no tensor computed",
    "test_translations": "the catalogs, the Chinese notebooks' sources and a font; no tensor is computed",
    "test_release": "the version in pyproject, the package metadata and the release workflow; no tensor",
    "test_runs": "the run store's bookkeeping over given results",
    "test_settings": "the settings' declarations and what is derived from them",
    "test_study_time": "counts words and cells of the stored notebooks",
    "test_text": "tokenising and vocabularies, in pure Python",
    "test_verdicts": "verdicts over given perplexities",
    "test_zh_outputs": "reads the Chinese notebooks' stored outputs",
    "test_versions": "reads pyproject.toml, the lock and the README",
}

# Modules that use torch only to make the words they check: what they assert (the package's sentences in
# Chinese and in English, read from its catalogs) cannot change with torch's version, and the numbers and
# verdicts inside those sentences are asserted, at every version, by the modules marked torch_dependent.
# They run once, at the lock. test_i18n_core stays torch_dependent: at the lowest it reads the catalogs
# from the installed wheel, which proves the wheel ships them.
WORDS_ONLY = {
    "test_i18n_exercises": "the exercises' feedback and panels in both languages (checks: test_exercises_*)",
    "test_i18n_grading": "the grader's notes and reasons in Chinese and English (grading: test_grading*)",
    "test_i18n_widgets": "the panels' labels, alts and verdicts in both languages (panels: test_widgets_*)",
}


def _modules():
    return sorted(path for path in TESTS.glob("test_*.py"))


def _marks(source: str) -> set[str]:
    """The names of the marks a module's `pytestmark = pytest.mark.NAME` gives all its tests."""
    marks = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            marks |= {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)} - {"mark"}
    return marks


@pytest.mark.parametrize("path", _modules(), ids=lambda path: path.stem)
def test_each_module_is_torch_dependent_or_says_why_not(path):
    marks = _marks(path.read_text(encoding="utf-8"))
    if "browser" in marks:  # the browser tests run once, at the locked versions
        return
    dependent = "torch_dependent" in marks
    listed = (path.stem in TORCH_FREE) + (path.stem in WORDS_ONLY)
    assert dependent + listed == 1, (
        f"{path.name}: give it `pytestmark = pytest.mark.torch_dependent` or list it in TORCH_FREE "
        "(or WORDS_ONLY) with the reason its result cannot change with torch's version" if not dependent
        else f"{path.name} is marked torch_dependent and listed as independent of torch: choose one")


@pytest.mark.parametrize("name", sorted(TORCH_FREE))
def test_a_module_said_torch_free_does_not_import_torch(name):
    path = TESTS / f"{name}.py"
    assert path.is_file(), f"TORCH_FREE names {name}, which is not a test module"
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert "torch" not in imported, f"{name} imports torch: mark it torch_dependent"
