"""The Time Machine's download and cache: verified by sha1, size- and time-limited, safe to share.

`download_timemachine()` returns the path of a verified copy, fetching it once into the per-user
cache folder (`default_cache_dir()`); `load_corpus("timemachine")` (d2lmini.corpus) reads it.
Every failure raises `DataUnavailableError` with a message that says what to do.
"""

import contextlib
import hashlib
import os
import secrets
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

from d2lmini.i18n import _
from d2lmini.settings import CORPORA, CORPUS_SETTINGS, validate_value

CACHE_ENV = "D2LMINI_CACHE"
TIMEMACHINE_URL = "http://d2l-data.s3-accelerate.amazonaws.com/timemachine.txt"
TIMEMACHINE_SHA1 = "090b5e7e70c295757f55df93cb0a180b9691891a"
TIMEMACHINE_FILE = "timemachine.txt"
TIMEMACHINE_BYTES = 178_979
# A download stops past twice the book's size, so an endless or huge body cannot fill the memory.
MAX_DOWNLOAD_BYTES = 2 * TIMEMACHINE_BYTES
DOWNLOAD_TIMEOUT = 10.0
ALLOWED_SCHEMES = ("http", "https")
# Cache files are readable by everyone, so that a course server can share one cache folder.
CACHE_FILE_MODE = 0o644
# A temporary download file older than this belongs to a kernel that died mid-download.
STALE_SECONDS = 600


class DataUnavailableError(RuntimeError):
    """A corpus could not be loaded; the message says what to do."""


class ChecksumError(DataUnavailableError):
    """A downloaded file did not have the expected checksum."""


class UnsupportedURLError(DataUnavailableError, ValueError):
    """An address that is not http:// or https://: refused before anything is opened."""


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

def sha1_of(path: Path) -> str:
    """Return the hex sha1 of the file at `path`, read in chunks so that memory stays small."""
    digest = hashlib.sha1()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def timemachine_is_cached(data_dir: Path | None = None) -> bool:
    """Return True when a verified copy of The Time Machine is in the cache folder."""
    path = Path(data_dir or default_cache_dir()) / TIMEMACHINE_FILE
    try:
        return path.is_file() and sha1_of(path) == TIMEMACHINE_SHA1
    except OSError:
        return False


def _bundled_choice() -> str:
    """The lab's menu entry for the bundled corpus, in the language d2lmini speaks now."""
    label = CORPORA["bundled"]
    return _(label)


def _by_hand(url: str, path: Path) -> str:
    """The part of every download error that says what to do instead."""
    # TRANSLATORS: {choice} is the lab's menu entry for the bundled corpus ("bundled corpus");
    # load_corpus('bundled') is code, kept as it is.
    return _("Download {url} in a web browser and save it as {path}, or use the bundled corpus (the lab's "
             "'{choice}' choice, or load_corpus('bundled') in code).").format(
        url=url, path=path, choice=_bundled_choice())


def _other_folder(folder: Path) -> str:
    """The part of a cache-folder error that says how to use another folder."""
    # TRANSLATORS: {variable} is the environment variable D2LMINI_CACHE; data_dir= is code; {choice} is the
    # lab's menu entry for the bundled corpus ("bundled corpus").
    return _("Set the environment variable {variable} to a folder you can write to (or pass data_dir=), or "
             "ask the owner of {folder} to put a good copy there; or use the bundled corpus (the lab's "
             "'{choice}' choice, or load_corpus('bundled') in code).").format(
        variable=CACHE_ENV, folder=folder, choice=_bundled_choice())


def validate_download_url(url: str) -> str:
    """Return `url` when it is an http:// or https:// address with a host name.

    Anything else (file:, ftp:, data:, a relative path, not a string) raises
    `UnsupportedURLError` before anything is opened. Used by `download_timemachine` (and so
    by notebook 00's and the lab's Time Machine choice).
    """
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        allowed = parts is not None and parts.scheme.lower() in ALLOWED_SCHEMES and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed [ in the host
        allowed = False
    if not allowed:
        # TRANSLATORS: {url} is the address refused (quoted), {address} The Time Machine's, {file} its file
        # name.
        raise UnsupportedURLError(_(
            "Only http:// and https:// addresses are downloaded from, not {url}. The Time Machine is at "
            "{address}; a copy you already have goes into the cache folder as {file} "
            "(d2lmini.download.default_cache_dir() says where).").format(
            url=repr(url), address=TIMEMACHINE_URL, file=TIMEMACHINE_FILE))
    return url


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an http:// or https:// address."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        validate_download_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _http_opener() -> urllib.request.OpenerDirector:
    """Return an opener that speaks http and https only (urlopen's would also open file:, ftp:, data:)."""
    opener = urllib.request.OpenerDirector()
    handlers = [urllib.request.ProxyHandler(), urllib.request.UnknownHandler(), urllib.request.HTTPHandler(),
                urllib.request.HTTPDefaultErrorHandler(), _HttpOnlyRedirects(),
                urllib.request.HTTPErrorProcessor()]
    if hasattr(urllib.request, "HTTPSHandler"):  # absent when Python was built without ssl
        handlers.append(urllib.request.HTTPSHandler())
    for handler in handlers:
        opener.add_handler(handler)
    return opener


def _too_large(max_bytes: int, announced: int | None = None) -> ValueError:
    """The error for a body past `max_bytes`, sent or (when `announced` is given) announced."""
    if announced is None:
        return ValueError(_("the server sends more than {limit:,} bytes; The Time Machine has {size:,}, so "
                            "this is not the expected file").format(limit=max_bytes, size=TIMEMACHINE_BYTES))
    return ValueError(_("the server announces {announced:,} bytes, more than {limit:,} bytes; The Time "
                        "Machine has {size:,}, so this is not the expected file").format(
        announced=announced, limit=max_bytes, size=TIMEMACHINE_BYTES))


def _read_body(url: str, deadline: float, max_bytes: int) -> bytes:
    """Return the body at `url`; raise past `deadline` seconds, past `max_bytes` bytes or on a short body."""
    end = time.monotonic() + deadline
    with _http_opener().open(url, timeout=deadline) as response:
        header = response.headers.get("Content-Length")
        announced = int(header) if header is not None and header.isdigit() else None
        if announced is not None and announced > max_bytes:
            raise _too_large(max_bytes, announced)
        body = bytearray()
        while chunk := response.read1(1 << 16):
            body += chunk
            if len(body) > max_bytes:
                raise _too_large(max_bytes)
            if time.monotonic() > end:
                raise TimeoutError(_("the download took longer than {seconds:g} s").format(seconds=deadline))
    if announced is not None and len(body) != announced:
        raise ConnectionError(_("the transfer stopped after {received:,} of {announced:,} bytes").format(
            received=len(body), announced=announced))
    return bytes(body)


def fetch_bytes(url: str, deadline: float, max_bytes: int = MAX_DOWNLOAD_BYTES) -> bytes:
    """Return the body at the http(s) address `url`, or raise.

    It raises on any transfer problem, after `deadline` seconds in all, and as soon as the
    body is longer than `max_bytes` (also when the server announces that much), so memory
    stays bounded whatever the server sends. The deadline covers the whole transfer
    (connecting, headers and every read), not each read: a server that sends one byte at a
    time cannot hold the caller for longer. The transfer runs in a helper thread that is
    abandoned (and ends by its own socket timeout) when the deadline passes. A body shorter
    than its Content-Length is an error. Only http and https are spoken, redirects included.
    """
    validate_download_url(url)
    outcome: dict = {}

    def transfer() -> None:
        try:
            outcome["body"] = _read_body(url, deadline, max_bytes)
        except Exception as error:  # every failure is reported the same way by the caller
            outcome["error"] = error

    worker = threading.Thread(target=transfer, daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        raise TimeoutError(_("the download took longer than {seconds:g} s").format(seconds=deadline))
    if "error" in outcome:
        raise outcome["error"]
    return outcome["body"]


def _remove_if_stale(partial: Path) -> None:
    """Delete `partial`, a temporary download file, if it is ours and older than STALE_SECONDS.

    Best effort, never an error: another kernel may rename or delete the file meanwhile, and
    another user's file (in a shared folder) is left alone, even where we could delete it.
    """
    try:
        info = partial.stat()
        ours = not hasattr(os, "geteuid") or info.st_uid == os.geteuid()
        if ours and time.time() - info.st_mtime > STALE_SECONDS:
            partial.unlink()
    except OSError:
        pass


def _prepare_folder(folder: Path, url: str, path: Path) -> None:
    """Create the cache folder and remove our temporary files left by interrupted downloads."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        leftovers = list(folder.glob(f"{TIMEMACHINE_FILE}.*.part"))
    except OSError as error:
        # TRANSLATORS: {error} is the system's error; {by_hand} says how to get the book by hand ("Download
        # ... in a web browser ...").
        raise DataUnavailableError(_(
            "Cannot use {folder} as the cache folder for The Time Machine ({error}). Set the environment "
            "variable {variable} to a folder you can write to, or pass data_dir=. {by_hand}").format(
            folder=folder, error=error, variable=CACHE_ENV, by_hand=_by_hand(url, path))) from error
    for partial in leftovers:
        _remove_if_stale(partial)


def _cached_digest(path: Path) -> str | None:
    """Return the sha1 of the cached copy at `path`, or None when there is none (or it just went)."""
    try:
        return sha1_of(path) if path.is_file() else None
    except FileNotFoundError:  # another process moved it aside meanwhile
        return None
    except OSError as error:
        raise DataUnavailableError(_(
            "Cannot read the cached copy {path} ({error}). Ask its owner to make it readable for everyone "
            "(chmod 644), or set the environment variable {variable} to a folder you can write to (or pass "
            "data_dir=), or use the bundled corpus (the lab's '{choice}' choice, or load_corpus('bundled') "
            "in code).").format(path=path, error=error, variable=CACHE_ENV,
                                choice=_bundled_choice())) from error


def _move_aside(path: Path, digest: str, expected: str) -> None:
    """Rename a cached file with the wrong checksum (never delete it) and warn.

    Safe when several processes do it at once: each claims the file by renaming it to a name
    of its own (only one of them gets a given file), then judges what it got. A folder we may
    not write to raises `DataUnavailableError` saying what to do.
    """
    claimed = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.claim")
    try:
        os.replace(path, claimed)
    except FileNotFoundError:  # another process claimed it first
        return
    except OSError as error:
        # TRANSLATORS: {other_folder} says how to use another cache folder ("Set the environment variable
        # ...").
        raise DataUnavailableError(_(
            "{path} has sha1 {digest}, not {expected}: it is not The Time Machine the course expects, and it "
            "cannot be moved aside ({error}). {other_folder}").format(
            path=path, digest=digest, expected=expected, error=error,
            other_folder=_other_folder(path.parent))) from error
    try:
        got = sha1_of(claimed)
        # a good copy is one that another process had stored meanwhile: put it back
        aside = path if got == expected else path.with_name(f"{path.name}.sha1-{got[:12]}.bad")
        os.replace(claimed, aside)
    except OSError as error:
        raise DataUnavailableError(_("Could not move {path} aside ({error}); it is now {claimed}. "
                                     "{other_folder}").format(
            path=path, error=error, claimed=claimed, other_folder=_other_folder(path.parent))) from error
    if aside == path:
        return
    warnings.warn(_("{path} has sha1 {digest}, not {expected}: it is not The Time Machine the course "
                    "expects. It was moved to {aside} and a fresh copy is downloaded.").format(
        path=path, digest=got, expected=expected, aside=aside), stacklevel=3)


def _store(payload: bytes, folder: Path, path: Path, url: str) -> None:
    """Write `payload` to a temporary file of this process in `folder`, readable by everyone,
    then rename it to `path` atomically."""
    partial = None
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f"{TIMEMACHINE_FILE}.{os.getpid()}.",
                                         suffix=".part", delete=False) as handle:
            partial = Path(handle.name)
            handle.write(payload)
        os.chmod(partial, CACHE_FILE_MODE)  # mkstemp makes it 0600: other users could not read it
        os.replace(partial, path)
    except OSError as error:
        if partial is not None:
            with contextlib.suppress(OSError):
                partial.unlink()
        raise DataUnavailableError(_(
            "Could not save The Time Machine in {folder} ({error}). Set the environment variable {variable} "
            "to a folder you can write to, or pass data_dir=. {by_hand}").format(
            folder=folder, error=error, variable=CACHE_ENV, by_hand=_by_hand(url, path))) from error


def download_timemachine(
    data_dir: Path | None = None, url: str = TIMEMACHINE_URL, timeout: float = DOWNLOAD_TIMEOUT,
    sha1: str = TIMEMACHINE_SHA1,
) -> Path:
    """Return the path of a verified copy of The Time Machine, downloading it if needed.

    `data_dir` is the cache folder (default: `default_cache_dir()`); `url` must be http or
    https (else `UnsupportedURLError`, before anything is opened); `timeout` is the deadline
    in seconds for the whole download, and a body of more than MAX_DOWNLOAD_BYTES is refused.
    A verified cached copy is used as is, without writing anything (so a read-only shared
    cache works). A cached file with the wrong sha1 (a damaged or hand-placed wrong file) is
    moved aside with a warning, never deleted, and fetched again. Any failure to download or
    save raises `DataUnavailableError` (a wrong checksum: `ChecksumError`) saying what to do;
    nothing partial is left in the folder. Saved copies are readable by everyone (0644).
    (`sha1` is a parameter only so that tests can serve their own file.)
    """
    validate_download_url(url)
    timeout = validate_value(CORPUS_SETTINGS["timeout"], timeout)
    data_dir = validate_value(CORPUS_SETTINGS["data_dir"], data_dir)
    folder = Path(data_dir or default_cache_dir())
    path = folder / TIMEMACHINE_FILE
    digest = _cached_digest(path)
    if digest == sha1:
        return path
    if digest is not None:
        _move_aside(path, digest, sha1)
    _prepare_folder(folder, url, path)
    try:
        payload = fetch_bytes(url, timeout)
    except Exception as error:  # urllib, http.client, socket, size and timeout errors alike
        # TRANSLATORS: {kind} is the error's type (URLError), {error} its message; {by_hand} says how to get
        # the book by hand ("Download ... in a web browser ...").
        template = (_("Could not download The Time Machine from {url} ({kind}: {error}). Are you offline? "
                      "{by_hand}") if isinstance(error, OSError)
                    else _("Could not download The Time Machine from {url} ({kind}: {error}). {by_hand}"))
        raise DataUnavailableError(template.format(url=url, kind=type(error).__name__, error=error,
                                                   by_hand=_by_hand(url, path))) from error
    digest = hashlib.sha1(payload).hexdigest()
    if digest != sha1:
        # TRANSLATORS: {by_hand} says how to get the book by hand ("Download ... in a web browser ...").
        raise ChecksumError(_(
            "The file downloaded from {url} has sha1 {digest}, not {expected}: it is damaged or not the "
            "expected text, so it was not saved. Try again later, or {by_hand}").format(
            url=url, digest=digest, expected=sha1, by_hand=_by_hand(url, path)))
    _store(payload, folder, path, url)
    return path
