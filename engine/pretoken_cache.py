"""The pre-token cache: pre-token → ids, bounded, evicting what was not used recently.

Real text repeats its words, so a tokenizer merges each distinct pre-token once and looks the
rest up (en_5M: 1.3M pre-tokens, 70k distinct). ``functools.lru_cache`` made every lookup a
Python-level call that also relinks an LRU list. Here a hit is a plain C-level ``dict`` lookup,
run for a whole call's pre-tokens by one ``map``; only a miss runs Python code (the dict's
``__missing__``), and a miss pays for a BPE merge anyway.

Recency is approximated with two generations, as CLOCK-style caches do, instead of exact LRU
order (which would cost bookkeeping on every hit): entries live in a *young* dict; when young
and old together outgrow ``maxsize``, the old generation is dropped (nothing in it was used since
the last rotation) and the young one becomes old. A miss in young that is found in old is
promoted back to young. So an entry survives as long as it is used at least once per rotation,
and what goes first is always the least recently used generation. A call with more distinct
pre-tokens than ``maxsize`` is served whole, then trimmed to its last ``maxsize`` new entries.

Threads: the web app shares a tokenizer between request threads. No lock is needed: every
mutation is one atomic dict operation (``pop`` with a default, item assignment), so a race can
at worst compute a pre-token twice or drop an entry early; the ids returned are always the
model's. What the ids are is the model's business, not this module's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice, repeat
from typing import NamedTuple


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int


class _Young(dict[str, tuple[int, ...]]):
    """The young generation; a lookup that misses here promotes from old or computes."""

    __slots__ = ("owner",)

    def __init__(self, owner: PreTokenCache) -> None:
        super().__init__()
        self.owner = owner

    def __missing__(self, piece: str) -> tuple[int, ...]:
        owner = self.owner
        ids = owner._old.pop(piece, None)
        if ids is None:
            ids = tuple(owner._tokenize(piece))
            owner._misses += 1
        self[piece] = ids
        return ids


class PreTokenCache:
    """Ids of pre-tokens as computed by ``tokenize``, about ``maxsize`` of them kept."""

    def __init__(self, tokenize: Callable[[str], Iterable[int]], maxsize: int) -> None:
        self._tokenize = tokenize
        self.maxsize = maxsize
        self._young = _Young(self)
        self._old: dict[str, tuple[int, ...]] = {}
        self._hits = 0  # counted per call as pieces minus misses; racy under threads, only a statistic
        self._misses = 0

    def info(self) -> CacheInfo:
        return CacheInfo(self._hits, self._misses, self.maxsize, len(self._young) + len(self._old))

    def encode(self, pieces: Sequence[str]) -> list[int]:
        """The ids of all ``pieces``, concatenated."""
        misses = self._misses
        ids = list(chain.from_iterable(map(self._young.__getitem__, pieces)))
        self._hits += len(pieces) - (self._misses - misses)
        self._maybe_rotate()
        return ids

    def lookup(self, piece: str) -> tuple[int, ...]:
        """The ids of one pre-token (for callers that need them piece by piece)."""
        misses = self._misses
        ids = self._young[piece]
        if misses == self._misses:
            self._hits += 1
        self._maybe_rotate()
        return ids

    def _maybe_rotate(self) -> None:
        young = self._young
        if len(young) + len(self._old) <= self.maxsize:
            return
        excess = len(young) - self.maxsize
        if excess > 0:  # one call brought more than maxsize new entries: keep the last ones
            deque(map(young.pop, list(islice(young, excess)), repeat(None)), maxlen=0)
        self._old, self._young = young, _Young(self)
