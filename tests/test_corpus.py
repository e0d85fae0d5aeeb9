"""Corpora: the bundled text, The Time Machine download and cache, the train/validation split."""

import gzip
import hashlib
import http.server
import re
import shutil
import socket
import threading
from pathlib import Path

import pytest

from d2lmini.corpus import (
    BUNDLED_FILE,
    DATA_DIR,
    ChecksumError,
    DataUnavailableError,
    download_timemachine,
    load_corpus,
    timemachine_is_cached,
)
from d2lmini.text import preprocess

SHARED_TIMEMACHINE = Path(__file__).resolve().parents[2] / "shared" / "data" / "timemachine.txt"
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
    readme = (DATA_DIR / "README.md").read_text()
    raw = (DATA_DIR / BUNDLED_FILE).read_bytes()
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
