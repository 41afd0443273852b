"""The training child process: runs ``engine.trainers.train`` and talks to its worker by pipe.

The worker (``worker.py``) starts this in a fresh ``spawn`` process so a crash, an
out-of-memory kill or a runaway trainer cannot take the worker down, and so the trainer runs at
lower CPU priority than the web processes. Messages sent to the worker are tuples:
``("progress", stage, current, total)``, then exactly one of ``("done", tokenizer_json, stats)``,
``("cancelled",)`` or ``("error", message)``. The worker may send ``"cancel"``. This module
imports only the engine: no Flask, no database.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to kill us if the worker dies, so a SIGKILLed worker leaves no orphan trainer."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: should_cancel's parent check below still stops us at the next poll
    if os.getppid() != parent_pid:  # the worker died before prctl took effect
        os._exit(1)


def run(conn: Connection, parent_pid: int, algorithm: str, paths: list[str],
        options: dict[str, Any], nice: int) -> None:
    """Child entry point: train and report the outcome on ``conn``."""
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the worker, which decides
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    from engine.errors import TokenforgeError, TrainingCancelled
    from engine.trainers import train

    cancelled = False

    def should_cancel() -> bool:
        nonlocal cancelled
        while conn.poll():
            if conn.recv() == "cancel":
                cancelled = True
        return cancelled or os.getppid() != parent_pid

    def progress(stage: str, current: int, total: int) -> None:
        conn.send(("progress", stage, int(current), int(total)))

    try:
        result = train(algorithm, paths, options, progress=progress, should_cancel=should_cancel)
        message: tuple[Any, ...] = ("done", result.tokenizer.to_json(), result.stats)
    except TrainingCancelled:
        message = ("cancelled",)
    except TokenforgeError as exc:
        message = ("error", str(exc))
    except MemoryError:
        message = ("error", "Training ran out of memory. Try a smaller corpus or vocabulary.")
    except Exception as exc:  # a bug: keep the traceback in the worker's log, not on the page
        traceback.print_exc(file=sys.stderr)
        message = ("error", f"Training failed unexpectedly ({type(exc).__name__}: {exc}).")
    conn.send(message)
    conn.close()
