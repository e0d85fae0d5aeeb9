"""Corpora: the bundled text, The Time Machine download and cache, the train/validation split."""

import errno
import gzip
import hashlib
import http.server
import multiprocessing
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
import warnings
from pathlib import Path

import pytest

import d2lmini
import d2lmini.download as download_module
from d2lmini.corpus import bundled_text, load_corpus
from d2lmini.download import (
    CACHE_ENV,
    MAX_DOWNLOAD_BYTES,
    TIMEMACHINE_BYTES,
    ChecksumError,
    DataUnavailableError,
    UnsupportedURLError,
    default_cache_dir,
    download_timemachine,
    timemachine_is_cached,
)
from d2lmini.text import preprocess

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = Path(d2lmini.__file__).resolve().parent
SHARED_TIMEMACHINE = ROOT.parent / "shared" / "data" / "timemachine.txt"
PAYLOAD = b"A small stand-in text, served by the test's own HTTP server.\n"
PAYLOAD_SHA1 = hashlib.sha1(PAYLOAD).hexdigest()


class FileServer:
    """An HTTP server on 127.0.0.1 that serves `body` at every path and counts requests."""

    def __init__(self, body: bytes):
        self.body, self.requests = body, 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/timemachine.txt"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(body: bytes) -> FileServer:
        servers.append(FileServer(body))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/timemachine.txt"


def test_bundled_corpus_is_long_and_varied(bundled):
    assert len(bundled.text) >= 100_000
    bits = 8 * len(gzip.compress(bundled.text.encode(), compresslevel=9)) / len(bundled.text)
    assert 2.4 <= bits <= 3.4, f"gzip -9 needs {bits:.3f} bits/char"
    assert set(bundled.text) <= set("abcdefghijklmnopqrstuvwxyz ")
    assert len(bundled.vocab) == 28


def test_bundled_corpus_matches_its_documented_checksum_and_size(bundled):
    readme = (ROOT / "data" / "README.md").read_text()
    raw = bundled_text().encode("utf-8")
    assert hashlib.sha256(raw).hexdigest() in readme
    assert f"{len(bundled.text):,} characters" in readme
    assert f"{len(raw):,} bytes" in readme


def test_split_keeps_order_and_covers_everything(bundled):
    train, valid = bundled.split(0.1)
    assert len(train) + len(valid) == len(bundled.indices)
    assert abs(len(valid) / len(bundled.indices) - 0.1) < 1e-3
    train_text, valid_text = bundled.split_text(0.1)
    assert bundled.vocab.decode(valid.tolist()) == valid_text
    assert train_text + valid_text == bundled.text
    with pytest.raises(ValueError):
        bundled.split(1.0)


def test_markov_corpus_knows_its_entropy_rate():
    corpus = load_corpus("markov")
    assert len(corpus.text) == 100_000
    assert 0 < corpus.entropy_rate_bits < 3.17  # below log2(9): the chain is not uniform


def test_unknown_corpus_name_lists_the_choices():
    with pytest.raises(ValueError, match="bundled"):
        load_corpus("shakespeare")


def test_download_verifies_and_caches(tmp_path, serve):
    server = serve(PAYLOAD)
    path = download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert path.read_bytes() == PAYLOAD
    download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert server.requests == 1, "a verified cache must be used without downloading again"


def test_wrong_checksum_is_an_error_and_nothing_is_cached(tmp_path, serve):
    server = serve(PAYLOAD + b"corrupted")
    with pytest.raises(ChecksumError, match="sha1"):
        download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_cache_is_detected_and_fetched_again(tmp_path, serve):
    (tmp_path / "timemachine.txt").write_bytes(b"truncated by a crash")
    server = serve(PAYLOAD)
    with pytest.warns(UserWarning, match="not The Time Machine"):
        path = download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert server.requests == 1
    assert path.read_bytes() == PAYLOAD


def test_no_server_gives_an_error_that_says_what_to_do(tmp_path):
    url = closed_port_url()
    with pytest.raises(DataUnavailableError) as info:
        load_corpus("timemachine", data_dir=tmp_path, url=url)
    message = str(info.value)
    assert url in message and str(tmp_path / "timemachine.txt") in message
    assert "bundled" in message
    assert not timemachine_is_cached(tmp_path)


@pytest.mark.skipif(not SHARED_TIMEMACHINE.is_file(), reason="../shared/data/timemachine.txt is absent")
def test_real_time_machine_served_locally(tmp_path, serve):
    server = serve(SHARED_TIMEMACHINE.read_bytes())
    corpus = load_corpus("timemachine", data_dir=tmp_path, url=server.url)
    assert timemachine_is_cached(tmp_path)
    assert len(corpus.text) == 173_428
    assert len(corpus.vocab) == 28
    assert corpus.text == re.sub("[^A-Za-z]+", " ", SHARED_TIMEMACHINE.read_text()).lower()


@pytest.mark.skipif(not SHARED_TIMEMACHINE.is_file(), reason="../shared/data/timemachine.txt is absent")
def test_real_time_machine_corrupted_in_transit_is_refused(tmp_path, serve):
    body = bytearray(SHARED_TIMEMACHINE.read_bytes())
    body[1000] ^= 1
    server = serve(bytes(body))
    with pytest.raises(ChecksumError):
        load_corpus("timemachine", data_dir=tmp_path, url=server.url)
    assert not (tmp_path / "timemachine.txt").exists()


@pytest.mark.skipif(not SHARED_TIMEMACHINE.is_file(), reason="../shared/data/timemachine.txt is absent")
def test_real_time_machine_from_cache_needs_no_network(tmp_path):
    shutil.copy(SHARED_TIMEMACHINE, tmp_path / "timemachine.txt")
    corpus = load_corpus("timemachine", data_dir=tmp_path, url=closed_port_url())
    assert corpus.text.startswith("the time machine by h g wells")
    assert preprocess("It's  the END!") == "it s the end "


SERVER_MAX_BYTES = 64 << 20


class FaultyServer:
    """A raw HTTP server on 127.0.0.1 that misbehaves as `fault` says, for a bounded time.

    truncated: announces the full Content-Length, sends half, closes. garbled: a status line
    that is not HTTP. drip: one byte every 0.5 s. missing: 404. slow: says nothing for 10 s.
    endless: zeros with no Content-Length, like file:///dev/zero. huge: announces 500 MB and
    sends zeros. redirect: sends the client on to `body` (an address). Each connection is served
    for at most 12 s and at most SERVER_MAX_BYTES, so no test can leave it running or, on a
    download without a size limit, fill the memory.
    """

    def __init__(self, fault: str, body: bytes = PAYLOAD):
        self.fault, self.body = fault, body
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/timemachine.txt"
        self.stopped = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        header = f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.body)}\r\n\r\n".encode()
        end = time.monotonic() + 12
        with conn:
            try:
                conn.recv(4096)
                if self.fault == "truncated":
                    conn.sendall(header + self.body[: len(self.body) // 2])
                elif self.fault == "garbled":
                    conn.sendall(b"HTTX/9 what\r\n\r\n" + self.body)
                elif self.fault == "missing":
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                elif self.fault == "drip":
                    conn.sendall(header)
                    for byte in self.body:
                        if self.stopped.is_set() or time.monotonic() > end:
                            break
                        conn.sendall(bytes([byte]))
                        time.sleep(0.5)
                elif self.fault in ("endless", "huge"):
                    length = "Content-Length: 500000000\r\n" if self.fault == "huge" else ""
                    conn.sendall(f"HTTP/1.0 200 OK\r\n{length}\r\n".encode())
                    zeros, sent = bytes(1 << 16), 0
                    while sent < SERVER_MAX_BYTES and not self.stopped.is_set() and time.monotonic() < end:
                        conn.sendall(zeros)
                        sent += len(zeros)
                elif self.fault == "redirect":
                    conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: " + self.body
                                 + b"\r\nContent-Length: 0\r\n\r\n")
                elif self.fault == "slow":
                    while not self.stopped.is_set() and time.monotonic() < end:
                        time.sleep(0.1)
            except OSError:
                pass

    def close(self):
        self.stopped.set()
        self.sock.close()


@pytest.mark.parametrize("fault", ["truncated", "garbled", "missing", "drip", "slow"])
def test_a_misbehaving_server_gives_the_clear_error_within_the_deadline(tmp_path, fault):
    server = FaultyServer(fault)
    try:
        start = time.monotonic()
        with pytest.raises(DataUnavailableError) as caught:
            download_timemachine(tmp_path, server.url, timeout=2.0, sha1=PAYLOAD_SHA1)
        took = time.monotonic() - start
    finally:
        server.close()
    message = str(caught.value)
    assert server.url in message and str(tmp_path / "timemachine.txt") in message
    assert "bundled" in message
    assert took < 2.0 + 1.0, f"{fault}: returned after {took:.1f} s for a 2 s deadline"
    assert list(tmp_path.iterdir()) == [], "nothing may be left in the cache folder"


def test_the_deadline_covers_the_whole_download_not_each_read(tmp_path):
    server = FaultyServer("drip", body=b"x" * 100)  # every read succeeds, the whole takes 50 s
    try:
        start = time.monotonic()
        with pytest.raises(DataUnavailableError, match="longer than 1.5 s"):
            download_timemachine(tmp_path, server.url, timeout=1.5, sha1=PAYLOAD_SHA1)
        assert time.monotonic() - start < 2.5
    finally:
        server.close()


def test_a_cache_folder_that_is_a_file_gives_the_clear_error(tmp_path, serve):
    server = serve(PAYLOAD)
    folder = tmp_path / "cache"
    folder.write_text("not a folder")
    with pytest.raises(DataUnavailableError) as caught:
        download_timemachine(folder, server.url, sha1=PAYLOAD_SHA1)
    assert CACHE_ENV in str(caught.value) and server.url in str(caught.value)


@pytest.mark.parametrize("where", ["creating the folder", "writing the file"])
def test_an_unwritable_cache_folder_gives_the_clear_error(tmp_path, serve, monkeypatch, where):
    """Root may write anywhere, so the refusal a student's read-only folder gives is injected."""
    server = serve(PAYLOAD)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    if where == "creating the folder":
        monkeypatch.setattr(Path, "mkdir", refuse)
    else:
        monkeypatch.setattr(download_module.tempfile, "NamedTemporaryFile", refuse)
    with pytest.raises(DataUnavailableError, match="Permission denied") as caught:
        download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert server.url in str(caught.value) and str(tmp_path / "timemachine.txt") in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_hand_placed_file_with_the_wrong_checksum_is_moved_aside_not_deleted(tmp_path, serve):
    server = serve(PAYLOAD)
    (tmp_path / "timemachine.txt").write_bytes(b"my own notes, not the book")
    with pytest.warns(UserWarning, match="moved to"):
        path = download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert path.read_bytes() == PAYLOAD
    kept = [p for p in tmp_path.iterdir() if p.name.endswith(".bad")]
    assert len(kept) == 1 and kept[0].read_bytes() == b"my own notes, not the book"


def test_stale_temporary_files_are_removed_and_fresh_ones_kept(tmp_path, serve):
    server = serve(PAYLOAD)
    stale = tmp_path / "timemachine.txt.dead.part"
    fresh = tmp_path / "timemachine.txt.other-kernel.part"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert not stale.exists() and fresh.exists()


def test_two_downloads_at_once_do_not_clobber_each_other(tmp_path, serve):
    server = serve(PAYLOAD)
    errors = []

    def fetch():
        try:
            download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
        except Exception as error:  # collected and asserted below
            errors.append(error)

    for _ in range(5):  # a race shows only now and then: give it several chances
        (tmp_path / "timemachine.txt").unlink(missing_ok=True)
        threads = [threading.Thread(target=fetch) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert not errors
        assert [p.name for p in tmp_path.iterdir()] == ["timemachine.txt"]
        assert (tmp_path / "timemachine.txt").read_bytes() == PAYLOAD


def test_a_temporary_file_that_vanishes_while_cleaning_up_is_not_an_error(tmp_path):
    # Another kernel renamed its finished download between our listing and our check.
    download_module._remove_if_stale(tmp_path / "timemachine.txt.abc.part")


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {}, ".cache/d2lmini"),
    ("linux", {"XDG_CACHE_HOME": "{tmp}/xdg"}, "xdg/d2lmini"),
    ("darwin", {}, "Library/Caches/d2lmini"),
    ("win32", {"LOCALAPPDATA": "{tmp}/local"}, "local/d2lmini/Cache"),
    ("linux", {CACHE_ENV: "{tmp}/mine"}, "mine"),
])
def test_the_cache_folder_is_per_user_and_overridable(monkeypatch, tmp_path, platform, env, expected):
    for name in ("XDG_CACHE_HOME", "LOCALAPPDATA", CACHE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    monkeypatch.setattr(sys, "platform", platform)
    assert default_cache_dir() == tmp_path / expected


def test_the_cache_is_never_inside_the_installed_package():
    assert PACKAGE_DIR not in default_cache_dir().parents


# Downloads bounded (issue 20): http(s) only, a size limit, shared and read-only caches,
# several processes at once, other users' temporary files.


@pytest.mark.parametrize("url", [
    "file:///etc/hostname", "file:///dev/zero", "ftp://127.0.0.1:1/timemachine.txt",
    "data:text/plain,the%20time%20machine", "timemachine.txt", "http://", "http://[::1/x", None, 42,
])
def test_only_http_and_https_addresses_are_opened(tmp_path, monkeypatch, url):
    opened = []
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", lambda *args, **kw: opened.append(args))
    monkeypatch.setattr(urllib.request, "urlopen", lambda *args, **kw: opened.append(args))
    folder = tmp_path / "cache"
    with pytest.raises(UnsupportedURLError, match="Only http:// and https://") as caught:
        load_corpus("timemachine", data_dir=folder, url=url)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, DataUnavailableError)
    assert opened == [] and not folder.exists(), "a refused address must be refused before anything is opened"


@pytest.mark.parametrize("target", [b"ftp://127.0.0.1:1/timemachine.txt", b"file:///etc/hostname"])
def test_a_redirect_to_another_scheme_is_refused(tmp_path, target):
    server = FaultyServer("redirect", body=target)
    try:
        # urllib itself refuses file: redirects; d2lmini refuses every scheme but http and https
        with pytest.raises(DataUnavailableError, match="Only http:// and https://|is not allowed"):
            download_timemachine(tmp_path, server.url, timeout=3.0, sha1=PAYLOAD_SHA1)
    finally:
        server.close()
    assert list(tmp_path.iterdir()) == []


def test_the_size_limit_is_just_above_the_book():
    assert TIMEMACHINE_BYTES < MAX_DOWNLOAD_BYTES <= 2 * TIMEMACHINE_BYTES
    if SHARED_TIMEMACHINE.is_file():
        assert SHARED_TIMEMACHINE.stat().st_size == TIMEMACHINE_BYTES


@pytest.mark.parametrize("fault", ["endless", "huge"])
def test_an_endless_or_huge_body_stops_early_with_little_memory(tmp_path, fault):
    server = FaultyServer(fault)
    tracemalloc.start()
    try:
        start = time.monotonic()
        with pytest.raises(DataUnavailableError, match=f"more than {MAX_DOWNLOAD_BYTES:,} bytes") as caught:
            download_timemachine(tmp_path, server.url, timeout=10.0, sha1=PAYLOAD_SHA1)
        took = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        server.close()
    assert server.url in str(caught.value) and "bundled" in str(caught.value)
    assert took < 3.0, f"{fault}: refused only after {took:.1f} s"
    assert peak < 4 * MAX_DOWNLOAD_BYTES, f"{fault}: {peak:,} bytes at the peak"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no Unix permission bits")
def test_the_cached_copy_is_readable_by_everyone_whatever_the_umask(tmp_path, serve):
    server = serve(PAYLOAD)
    previous = os.umask(0o077)
    try:
        path = download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_our_temporary_file_names_are_our_own(tmp_path, serve, monkeypatch):
    server = serve(PAYLOAD)
    renamed, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renamed.append(Path(src).name), replace(src, dst)))
    download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert len(renamed) == 1
    assert renamed[0].startswith(f"timemachine.txt.{os.getpid()}.") and renamed[0].endswith(".part")


def _refuse(path) -> PermissionError:
    return PermissionError(errno.EACCES, "Permission denied", os.fspath(path))


def make_read_only(monkeypatch, folder: Path) -> list:
    """Make every change inside `folder` fail as in a folder we may only read; return the attempts.

    Root may write anywhere, so the refusals are injected into the os functions that pathlib,
    tempfile and d2lmini use to write.
    """
    folder, attempts = folder.resolve(), []

    def inside(path) -> bool:
        if isinstance(path, int):
            return False
        resolved = Path(os.fspath(path)).resolve()
        return resolved == folder or folder in resolved.parents

    def guard(name, original, *, exists_error=False):
        def guarded(*args, **kwargs):
            paths = [arg for arg in args[:2] if isinstance(arg, str | bytes | os.PathLike)]
            if not any(inside(path) for path in paths):
                return original(*args, **kwargs)
            if exists_error and os.path.exists(paths[0]):
                raise FileExistsError(errno.EEXIST, "File exists", os.fspath(paths[0]))
            attempts.append((name, os.fspath(paths[0])))
            raise _refuse(paths[0])
        monkeypatch.setattr(os, name, guarded)

    for name in ("replace", "rename", "unlink", "remove", "rmdir", "chmod", "utime", "link", "symlink"):
        guard(name, getattr(os, name))
    guard("mkdir", os.mkdir, exists_error=True)
    open_file, open_path = os.open, Path.open
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & writing and inside(path):
            attempts.append(("open", os.fspath(path)))
            raise _refuse(path)
        return open_file(path, flags, *args, **kwargs)

    def guarded_path_open(self, mode="r", *args, **kwargs):
        if set(mode) & set("wax+") and inside(self):
            attempts.append(("open", os.fspath(self)))
            raise _refuse(self)
        return open_path(self, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(Path, "open", guarded_path_open)
    return attempts


def test_a_good_copy_in_a_read_only_shared_cache_is_used_without_writing(tmp_path, monkeypatch, serve):
    server = serve(PAYLOAD)
    (tmp_path / "timemachine.txt").write_bytes(PAYLOAD)
    (tmp_path / "timemachine.txt.someone-else.part").write_bytes(b"half")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    attempts = make_read_only(monkeypatch, tmp_path)
    assert download_timemachine(url=server.url, sha1=PAYLOAD_SHA1) == tmp_path / "timemachine.txt"
    assert attempts == [] and server.requests == 0


def test_the_read_only_simulation_refuses_writes(tmp_path, monkeypatch, serve):
    # The test above means something only if a write would have been refused.
    server = serve(PAYLOAD)
    attempts = make_read_only(monkeypatch, tmp_path)
    with pytest.raises(DataUnavailableError, match="Permission denied"):
        download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert attempts and list(tmp_path.iterdir()) == []


def test_a_corrupt_copy_in_a_read_only_cache_says_what_to_do(tmp_path, monkeypatch, serve):
    server = serve(PAYLOAD)
    (tmp_path / "timemachine.txt").write_bytes(b"damaged")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    make_read_only(monkeypatch, tmp_path)
    with pytest.raises(DataUnavailableError) as caught:
        load_corpus("timemachine", url=server.url)
    message = str(caught.value)
    assert str(tmp_path / "timemachine.txt") in message and "Permission denied" in message
    assert CACHE_ENV in message and "owner" in message and "bundled" in message
    assert [p.name for p in tmp_path.iterdir()] == ["timemachine.txt"]


def test_a_cached_copy_we_may_not_read_says_what_to_do(tmp_path, monkeypatch, serve):
    """Another user's copy saved 0600 (before issue 20) in a shared cache; injected: root reads anything."""
    server = serve(PAYLOAD)
    cached = tmp_path / "timemachine.txt"
    cached.write_bytes(PAYLOAD)
    open_path = Path.open

    def refuse_cached(self, *args, **kwargs):
        if self == cached:
            raise _refuse(self)
        return open_path(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse_cached)
    with pytest.raises(DataUnavailableError) as caught:
        download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    message = str(caught.value)
    assert str(cached) in message and "chmod 644" in message and CACHE_ENV in message
    assert not timemachine_is_cached(tmp_path)


def test_another_users_stale_temporary_file_neither_blocks_nor_is_removed(tmp_path, monkeypatch, serve):
    """A shared sticky folder: their stale `.part` may not be deleted by us, and need not be."""
    server = serve(PAYLOAD)
    theirs = tmp_path / "timemachine.txt.4242.abcdefgh.part"
    theirs.write_bytes(b"half")
    old = time.time() - 3600
    os.utime(theirs, (old, old))
    monkeypatch.setattr(os, "geteuid", lambda: theirs.stat().st_uid + 1, raising=False)
    touched, unlink = [], os.unlink

    def sticky_unlink(path, *args, **kwargs):
        if Path(path) == theirs:
            touched.append(path)
            raise PermissionError(errno.EPERM, "Operation not permitted", os.fspath(path))
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", sticky_unlink)
    path = download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1)
    assert path.read_bytes() == PAYLOAD
    assert theirs.exists() and touched == [], "another user's file must be left alone"


def test_a_stale_temporary_file_we_cannot_delete_does_not_block(tmp_path, monkeypatch, serve):
    server = serve(PAYLOAD)
    ours = tmp_path / "timemachine.txt.4242.abcdefgh.part"
    ours.write_bytes(b"half")
    old = time.time() - 3600
    os.utime(ours, (old, old))
    unlink = os.unlink

    def refuse_ours(path, *args, **kwargs):
        if Path(path) == ours:
            raise _refuse(path)
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", refuse_ours)
    assert download_timemachine(tmp_path, server.url, sha1=PAYLOAD_SHA1).read_bytes() == PAYLOAD


def _download_rounds(folder, url, rank, rounds, barrier, results):
    """One process of the test below: each round, process 0 corrupts the cached copy, then all
    processes call download_timemachine at once; put the list of exceptions raised on `results`."""
    warnings.simplefilter("ignore")  # the moved-aside warning, once a round
    errors = []
    for _ in range(rounds):
        if rank == 0:
            (folder / "corrupt.tmp").write_bytes(b"damaged")
            os.replace(folder / "corrupt.tmp", folder / "timemachine.txt")
        barrier.wait(30)
        try:
            download_timemachine(folder, url, sha1=PAYLOAD_SHA1)
        except Exception as error:  # collected and asserted by the test
            errors.append(f"{type(error).__name__}: {error}")
        barrier.wait(30)
    results.put(errors)


def test_processes_moving_a_corrupt_copy_aside_at_once_do_not_fail(tmp_path, serve):
    server = serve(PAYLOAD)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    barrier, results = context.Barrier(4), context.Queue()
    workers = [context.Process(target=_download_rounds,
                               args=(tmp_path, server.url, rank, 15, barrier, results)) for rank in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork with threads running
        for worker in workers:
            worker.start()
    try:
        errors = [error for _ in workers for error in results.get(timeout=120)]
    finally:
        for worker in workers:
            worker.join(10)
            if worker.is_alive():
                worker.terminate()
    assert errors == [], f"{len(errors)} of 60 calls raised, e.g. {errors[0]}"
    bad = f"timemachine.txt.sha1-{hashlib.sha1(b'damaged').hexdigest()[:12]}.bad"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["timemachine.txt", bad]
    assert (tmp_path / "timemachine.txt").read_bytes() == PAYLOAD
    assert (tmp_path / bad).read_bytes() == b"damaged"


def test_a_good_copy_stored_by_another_process_meanwhile_is_not_moved_aside(tmp_path, recwarn):
    # We read a damaged copy; before we moved it, another process replaced it with a good one.
    path = tmp_path / "timemachine.txt"
    path.write_bytes(PAYLOAD)
    download_module._move_aside(path, hashlib.sha1(b"damaged").hexdigest(), PAYLOAD_SHA1)
    assert [p.name for p in tmp_path.iterdir()] == ["timemachine.txt"] and path.read_bytes() == PAYLOAD
    assert not [w for w in recwarn if "moved to" in str(w.message)]


NOBODY = 65534
CAN_SWITCH_USER = (hasattr(os, "geteuid") and os.geteuid() == 0
                   and "fork" in multiprocessing.get_all_start_methods())


def _call_as_nobody(results, call):
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    warnings.simplefilter("ignore")
    try:
        results.put(("ok", str(call())))
    except Exception as error:  # reported to the test
        results.put((type(error).__name__, str(error)))


def as_another_user(call) -> tuple[str, str]:
    """Run `call` in a forked process as user `nobody`; return ("ok", result) or (error type, message)."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    worker = context.Process(target=_call_as_nobody, args=(results, call))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork with threads running
        worker.start()
    try:
        return results.get(timeout=60)
    finally:
        worker.join(10)


@pytest.mark.skipif(not CAN_SWITCH_USER, reason="needs root (to act as another user) and fork")
def test_a_shared_cache_works_for_another_real_user(serve):
    """The injected refusals above, for real: an instructor (root) fills a cache, a student uses it."""
    server = serve(PAYLOAD)
    shared = Path(tempfile.mkdtemp())
    try:
        shared.chmod(0o755)  # the students may read it, not write to it
        previous = os.umask(0o077)
        try:
            path = download_timemachine(shared, server.url, sha1=PAYLOAD_SHA1)
        finally:
            os.umask(previous)
        offline = closed_port_url()  # a verified copy needs no network, and no writing
        outcome = as_another_user(lambda: download_timemachine(shared, offline, sha1=PAYLOAD_SHA1))
        assert outcome == ("ok", str(path))
        path.write_bytes(b"damaged")
        kind, message = as_another_user(lambda: download_timemachine(shared, server.url, sha1=PAYLOAD_SHA1))
        assert kind == "DataUnavailableError" and CACHE_ENV in message and "owner" in message, message
        # A sticky folder everyone may write to, holding the instructor's stale temporary file.
        path.unlink()
        shared.chmod(0o1777)
        stale = shared / "timemachine.txt.1.abcdefgh.part"
        stale.write_bytes(b"half")
        os.utime(stale, (time.time() - 3600,) * 2)
        assert as_another_user(lambda: download_timemachine(shared, server.url, sha1=PAYLOAD_SHA1))[0] == "ok"
        assert stale.exists() and path.read_bytes() == PAYLOAD
    finally:
        shutil.rmtree(shared)


def test_load_corpus_takes_the_download_deadline(tmp_path):
    server = FaultyServer("drip", body=b"x" * 100)
    try:
        start = time.monotonic()
        with pytest.raises(DataUnavailableError, match="longer than 1.5 s"):
            load_corpus("timemachine", data_dir=tmp_path, url=server.url, timeout=1.5)
        assert time.monotonic() - start < 2.5
    finally:
        server.close()


@pytest.mark.parametrize("timeout, error", [
    (0, ValueError), (-1, ValueError), (float("nan"), ValueError), (1e300, ValueError),
    ("10", TypeError), (True, TypeError), (None, TypeError),
])
def test_a_wrong_deadline_is_refused_before_opening(tmp_path, timeout, error):
    with pytest.raises(error, match="timeout"):
        download_timemachine(tmp_path, closed_port_url(), timeout=timeout, sha1=PAYLOAD_SHA1)
    assert list(tmp_path.iterdir()) == []
