"""Web processes share the load (``webapp.web.server.Balance``): a process with no free thread
accepts no new connection, and an answer from a crowded process closes its connection.

Each test runs gunicorn with the real :class:`webapp.web.server.BufferingWorker` around
``balance_app``, whose ``/hold`` keeps a thread busy until the test removes a file.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live import REPO, free_port, wait_for
from webapp.web.server import Balance

HERE = Path(__file__).resolve().parent


class Server:
    """gunicorn on 127.0.0.1 with ``workers`` processes of ``threads`` threads each."""

    def __init__(self, tmp_path: Path, workers: int, threads: int) -> None:
        self.port = free_port()
        self.hold = tmp_path / "hold"
        self.entered = tmp_path / "hold.entered"  # balance_app creates it when /hold has a thread
        env = {**os.environ, "TOKENFORGE_TEST_HOLD": str(self.hold), "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--worker-class", "webapp.web.server.BufferingWorker",
             "--workers", str(workers), "--threads", str(threads), "--keep-alive", "75",
             "--bind", f"127.0.0.1:{self.port}", "--chdir", str(HERE), "balance_app:app"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
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
        """SIGTERM; SIGKILL to the whole group (its workers too) if shutdown outlasts 10 s, as on a busy CI host."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
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
    wait_for(server.entered.exists, "/hold to take its process's only thread", limit=30)
    # Both processes wait on the same listening socket. Without balancing, about half of these
    # connections would go to the busy process and wait there until the hold ends (timeout).
    quick = {server.get("/")[0] for _ in range(8)}
    server.hold.unlink()
    busy, _ = answer(held)
    held.close()
    assert len(quick) == 1 and busy not in quick


@pytest.mark.parametrize("server", [(2, 1)], indirect=True)
def test_an_answer_from_a_crowded_process_closes_the_connection(server: Server) -> None:
    # One thread a process: answering takes its only thread, so every answer sheds its client.
    conn = server.connect()
    assert answer(conn, "/")[1] == "close"
    conn.close()


@pytest.mark.parametrize("server", [(1, 1)], indirect=True)
def test_a_single_process_keeps_connections_alive(server: Server) -> None:
    conn = server.connect()
    first, header = answer(conn, "/")
    assert header != "close"
    assert answer(conn, "/") == (first, header)  # the same connection, reused
    conn.close()


def test_a_process_is_crowded_when_no_other_thread_is_free() -> None:
    balance = Balance(threads=2)
    assert balance.started() is False  # one of two threads taken
    assert balance.crowded() is False  # the answer leaves a thread free: keep the client
    assert balance.started() is True  # the last free thread: stop accepting
    assert balance.crowded() is True
    assert balance.started() is False  # a third waits in the process's queue
    assert balance.finished() is False and balance.crowded() is True
    assert balance.finished() is True  # a thread is free again: accept again
    assert balance.crowded() is False
