"""Which remote counter, if any, counts pre-tokens in this context: the one thing ``counting.py`` asks.

A leaf module, so that the counter (``trainers/distributed.py``, which uses ``counting.py``) and
the context that connects it (``trainers/cluster.py``) never make ``counting.py`` import them
back. Left out: connecting, and counting itself.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol

from engine.trainers.base import Reporter


class RemoteCounter(Protocol):
    """Counts pre-tokens somewhere else with the same result as ``counting.count_pretokens``."""

    def count(self, files: Sequence[str | Path], tally_args: tuple[Any, ...], *,
              safe_cuts: bool, max_chunk_chars: int, reporter: Reporter) -> dict[str, int]: ...


_active: ContextVar[RemoteCounter | None] = ContextVar("tokenforge_remote_counter", default=None)


def active_cluster() -> RemoteCounter | None:
    """The counter that counts pre-tokens in this context, if any (``counting.count_pretokens`` asks)."""
    return _active.get()


@contextmanager
def counting_with(counter: RemoteCounter) -> Iterator[None]:
    """Have ``counter`` count every ``count_pretokens`` inside the block."""
    token = _active.set(counter)
    try:
        yield
    finally:
        _active.reset(token)
