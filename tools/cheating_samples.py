"""Cheating submissions of notebook 02 for the grader's isolation tests: none solves anything itself.

Each is the released notebook 02 (every exercise unanswered) with cells a student who has read
the repository and knows where the instructor grades (`Places`) would add. Each tries one way
to score without solving: through the in-kernel machinery, after or beside the run, through a
classmate, or through the package's own code. Without a sandbox several of them succeed;
graded in bubblewrap every one must score 0 and leave the instructor's files and the other
students alone. Used by tests/test_grading_isolation.py.
"""

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from grading_samples import released

STUB = r"(?s)^def fused_step\(.*return None"


@dataclass(frozen=True)
class Places:
    """What the cheater knows of the grading machine: the output, the submissions, a classmate's file."""

    out: Path
    submissions: Path
    classmate: Path  # an honest classmate's notebook
    package: Path  # the installed d2lmini folder


def tree_hash(folder: Path) -> str:
    """One digest of every file under `folder`, names and bytes (`__pycache__` left out)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _index(notebook, pattern: str) -> int:
    return next(i for i, c in enumerate(notebook.cells)
                if c.cell_type == "code" and re.search(pattern, c.source))


def _replacing_stub(source: str) -> nbformat.NotebookNode:
    notebook = released("02", whole=False)
    notebook.cells[_index(notebook, STUB)].source = source
    return notebook


def _before_stub(source: str) -> nbformat.NotebookNode:
    notebook = released("02", whole=False)
    notebook.cells.insert(_index(notebook, STUB), nbformat.v4.new_code_cell(source))
    return notebook


def _writer(places: Places, seconds: int) -> str:
    """Python that keeps overwriting the grader's output files and the classmates' feedback."""
    out = json.dumps(str(places.out))
    return (f"import glob, os, time\nOUT = {out}\n"
            f"for _ in range({seconds * 4}):\n"
            "    targets = [OUT + '/gradebook.csv', OUT + '/results.json']\n"
            "    targets += glob.glob(OUT + '/feedback/*.md')\n"
            "    for target in targets:\n"
            "        try:\n            open(target, 'w').write('student,total\\ncheater,100\\n')\n"
            "        except OSError:\n            pass\n"
            "    time.sleep(0.25)\n")


def cheating_class(places: Places) -> dict[str, nbformat.NotebookNode]:
    """Cheating submissions, by the kind of attack: name -> notebook."""
    samples = {}
    samples["patches_agent_and_hooks"] = _replacing_stub(
        "import sys\nimport d2lmini.exercises.guard.refusals as refusals\n"
        "import d2lmini.grading.run.agent as agent\n"
        "from d2lmini.rnn import rnn_step\n"
        "sys.setprofile = lambda *args: None\nrefusals.Refuser.__call__ = lambda self, *args: None\n"
        "agent.save_function.__globals__['cloudpickle'].dumps = lambda f, *a, **k: b'not a pickle'\n\n"
        "def fused_step(X, H, W_xh, W_hh, b_h):\n    return rnn_step(X, H, W_xh, W_hh, b_h)\n")
    samples["detached_process_rewrites_gradebook"] = _before_stub(
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {_writer(places, 90)!r}], start_new_session=True,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    samples["fork_child_and_daemon_thread"] = _before_stub(
        "import os, threading\n"
        f"WRITER = {_writer(places, 90)!r}\n"
        "threading.Thread(target=exec, args=(WRITER, {}), daemon=True).start()\n"
        "if os.fork() == 0:\n    os.setsid()\n    exec(WRITER, {})\n    os._exit(0)\n")
    samples["edits_installed_checker"] = _before_stub(
        "import pathlib\nimport d2lmini.exercises.concat_matmul as target\n"
        "path = pathlib.Path(target.__file__)\n"
        "forged = ('\\n\\ndef check_fused_step(*args, **kwargs):\\n'\n"
        "          '    from d2lmini.exercises import Verdict\\n    return Verdict(True, \"Correct!\")\\n')\n"
        "for victim in (path, path.parents[1] / 'grading' / 'judging' / 'judge.py'):\n"
        "    try:\n        victim.write_text(victim.read_text() + forged)\n"
        "    except OSError as error:\n        print('could not edit', victim, error)\n")
    samples["reads_classmate_and_solutions"] = _replacing_stub(
        "import json, pathlib\n"
        f"classmate = pathlib.Path({str(places.classmate)!r})\n"
        f"solutions = pathlib.Path({str(places.package.parent / 'solutions' / 'notebook_02.py')!r})\n"
        "def fused_step(X, H, W_xh, W_hh, b_h):\n    return None\n"
        "for source in (classmate, solutions):\n"
        "    try:\n        text = source.read_text()\n    except OSError:\n        continue\n"
        "    cells = [''.join(c['source']) for c in json.loads(text)['cells']] if source.suffix == '.ipynb' "
        "else [text]\n"
        "    for cell in cells:\n"
        "        if 'def fused_step' in cell:\n            exec(cell)\n")
    samples["ipython_startup_file_then_restart"] = _before_stub(
        "import os, pathlib\n"
        "startup = pathlib.Path(os.environ.get('IPYTHONDIR', pathlib.Path.home() / '.ipython'))\n"
        "startup = startup / 'profile_default' / 'startup'\nstartup.mkdir(parents=True, exist_ok=True)\n"
        "(startup / '00-help.py').write_text('STARTUP_RAN = True\\n')\n"
        "os._exit(0)  # the grader restarts the kernel without this cell: does the startup file run?\n")
    samples["ipython_startup_file_then_restart"].cells[_index(
        samples["ipython_startup_file_then_restart"], STUB)].source = (
        "import torch\n\ndef fused_step(X, H, W_xh, W_hh, b_h):\n"
        "    if not STARTUP_RAN:\n        return None\n"
        "    return torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)\n\n"
        "try:\n    STARTUP_RAN\nexcept NameError:\n    STARTUP_RAN = False\n")
    samples["plants_files_for_others"] = _before_stub(
        "import os, pathlib\n"
        f"out, submissions = pathlib.Path({str(places.out)!r}), pathlib.Path({str(places.submissions)!r})\n"
        "try:\n    names = [p.stem if p.is_file() else p.name for p in submissions.iterdir()]\n"
        "except OSError:\n    names = []\n"
        "for name in names:\n"
        "    folder = out / 'work' / name / '02_concat_matmul' / 'd2lmini' / 'grading'\n"
        "    try:\n        folder.mkdir(parents=True, exist_ok=True)\n"
        "        (folder.parent / '__init__.py').write_text('raise SystemExit(\"planted\")\\n')\n"
        "    except OSError:\n        pass\n"
        "for feedback in (out / 'feedback').glob('*.md') if (out / 'feedback').exists() else ():\n"
        "    feedback.write_text('# Feedback\\n\\n**Total: 0 / 4**\\n')\n")
    samples["package_function_under_another_name"] = _replacing_stub(
        "from d2lmini.rnn import rnn_step as fused_step\n")
    samples["compiled_copy_of_the_package"] = _replacing_stub(
        "import inspect\nimport d2lmini.batching as batching\n"
        "namespace = {'__name__': 'my_batches'}  # the module's code, compiled as mine\n"
        "exec(compile(inspect.getsource(batching), 'mine.py', 'exec', optimize=2), namespace)\n"
        "copied = namespace['sequential_batches']\n\n"
        "def fused_step(X, H, W_xh, W_hh, b_h):\n"
        "    copied  # reached through its globals: the caller process compares it with the package\n"
        "    import torch\n    return torch.tanh(torch.cat((X, H), 1) @ torch.cat((W_xh, W_hh), 0) + b_h)\n")
    return samples


def reads_the_config(config: Path, leak: Path) -> nbformat.NotebookNode:
    """Reads the instructor's config (its seed) and leaves what it got in `leak`, a shared folder's file.

    Only "user" isolation (setpriv, Gradescope's container) shares /tmp with the grader: there the config
    must be root's alone, so `leak` says "refused".
    """
    return _before_stub(
        "import pathlib\n"
        f"try:\n    got = pathlib.Path({str(config)!r}).read_text()\n"
        "except OSError as error:\n    got = 'refused: ' + type(error).__name__\n"
        f"pathlib.Path({str(leak)!r}).write_text(got)\n")


def all_in_one(samples: dict[str, nbformat.NotebookNode], names: tuple[str, ...]) -> nbformat.NotebookNode:
    """One upload that makes the attacks of the samples `names`, cell after cell.

    The first sample's notebook, with the cells each of the others adds (before its stub) inserted
    before its `def fused_step`: where each attack is one more upload to grade (Gradescope's "user"
    isolation, about 20 s each), one upload shows them all.
    """
    combined = copy.deepcopy(samples[names[0]])
    original = {cell.source for cell in released("02").cells}
    added = [copy.deepcopy(cell) for name in names[1:] for cell in samples[name].cells
             if cell.source not in original]
    where = _index(combined, r"def fused_step")
    combined.cells[where:where] = added
    return combined


# The sample above that solves fused_step (with a copy of package code beside it): it must still lose it.
SOLVES_WITH_A_COPY = "compiled_copy_of_the_package"
