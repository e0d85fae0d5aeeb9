"""The course's corpora: bundled, The Time Machine, and a synthetic Markov source.

`load_corpus(name)` returns a `Corpus`: the preprocessed text, its character
vocabulary, the text as a tensor of indices, and (for the synthetic source) its exact
entropy rate. Introduced in notebook 03; notebook 00 shows which corpus is in use.
The Time Machine's download and cache: `d2lmini.download`.
"""

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

from d2lmini.download import DOWNLOAD_TIMEOUT, TIMEMACHINE_URL, download_timemachine
from d2lmini.i18n import _
from d2lmini.markov import make_markov_source
from d2lmini.settings import CORPUS_SETTINGS, validate_value
from d2lmini.text import Vocab, preprocess, tokenize

BUNDLED_FILE = "d2lmini_corpus.txt"
MARKOV_LENGTH = 100_000
CORPUS_NAMES = ("bundled", "markov", "timemachine")


@dataclass
class Corpus:
    """A preprocessed text with its vocabulary and its indices (a 1-D long tensor on the CPU)."""

    name: str
    text: str
    vocab: Vocab
    indices: torch.Tensor
    entropy_rate_bits: float | None = None

    def split(self, valid_fraction: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (train, validation) indices: the first and last `valid_fraction` of the text."""
        if not 0 < valid_fraction < 1:
            raise ValueError(_("valid_fraction must be between 0 and 1, not {value}").format(
                value=valid_fraction))
        cut = int(len(self.indices) * (1 - valid_fraction))
        return self.indices[:cut], self.indices[cut:]

    def split_text(self, valid_fraction: float = 0.1) -> tuple[str, str]:
        """Return (train, validation) text, cut at the same place as `split`."""
        cut = int(len(self.text) * (1 - valid_fraction))
        return self.text[:cut], self.text[cut:]


def corpus_from_text(name: str, text: str, entropy_rate_bits: float | None = None) -> Corpus:
    """Return a character-level `Corpus` for already-preprocessed `text`."""
    vocab = Vocab(tokenize(text))
    indices = torch.tensor(vocab.indices(text), dtype=torch.long)
    return Corpus(name, text, vocab, indices, entropy_rate_bits)


def bundled_text() -> str:
    """Return the raw text of the bundled corpus, read from the installed package's data."""
    return resources.files("d2lmini").joinpath("data", BUNDLED_FILE).read_text("utf-8")


def load_corpus(
    name: str = "bundled", data_dir: Path | None = None, url: str = TIMEMACHINE_URL,
    timeout: float = DOWNLOAD_TIMEOUT,
) -> Corpus:
    """Return the corpus called `name`: "bundled" (default), "markov" or "timemachine".

    The bundled corpus ships inside the package. The Time Machine is cached in `data_dir`
    (default: `default_cache_dir()`) and downloaded from `url` (http or https), within `timeout`
    seconds, when no verified copy is cached there (both in d2lmini.download).
    """
    name = validate_value(CORPUS_SETTINGS["corpus"], name)
    if name == "bundled":
        return corpus_from_text(name, preprocess(bundled_text()))
    if name == "timemachine":
        raw = download_timemachine(data_dir, url, timeout).read_text("utf-8")
        return corpus_from_text(name, preprocess(raw))
    if name == "markov":
        source = make_markov_source()
        return corpus_from_text(name, source.sample(MARKOV_LENGTH), source.entropy_rate_bits())
    raise ValueError(_("unknown corpus {name}; choose one of {choices}").format(
        name=repr(name), choices=", ".join(CORPUS_NAMES)))
