"""The pairs of the BPE merge loop: a table of every pair ever formed, and the queue that orders them.

``bpe_merge.py`` rewrites the symbols; this module keeps the books about pairs. A pair is named
by an *id*, given in the order pairs are first formed (the pairs of the words first, then those
each merge creates). A pair's count only ever drops once it exists: a merge lowers the pairs
around its occurrences and creates pairs that contain its new token, which no earlier pair can.

Why ids and not a dict keyed by the pair: with the id of the pair at each position in an array
(``bpe_merge``'s ``pid``), the pairs a merge lowers are read off that array and lowered in the
count array with one ``np.subtract.at``; and the pairs too rare to be queued yet need no Python
work at all, since one comparison over the count array finds them when their turn comes. On
en_100M a merge creates about 16 new pairs and lowers about 30; in dicts that was a third of
the loop.

Left out: the symbols and the merge step (``bpe_merge.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

Positions = np.ndarray
"""Positions of a pair's left symbol, in text order."""


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` in a zeroed one of at least ``size`` items, doubling (amortised O(1) growth)."""
    grown = np.zeros(max(2 * len(array), size, 1024), dtype=array.dtype)
    grown[:len(array)] = array
    return grown


class PairTable:
    """Every pair formed so far, by id: its value ``left * V + right``, its count, where it was formed.

    ``count`` is a numpy array (longer than ``n``: it grows by doubling) so that vectorised
    steps can lower counts with ``np.subtract.at``; ``count_view`` is a memoryview of it for the
    queue's reads of one count at a time, which cost a tenth of numpy's item access. Where each
    pair was formed is a run ``start[id]:end[id]`` of one array of positions that every step
    appends to (``where``, growing by doubling like the counts): no object per pair, and reading
    a pair's run is two memoryview reads and a slice (Python lists of a million ints per field
    cost 4 us a read on en_100M, most of it cache misses).
    Positions go stale as later merges change the symbols; the merge step filters them.
    """

    def __init__(self, index: type[np.signedinteger] = np.int64) -> None:
        self.n = 0
        self.pair: list[int] = []  # id -> left * V + right
        self.count = np.zeros(0, dtype=np.int64)
        self.count_view = memoryview(self.count)
        self.where = np.zeros(0, dtype=index)  # the dtype of the corpus's positions
        self.used = 0  # positions in where
        self.start = np.zeros(0, dtype=np.int64)  # id -> its first position in where
        self.end = np.zeros(0, dtype=np.int64)  # id -> one past its last
        self.start_view, self.end_view = memoryview(self.start), memoryview(self.end)

    def add(self, pairs: list[int], counts: np.ndarray, positions: Positions, bounds: np.ndarray) -> int:
        """Append new pairs with their counts; pair ``i``'s positions are
        ``positions[bounds[i]:bounds[i + 1]]``. Returns the id of the first."""
        first, k, used = self.n, len(pairs), self.used
        if first + k > len(self.count):
            self.count = _grown(self.count, first + k)
            self.start, self.end = _grown(self.start, first + k), _grown(self.end, first + k)
            self.count_view = memoryview(self.count)
            self.start_view, self.end_view = memoryview(self.start), memoryview(self.end)
        if used + len(positions) > len(self.where):
            self.where = _grown(self.where, used + len(positions))
        self.count[first:first + k] = counts
        self.start[first:first + k] = used + bounds[:-1]
        self.end[first:first + k] = used + bounds[1:]
        self.where[used:used + len(positions)] = positions
        self.used = used + len(positions)
        self.n = first + k
        self.pair += pairs
        return first

    def positions(self, pair_id: int) -> Positions:
        """Where ``pair_id`` was formed (some positions may be stale), in text order."""
        return self.where[self.start_view[pair_id]:self.end_view[pair_id]]


class PairQueue:
    """The pairs in merge order: the highest count first, among equal counts the greatest pair.

    A lazy heap of ``(-count, key, pair, id)`` (the pair's value breaks ties between equal keys: two
    tokens can spell the same bytes, "a"+"bc" and "ab"+"c"): a pair is pushed with its count when it
    appears and never when its count drops; a popped entry whose count is stale goes back with the
    current one. Since counts only drop, a pair rarer than ``low`` (a power of two) can wait outside
    the heap until the best count in the heap falls below ``low``; then ``low`` halves and one
    comparison over the count array finds the pairs that now reach it. Most pairs never get that far
    and are never pushed. Pairs below ``floor`` (``min_frequency``) or not ``admissible`` never
    enter the heap; ``queued`` marks the ids already pushed or refused.
    """

    def __init__(self, table: PairTable, key: Callable[[int], str], admissible: Callable[[int], bool],
                 floor: int) -> None:
        self.table, self.key, self.admissible, self.floor = table, key, admissible, floor
        self.heap: list[tuple[int, str, int, int]] = []
        self.queued = np.zeros(0, dtype=bool)
        top = int(table.count[:table.n].max(initial=0))
        self.low = 1 << max(0, top.bit_length() - 8)  # about a 256th of the commonest pair's count
        self.offer(0, table.count[:table.n])

    def offer(self, first: int, counts: np.ndarray | Sequence[int]) -> None:
        """New pairs ``first, first + 1, ...`` with their ``counts``: those that reach ``low`` go on
        the heap now, the others wait until :meth:`_lower` finds them."""
        bar = max(self.low, self.floor)
        if isinstance(counts, np.ndarray):
            hot = (first + np.flatnonzero(counts >= bar)).tolist()
        else:
            hot = [first + i for i, count in enumerate(counts) if count >= bar]
        self._push(hot)

    def _push(self, ids: list[int]) -> None:
        """Push the admissible ``ids`` with their current counts; mark them all as decided."""
        if not ids:
            return
        if len(self.queued) < self.table.n:
            self.queued = _grown(self.queued, self.table.n)
        self.queued[ids] = True
        count, pair, heap = self.table.count_view, self.table.pair, self.heap
        entries = [(-count[i], self.key(pair[i]), pair[i], i) for i in ids if self.admissible(pair[i])]
        if len(entries) > len(heap) // 8:  # a band found by _lower: one heapify, O(heap), beats a push each
            heap += entries
            heapq.heapify(heap)
        else:
            for entry in entries:
                heapq.heappush(heap, entry)

    def give_back(self, ids: list[int]) -> None:
        """Put popped pairs back with their current counts (a merge since may have lowered them)."""
        count, pair = self.table.count_view, self.table.pair
        for i in ids:
            if count[i] >= self.floor:
                heapq.heappush(self.heap, (-count[i], self.key(pair[i]), pair[i], i))

    def pop(self) -> int | None:
        """Take the best pair's id off the queue (its count is ``table.count[id]``), or None when none is left."""
        heap = self.heap
        while True:
            count = self.table.count_view
            while heap:  # bring the top up to date
                neg, key, value, i = heap[0]
                now = count[i]
                if now == -neg:
                    break
                if now >= self.floor:
                    heapq.heapreplace(heap, (-now, key, value, i))
                else:
                    heapq.heappop(heap)
            if (heap and -heap[0][0] >= self.low) or self.low <= self.floor:
                return heapq.heappop(heap)[3] if heap else None
            self._lower()

    def _lower(self) -> None:
        """Halve ``low`` and push the waiting pairs that now reach it."""
        high, self.low = self.low, self.low >> 1
        n = self.table.n
        counts, queued = self.table.count[:n], self.queued[:n]
        band = (counts >= max(self.low, self.floor)) & (counts < high)
        band[:len(queued)] &= ~queued
        self._push(np.flatnonzero(band).tolist())
