"""What a reader of the Chinese edition sees in the stored outputs is Chinese, not English prose.

The package translates what it prints and draws (`d2lmini.i18n`); a notebook's own code cells print
through the same catalogs (`tr("...")`: the package's `_` imported as `tr`, the "notebooks" wing). This
test reads every stored output of `notebooks/zh/*.ipynb` (streams, text/plain, text/html with its image
alt texts, text/markdown) and fails on a run of four or more English words, naming the notebook, the
cell and the text.

What must stay English is allowed narrowly: the corpus (The Time Machine and the bundled text are
English, so an excerpt of the corpus and a sample the model generates from it are not prose), the
value of a control shown in a panel preview, code identifiers, and PyTorch's own error messages.
"""

import html
import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHINESE_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))

# Four or more words of two letters or more (an apostrophe inside allowed; single letters may sit between
# them), with only spaces, commas, hyphens, colons and semicolons between: a sentence or a table header,
# never a grid of letters ("e  t  a  o  n").
WORD = r"[A-Za-z]+(?:'[a-z]+)?"
WORD_RUN = re.compile(rf"(?<![\w']){WORD}(?:[ \t,;:\-–]+{WORD})*(?![\w'])")
MIN_WORDS = 4
# A quoted string is a value, not prose: in the model's alphabet (a prefix, a sample, a sentence fed to
# it, perhaps cut short with "…"), or a raw text the notebook preprocesses (repr of "... River's ...").
QUOTED_SAMPLE = re.compile(r"""'[a-z ]*…?'|"[^"\n]*\"""")
# Identifiers and calls: `torch.nn.parameters()`, `W_hh`, `lr=0.1`, a path.
IDENTIFIER = re.compile(r"\S*(?:[_=(\[/\\]|\w\.\w)\S*")
# In a panel preview: what a control is set to (<strong>), and the generated text (the blue span).
HTML_SAMPLES = re.compile(r"<strong>.*?</strong>|<b>[a-z ]*</b>\s*<span style=.color:#1f5fa8.>[a-z ]*</span>"
                          r"|<code>.*?</code>", re.S)
# PyTorch's and Python's own error messages, quoted by the pitfalls of notebook 08: they are the
# library's words, which the reader will meet in English.
LIBRARY_MESSAGES = (
    "module 'torch.nn' has no attribute 'parameters'",
    "Trying to backward through the graph a second time",
    "or directly access saved tensors after they have already been freed",
    "Saved intermediate values of the graph are freed when you call",
    "Specify retain_graph=True if you need to backward through the graph a second time",
    "if you need to access saved tensors after calling backward",
    "Bad in-place call: input tensor size",
    "and output tensor size",
)


@cache
def corpus_words() -> str:
    """Return the bundled corpus as the model reads it: lower case, runs of non-letters as one space."""
    from d2lmini.corpus import load_corpus

    return " " + load_corpus("bundled").text + " "


def normalised(text: str) -> str:
    return " ".join(re.sub(r"[^a-z]+", " ", text.lower()).split())


def readable_texts(output) -> list[tuple[str, str]]:
    """Return (kind, text) for every text a reader sees in one output; image alts as their own texts."""
    texts = []
    if output.output_type == "stream":
        texts.append((output.name, output.text))
    if output.output_type == "error":
        texts.append(("error", f"{output.ename}: {output.evalue}"))
    data = output.get("data", {})
    for kind in ("text/plain", "text/markdown"):
        if kind in data:
            texts.append((kind, data[kind]))
    if "text/html" in data:
        page = data["text/html"]
        texts += [("alt", html.unescape(alt)) for alt in re.findall(r'alt="([^"]*)"', page)]
        page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
        page = HTML_SAMPLES.sub(" ", page)
        texts.append(("text/html", html.unescape(re.sub(r"<[^>]+>", "\n", page))))
    return texts


def english_runs(text: str) -> list[str]:
    """Return the runs of English prose in `text`, the corpus, samples, identifiers and library left out."""
    for message in LIBRARY_MESSAGES:
        text = text.replace(message, " | ")
    text = IDENTIFIER.sub(" | ", QUOTED_SAMPLE.sub(" | ", text))
    runs = [run.group(0) for run in WORD_RUN.finditer(text)
            if len(re.findall(r"[A-Za-z]{2,}", run.group(0))) >= MIN_WORDS]
    return [run for run in runs if f" {normalised(run)} " not in corpus_words()]


def english_in(path: Path) -> list[str]:
    """Return 'cell N (kind): text' for each run of English prose in the stored outputs of `path`."""
    notebook = nbformat.read(path, as_version=4)
    found = []
    for number, cell in enumerate(notebook.cells, start=1):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            for kind, text in readable_texts(output):
                found += [f"cell {number} ({kind}): {run!r}" for run in english_runs(text)]
    return found


@pytest.mark.parametrize("path", CHINESE_NOTEBOOKS, ids=lambda path: path.stem)
def test_a_chinese_notebook_shows_no_english_prose_in_its_outputs(path):
    english = english_in(path)
    assert not english, (f"notebooks/zh/{path.name} shows English in its stored outputs (print it through "
                         "the catalogs, `tr(...)`, then re-execute with tools/run_notebooks.py):\n"
                         + "\n".join(english[:25]) + (f"\n... and {len(english) - 25} more"
                                                      if len(english) > 25 else ""))


@pytest.mark.parametrize("text", [
    "the validation perplexity after the whole corpus",
    "n  seen in corpus  fraction seen",
    "Heatmap of the hidden state after each of the 20 characters",
    "困惑度 3.2 on the validation text: perplexity 5.1",
])
def test_english_prose_is_found(text):
    assert english_runs(text)


@pytest.mark.parametrize("text", [
    "生成的文本：'the time soon a cand a righe the crom'",
    "开头为 'a hidden state carries t…'；按顺序分区切分",
    "原始文本：    \"Rain fell at 6:40 -- the River's level rose 30 cm!\"",
    "语料库开头：a river through the year anyone who walks",
    "e  t  a  o  n  s  i  h  r  l  d  w  u",
    "torch.nn.parameters(): module 'torch.nn' has no attribute 'parameters'",
    "隐状态 h = 64，W_hh 的谱半径 0.93",
    "Kneser–Ney 三元语法",
])
def test_corpus_samples_code_and_chinese_are_not_english_prose(text):
    assert not english_runs(text)
