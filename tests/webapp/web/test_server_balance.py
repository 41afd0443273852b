"""Web processes share the load (``webapp.web.balance``): a process with no free thread leaves
new connections to the others, and a crowded process lets a kept-alive client go only where
another process has a free thread or fewer connections (the processes' shared load board).

The live tests run gunicorn with the real :class:`webapp.web.server.BufferingWorker` around
``balance_app``, whose ``/hold`` keeps a thread busy until the test removes a file; the board's
tests put a forked process beside this one on a real board.
"""

from __future__ import annotations

import http.client
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live import REPO, free_port, wait_for
from webapp.web.balance import Balance, LoadBoard, Peers

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

    def hold_a_thread(self) -> http.client.HTTPConnection:
        """A connection whose ``/hold`` request has its process's thread (until ``hold`` is removed)."""
        self.hold.touch()
        held = self.connect()
        held.request("GET", "/hold")
        wait_for(self.entered.exists, "/hold to take its process's thread", limit=30)
        return held

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
    held = server.hold_a_thread()
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


@pytest.mark.parametrize("server", [(2, 1)], indirect=True)
def test_a_crowded_process_keeps_its_client_when_every_other_process_is_as_busy(server: Server) -> None:
    held = server.hold_a_thread()
    # The other process is crowded while it answers (its only thread), but the held one has no
    # free thread and as many connections: reconnecting would only queue again.
    conn = server.connect()
    first, header = answer(conn, "/")
    assert header != "close"
    assert answer(conn, "/") == (first, header)  # the same connection, reused
    conn.close()
    server.hold.unlink()
    assert answer(held)[0] != first
    held.close()


def test_a_process_alone_is_crowded_when_no_other_thread_is_free() -> None:
    balance = Balance(threads=2)
    balance.started()  # one of two threads taken
    assert balance.crowded() is False and balance.accepting() is True  # the answer leaves a thread free
    balance.started()  # the last free thread: stop accepting, let clients go
    assert balance.crowded() is True and balance.accepting() is False
    balance.started()  # a third waits in the process's queue
    balance.finished()
    assert balance.crowded() is True and balance.accepting() is False
    balance.finished()  # a thread is free again
    assert balance.crowded() is False and balance.accepting() is True


def _peer(board: LoadBoard, in_flight: int, connections: int, ready: object, leave: object) -> None:
    """Another web process: claim a slot, publish a load, wait to be told to leave."""
    slot = board.claim()
    assert slot is not None
    board.publish(slot, in_flight, connections)
    ready.set()  # type: ignore[attr-defined]
    leave.wait(30)  # type: ignore[attr-defined]
    board.release(slot)


class PeerProcess:
    """A forked process on ``board`` showing ``in_flight`` requests and ``connections``."""

    def __init__(self, board: LoadBoard, in_flight: int, connections: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.ready, self.leave = ctx.Event(), ctx.Event()
        self.process = ctx.Process(target=_peer, args=(board, in_flight, connections, self.ready, self.leave))
        self.process.start()
        assert self.ready.wait(30)

    def stop(self) -> None:
        self.leave.set()
        self.process.join(30)
        assert self.process.exitcode == 0


def busy(board: LoadBoard, threads: int, in_flight: int, connections: int) -> Balance:
    """This process on ``board`` with ``in_flight`` requests and ``connections`` open."""
    balance = Balance(threads, board, board.claim())
    for _ in range(in_flight):
        balance.started()
    balance.connected(connections)
    return balance


def test_the_board_shows_each_process_the_others_loads() -> None:
    board = LoadBoard(slots=4)
    peer = PeerProcess(board, in_flight=3, connections=9)
    try:
        mine = board.claim()
        assert mine is not None
        assert board.peers(mine) == Peers(least_in_flight=3, fewest_connections=9)
    finally:
        peer.stop()
    assert board.peers(mine) is None  # the peer left its slot


def test_a_dead_process_leaves_its_slot_to_the_next() -> None:
    board = LoadBoard(slots=1)
    ctx = multiprocessing.get_context("fork")
    dead = ctx.Process(target=board.claim)  # claims, and exits without releasing
    dead.start()
    dead.join(30)
    assert board.claim() == 0


def test_a_crowded_process_weighs_the_others() -> None:
    board = LoadBoard(slots=4)
    peer = PeerProcess(board, in_flight=2, connections=10)  # as busy as can be: no free thread
    try:
        balance = busy(board, threads=2, in_flight=2, connections=11)
        assert balance.crowded() is False  # no process is freer, and one connection more is even
        assert balance.accepting() is True  # no process has fewer requests in flight: someone must accept
        balance.connected(12)
        assert balance.crowded() is True  # two connections more than the peer: move one
        balance.started()
        assert balance.accepting() is False  # a third request in flight: the peer accepts
    finally:
        peer.stop()


def test_a_crowded_process_lets_clients_go_to_a_process_with_a_free_thread() -> None:
    board = LoadBoard(slots=4)
    peer = PeerProcess(board, in_flight=1, connections=30)
    try:
        balance = busy(board, threads=2, in_flight=2, connections=3)
        assert balance.crowded() is True and balance.accepting() is False
    finally:
        peer.stop()
