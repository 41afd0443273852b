"""Slow uploads cannot hold request threads (issue #22, finding 1).

The server's body reader cuts off a body that falls below the rate floor in a window (here on a
socket pair, with windows of a fraction of a second), and a real ``tokenforge serve`` answers a
member's third upload at once with a 429 while two slow ones run, then cuts those off and keeps
nothing of them. Nothing asserts a duration: the windows only make the test short.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live import Client, LiveApp, multipart
from webapp.web.server import BodyRules, _Reader

HEAD = b"POST /corpora/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def test_a_body_below_the_floor_in_a_window_is_cut_off(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    reader = _Reader(server, BodyRules(min_rate=1000, window=0.1, max_seconds=60))
    reader.pending += HEAD
    reader.start()
    assert reader.recv(len(HEAD)) == HEAD  # the buffered head first
    client.sendall(b"x" * 50)
    assert reader.recv(1000) == b"x" * 50  # the first window is free
    # Then nothing more comes: the next window brings 0 of its 100 bytes, and the body ends.
    assert reader.recv(1000) == b"" and reader.cut_off


def test_a_body_that_keeps_up_is_read_whole(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    reader = _Reader(server, BodyRules(min_rate=10, window=60, max_seconds=60))
    reader.pending += HEAD
    reader.start()
    reader.recv(len(HEAD))
    client.sendall(b"y" * 5000)
    received = b""
    while len(received) < 5000:
        received += reader.recv(5000 - len(received))
    assert received == b"y" * 5000 and not reader.cut_off


def test_a_body_is_cut_off_at_its_deadline_however_it_trickles(pair: tuple[socket.socket, socket.socket]) -> None:
    """Declared as 10 bytes at 1,000 bytes/s: one window of 0.05 s plus 0.01 s in all."""
    server, client = pair
    reader = _Reader(server, BodyRules(min_rate=1000, window=0.05, max_seconds=60))
    reader.pending += b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n"
    reader.start()
    reader.recv(1 << 16)
    client.sendall(b"z")
    assert reader.recv(10) == b"z"
    assert reader.recv(10) == b"" and reader.cut_off


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveApp]:
    app = LiveApp(tmp_path / "data", workers=1, threads=4, job_worker=False,
                  env={"TOKENFORGE_UPLOAD_RATE_WINDOW": "4", "TOKENFORGE_UPLOAD_MIN_RATE": "1000000"})  # room for a busy machine
    app.start()
    yield app
    app.stop()


def _start_slow_upload(live: LiveApp, client: Client, token: str) -> socket.socket:
    """An upload declaring 10 MB that sends its first kilobyte, then stalls."""
    body, content_type = multipart({"csrf_token": token}, "slow.txt", b"s" * (10 << 20))
    sock = socket.create_connection(("127.0.0.1", live.port))
    sock.sendall(f"POST /corpora/ HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {client.cookie_header()}\r\n"
                 f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:1024])
    return sock


def _wait_until_running(live: LiveApp, uploads: int) -> None:
    """Until ``uploads`` uploads hold their slots: each holds a member's and an address's lock file
    (``web/slots.py``), which exist only while held. A thread takes them only once it reads the
    request, which a busy machine may delay."""
    folder = live.data_dir / "slots"
    deadline = time.monotonic() + 60
    while not (folder.is_dir() and len(list(folder.iterdir())) >= 2 * uploads):
        assert time.monotonic() < deadline, "the slow uploads never started"
        time.sleep(0.05)


@pytest.mark.slow
def test_slow_uploads_get_429_beyond_two_and_are_cut_off_leaving_nothing(live: LiveApp) -> None:
    client = Client(live.url)
    client.signup()
    token = client.token()
    slow = [_start_slow_upload(live, client, token) for _ in range(2)]
    try:
        # Both are running (a thread reads each body): the third upload at once is refused unread.
        _wait_until_running(live, 2)
        third = client.upload("third.txt", b"a b c", token=token)
        assert third.status == 429
        assert "You already have uploads in progress" in third.body and "TOKENFORGE_UPLOADS_PER_MEMBER" in third.body
        for sock in slow:  # the stalled bodies are cut off after the free window and one more
            sock.settimeout(60)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408 ")
            assert b"The upload arrived too slowly and was cut off" in answer
    finally:
        for sock in slow:
            sock.close()
    assert live.stored_objects() == [] and live.tmp_files() == []
    assert live.rows("SELECT COUNT(*) FROM corpora") == [(0,)]
    assert client.upload("after.txt", b"a b c", token=token).status == 200  # their slots were freed
    assert live.rows("SELECT name FROM corpora") == [("after.txt",)]


@pytest.fixture
def one_thread(tmp_path: Path) -> Iterator[LiveApp]:
    """A server with a single request thread: anything that holds it shows at once."""
    app = LiveApp(tmp_path / "data", workers=1, threads=1, job_worker=False)
    app.start()
    yield app
    app.stop()


@pytest.mark.slow
def test_uploads_in_progress_hold_no_request_thread(one_thread: LiveApp) -> None:
    """Two stalled uploads run in the upload lane (webapp/web/server.py): the one request thread
    still answers pages, and a third upload is refused from the lane too."""
    client = Client(one_thread.url)
    client.signup()
    token = client.token()
    slow = [_start_slow_upload(one_thread, client, token) for _ in range(2)]
    try:
        _wait_until_running(one_thread, 2)
        third = client.upload("third.txt", b"x" * (100 << 10), token=token)  # over the buffered size: the lane's too
        assert third.status == 429
        assert [client.request("healthz").status for _ in range(5)] == [200] * 5
        assert client.request("corpora/").status == 200
    finally:
        for sock in slow:
            sock.close()
