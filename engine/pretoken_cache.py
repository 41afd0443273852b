"""The pre-token cache: pre-token → ids, bounded, evicting what was not used recently.

Real text repeats its words, so a tokenizer merges each distinct pre-token once and looks the
rest up (en_5M: 1.3M pre-tokens, 70k distinct). A call whose pre-tokens are all known is one
C-level ``dict`` lookup each, run by one ``map``, with no Python code per pre-token. When a
lookup fails, the call numbers its distinct pre-tokens and hands all those not cached to
``tokenize_many`` together, which lets a model merge them in one batch (``BPE`` does it in numpy,
``bpe_batch.py``). A call that brings new pre-tokens thus pays two C-level passes over its
pre-tokens, and no Python call per new pre-token.

Recency is approximated with two generations, as CLOCK-style caches do, instead of exact LRU
order (which would cost bookkeeping on every hit): entries live in a *young* dict; when young
and old together outgrow ``maxsize``, the old generation is dropped (nothing in it was used since
the last rotation) and the young one becomes old. A pre-token missing from young that is found in
old is promoted back to young. So an entry survives as long as it is used at least once per
rotation, and what goes first is always the least recently used generation. A call with more
distinct pre-tokens than ``maxsize`` is served whole, then trimmed to its last ``maxsize`` new
entries.

Threads: the web app shares a tokenizer between request threads. No lock is needed: entries
are inserted only once computed, a call keeps the ids it added in its own table, and every
mutation is one atomic dict operation, so a race can at worst compute a pre-token twice or drop
an entry early; the ids returned are always the model's. What the ids are is the model's
business, not this module's.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, count, islice
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np


# ``concatenated`` lays out the ids of this many pieces at a time (~50 MB of temporary arrays).
_LAYOUT_CHUNK = 1 << 20


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int


class PreTokenCache:
    """Ids of pre-tokens as computed by ``tokenize_many``, about ``maxsize`` of them kept.

    ``tokenize_many(pieces)`` gives the ids of each piece, in order; by default each piece is
    given to ``tokenize`` on its own.
    """

    def __init__(
        self,
        tokenize: Callable[[str], Iterable[int]],
        maxsize: int,
        *,
        tokenize_many: Callable[[Sequence[str]], Iterable[Iterable[int]]] | None = None,
    ) -> None:
        self._tokenize_many = tokenize_many or (lambda pieces: map(tokenize, pieces))
        self.maxsize = maxsize
        self._young: dict[str, tuple[int, ...]] = {}
        self._old: dict[str, tuple[int, ...]] = {}
        self._hits = 0  # racy under threads, only a statistic
        self._misses = 0

    def info(self) -> CacheInfo:
        return CacheInfo(self._hits, self._misses, self.maxsize, len(self._young) + len(self._old))

    def encode(self, pieces: Sequence[str]) -> list[int]:
        """The ids of all ``pieces``, concatenated."""
        try:  # the warm case, every piece cached: C-level lookups only
            ids = list(chain.from_iterable(map(self._young.__getitem__, pieces)))
            self._hits += len(pieces)
        except KeyError:
            ids = self._encode_with_new(pieces)
        self._maybe_rotate()
        return ids

    def _encode_with_new(self, pieces: Sequence[str]) -> list[int]:
        """``encode`` when some pieces are new: all of them go to ``tokenize_many`` at once.

        The distinct pieces are numbered in order of first appearance by a ``defaultdict``
        whose factory is a counter (both C-level), which yields each piece's number and the
        distinct pieces in one pass. The numbers go straight into a numpy array: a list of a
        million of them would be one more large container for the garbage collector to walk
        while the batch allocates its tuples (en_5M: 45 against 32 ms of collection).
        """
        import numpy as np  # here, not at the top: only a call with new pieces needs it

        numbers: defaultdict[str, int] = defaultdict(count().__next__)
        order = np.fromiter(map(numbers.__getitem__, pieces), np.intp, len(pieces))
        distinct = list(numbers)
        cached = [self._young.get(piece) for piece in distinct]
        misses = self._misses
        added = self._add([piece for piece, ids in zip(distinct, cached) if ids is None])
        self._hits += len(pieces) - (self._misses - misses)
        return concatenated([added.get(piece, ids) for piece, ids in zip(distinct, cached)], order)

    def lookup(self, piece: str) -> tuple[int, ...]:
        """The ids of one pre-token (for callers that need them piece by piece)."""
        ids = self._young.get(piece)
        if ids is None:
            misses = self._misses
            ids = self._add([piece])[piece]
            self._hits += misses == self._misses  # promoted from old
        else:
            self._hits += 1
        self._maybe_rotate()
        return ids

    def _add(self, pieces: list[str]) -> dict[str, tuple[int, ...]]:
        """Put ``pieces`` (distinct, not in young) into young, in order, promoted from old or computed."""
        old = self._old
        added = {piece: ids for piece in pieces if (ids := old.pop(piece, None)) is not None} if old else {}
        new = [piece for piece in pieces if piece not in added] if added else pieces
        if new:
            added.update(zip(new, map(tuple, self._tokenize_many(new))))
            self._misses += len(new)
        self._young.update(added)  # the promoted ones first, then the new ones in order
        return added

    def _maybe_rotate(self) -> None:
        young = self._young
        if len(young) + len(self._old) <= self.maxsize:
            return
        excess = len(young) - self.maxsize
        if excess > 0:  # one call brought more than maxsize new entries: keep the last ones
            for piece in list(islice(young, excess)):
                del young[piece]
        self._old, self._young = young, {}


def concatenated(table: list[tuple[int, ...]], order: np.ndarray) -> list[int]:
    """``list(chain.from_iterable(table[i] for i in order))`` for a numpy array ``order``, in numpy.

    The table's ids lie end to end in one flat array, each entry's run starting at ``firsts``;
    output position ``k`` belongs to the piece whose run covers it, and takes the flat id at
    that run's first plus ``k``'s distance from where the piece starts in the output. Pieces go
    ``_LAYOUT_CHUNK`` at a time, which bounds the temporary arrays whatever the text's size.
    """
    import numpy as np

    counts = np.fromiter(map(len, table), np.intp, len(table))
    flat = np.fromiter(chain.from_iterable(table), np.int64, int(counts.sum()))
    starts = np.cumsum(counts) - counts
    ids: list[int] = []
    for low in range(0, len(order), _LAYOUT_CHUNK):
        part = order[low : low + _LAYOUT_CHUNK]
        lengths = counts[part]
        ends = np.cumsum(lengths)
        shift = np.repeat(starts[part] - (ends - lengths), lengths)
        ids += flat[shift + np.arange(len(shift))].tolist()
    return ids
