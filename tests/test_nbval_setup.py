"""The notebook collector (notebooks/conftest.py): lax, sanitized, stderr never compared."""

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def code_cell(number, source, outputs, checked=True):
    cell = nbformat.v4.new_code_cell(source, execution_count=number)
    cell.outputs = [nbformat.v4.new_output("stream", name=name, text=text) for name, text in outputs]
    if checked:
        cell.metadata["tags"] = ["nbval-check-output"]
    return cell


def run_probe(tmp_path, cells):
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path)
    shutil.copy(NOTEBOOKS / "sanitize.cfg", tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "probe.ipynb")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"),
                             str(tmp_path / "probe.ipynb")], capture_output=True, text=True)
    return result.stdout


def test_stderr_and_timings_are_ignored_but_stdout_is_compared(tmp_path):
    report = run_probe(tmp_path, [
        code_cell(1, 'import sys\nprint("took 3.2 s")\nprint("new warning", file=sys.stderr)',
                  [("stdout", "took 9.9 s\n"), ("stderr", "old warning\n")]),
        code_cell(2, 'print("changed")', [("stdout", "original\n")]),
        code_cell(3, 'print("anything")', [("stdout", "something else\n")], checked=False),
    ])
    assert "Cell 0" not in report.split("short test summary")[-1], report
    assert "FAILED" in report and "probe.ipynb::Cell 1" in report, report
    assert "1 failed, 2 passed" in report, report
