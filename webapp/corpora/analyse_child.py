"""The analysis child process: computes a stored corpus's statistics for its "analyse" job.

Uploads store a corpus with only its cheap facts (``corpus_stats.TextFacts``); this reads the
stored file once through :class:`corpus_stats.StatsAccumulator` and reports the full
statistics. It runs in a ``spawn`` child of the worker exactly like training
(``jobs/job_child.py``), so the worker's heartbeats, cancel, crash and recovery handling apply
unchanged. Messages to the worker: ``("progress", "analysing", bytes_read, total_bytes)``, then
exactly one of ``("done", stats)``, ``("cancelled",)`` or ``("error", message)``. It does not
touch the database: the worker stores the result (``job_kinds.complete_analysis``).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from webapp.jobs.job_child import CancelCheck, send_outcome, start_child

CHUNK_BYTES = 1 << 20


def analyse(path: str, progress: Callable[[str, int, int], None],
            should_cancel: Callable[[], bool]) -> dict[str, Any] | None:
    """The statistics of the UTF-8 file at ``path``, or None if cancelled on the way."""
    from webapp.corpora.stats import StatsAccumulator

    total = os.path.getsize(path)
    accumulator = StatsAccumulator()
    # Bytes, decoded here: text mode would turn "\r\n" into "\n" and change the figures.
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    done = 0
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            accumulator.feed(decoder.decode(chunk))
            done += len(chunk)
            progress("analysing", done, total)
            if should_cancel():
                return None
    accumulator.feed(decoder.decode(b"", final=True))
    return accumulator.finish()


def run(conn: Connection, parent_pid: int, path: str, nice: int) -> None:
    """Child entry point: analyse the corpus file and report the outcome on ``conn``."""
    start_child(parent_pid, nice)

    def progress(stage: str, current: int, total: int) -> None:
        conn.send(("progress", stage, current, total))

    def work() -> tuple[Any, ...]:
        try:
            stats = analyse(path, progress, CancelCheck(conn, parent_pid))
        except UnicodeDecodeError:
            return ("error", "The stored corpus file is no longer valid UTF-8 (it was damaged after "
                             "the upload). Upload it again.")
        except OSError as exc:
            return ("error", f"The stored corpus file could not be read ({exc.strerror or exc}).")
        return ("cancelled",) if stats is None else ("done", stats)

    send_outcome(conn, work, what="The analysis")
