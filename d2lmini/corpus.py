"""The course's corpora: bundled, The Time Machine, and a synthetic Markov source.

`load_corpus(name)` returns a `Corpus`: the preprocessed text, its character
vocabulary, the text as a tensor of indices, and (for the synthetic source) its exact
entropy rate. Introduced in notebook 03; notebook 00 shows which corpus is in use.
"""

import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import torch

from d2lmini.markov import make_markov_source
from d2lmini.text import Vocab, preprocess, tokenize

DATA_DIR = Path(os.environ.get("D2LMINI_DATA", Path(__file__).resolve().parent.parent / "data"))
BUNDLED_FILE = "d2lmini_corpus.txt"
TIMEMACHINE_URL = "http://d2l-data.s3-accelerate.amazonaws.com/timemachine.txt"
TIMEMACHINE_SHA1 = "090b5e7e70c295757f55df93cb0a180b9691891a"
TIMEMACHINE_FILE = "timemachine.txt"
MARKOV_LENGTH = 100_000
CORPUS_NAMES = ("bundled", "markov", "timemachine")


class DataUnavailableError(RuntimeError):
    """A corpus could not be loaded; the message says what to do."""


class ChecksumError(DataUnavailableError):
    """A downloaded file did not have the expected checksum."""


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
            raise ValueError(f"valid_fraction must be between 0 and 1, not {valid_fraction}")
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


def load_corpus(name: str = "bundled", data_dir: Path | None = None, url: str = TIMEMACHINE_URL) -> Corpus:
    """Return the corpus called `name`: "bundled" (default), "markov" or "timemachine".

    `data_dir` is where the bundled corpus lies and The Time Machine is cached; `url` is
    where The Time Machine is downloaded from when it is not cached.
    """
    data_dir = Path(data_dir or DATA_DIR)
    if name == "bundled":
        return corpus_from_text(name, preprocess((data_dir / BUNDLED_FILE).read_text("utf-8")))
    if name == "timemachine":
        raw = download_timemachine(data_dir, url).read_text("utf-8")
        return corpus_from_text(name, preprocess(raw))
    if name == "markov":
        source = make_markov_source()
        return corpus_from_text(name, source.sample(MARKOV_LENGTH), source.entropy_rate_bits())
    raise ValueError(f"unknown corpus {name!r}; choose one of {', '.join(CORPUS_NAMES)}")


def sha1_of(path: Path) -> str:
    """Return the hex sha1 of the file at `path`."""
    return hashlib.sha1(path.read_bytes()).hexdigest()


def timemachine_is_cached(data_dir: Path | None = None) -> bool:
    """Return True when a verified copy of The Time Machine is in the cache."""
    path = Path(data_dir or DATA_DIR) / TIMEMACHINE_FILE
    return path.is_file() and sha1_of(path) == TIMEMACHINE_SHA1


def download_timemachine(
    data_dir: Path | None = None, url: str = TIMEMACHINE_URL, timeout: float = 10.0,
    sha1: str = TIMEMACHINE_SHA1,
) -> Path:
    """Return the path of a verified copy of The Time Machine, downloading it if needed.

    A cached copy whose sha1 is wrong is deleted and fetched again. A download with the
    wrong sha1 is not cached. Without a network the error names the address and where
    to put the file by hand. (`sha1` is a parameter only so that tests can serve
    their own small file.)
    """
    data_dir = Path(data_dir or DATA_DIR)
    path = data_dir / TIMEMACHINE_FILE
    if path.is_file():
        if sha1_of(path) == sha1:
            return path
        path.unlink()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            payload = response.read()
    except (urllib.error.URLError, OSError) as error:
        raise DataUnavailableError(
            f"Could not download The Time Machine from {url} ({error}). "
            f"Are you offline? Download that file by hand and save it as {path}, "
            "or use the bundled corpus: load_corpus('bundled')."
        ) from error
    digest = hashlib.sha1(payload).hexdigest()
    if digest != sha1:
        raise ChecksumError(
            f"The file downloaded from {url} has sha1 {digest}, not {sha1}: "
            "it is damaged or not the expected text, so it was not saved. Try again later, "
            f"or save a correct copy as {path} by hand."
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".txt.part")
    partial.write_bytes(payload)
    partial.replace(path)
    return path
