"""The training child process: runs ``engine.trainers.train`` and talks to its worker by pipe.

The worker (``worker.py``) starts this in a fresh ``spawn`` process (see ``job_child.py`` for
why, and for what every child does first). Messages sent to the worker are tuples:
``("progress", stage, current, total)``, then exactly one of ``("done", tokenizer_json, stats)``,
``("cancelled",)`` or ``("error", message)``. The worker may send ``"cancel"``. This module
imports only the engine: no Flask, no database.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from webapp.training.job_child import CancelCheck, send_outcome, start_child


def run(conn: Connection, parent_pid: int, algorithm: str, paths: list[str],
        options: dict[str, Any], nice: int, dask_scheduler: str | None = None) -> None:
    """Child entry point: train (counting on the Dask cluster ``dask_scheduler``, if one) and
    report the outcome on ``conn``."""
    start_child(parent_pid, nice)
    from engine.errors import TokenforgeError, TrainingCancelled
    from engine.trainers import train
    from engine.trainers.cluster import counting_on

    should_cancel = CancelCheck(conn, parent_pid)

    def progress(stage: str, current: int, total: int) -> None:
        conn.send(("progress", stage, int(current), int(total)))

    def work() -> tuple[Any, ...]:
        try:
            with counting_on(dask_scheduler):  # an unreachable scheduler fails here, before any work
                result = train(algorithm, paths, options, progress=progress, should_cancel=should_cancel)
        except TrainingCancelled:
            return ("cancelled",)
        except TokenforgeError as exc:
            return ("error", str(exc))
        return ("done", result.tokenizer.to_json(), result.stats)

    send_outcome(conn, work, what="Training", memory_hint=" Try a smaller corpus or vocabulary.")
