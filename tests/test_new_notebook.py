"""Adding a notebook is one command (tools/new_notebook.py) plus the notebook: shown on a throwaway copy.

The repository's files are copied into a temporary folder (a git repository of its own, so that
`git status` there lists what adding a notebook changed); the tool adds `10_demo` to the copy, a
contributor's edits follow (cells of the notebook, their Chinese, the panel's keyboard steps, the
answer), the tool runs again and executes it in both editions, and the course's own tests of
structure, navigation, storage, reader cells, study times, grading files and translations run in
the copy. Nothing is written into this repository.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STEM = "10_demo"
DECLARATION = [
    "--title",
    "A demo",
    "--title-zh",
    "演示",
    "--idea",
    "A throwaway notebook that shows how a notebook is added.",
    "--idea-zh",
    "一个用完即弃的笔记本，演示如何添加笔记本。",
    "--exercises",
    "one_hot",
    "--sections",
    "d2l_zh=8.4",
    "d2l_en=9.4",
    "dlfs2=5.2",
]
# What a contributor writes: (kind, English, Chinese, tagged) cells after the imports and after
# "## Exercises".
LESSON = [
    (
        "markdown",
        "Softmax with a temperature $T$ divides the scores by $T$; the probabilities sum to one at "
        "every $T$.",
        "带温度 $T$ 的 softmax 先把分数除以 $T$；在任何 $T$ 下，概率之和都是1。",
        False,
    ),
    (
        "code",
        "from d2lmini.widgets.start import (\n"
        "    EXAMPLE_SCORES, make_temperature_panel, softmax_with_temperature)\n\n"
        "for temperature in (0.5, 1.0, 2.0):\n"
        "    total = sum(softmax_with_temperature(EXAMPLE_SCORES, temperature).values())\n"
        '    print(f"T = {temperature}: the probabilities sum to {total:.6f}")\n'
        "    assert abs(total - 1) < 1e-12\n"
        "assert len(EXAMPLE_SCORES) > 1\n"
        "assert max(softmax_with_temperature(EXAMPLE_SCORES, 0.5).values()) > 0.3\n"
        'assert device.type in ("cpu", "cuda", "mps")\n'
        "assert callable(make_temperature_panel)",
        "",
        True,
    ),
    ("code", "panel = make_temperature_panel()\npanel.widget", "", False),
]
EXERCISE = [
    (
        "markdown",
        "**Exercise 1.** Which way of cutting minibatches lets the state of one minibatch carry over "
        "to the next?",
        "**练习1.** 哪一种划分小批量的方式能让一个小批量的状态延续到下一个小批量？",
        False,
    ),
    (
        "code",
        'answer = None  # your answer: "random" or "sequential"\nex.check_carry_state(answer)',
        "",
        False,
    ),
]
SUMMARY = (
    "## Summary\n\n- Softmax probabilities sum to one at every temperature.",
    "## 小结\n\n- 在任何温度下，softmax 的概率之和都是1。",
)
GLOSSARY_TERMS = [
    ("token", "词元", "the unit of text a model reads", "模型读入的文本单位"),
    ("vocabulary", "词表", "the known tokens, each with an index", "已知的词元，每个都有索引"),
    ("minibatch", "小批量", "a few sequences processed together", "一起处理的几条序列"),
    (
        "temperature",
        "温度",
        "what the scores are divided by before the softmax",
        "在 softmax 之前分数要除以的数",
    ),
]
GLOSSARY = (
    '## Glossary\n\n| English | <span lang="zh">中文</span> | meaning |\n|---|---|---|\n'
    + "\n".join(
        f'| {en} | <span lang="zh">{zh}</span> | {meaning} |' for en, zh, meaning, _ in GLOSSARY_TERMS
    ),
    "## 术语表\n\n| 英文 | 中文 | 含义 |\n|---|---|---|\n"
    + "\n".join(f"| {en} | {zh} | {meaning} |" for en, zh, _, meaning in GLOSSARY_TERMS),
)
KEYBOARD = '("slider", "temperature: divides every score", ["ArrowLeft", "ArrowLeft"]),'
QUICK_TESTS = [
    "tests/test_navigation.py",
    "tests/test_notebook_structure.py",
    "tests/test_notebook_storage.py",
    "tests/test_reader_cells.py",
    "tests/test_study_time.py",
    "tests/test_grading.py::test_the_shipped_exercise_list_is_the_released_notebooks",
    "tests/test_grading.py::test_the_default_config_grades_every_exercise",
]


def copy_repository(target: Path) -> None:
    """The working tree's files that git does not ignore, in a repository of their own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"],
    ):
        subprocess.run(["git", *command], cwd=target, check=True, capture_output=True)


def run(copy: Path, *arguments: str) -> subprocess.CompletedProcess:
    """Run Python in the copy, its own d2lmini first on the path."""
    env = os.environ | {"PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}
    env.pop("D2LMINI_LANG", None)
    return subprocess.run([sys.executable, *arguments], cwd=copy, env=env, capture_output=True, text=True)


def add_cells(notebook, after: int, cells) -> None:
    for offset, (kind, english, _, tagged) in enumerate(cells, 1):
        cell = (
            nbformat.v4.new_markdown_cell(english)
            if kind == "markdown"
            else nbformat.v4.new_code_cell(english)
        )
        if tagged:
            cell.metadata["tags"] = ["nbval-check-output"]
        notebook.cells.insert(after + offset, cell)


def write_the_notebook(copy: Path) -> dict[str, str]:
    """A contributor's edits of the skeleton; return the Chinese of each markdown cell written."""
    path = copy / "notebooks" / f"{STEM}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    sources = [cell.source for cell in notebook.cells]
    imports = next(i for i, s in enumerate(sources) if s.startswith("from d2lmini.device"))
    add_cells(notebook, next(i for i, s in enumerate(sources) if s.startswith("## Exercises")), EXERCISE)
    add_cells(notebook, imports, LESSON)
    for cell in notebook.cells:
        if cell.source.startswith("## Summary"):
            cell.source = SUMMARY[0]
        elif cell.source.startswith("## Glossary"):
            cell.source = GLOSSARY[0]
    nbformat.write(notebook, path)
    return {english: chinese for kind, english, chinese, _ in LESSON + EXERCISE if kind == "markdown"} | dict(
        [SUMMARY, GLOSSARY]
    )


def translate(copy: Path, chinese: dict[str, str]) -> None:
    """Put the contributor's Chinese into the new notebook's catalog (a translator's edit of the .po)."""
    (copy / "chinese.json").write_text(json.dumps(chinese, ensure_ascii=False), encoding="utf-8")
    done = run(
        copy,
        "-c",
        "import json, sys; sys.path.insert(0, 'tools'); import translations; "
        f"path = translations.NOTEBOOK_LOCALE / '{STEM}.po'; catalog = translations.read_catalog(path); "
        "[catalog.add(en, zh) for en, zh in json.load(open('chinese.json', encoding='utf-8')).items()]; "
        "translations.write_catalog(catalog, path)",
    )
    (copy / "chinese.json").unlink()
    assert done.returncode == 0, done.stderr


def finish_the_declaration(copy: Path) -> None:
    """The two entries only the contributor knows: the panel's keyboard steps and the question's answer."""
    course = copy / "tests" / "course.py"
    row = f'    Notebook("{STEM}", "one_hot"),'
    text = course.read_text(encoding="utf-8")
    assert row in text, "the tool writes the notebook's row into tests/course.py"
    line = next(line for line in text.splitlines() if line.startswith(row))
    course.write_text(
        text.replace(line, f'    Notebook("{STEM}", "one_hot", keyboard=(\n        {KEYBOARD}\n    )),'),
        encoding="utf-8",
    )
    solutions = copy / "solutions" / "notebook_10.py"
    solutions.write_text(
        solutions.read_text(encoding="utf-8").replace(
            "ANSWERS = {}", 'ANSWERS = {"check_carry_state": "sequential"}'
        ),
        encoding="utf-8",
    )


def changed_files(copy: Path) -> list[str]:
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(line[3:] for line in status.splitlines())


def outcomes(copy: Path) -> dict[str, str]:
    """Each quick test's outcome in the copy ("PASSED", "FAILED", "ERROR"), by its id."""
    # The unit's length is a decision of the course, not an entry: any further core notebook exceeds it.
    done = run(
        copy,
        "-m",
        "pytest",
        "-v",
        "--tb=no",
        "-m",
        "not browser and not slow",
        *QUICK_TESTS,
        "--deselect",
        "tests/test_study_time.py::test_the_core_path_fits_the_unit",
    )
    found = re.findall(r"^(tests/\S+) (PASSED|FAILED|ERROR)", done.stdout, re.M)
    assert found, done.stdout[-3000:] + done.stderr[-2000:]
    return dict(found)


def translation_problems(copy: Path) -> set[str]:
    """What tools/translations.py's check finds in the copy."""
    done = run(
        copy,
        "-c",
        "import sys; sys.path.insert(0, 'tools'); import translations; "
        "print('\\n'.join(translations.check()))",
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.splitlines())


def test_a_notebook_added_with_the_tool_passes_the_course_tests(tmp_path):
    """The quick tests that passed in the copy before still pass, and those of 10_demo pass too (a test
    that already failed there, through someone's work in progress, is not the tool's)."""
    copy = tmp_path / "course"
    copy_repository(copy)
    before = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    baseline, untranslated = outcomes(copy), translation_problems(copy)

    first = run(copy, "tools/new_notebook.py", STEM, *DECLARATION, "--no-run")
    assert first.returncode == 0, first.stdout + first.stderr
    translate(copy, write_the_notebook(copy))
    finish_the_declaration(copy)
    again = run(copy, "tools/new_notebook.py", STEM)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "translate in" not in again.stdout, again.stdout

    stored = json.loads((copy / "notebooks" / "zh" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    assert any(cell.get("outputs") for cell in stored["cells"]), "the Chinese edition was executed"
    result = outcomes(copy)
    broken = sorted(
        test for test, outcome in result.items() if outcome != "PASSED" and baseline.get(test) != outcome
    )
    assert not broken, broken
    ours = [test for test in result if f"[{STEM}]" in test]
    assert len(ours) >= 10 and all(result[test] == "PASSED" for test in ours), ours
    assert translation_problems(copy) - untranslated == set()

    print("files changed to add a notebook:", len(changed_files(copy)), *changed_files(copy), sep="\n  ")
    after = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    assert {line for line in after.splitlines() if "10_demo" in line or "notebook_10" in line} == {
        line for line in before.splitlines() if "10_demo" in line or "notebook_10" in line
    }, "the tool wrote into this repository"
