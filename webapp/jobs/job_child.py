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

Every job process has a memory limit, ``TOKENFORGE_JOB_MEMORY_BYTES`` of address space
(``RLIMIT_AS``, which every process it starts inherits: each counting worker has the same limit).
The child reads the setting from the environment it inherited from its worker, so the worker
passes nothing. A job that needs more gets a ``MemoryError`` (numpy's and the trainers' large
allocations fail cleanly), which :func:`send_outcome` turns into a sentence naming the limit and
the setting; the worker records it and goes on. Address space is more than the memory in use
(numpy, thread stacks and malloc arenas reserve some they never touch), so the limit is a ceiling
for runaway jobs, not an accounting: a small training needs about 400 MB of it.

The child modules import their heavy parts (the engine's trainers, metrics, the database) inside
their entry points, on purpose: the worker imports each child module to name its entry point,
and should not load a trainer it never runs itself.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from engine.processes import die_with_parent, lead_group

GIB = 1 << 30


def start_child(parent_pid: int, nice: int) -> None:
    """Lead a process group, die with the worker, ignore Ctrl-C (the worker decides), lower priority,
    and limit the memory."""
    limit_memory()
    lead_group()
    if not die_with_parent(signal.SIGKILL, parent_pid=parent_pid):
        os._exit(1)  # the worker died before the request took effect: nobody wants the result
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass


def job_memory_limit() -> int:
    """The bytes of address space a job process may use: ``TOKENFORGE_JOB_MEMORY_BYTES`` from the
    environment (checked when the worker started), or its default."""
    from webapp.web.config import SettingsError, default_job_memory, job_memory_bytes

    try:
        return job_memory_bytes(os.environ)
    except SettingsError:  # the worker refused it at start-up already; not reached in practice
        return default_job_memory()


def limit_memory(limit: int | None = None) -> None:
    """Set this process's address-space limit (soft and hard: its own processes cannot raise it)."""
    limit = job_memory_limit() if limit is None else limit
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def memory_sentence(what: str, advice: str = "") -> str:
    """What to say when ``what`` ("Training") ran out of memory: the limit, ``advice`` (" Try …"),
    and the setting to raise."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return f"{what} ran out of memory.{advice}"
    return (f"{what} needed more than {limit / GIB:.3g} GiB of memory, the limit of one job, and was stopped."
            f"{advice}{memory_setting()}")


def memory_setting() -> str:
    """" An administrator can raise TOKENFORGE_JOB_MEMORY_BYTES (now N bytes).", or "" without a limit."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return ""
    return f" An administrator can raise TOKENFORGE_JOB_MEMORY_BYTES (now {limit:,} bytes)."


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
    worker's log, not to the page. The sentence for a ``MemoryError`` is made after the handler,
    once the exception and the frames it held (the job's data) are freed.
    """
    out_of_memory = False
    try:
        message = work()
    except MemoryError:
        out_of_memory = True
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        message = ("error", f"{what} failed unexpectedly ({type(exc).__name__}: {exc}).")
    if out_of_memory:
        message = ("error", memory_sentence(what, memory_hint))
    conn.send(message)
    conn.close()
