"""How busy each web process is, and when one should hand a kept-alive client to another.

Web processes share one listening socket, and a keep-alive connection stays with the process
that accepted it, so ``server.BufferingWorker`` balances the way nginx's ``least_conn`` does:

- a process whose threads are all busy stops accepting, unless no other process has fewer
  requests in flight (:meth:`Balance.accepting`): a new connection goes to a process with a free
  thread, or else to the shortest queue, and never waits in the kernel's queue while every
  process is busy (kept-alive clients would then be served ahead of it indefinitely);
- an answer from a *crowded* process (:meth:`Balance.crowded`) says ``Connection: close``, so that
  client's next request reconnects and goes where those rules send it.

A process alone cannot tell whether closing helps: when every process is crowded, the client
reconnects only to queue again, and the reconnections cost CPU on both sides. The first version
closed whenever its process was crowded; under 50 playground users on 2 cores that closed nine
answers in ten, and against keeping every connection alive it cost 0.1-0.5 ms more web CPU and
0.2 ms more client CPU a request, for fewer requests a second and a p99 no better
(``benchmarks/load_test.py``, 2026-11-28, alternated). So the processes publish their load on a
:class:`LoadBoard` that all of them read, and a crowded process lets a client go only where that
helps: another process has a free thread, or this one holds at least two connections more than
the process with the fewest (moving one then evens them out).

Internal to the web server; the app never sees it.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
from typing import NamedTuple

#: What each process publishes, in this order: its pid (0: a free slot), its requests in flight
#: (running or waiting for a thread) and its open connections.
_PID, _IN_FLIGHT, _CONNECTIONS = range(3)
_FIELDS = 3


class Peers(NamedTuple):
    """What the other web processes' loads say, as :meth:`LoadBoard.peers` reads them."""

    least_in_flight: int  # the fewest requests in flight in any other process
    fewest_connections: int  # the fewest open connections any other process holds


class LoadBoard:
    """Each web process's load, readable by all of them: an anonymous shared mapping that gunicorn's
    master makes before it forks the workers, one slot of three integers per process.

    A worker claims a free slot when it starts (:meth:`claim`) and frees it when it leaves
    (:meth:`release`); a slot whose process died without leaving is free again (its pid no longer
    exists), so a replacement takes it over. Values are single aligned 64-bit words, each written
    by one process only, so a reader sees a whole value, if perhaps a moment old: good enough to
    decide where a client goes next. Only claiming takes a lock (two workers start at once).
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._map = mmap.mmap(-1, slots * _FIELDS * 8)  # MAP_SHARED | MAP_ANONYMOUS: kept across fork
        self._cells = memoryview(self._map).cast("q")
        self._claiming = multiprocessing.get_context("fork").Lock()

    def claim(self) -> int | None:
        """A free slot for this process (None when every slot is taken: it then balances alone)."""
        me = os.getpid()
        with self._claiming:
            for slot in range(self.slots):
                pid = self._cells[slot * _FIELDS + _PID]
                if pid == 0 or not _alive(pid):
                    base = slot * _FIELDS
                    self._cells[base + _IN_FLIGHT] = self._cells[base + _CONNECTIONS] = 0
                    self._cells[base + _PID] = me
                    return slot
        return None

    def release(self, slot: int) -> None:
        """Leave ``slot`` (this process is leaving)."""
        if self._cells[slot * _FIELDS + _PID] == os.getpid():
            self._cells[slot * _FIELDS + _PID] = 0

    def publish(self, slot: int, in_flight: int, connections: int) -> None:
        """This process's load, for the others to read."""
        base = slot * _FIELDS
        self._cells[base + _IN_FLIGHT] = in_flight
        self._cells[base + _CONNECTIONS] = connections

    def peers(self, slot: int) -> Peers | None:
        """The other processes' loads, or None when no other process is on the board."""
        cells = self._cells
        found = [(cells[base + _IN_FLIGHT], cells[base + _CONNECTIONS])
                 for base in range(0, self.slots * _FIELDS, _FIELDS) if base != slot * _FIELDS and cells[base + _PID]]
        if not found:
            return None
        return Peers(min(in_flight for in_flight, _ in found), min(connections for _, connections in found))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Balance:
    """How busy one web process is, and what that means for new and kept-alive connections.

    ``threads`` requests run at once; more wait in the process's own queue. With a ``board`` and
    the process's ``slot`` on it, every change is published there and the other processes' loads
    are weighed; without, each rule falls back to this process's own load. Only called with the
    worker's lock held.
    """

    def __init__(self, threads: int, board: LoadBoard | None = None, slot: int | None = None) -> None:
        self.threads = threads
        self.in_flight = 0  # requests handed to the thread pool and not yet finished
        self.connections = 0  # open connections, as the worker counts them
        self.board = board if slot is not None else None
        self.slot = slot

    def started(self) -> None:
        """Count a request handed to a thread."""
        self.in_flight += 1
        self._publish()

    def finished(self) -> None:
        """Count a finished request."""
        self.in_flight -= 1
        self._publish()

    def connected(self, connections: int) -> None:
        """The process now holds ``connections`` open connections."""
        if connections != self.connections:
            self.connections = connections
            self._publish()

    def accepting(self) -> bool:
        """Whether this process should take new connections: it has a free thread, or no other
        process has fewer requests in flight. Some process always accepts, so a client that
        reconnects never waits in the kernel's queue while every process is busy."""
        if self.in_flight < self.threads:
            return True
        peers = self._peers()
        return peers is not None and self.in_flight <= peers.least_in_flight

    def crowded(self) -> bool:
        """Whether the client being answered had better queue for any process: no other thread
        here is free, and another process has one, or holds two connections fewer than this one."""
        if self.in_flight < self.threads:
            return False
        peers = self._peers()
        if peers is None:
            return True
        return peers.least_in_flight < self.threads or self.connections >= peers.fewest_connections + 2

    def _peers(self) -> Peers | None:
        return self.board.peers(self.slot) if self.board is not None and self.slot is not None else None

    def _publish(self) -> None:
        if self.board is not None and self.slot is not None:
            self.board.publish(self.slot, self.in_flight, self.connections)
