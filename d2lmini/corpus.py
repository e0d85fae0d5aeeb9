"""The course's corpora: bundled, The Time Machine, and a synthetic Markov source.

`load_corpus(name)` returns a `Corpus`: the preprocessed text, its character
vocabulary, the text as a tensor of indices, and (for the synthetic source) its exact
entropy rate. Introduced in notebook 03; notebook 00 shows which corpus is in use.
"""

import hashlib
import os
import sys
import tempfile
import threading
import time
import urllib.request
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

from d2lmini.markov import make_markov_source
from d2lmini.text import Vocab, preprocess, tokenize

BUNDLED_FILE = "d2lmini_corpus.txt"
CACHE_ENV = "D2LMINI_CACHE"
TIMEMACHINE_URL = "http://d2l-data.s3-accelerate.amazonaws.com/timemachine.txt"
TIMEMACHINE_SHA1 = "090b5e7e70c295757f55df93cb0a180b9691891a"
TIMEMACHINE_FILE = "timemachine.txt"
MARKOV_LENGTH = 100_000
CORPUS_NAMES = ("bundled", "markov", "timemachine")
# A temporary download file older than this belongs to a kernel that died mid-download.
STALE_SECONDS = 600


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


def bundled_text() -> str:
    """Return the raw text of the bundled corpus, read from the installed package's data."""
    return resources.files("d2lmini").joinpath("data", BUNDLED_FILE).read_text("utf-8")


def default_cache_dir() -> Path:
    """Return the per-user folder where d2lmini caches downloads.

    `$D2LMINI_CACHE` if set; else `$XDG_CACHE_HOME/d2lmini` or `~/.cache/d2lmini` on Linux,
    `~/Library/Caches/d2lmini` on macOS, `%LOCALAPPDATA%\\d2lmini\\Cache` on Windows.
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "d2lmini" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "d2lmini"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "d2lmini"


def load_corpus(name: str = "bundled", data_dir: Path | None = None, url: str = TIMEMACHINE_URL) -> Corpus:
    """Return the corpus called `name`: "bundled" (default), "markov" or "timemachine".

    The bundled corpus ships inside the package. The Time Machine is cached in `data_dir`
    (default: `default_cache_dir()`) and downloaded from `url` when it is not cached there.
    """
    if not isinstance(name, str):
        raise TypeError(f"the corpus name must be a string, one of {', '.join(CORPUS_NAMES)}; not {name!r}")
    if name == "bundled":
        return corpus_from_text(name, preprocess(bundled_text()))
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
    """Return True when a verified copy of The Time Machine is in the cache folder."""
    path = Path(data_dir or default_cache_dir()) / TIMEMACHINE_FILE
    try:
        return path.is_file() and sha1_of(path) == TIMEMACHINE_SHA1
    except OSError:
        return False


def _by_hand(url: str, path: Path) -> str:
    """The part of every download error that says what to do instead."""
    return (f"Download {url} in a web browser and save it as {path}, or use the bundled corpus "
            "(the lab's 'bundled corpus' choice, or load_corpus('bundled') in code).")


def fetch_bytes(url: str, deadline: float) -> bytes:
    """Return the body at `url`, or raise: any transfer problem, or `deadline` seconds in all.

    The deadline covers the whole transfer (connecting, headers and every read), not each
    read: a server that sends one byte at a time cannot hold the caller for longer. The
    transfer runs in a helper thread that is abandoned (and ends by its own socket timeout)
    when the deadline passes. A body shorter than its Content-Length is an error.
    """
    outcome: dict = {}

    def transfer() -> None:
        try:
            end = time.monotonic() + deadline
            with urllib.request.urlopen(url, timeout=deadline) as response:
                chunks = []
                while chunk := response.read1(1 << 16):
                    chunks.append(chunk)
                    if time.monotonic() > end:
                        raise TimeoutError(f"the download took longer than {deadline:g} s")
                expected = response.headers.get("Content-Length")
                body = b"".join(chunks)
                if expected is not None and expected.isdigit() and len(body) != int(expected):
                    raise ConnectionError(
                        f"the transfer stopped after {len(body):,} of {int(expected):,} bytes")
                outcome["body"] = body
        except Exception as error:  # every failure is reported the same way by the caller
            outcome["error"] = error

    worker = threading.Thread(target=transfer, daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        raise TimeoutError(f"the download took longer than {deadline:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["body"]


def _remove_if_stale(partial: Path) -> None:
    """Delete a temporary download file older than STALE_SECONDS.

    Another kernel may rename or delete the file between listing and checking it; a
    file that has gone meanwhile is not an error.
    """
    try:
        if time.time() - partial.stat().st_mtime > STALE_SECONDS:
            partial.unlink(missing_ok=True)
    except FileNotFoundError:
        pass


def _prepare_folder(folder: Path, url: str, path: Path) -> None:
    """Create the cache folder and remove temporary files left by interrupted downloads."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(f"{TIMEMACHINE_FILE}.*.part"):
            _remove_if_stale(stale)
    except OSError as error:
        raise DataUnavailableError(
            f"Cannot use {folder} as the cache folder for The Time Machine ({error}). Set the "
            f"environment variable {CACHE_ENV} to a folder you can write to, or pass data_dir=. "
            + _by_hand(url, path)) from error


def _move_aside(path: Path, digest: str, expected: str) -> Path:
    """Rename a cached file with the wrong checksum (never delete it) and warn; return its new path."""
    aside = path.with_name(f"{path.name}.sha1-{digest[:12]}.bad")
    os.replace(path, aside)
    warnings.warn(f"{path} has sha1 {digest}, not {expected}: it is not The Time Machine the course "
                  f"expects. It was moved to {aside} and a fresh copy is downloaded.", stacklevel=3)
    return aside


def _store(payload: bytes, folder: Path, path: Path, url: str) -> None:
    """Write `payload` to its own temporary file in `folder`, then rename it to `path` atomically."""
    partial = None
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f"{TIMEMACHINE_FILE}.", suffix=".part",
                                         delete=False) as handle:
            partial = Path(handle.name)
            handle.write(payload)
        os.replace(partial, path)
    except OSError as error:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise DataUnavailableError(f"Could not save The Time Machine in {folder} ({error}). "
                                   + _by_hand(url, path)) from error


def download_timemachine(
    data_dir: Path | None = None, url: str = TIMEMACHINE_URL, timeout: float = 10.0,
    sha1: str = TIMEMACHINE_SHA1,
) -> Path:
    """Return the path of a verified copy of The Time Machine, downloading it if needed.

    `data_dir` is the cache folder (default: `default_cache_dir()`); `timeout` is the
    deadline in seconds for the whole download. A cached file with the wrong sha1 (a damaged
    or hand-placed wrong file) is moved aside with a warning, never deleted, and fetched
    again. Any failure to download or save raises `DataUnavailableError` (a wrong checksum:
    `ChecksumError`) naming the address and where to put the file by hand; nothing partial
    is left in the folder. (`sha1` is a parameter only so that tests can serve their own file.)
    """
    folder = Path(data_dir or default_cache_dir())
    path = folder / TIMEMACHINE_FILE
    if path.is_file():
        digest = sha1_of(path)
        if digest == sha1:
            return path
        _move_aside(path, digest, sha1)
    _prepare_folder(folder, url, path)
    try:
        payload = fetch_bytes(url, timeout)
    except Exception as error:  # urllib, http.client, socket and timeout errors alike
        raise DataUnavailableError(
            f"Could not download The Time Machine from {url} ({type(error).__name__}: {error}). "
            "Are you offline? " + _by_hand(url, path)) from error
    digest = hashlib.sha1(payload).hexdigest()
    if digest != sha1:
        raise ChecksumError(
            f"The file downloaded from {url} has sha1 {digest}, not {sha1}: "
            "it is damaged or not the expected text, so it was not saved. Try again later, or "
            + _by_hand(url, path))
    _store(payload, folder, path, url)
    return path
