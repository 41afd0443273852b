"""The training child process: runs ``engine.trainers.train`` and talks to its worker by pipe.

The worker (``jobs/worker.py``) starts this in a fresh ``spawn`` process (see ``jobs/job_child.py`` for
why, and for what every child does first). Messages sent to the worker are tuples:
``("progress", stage, current, total)``, then exactly one of ``("done", tokenizer_json, stats)``
(a sentencepiece-style BPE's ``.model`` in ``stats["original"]``: its ``tokenizer.json`` reads
back as a merge-list BPE, ``tokenizers/originals.py``), ``("cancelled",)`` or
``("error", message)``. The worker may send ``"cancel"``. This module imports only the engine
and the settings' parser: no Flask, no database. A custom pattern's budget per chunk of the
corpus (``engine.trainers.limits.pattern_budget``) is the setting
``TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB``, read from the environment like the memory limit.
"""

from __future__ import annotations

import os
from multiprocessing.connection import Connection
from typing import Any

from webapp.jobs.job_child import CancelCheck, memory_setting, send_outcome, start_child


def pattern_rate() -> float:
    """``TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB`` from the environment inherited from the worker
    (checked when the worker started), or its default."""
    from webapp.web.config import ENV_DEFAULTS, SettingsError, train_pattern_rate

    try:
        return train_pattern_rate(os.environ)
    except SettingsError:  # the worker refused it at start-up already; not reached in practice
        return float(ENV_DEFAULTS["TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB"][0])


def run(conn: Connection, parent_pid: int, algorithm: str, paths: list[str],
        options: dict[str, Any], nice: int, dask_scheduler: str | None = None) -> None:
    """Child entry point: train (counting on the Dask cluster ``dask_scheduler``, if one) and
    report the outcome on ``conn``."""
    start_child(parent_pid, nice)
    from engine import TokenforgeError, TrainingCancelled
    from engine.trainers import NotEnoughMemory, PatternTooSlow, counting_on, pattern_budget, train

    should_cancel = CancelCheck(conn, parent_pid)

    def progress(stage: str, current: int, total: int) -> None:
        conn.send(("progress", stage, int(current), int(total)))

    def work() -> tuple[Any, ...]:
        rate = pattern_rate()
        try:
            # An unreachable scheduler fails here, before any work.
            with counting_on(dask_scheduler), pattern_budget(rate):
                result = train(algorithm, paths, options, progress=progress, should_cancel=should_cancel)
        except TrainingCancelled:
            return ("cancelled",)
        except NotEnoughMemory as exc:  # refused before the work, with the figures
            return ("error", f"{exc}{memory_setting()}")
        except PatternTooSlow as exc:
            return ("error", f"{exc} An administrator can raise TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB "
                             f"(now {rate:g}).")
        except TokenforgeError as exc:
            return ("error", str(exc))
        stats = dict(result.stats)
        from webapp.tokenizers.originals import kept_model

        if original := kept_model(result.tokenizer):  # a sentencepiece BPE's .model: its JSON is another BPE
            stats["original"] = original
        return ("done", result.tokenizer.to_json(), stats)

    send_outcome(conn, work, what="Training", memory_hint=" Nothing was saved. Try a smaller corpus or vocabulary.")
