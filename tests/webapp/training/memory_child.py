"""A job child for the memory-limit tests: starts like every job child, then allocates.

It lives outside the test modules because the worker's ``spawn`` children import their target's
module by name. Left out: any real job.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from webapp.jobs.job_child import send_outcome, start_child


def allocate(conn: Connection, parent_pid: int, nbytes: int) -> None:
    """Start as a job child (its memory limit included), then ask for ``nbytes`` at once."""
    start_child(parent_pid, 0)

    def work() -> tuple[Any, ...]:
        block = bytearray(nbytes)
        return ("done", len(block))

    send_outcome(conn, work, what="Training", memory_hint=" Nothing was saved. Try a smaller corpus or vocabulary.")
