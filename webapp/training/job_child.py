"""What every job child process does first, whatever it runs (``train_child``, ``analyse_child``,
``leaderboard_child``).

The worker starts each job in a fresh ``spawn`` process so a crash, an out-of-memory kill or a
runaway job cannot take the worker down. Such a child leads a process group of its own, which
every process it starts joins (the trainers' counting pools, forks and shards), so that the
worker can end the whole job at once (``engine.processes.kill_group``) however it ends; it must
not outlive its worker (a SIGKILLed worker cannot kill it: the parent-death signal does), must
leave Ctrl-C to the worker, and runs at lower CPU priority than the web processes. Each child
sends exactly one outcome message (:func:`send_outcome`); what the messages carry is each
child's own business.

The child modules import their heavy parts (the engine's trainers, metrics, the database) inside
their entry points, on purpose: the worker imports each child module to name its entry point,
and should not load a trainer it never runs itself.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from engine.processes import die_with_parent, lead_group


def start_child(parent_pid: int, nice: int) -> None:
    """Lead a process group, die with the worker, ignore Ctrl-C (the worker decides), lower priority."""
    lead_group()
    if not die_with_parent(signal.SIGKILL, parent_pid=parent_pid):
        os._exit(1)  # the worker died before the request took effect: nobody wants the result
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass


class CancelCheck:
    """Calling it says whether the worker sent "cancel" on ``conn`` or has died."""

    def __init__(self, conn: Connection, parent_pid: int) -> None:
        self.conn, self.parent_pid = conn, parent_pid
        self.cancelled = False

    def __call__(self) -> bool:
        while self.conn.poll():
            if self.conn.recv() == "cancel":
                self.cancelled = True
        return self.cancelled or os.getppid() != self.parent_pid


def send_outcome(conn: Connection, work: Callable[[], tuple[Any, ...]], *, what: str,
                 memory_hint: str = "") -> None:
    """Run ``work`` and send the message it returns; failures it did not expect become errors.

    ``what`` starts the sentences ("Training", "The analysis"). A bug's traceback goes to the
    worker's log, not to the page.
    """
    try:
        message = work()
    except MemoryError:
        message = ("error", f"{what} ran out of memory.{memory_hint}")
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        message = ("error", f"{what} failed unexpectedly ({type(exc).__name__}: {exc}).")
    conn.send(message)
    conn.close()
