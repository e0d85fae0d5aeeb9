"""The install cell that opens every notebook, run as it runs on Colab or Kaggle: with d2lmini
present, with d2lmini and some of its dependencies missing, with an install that fails (no
network, a wrong address), and with a real pip in a fresh venv."""

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("colab_cell", ROOT / "tools" / "colab_cell.py")
colab_cell = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(colab_cell)

UNREACHABLE = "https://127.0.0.1:9/nobody/nothing"  # the discard port: refused at once, no network needed
D2LMINI_REQUIRES = ["torch>=2.3,<3", "numpy>=2.0,<3", "matplotlib>=3.8,<4", "ipywidgets>=7.7.1,<9",
                    "anywidget>=0.9,<1", "pyppmd>=1.1,<2", 'jupyterlab>=4.2; extra == "dev"',
                    'nbformat>=5.10; extra == "grading"']
VERSION = colab_cell.project()["version"]
NOT_ON_THE_INDEX = (f"ERROR: Could not find a version that satisfies the requirement d2lmini=={VERSION} "
                    f"(from versions: none)\nERROR: No matching distribution found for d2lmini=={VERSION}\n")
COLAB = {"torch": "2.3.1", "numpy": "2.0.2", "matplotlib": "3.8.4", "ipywidgets": "7.7.1", "packaging": "24"}


def cell_namespace(url: str = "https://github.com/d2lmini/d2lmini") -> dict:
    """Execute the cell where d2lmini is importable (it installs nothing) and return its names."""
    namespace = {}
    exec(compile(colab_cell.install_cell_source(url), "install-cell", "exec"), namespace)
    return namespace


def test_on_colab_only_what_it_lacks_is_installed():
    missing = cell_namespace()["missing_requirements"](D2LMINI_REQUIRES, COLAB)
    assert missing == ["anywidget<1,>=0.9", "pyppmd<2,>=1.1"]


def test_names_are_compared_as_pip_compares_them_and_extras_are_left_out():
    missing_requirements = cell_namespace()["missing_requirements"]
    installed = {"Torch": "2.13.0", "NumPy": "2.4.6", "matplotlib": "3.11.2", "IPyWidgets": "8.1.9",
                 "AnyWidget": "0.11.0", "PyPPMd": "1.3.1"}
    assert missing_requirements(D2LMINI_REQUIRES, installed) == []
    assert missing_requirements(["typing_extensions>=4", "a.b-c"], {"typing-extensions": "4.12"}) == ["a.b-c"]


def test_a_requirement_for_another_python_is_not_missing():
    missing_requirements = cell_namespace()["missing_requirements"]
    assert missing_requirements(['tomli; python_version < "3.0"', "psygnal"], {}) == ["psygnal"]


def test_installed_versions_are_this_environments_and_hold_every_package():
    versions = cell_namespace()["installed_versions"]()
    assert versions["torch"] == str(importlib.metadata.version("torch")).replace("-", ".")
    assert versions["anywidget"] == importlib.metadata.version("anywidget")
    assert len(versions) > 50


class FakeDistribution:
    def __init__(self, name, version):
        self.metadata, self.version = {"Name": name}, version


def test_the_version_held_is_the_one_imported_and_unreadable_installs_are_left_out(monkeypatch):
    installed = [FakeDistribution("Torch", "2.5.1+cu121"), FakeDistribution("torch", "2.0.0"),
                 FakeDistribution(None, "1.0"), FakeDistribution("oddball", "not a version")]
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: iter(installed))
    assert cell_namespace()["installed_versions"]() == {"torch": "2.5.1+cu121"}


class PipRecorder:
    """Stands in for subprocess.run: records each pip command and its constraints, and answers with
    the return codes given, in turn (stderr: pip's error lines, by default those for a release that
    the index does not have)."""

    def __init__(self, *returncodes: int, stderr: str = NOT_ON_THE_INDEX):
        self.returncodes, self.commands, self.constraints, self.stderr = list(returncodes), [], [], stderr

    def __call__(self, command, **kwargs):
        self.commands.append(command)
        if "-c" in command:
            self.constraints.append(Path(command[command.index("-c") + 1]).read_text())
        code = self.returncodes.pop(0) if self.returncodes else 0
        return subprocess.CompletedProcess(command, code, "", self.stderr)


def run_cell_without_d2lmini(url, monkeypatch, recorder, requires=D2LMINI_REQUIRES, environ=None):
    """Execute the cell as if d2lmini were missing, with pip replaced by `recorder`."""
    monkeypatch.setattr(subprocess, "run", recorder)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "d2lmini" else real_find_spec(name, *a))
    monkeypatch.setattr(importlib.metadata, "requires", lambda name: requires if name == "d2lmini" else None)
    monkeypatch.delenv("D2LMINI_WHEEL", raising=False)
    for key, value in (environ or {}).items():
        monkeypatch.setenv(key, value)
    exec(compile(colab_cell.install_cell_source(url), "install-cell", "exec"), {})


def test_with_d2lmini_present_the_cell_does_nothing(monkeypatch, capsys):
    recorder = PipRecorder()
    monkeypatch.setattr(subprocess, "run", recorder)
    cell_namespace(colab_cell.repository_url())
    assert recorder.commands == []
    assert capsys.readouterr() == ("", "")


def test_this_release_comes_from_the_index_without_dependencies_then_only_what_is_missing(
        monkeypatch, capsys):
    url = colab_cell.repository_url()  # the installed d2lmini's metadata names it: this course's release
    recorder = PipRecorder()
    requires = ["torch>=2.3", "anywidget>=0.9,<1", "surely-not-installed-here>=1"]
    run_cell_without_d2lmini(url, monkeypatch, recorder, requires)
    first, second = recorder.commands
    assert first[:4] == [sys.executable, "-m", "pip", "install"]
    assert first[-4:] == ["--no-deps", "--only-binary", "d2lmini", f"d2lmini=={VERSION}"]
    assert second[-1:] == ["surely-not-installed-here>=1"], "torch and anywidget are installed here"
    held = recorder.constraints[1].splitlines()
    assert f"torch=={importlib.metadata.version('torch')}" in held
    assert f"numpy=={importlib.metadata.version('numpy')}" in held
    assert capsys.readouterr() == (f"Installed d2lmini=={VERSION} from the package index.\n", "")


def test_only_a_release_the_index_lacks_is_installed_from_the_repository(monkeypatch, capsys):
    recorder = PipRecorder(1, 0)
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, recorder, ["torch"])
    index, repository = recorder.commands
    assert index[-1] == f"d2lmini=={VERSION}"
    assert repository[-2:] == ["--no-deps", f"d2lmini @ git+{UNREACHABLE}"]
    assert capsys.readouterr() == (
        f"d2lmini=={VERSION} is not on the package index: installed d2lmini @ git+{UNREACHABLE}.\n", "")


def test_an_index_that_fails_otherwise_is_reported_not_passed_over(monkeypatch, capsys):
    hashes = "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE."
    recorder = PipRecorder(1, stderr=hashes + "\n")
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, recorder, ["torch"])
    assert len(recorder.commands) == 1, "no second route for a broken download"
    first, said, _ = capsys.readouterr().err.splitlines()
    assert first == f"Could not install d2lmini=={VERSION}. pip said:"
    assert said == "    " + hashes


def test_a_namesake_on_the_index_is_removed_and_the_repository_used(monkeypatch, capsys):
    """Here the installed d2lmini's metadata names the real repository, not UNREACHABLE: a namesake."""
    recorder = PipRecorder()
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, recorder, ["torch"])
    index, uninstall, repository = recorder.commands
    assert uninstall[3:] == ["uninstall", "--yes", "--quiet", "d2lmini"]
    assert repository[-1] == f"d2lmini @ git+{UNREACHABLE}"
    assert "on the package index is not this course's" in capsys.readouterr().out


def test_d2lmini_wheel_replaces_both_routes(monkeypatch, tmp_path, capsys):
    recorder = PipRecorder()
    wheel = str(tmp_path / "d2lmini-0.1.0-py3-none-any.whl")
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, recorder, ["torch"], {"D2LMINI_WHEEL": wheel})
    (command,) = recorder.commands
    assert command[-2:] == ["--no-deps", wheel]
    assert capsys.readouterr().out == f"Installed {wheel}.\n"


def test_a_failed_install_says_why_and_what_to_do(monkeypatch, capsys):
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, PipRecorder(1, 1))
    out, err = capsys.readouterr()
    assert out == ""
    first, *said, last = err.splitlines()
    assert first == f"Could not install d2lmini @ git+{UNREACHABLE}. pip said:"
    assert said[-1] == f"    ERROR: No matching distribution found for d2lmini=={VERSION}"
    assert "Kaggle" in last and "Internet" in last and "phone" in last
    assert last.endswith("run this cell again.")


def test_in_the_chinese_edition_the_cell_speaks_chinese(monkeypatch, capsys):
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, PipRecorder(1, 1), environ={"D2LMINI_LANG": "zh_CN"})
    first, *said, last = capsys.readouterr().err.splitlines()
    assert first == f"无法安装 d2lmini @ git+{UNREACHABLE}。pip 的报错："
    assert said[-1] == f"    ERROR: No matching distribution found for d2lmini=={VERSION}", \
        "pip's own words are shown as pip said them"
    assert "Kaggle" in last and "再运行一次本单元格" in last
    run_cell_without_d2lmini(UNREACHABLE, monkeypatch, PipRecorder(1, 0), environ={"D2LMINI_LANG": "zh_CN"})
    said = capsys.readouterr().out
    assert said == f"d2lmini=={VERSION} 不在软件包索引上：已安装 d2lmini @ git+{UNREACHABLE}。\n"


PIP_SUBPROCESS_FAILURE = (
    "\x1b[1;31merror\x1b[0m: \x1b[1msubprocess-exited-with-error\x1b[0m\n\n"
    "\x1b[31m×\x1b[0m \x1b[32mgit clone\x1b[0m did not run successfully.\n"
    "\x1b[31m│\x1b[0m exit code: \x1b[1;36m128\x1b[0m\n"
    "\x1b[31m╰─>\x1b[0m [1 lines of output]\n"
    "    fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com\n"
    "    [end of output]\n\n"
    "\x1b[1;35mnote\x1b[0m: This error originates from a subprocess, and is likely not a problem with pip.\n")


def test_pip_s_real_error_lines_are_shown_in_plain_text_not_its_last_note():
    """pip's last line is its note about subprocesses (or a colour code): the cause is above it."""
    shown = cell_namespace()["pip_error"](PIP_SUBPROCESS_FAILURE)
    assert "\x1b" not in shown and "note:" not in shown and "originates from a subprocess" not in shown
    assert "Could not resolve host: github.com" in shown and "git clone" in shown
    assert shown.splitlines()[0] == "    error: subprocess-exited-with-error"
    assert cell_namespace()["pip_error"]("") == "    pip failed"


def test_a_failed_dependency_install_removes_d2lmini_so_that_running_again_retries(monkeypatch, capsys):
    recorder = PipRecorder(0, 1)
    requires = ["surely-not-installed-here"]
    run_cell_without_d2lmini(colab_cell.repository_url(), monkeypatch, recorder, requires)
    assert recorder.commands[2][3:] == ["uninstall", "--yes", "--quiet", "d2lmini"]
    assert "run this cell again" in capsys.readouterr().err


def test_on_kaggle_a_new_anywidget_asks_for_a_restart(monkeypatch, capsys):
    requires = ["anywidget-that-is-not-installed>=0.9"]
    run_cell_without_d2lmini(colab_cell.repository_url(), monkeypatch, PipRecorder(), requires,
                             {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"})
    out, err = capsys.readouterr()
    assert err == "" and "Restart" in out and "from the top" in out


def test_elsewhere_a_new_anywidget_needs_no_restart(monkeypatch, capsys):
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE", raising=False)
    run_cell_without_d2lmini(colab_cell.repository_url(), monkeypatch, PipRecorder(),
                             ["anywidget-that-is-not-installed"])
    assert capsys.readouterr() == (f"Installed d2lmini=={VERSION} from the package index.\n", "")


@pytest.mark.slow
def test_a_real_pip_that_cannot_reach_the_address_says_why(tmp_path):
    """No mock: a fresh venv without d2lmini, real pip and git, an address that refuses at once."""
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "packaging"], check=True, timeout=300)
    cell = tmp_path / "cell.py"
    cell.write_text(colab_cell.install_cell_source(UNREACHABLE))
    env = {"PATH": str(python.parent) + ":/usr/bin:/bin", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "",
           "HOME": str(tmp_path), "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run([str(python), str(cell)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"Could not install d2lmini @ git+{UNREACHABLE}. pip said:"
    assert all(line.startswith("    ") for line in lines[1:-1]) and "git" in "".join(lines[1:-1]).lower()
    assert "run this cell again" in lines[-1]


# The two routes with a real pip in a fresh venv, offline: a folder of wheels stands in for the package
# index (PIP_FIND_LINKS, PIP_NO_INDEX) and a local clone of this repository for the one on GitHub.
def stub_wheel(folder: Path, name: str, version: str, repository: str | None = None) -> Path:
    """Write an empty wheel of `name` `version` (its metadata naming `repository`) into `folder`."""
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if repository:
        metadata += f"Project-URL: Repository, {repository}\n"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{info}/METADATA", metadata)
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def installed_as_wheel(folder: Path, name: str) -> Path:
    """Pack the distribution `name` installed here into a wheel in `folder` (no index needed)."""
    dist = importlib.metadata.distribution(name)
    path = folder / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for file in dist.files:
            if file.suffix != ".pyc" and not str(file).startswith("..") and file.locate().is_file():
                wheel.write(file.locate(), str(file))
    return path


def course_dependencies(folder: Path) -> None:
    """Empty wheels of d2lmini's dependencies at their lower bounds: the cell's second install."""
    for text in colab_cell.project()["dependencies"]:
        requirement = Requirement(text)
        lowest = next(spec.version for spec in requirement.specifier if spec.operator == ">=")
        stub_wheel(folder, requirement.name, lowest)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of this repository's last commit, and its wheel in clone/dist (built without the index)."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("building d2lmini without the index needs setuptools installed here")
    clone = tmp_path_factory.mktemp("repository") / "d2lmini"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", "dist", "."],
                   cwd=clone, check=True, capture_output=True, timeout=300)
    return clone


def run_cell_in_fresh_venv(tmp_path: Path, index: Path, url: str) -> subprocess.CompletedProcess:
    """Run the install cell for `url` in a new venv whose package index is the folder `index`."""
    installed_as_wheel(index, "packaging")
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "D2LMINI_"))}
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index),
            "GIT_TERMINAL_PROMPT": "0"}
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "packaging"], env=env, check=True,
                   timeout=300)
    cell = tmp_path / "cell.py"
    cell.write_text(colab_cell.install_cell_source(url), encoding="utf-8")
    done = subprocess.run([str(python), str(cell)], capture_output=True, text=True, timeout=600, env=env,
                          cwd=tmp_path)
    done.installed = subprocess.run([str(python), "-m", "pip", "list", "--format", "freeze"], env=env,
                                    capture_output=True, text=True, check=True).stdout.split()
    return done


@pytest.mark.slow
def test_a_real_pip_takes_this_release_from_the_index(tmp_path, clone):
    index = tmp_path / "index"
    index.mkdir()
    (wheel,) = (clone / "dist").glob("d2lmini-*.whl")
    shutil.copy(wheel, index)
    course_dependencies(index)
    done = run_cell_in_fresh_venv(tmp_path, index, colab_cell.repository_url())  # as the wheel says
    assert done.stderr == "" and done.stdout == f"Installed d2lmini=={VERSION} from the package index.\n"
    assert f"d2lmini=={VERSION}" in done.installed and "pyppmd==1.1" in done.installed


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a file:// address with a host: POSIX paths only")
def test_a_real_pip_takes_the_repository_where_the_index_lacks_this_release(tmp_path, clone):
    index = tmp_path / "index"
    index.mkdir()
    course_dependencies(index)
    installed_as_wheel(index, "setuptools")  # to build the clone, as pip would from the index
    url = f"file://localhost{clone}"  # older pips refuse a git+file:/// address, which has no host
    done = run_cell_in_fresh_venv(tmp_path, index, url)
    assert done.stderr == ""
    assert done.stdout == f"d2lmini=={VERSION} is not on the package index: installed d2lmini @ git+{url}.\n"
    assert f"d2lmini=={VERSION}" in done.installed and "anywidget==0.9" in done.installed


@pytest.mark.slow
def test_a_real_pip_removes_a_namesake_from_the_index(tmp_path):
    index = tmp_path / "index"
    index.mkdir()
    stub_wheel(index, "d2lmini", VERSION, "https://example.org/someone-else")
    done = run_cell_in_fresh_venv(tmp_path, index, UNREACHABLE)
    assert done.stdout == ""
    assert done.stderr.splitlines()[0] == f"Could not install d2lmini @ git+{UNREACHABLE}. pip said:"
    assert not [line for line in done.installed if line.startswith("d2lmini")]
