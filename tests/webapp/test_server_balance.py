"""Web processes share the load (``webapp.server.Balance``): a process with no free thread
accepts no new connection, and one with requests queued sheds kept-alive connections.

Each test runs gunicorn with the real :class:`webapp.server.BufferingWorker` around
``balance_app``, whose ``/hold`` keeps a thread busy until the test removes a file.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.webapp.live import free_port

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


class Server:
    """gunicorn on 127.0.0.1 with ``workers`` processes of ``threads`` threads each."""

    def __init__(self, tmp_path: Path, workers: int, threads: int) -> None:
        self.port = free_port()
        self.hold = tmp_path / "hold"
        env = {**os.environ, "TOKENFORGE_TEST_HOLD": str(self.hold), "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--worker-class", "webapp.server.BufferingWorker",
             "--workers", str(workers), "--threads", str(threads), "--keep-alive", "75",
             "--bind", f"127.0.0.1:{self.port}", "--chdir", str(HERE), "balance_app:app"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/")
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("gunicorn did not start")
                time.sleep(0.1)

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)

    def get(self, path: str) -> tuple[int, str | None]:
        """One request on a new connection: (answering pid, Connection header)."""
        conn = self.connect()
        try:
            return answer(conn, path)
        finally:
            conn.close()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def answer(conn: http.client.HTTPConnection, path: str | None = None) -> tuple[int, str | None]:
    """Send ``path`` (unless already sent) and read the answer: (pid, Connection header)."""
    if path is not None:
        conn.request("GET", path)
    response = conn.getresponse()
    return int(response.read()), response.getheader("Connection")


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    workers, threads = request.param
    running = Server(tmp_path, workers, threads)
    try:
        yield running
    finally:
        running.hold.unlink(missing_ok=True)
        running.stop()


@pytest.mark.parametrize("server", [(2, 1)], indirect=True)
def test_a_process_with_no_free_thread_leaves_new_connections_to_the_others(server: Server) -> None:
    server.hold.touch()
    held = server.connect()
    held.request("GET", "/hold")
    time.sleep(0.5)  # the request reaches its process's only thread
    # Both processes wait on the same listening socket. Without balancing, about half of these
    # connections would go to the busy process and wait there until the hold ends (timeout).
    quick = {server.get("/")[0] for _ in range(8)}
    server.hold.unlink()
    busy, _ = answer(held)
    held.close()
    assert len(quick) == 1 and busy not in quick


@pytest.mark.parametrize("server", [(1, 1)], indirect=True)
def test_a_process_with_requests_queued_sheds_the_connection_it_answers(server: Server) -> None:
    first, second = server.connect(), server.connect()
    for conn in (first, second):  # two kept-alive connections, parked in the worker
        assert answer(conn, "/")[1] != "close"
    server.hold.touch()
    held = server.connect()
    held.request("GET", "/hold")
    time.sleep(0.5)
    first.request("GET", "/")  # waits for the only thread behind /hold ...
    time.sleep(0.3)
    second.request("GET", "/")  # ... and so does this one, behind it
    time.sleep(0.3)
    server.hold.unlink()
    assert answer(held)[1] != "close"  # it started with nothing queued behind it
    assert answer(first)[1] == "close"  # it started with `second` still waiting: shed
    assert answer(second)[1] != "close"  # nothing waited behind it
    for conn in (held, first, second):
        conn.close()
