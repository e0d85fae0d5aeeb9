"""The Colab install cell that opens every notebook, run as it runs there: with d2lmini present,
with an install that fails (no network, a wrong address), and with one that succeeds."""

import importlib.util
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("colab_cell", ROOT / "tools" / "colab_cell.py")
colab_cell = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(colab_cell)

UNREACHABLE = "https://127.0.0.1:9/nobody/nothing"  # the discard port: refused at once, no network needed


class PipRecorder:
    """Stands in for subprocess.run: records the command and answers with `returncode`."""

    def __init__(self, returncode: int):
        self.returncode, self.commands = returncode, []

    def __call__(self, command, **kwargs):
        self.commands.append(command)
        return subprocess.CompletedProcess(command, self.returncode)


def run_cell(url: str, monkeypatch, present: bool, returncode: int = 0) -> PipRecorder:
    recorder = PipRecorder(returncode)
    monkeypatch.setattr(subprocess, "run", recorder)
    if not present:
        real_find_spec = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "d2lmini" else real_find_spec(name, *a))
    exec(compile(colab_cell.install_cell_source(url), "install-cell", "exec"), {})
    return recorder


def test_with_d2lmini_present_the_cell_does_nothing(monkeypatch, capsys):
    recorder = run_cell(colab_cell.repository_url(), monkeypatch, present=True)
    assert recorder.commands == []
    assert capsys.readouterr() == ("", "")


def test_with_d2lmini_missing_the_cell_installs_it_without_touching_torch(monkeypatch, capsys):
    url = colab_cell.repository_url()
    recorder = run_cell(url, monkeypatch, present=False)
    (command,) = recorder.commands
    assert command[:4] == [sys.executable, "-m", "pip", "install"]
    assert "--no-deps" in command and "pyppmd" in command and f"d2lmini @ git+{url}" in command
    assert capsys.readouterr() == ("", ""), "a successful install prints nothing"


def test_a_failed_install_is_reported_in_one_line_that_says_what_to_do(monkeypatch, capsys):
    run_cell(UNREACHABLE, monkeypatch, present=False, returncode=1)
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"Could not install d2lmini @ git+{UNREACHABLE}")
    assert "internet" in line and "run this cell again" in line


@pytest.mark.slow
def test_a_real_pip_that_cannot_reach_the_address_gives_the_one_line(tmp_path):
    """No mock: a fresh venv without d2lmini, real pip and git, an address that refuses at once."""
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    cell = tmp_path / "cell.py"
    cell.write_text(colab_cell.install_cell_source(UNREACHABLE))
    env = {"PATH": str(python.parent) + ":/usr/bin:/bin", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "",
           "HOME": str(tmp_path), "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run([str(python), str(cell)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("Could not install d2lmini @ git+") and "run this cell again" in line
