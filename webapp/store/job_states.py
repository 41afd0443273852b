"""The kinds and statuses a job can have, defined once.

The jobs table's CHECK constraints (``models.py``), the queue (``jobs/queue.py``) and the command line
(``cli.py``) all name them; the command line must not import the database layer just to list
them, which is why they live here and not in ``models.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

#: training a tokenizer; computing a new corpus's statistics; evaluating tokenizers on corpora
JOB_KINDS = ("train", "analyse", "leaderboard")
JOB_STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINISHED_STATUSES = frozenset({"succeeded", "failed", "cancelled"})


def one_of(column: str, values: Iterable[str]) -> str:
    """The SQL of a CHECK constraint that ``column`` holds one of ``values``."""
    return f"{column} IN ({', '.join(repr(value) for value in values)})"
