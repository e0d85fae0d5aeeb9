"""tools/build_site.py's command line: each argument is checked before anything is deleted or Sphinx
starts, and a wrong one is one line naming it, exit 2, never a traceback (#43 item 9).

Before, `--out ''` claimed the current folder (Path("") is "."), `--out afile/sub`, a name too long or
one with a NUL were tracebacks, and a wrong `--mathjax` was found only after the last build had been
deleted. The build itself needs Sphinx, which this venv need not have: these tests stop at the checks,
with the build replaced where the arguments are right.
"""

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402  (a tool script, imported from tools/)

OPTIONS = ("--out", "--mathjax", "--update-catalogs", "--no-pdf")


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, str]:
    """Folders and files as --out and --mathjax might name them, by what each is."""
    base = tmp_path_factory.mktemp("places")
    (base / "afile").write_text("x", "utf-8")
    (base / "empty").mkdir()
    (base / "foreign" / "src").mkdir(parents=True)
    (base / "claimed" / "html").mkdir(parents=True)
    (base / "claimed" / build_site.MARKER).write_text("", "utf-8")
    (base / "dangling").symlink_to(base / "nothing")
    (base / "loop-a").symlink_to(base / "loop-b")
    (base / "loop-b").symlink_to(base / "loop-a")
    (base / "mj-good" / "js").mkdir(parents=True)
    (base / "mj-good" / "js" / "mathjax.js").write_text("", "utf-8")
    (base / "mj-good" / "es5" / "output" / "chtml" / "fonts" / "woff-v2").mkdir(parents=True)
    (base / "mj-empty").mkdir()
    return {
        "fresh": str(base / "new" / "site"), "empty": str(base / "empty"), "claimed": str(base / "claimed"),
        "file": str(base / "afile"), "inside-file": str(base / "afile" / "sub"),
        "foreign": str(base / "foreign"), "dangling": str(base / "dangling"), "loop": str(base / "loop-a"),
        "in-site": str(ROOT / "site" / "_build"), "too-long": str(base / ("x" * 300)), "no-name": "",
        "nul": str(base / "a\0b"), "mj-good": str(base / "mj-good"), "mj-empty": str(base / "mj-empty"),
        "mj-missing": str(base / "mj-missing"),
    }


# What each place is as --out and as --mathjax: None if the tool can work with it.
OUT_PROBLEM = {"fresh": None, "empty": None, "claimed": None}
MATHJAX_PROBLEM = {"mj-good": None}


def run_main(argv: list[str]) -> tuple[int, str, list]:
    """Run build_site.main with the build, the catalogs' update and the check for Sphinx replaced; return
    (exit status, stderr, the calls of the build or update)."""
    calls = []

    def fake(*args):
        calls.append(args)
        return 0

    stderr = io.StringIO()
    with mock.patch.object(build_site, "build", fake), \
            mock.patch.object(build_site, "update_catalogs", fake), \
            mock.patch.object(build_site, "missing_program", lambda args: None, create=True), \
            contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = build_site.main(argv)
        except SystemExit as stopped:
            status = stopped.code
    return status, stderr.getvalue(), calls


def error_line(stderr: str) -> str:
    """The one line of argparse's error (after its usage, which may wrap); fails on anything else, a
    traceback too."""
    lines = stderr.strip().splitlines()
    usage_wrapped = all(line.startswith(" ") for line in lines[1:-1])
    assert len(lines) >= 2 and lines[0].startswith("usage:") and usage_wrapped, stderr
    assert " error: " in lines[-1], stderr
    return lines[-1]


def expected(pieces: list[tuple[str, ...]]) -> str | None:
    """The option the error must name for these (option, place) pieces, or None if the tool can run."""
    for piece in pieces:  # argparse converts each value as it reads it
        if len(piece) == 2 and piece[1] in ("no-name", "nul"):
            return piece[0]
    out = [place for option, *place in pieces if option == "--out"][-1][0]
    mathjax = [place[0] for option, *place in pieces if option == "--mathjax"]
    catalogs, no_pdf = ("--update-catalogs",) in pieces, ("--no-pdf",) in pieces
    if mathjax and catalogs:
        return "--update-catalogs"
    if no_pdf and catalogs:
        return "--no-pdf"
    if OUT_PROBLEM.get(out, "--out"):
        return "--out"
    if mathjax and MATHJAX_PROBLEM.get(mathjax[-1], "--mathjax"):
        return "--mathjax"
    if not (catalogs or no_pdf or mathjax):  # the PDFs' formulas need MathJax
        return "--no-pdf"
    return None


OUT_PLACES = ["fresh", "empty", "claimed", "file", "inside-file", "foreign", "dangling", "loop", "in-site",
              "too-long", "no-name", "nul"]
MATHJAX_PLACES = ["mj-good", "mj-empty", "mj-missing", "file", "nul", "no-name", "dangling", "too-long"]
PIECE = (st.tuples(st.just("--out"), st.sampled_from(OUT_PLACES))
         | st.tuples(st.just("--mathjax"), st.sampled_from(MATHJAX_PLACES)) | st.just(("--update-catalogs",))
         | st.just(("--no-pdf",)))


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECE, max_size=4))
def test_every_place_as_out_or_mathjax_runs_or_is_refused_naming_it(places, pieces):
    pieces = [("--out", "fresh"), *pieces]
    argv = [word for option, *place in pieces for word in (option, *(places[p] for p in place))]
    status, stderr, calls = run_main(argv)
    option = expected(pieces)
    if option is None:
        assert (status, len(calls)) == (0, 1), stderr
        last_out = [value for option, value in zip(argv, argv[1:], strict=False) if option == "--out"][-1]
        assert calls[0][0] == Path(last_out)
        if ("--update-catalogs",) not in pieces:  # build(out, mathjax, pdf): the PDFs unless --no-pdf
            assert calls[0][2] is (("--no-pdf",) not in pieces)
    else:
        assert (status, calls) == (2, []), stderr
        assert option in error_line(stderr)


WORDS = st.sampled_from(OPTIONS + ("--out=", "--mathjax=", "-h", "--", "-")) | st.text(max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, max_size=5))
def test_any_command_line_runs_or_is_one_line_of_error(places, words):
    """Whatever the words, in an empty folder: the build is called, --help is shown, or one line of error
    names an option or the words it could not read; never another exception."""
    with contextlib.chdir(places["empty"]):
        status, stderr, calls = run_main(words)
    if status == 0:
        assert len(calls) == 1 or "-h" in words or any("--help".startswith(w) and len(w) > 2 for w in words)
        return
    assert (status, calls) == (2, [])
    line = error_line(stderr)
    assert any(option in line for option in OPTIONS) or "unrecognized arguments" in line, line


def test_a_wrong_mathjax_leaves_the_last_build_in_place(places, capsys):
    out = Path(places["claimed"])
    (out / "html" / "index.html").write_text("the last build", "utf-8")
    with pytest.raises(SystemExit) as stopped:  # before, html/ was deleted, then the folder refused
        build_site.main(["--out", str(out), "--mathjax", places["mj-empty"]])
    assert stopped.value.code == 2 and (out / "html" / "index.html").read_text("utf-8") == "the last build"
    assert error_line(capsys.readouterr().err).endswith(
        "not an npm mathjax-full@3 folder; give the node_modules/mathjax-full that npm install "
        "mathjax-full@3.2.2 makes")


def test_an_empty_out_does_not_claim_the_current_folder(tmp_path, capsys):
    with contextlib.chdir(tmp_path), pytest.raises(SystemExit) as stopped:
        build_site.main(["--out", ""])  # before: a marker and src/ written here, then Sphinx's failure
    assert stopped.value.code == 2 and list(tmp_path.iterdir()) == []
    assert error_line(capsys.readouterr().err).endswith("argument --out: give a folder, not an empty name")


@pytest.mark.parametrize("place, words", [
    ("file", "is a file, not a folder"), ("inside-file", "afile, which is a file, not a folder"),
    ("dangling", "is a link that leads nowhere"), ("loop", "loop"), ("in-site", "is inside site/"),
    ("too-long", "File name too long"), ("nul", "holds a NUL character")])
def test_an_out_that_cannot_be_a_folder_is_named(places, place, words):
    status, stderr, calls = run_main(["--out", places[place]])
    line = error_line(stderr)
    assert (status, calls) == (2, []) and "--out" in line and words in line


@pytest.mark.parametrize("place, words", [
    ("mj-missing", "does not exist"), ("file", "is a file, not a folder"),
    ("too-long", "File name too long"), ("mj-empty", "not an npm mathjax-full@3 folder")])
def test_a_mathjax_that_is_no_mathjax_folder_is_named(places, place, words):
    status, stderr, calls = run_main(["--out", places["fresh"], "--mathjax", places[place]])
    line = error_line(stderr)
    assert (status, calls) == (2, []) and f"--mathjax {places[place]}" in line and words in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any folder")
def test_an_out_where_you_may_not_write_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        status, stderr, _ = run_main(["--out", str(locked / "site")])
    finally:
        locked.chmod(0o700)
    assert status == 2 and f"you may not write in {locked}" in error_line(stderr)


def test_a_folder_that_cannot_be_written_stops_the_build_in_one_line(tmp_path, capsys):
    """What os.access cannot foresee (root on a read-only disk, a full disk): claim's own refusal."""
    with mock.patch.object(Path, "mkdir", side_effect=OSError(30, "Read-only file system")):
        with pytest.raises(build_site.OutFolderError, match="cannot write there .Read-only file system"):
            build_site.claim(tmp_path / "site")
        with mock.patch.object(build_site, "missing_program", lambda args: None):
            assert build_site.main(["--out", str(tmp_path / "site"), "--no-pdf"]) == 2
    assert capsys.readouterr().err == f"build_site: --out {tmp_path / 'site'}: cannot write there " \
                                      "(Read-only file system)\n"


def test_mathjax_and_update_catalogs_together_are_refused(places):
    status, stderr, calls = run_main(["--update-catalogs", "--mathjax", places["mj-good"]])
    assert (status, calls) == (2, []) and "--update-catalogs builds no pages" in error_line(stderr)


def test_no_pdf_and_update_catalogs_together_are_refused(places):
    status, stderr, calls = run_main(["--out", places["fresh"], "--update-catalogs", "--no-pdf"])
    assert (status, calls) == (2, []) and "--update-catalogs builds none" in error_line(stderr)


def test_the_pdfs_without_mathjax_are_refused_naming_both_ways_out(places):
    """Chromium prints what a page holds: without --mathjax its formulas would be TeX (or MathJax's CDN)."""
    status, stderr, calls = run_main(["--out", places["fresh"]])
    line = error_line(stderr)
    assert (status, calls) == (2, []) and "give --mathjax" in line and "or --no-pdf" in line
    status, _, calls = run_main(["--out", places["fresh"], "--no-pdf"])
    assert status == 0 and calls[0][1:] == (None, False)


@pytest.mark.parametrize("argv, missing, words", [
    (["--out", "{fresh}", "--no-pdf"], ("sphinx",), "Sphinx is not installed in this Python"),
    (["--out", "{fresh}", "--update-catalogs"], ("sphinx_intl",), "sphinx-intl is not installed"),
    (["--out", "{fresh}", "--mathjax", "{mj-good}"], ("node",), "there is no node on PATH"),
    (["--out", "{fresh}", "--mathjax", "{mj-good}"], build_site.CHROMIUM_NAMES,
     "none of chromium, chromium-browser, google-chrome, google-chrome-stable is on PATH: apt-get install "
     "chromium, or give --no-pdf")])
def test_a_program_the_run_needs_and_this_machine_lacks_is_named_before_it_starts(places, capsys, argv,
                                                                                  missing, words):
    built = []
    with mock.patch.object(build_site, "build", lambda *args: built.append(args) or 0), \
            mock.patch("importlib.util.find_spec", lambda name: None if name in missing else object()), \
            mock.patch("shutil.which", lambda name: None if name in missing else "/usr/bin/" + name), \
            mock.patch.dict(os.environ, {build_site.CHROMIUM_ENV: ""}), pytest.raises(SystemExit) as stopped:
        build_site.main([places[word[1:-1]] if word.startswith("{") else word for word in argv])
    assert stopped.value.code == 2 and built == [] and words in error_line(capsys.readouterr().err)


def test_a_chromium_named_by_the_environment_that_is_no_program_is_named(places, capsys, monkeypatch):
    monkeypatch.setenv(build_site.CHROMIUM_ENV, places["mj-missing"])
    which = {"node": "/usr/bin/node"}  # and no program at the path $D2LMINI_CHROMIUM names
    with mock.patch("importlib.util.find_spec", lambda name: object()), \
            mock.patch("shutil.which", which.get), pytest.raises(SystemExit) as stopped:
        build_site.main(["--out", places["fresh"], "--mathjax", places["mj-good"]])
    line = error_line(capsys.readouterr().err)
    assert stopped.value.code == 2
    assert f"$D2LMINI_CHROMIUM names {places['mj-missing']}, which is no program" in line


def test_the_site_shows_each_notebooks_badges_as_text_links_loading_nothing_from_another_host():
    # the badges tools/reader_cells.py writes loaded images from Colab's and Kaggle's hosts on every page
    staged = build_site.with_text_links((build_site.NOTEBOOKS / "04_rnn_scratch.ipynb").read_text("utf-8"))
    assert "colab-badge.svg" not in staged and "open-in-kaggle.svg" not in staged
    assert "[Open in Colab](https://colab.research.google.com/github/" in staged
    assert "[Open in Kaggle](https://kaggle.com/kernels/welcome?src=https://github.com/" in staged
    json.loads(staged)  # still a notebook
