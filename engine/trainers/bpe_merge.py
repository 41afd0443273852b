"""The BPE merge loop: from distinct pre-tokens and their counts to an ordered list of merges.

This is the hot half of BPE training, for byte-level and character-level BPE alike (they differ
only in the alphabet a word starts from). Reading and counting the corpus is ``counting.py``;
options, ids and the tokenizer are ``bpe.py``; a slow, obviously correct twin of this loop,
which the tests compare against, is ``tests/engine/bpe_reference.py``.

Tie-break rule: each step merges the pair with the highest count; among pairs with equal
counts, the lexicographically greatest pair compared as bytes ``(left, right)`` wins (left
first, then right; a proper prefix is smaller, as with Python ``bytes``). Training stops after
``num_merges`` merges or when the best count falls below ``min_frequency``.

The data, as numpy arrays over every symbol of every distinct word:

* ``sym[i]`` is the token at position ``i``; words lie end to end with ``-1`` between them, so
  no pair crosses a word. ``freq[i]`` is the count of the word position ``i`` is in.
* A merge rewrites the left symbol of an occurrence and unlinks the right one from a doubly
  linked list (``nxt``/``prv``), so positions never move and a word is never rebuilt.
* ``where[pair]`` holds the positions where the pair was formed, in text order. Entries are never
  removed; a stale one (the pair there has changed since) is filtered out when the pair is
  merged, which costs one vectorised comparison instead of keeping sets exact.
* A pair is the int ``left * V + right``. Merging ``(a, b)`` into ``t`` only lowers the counts
  of the pairs around each occurrence and creates pairs that contain ``t``; each kind is summed
  per pair (:func:`_sum_by_pair`, one sort each), and only the distinct pairs reach Python.
* The pairs wait in :class:`_PairQueue`, a lazy heap of ``(-count, tiebreak_key, pair)``: a
  merge pushes each new pair once with its final count and never pushes a lowered one; a popped
  entry whose count is stale is pushed back with its current count; rare pairs wait outside the
  heap until the best count comes down to theirs. ``tiebreak_key`` orders bytes in reverse
  (:func:`_invert`), so the min-heap pops the greatest pair among equal counts.
* One merge step (:class:`_Symbols`) is vectorised for pairs found in many places and a plain
  loop for the many pairs found in a few, where numpy's per-call cost would dominate.

Overlapping occurrences (``a a a`` holds ``(a, a)`` twice) merge left to right: in a chain of
touching occurrences every other one is merged (:func:`_leftmost`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

_END = chr(0x10000)  # sorts after every chr(1..256) used by _invert
_GAP = chr(0x10FFFF)  # joins words before they become one array; above every token id (MAX_VOCAB)
BYTES: tuple[bytes, ...] = tuple(bytes([b]) for b in range(256))
"""The byte-level alphabet: internal token ``b`` is byte ``b``."""


def _invert(token: bytes) -> str:
    """A string key that sorts in the *reverse* order of ``token`` as bytes.

    Byte ``x`` becomes ``chr(256 - x)`` (greater bytes sort first) and a terminator larger than
    any of those ends the key, so a proper prefix (the smaller bytes) sorts after its
    extensions. Keys of a pair are concatenated: the terminator cannot occur inside a key, so
    the left halves decide unless they are equal.
    """
    return "".join([chr(256 - x) for x in token]) + _END


def _sum_by_pair(pairs: np.ndarray, weights: np.ndarray) -> tuple[list[int], list[int], np.ndarray, list[int]]:
    """The distinct ``pairs`` in order and the sum of their ``weights``, with the sort order and
    where each pair's run starts in it (``order[bounds[i]:bounds[i + 1]]`` are pair ``i``'s
    entries, in their first order: the sort is stable)."""
    if not len(pairs):
        return [], [], pairs, [0]
    order = np.argsort(pairs, kind="stable")
    pairs = pairs[order]
    starts = np.concatenate(([0], np.flatnonzero(pairs[1:] != pairs[:-1]) + 1))
    sums = np.add.reduceat(weights[order], starts)
    return pairs[starts].tolist(), sums.tolist(), order, [*starts.tolist(), len(pairs)]


def _leftmost(p: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """The occurrences of a pair ``(a, a)`` that merge: every other one of a touching chain."""
    chained = np.concatenate(([False], nxt[p[:-1]] == p[1:]))
    if not chained.any():
        return p
    index = np.arange(len(p))
    chain_start = np.maximum.accumulate(np.where(chained, 0, index))
    return p[(index - chain_start) % 2 == 0]


class Changes(NamedTuple):
    """What one merge did to the pair counts."""

    lowered: Iterable[tuple[int, int]]  # (pair, amount < 0) for the existing pairs around the occurrences
    new: dict[int, int]  # pair -> count of each pair the merge created (each contains the new token)
    where: dict[int, np.ndarray | list[int]]  # pair -> the new pair's positions, in text order
    removed: int  # the tokens the merge took out of the corpus

FEW_OCCURRENCES = 48
"""Below this many candidate positions a merge runs in Python (:meth:`_Symbols.merge_few`):
a vectorised step costs ~0.2 ms of numpy calls whatever its size, a Python one ~3 µs an
occurrence, and past the first few hundred merges most pairs occur in a few words only."""


class _Symbols:
    """The corpus as linked symbols (see the module docstring) and the one step that merges a pair.

    The step exists twice, with the same result: :meth:`merge_many` vectorised for pairs with many
    occurrences, :meth:`merge_few` as a plain loop (over memoryviews of the same arrays) for the
    many pairs that occur only a few times. The tests run the trainer both ways.
    """

    def __init__(self, sym: np.ndarray, nxt: np.ndarray, prv: np.ndarray, freq: np.ndarray, V: int) -> None:
        self.sym, self.nxt, self.prv, self.freq, self.V = sym, nxt, prv, freq, V
        self.merged_right = np.zeros(len(sym), dtype=bool)  # scratch: this merge's right halves
        self.views = tuple(memoryview(array) for array in (sym, nxt, prv, freq))

    def merge_many(self, p: np.ndarray, a: int, b: int, t: int) -> Changes:
        """Merge ``(a, b)`` into ``t`` at the candidate positions ``p`` (stale ones included)."""
        sym, nxt, prv, freq, V, merged_right = self.sym, self.nxt, self.prv, self.freq, self.V, self.merged_right
        # The occurrences still there: p is the left symbol, q the right one.
        p = p[(sym[p] == a) & (sym[nxt[p]] == b)]
        if a == b and len(p) > 1:
            p = _leftmost(p, nxt)
        q = nxt[p]
        left, right, f = prv[p], nxt[q], freq[p]
        sym_left, sym_right = sym[left], sym[right]
        merged_right[q] = True  # a left neighbour that is another occurrence's right half
        old_left = (sym_left >= 0) & ~merged_right[left]  # (b, a) was taken off as that one's right pair
        merged_right[q] = False
        old_right = sym_right >= 0

        # Merge: p becomes t, q leaves the list.
        sym[p], sym[q] = t, -1
        nxt[p], prv[right] = right, p
        now_left = prv[p]  # the left neighbour now: another occurrence's t where two touched ("a b a b")
        sym_now_left, sym_now_right = sym[now_left], sym[right]
        new_left = sym_now_left >= 0
        new_right = (sym_now_right >= 0) & (sym_now_right != t)  # (t, t) is counted once, as a left pair

        # Take the old pairs around each occurrence away, add the new ones, and index the new ones
        # at their left symbol: the four kinds side by side, missing neighbours masked out.
        old = np.concatenate((old_left, old_right))
        lowered, amounts, _, _ = _sum_by_pair(np.concatenate((sym_left * V + a, b * V + sym_right))[old],
                                              np.concatenate((-f, -f))[old])
        new = np.concatenate((new_left, new_right))
        created, counts, order, bounds = _sum_by_pair(
            np.concatenate((sym_now_left * V + t, t * V + sym_now_right))[new], np.concatenate((f, f))[new])
        at = np.concatenate((now_left, p))[new][order]
        where = {pair: at[i:j] for pair, i, j in zip(created, bounds, bounds[1:])}
        return Changes(zip(lowered, amounts), dict(zip(created, counts)), where, int(f.sum()))

    def merge_few(self, candidates: list[int], a: int, b: int, t: int) -> Changes:
        """:meth:`merge_many`, one occurrence at a time: reads, then writes, then the new neighbours."""
        sym, nxt, prv, freq = self.views
        V = self.V
        occurrences = [x for x in candidates if sym[x] == a and sym[nxt[x]] == b]
        if a == b and len(occurrences) > 1:  # in a touching chain every other one merges
            kept, last, skip = [], -1, False
            for x in occurrences:
                skip = last >= 0 and nxt[last] == x and not skip
                if not skip:
                    kept.append(x)
                last = x
            occurrences = kept
        rights = {nxt[x] for x in occurrences}
        lowered: dict[int, int] = {}
        removed = 0
        for x in occurrences:  # the pairs around each occurrence, before any changes
            f, left, right = freq[x], prv[x], nxt[nxt[x]]
            removed += f
            if sym[left] >= 0 and left not in rights:
                pair = sym[left] * V + a
                lowered[pair] = lowered.get(pair, 0) - f
            if sym[right] >= 0:
                pair = b * V + sym[right]
                lowered[pair] = lowered.get(pair, 0) - f
        for x in occurrences:
            q = nxt[x]
            right = nxt[q]
            sym[x], sym[q] = t, -1
            nxt[x], prv[right] = right, x
        new: dict[int, int] = {}
        where: dict[int, np.ndarray | list[int]] = {}
        for x in occurrences:  # the pairs around each new t, once every occurrence is merged
            f, now_left, right = freq[x], prv[x], nxt[x]
            if sym[now_left] >= 0:
                pair = sym[now_left] * V + t
                new[pair] = new.get(pair, 0) + f
                where.setdefault(pair, []).append(now_left)  # type: ignore[union-attr]
            if sym[right] >= 0 and sym[right] != t:
                pair = t * V + sym[right]
                new[pair] = new.get(pair, 0) + f
                where.setdefault(pair, []).append(x)  # type: ignore[union-attr]
        return Changes(lowered.items(), new, where, removed)


class _PairQueue:
    """The pairs in merge order: the highest count first, among equal counts the greatest pair.

    A lazy heap of ``(-count, key, pair)``: a pair is pushed with its count when it appears and
    never when its count drops; a popped entry whose count is stale goes back with the current
    one. Counts only ever drop (a merge lowers the pairs around it; the pairs it creates are new),
    so a pair rarer than ``low`` (a power of two) can wait outside the heap, in a bucket by its
    count's bit length, until the best count in the heap falls below ``low``; most pairs never
    get that far and are never pushed. Pairs below ``floor`` (``min_frequency``) or not
    ``admissible`` never enter the heap.
    """

    def __init__(self, counts: dict[int, int], key: Callable[[int], str], admissible: Callable[[int], bool],
                 floor: int) -> None:
        self.counts, self.key, self.admissible, self.floor = counts, key, admissible, floor
        self.heap: list[tuple[int, str, int]] = []
        self.waiting: dict[int, list[int]] = {}  # bit length of the count -> pairs
        top = max(counts.values(), default=0)
        self.low = 1 << max(0, top.bit_length() - 8)  # about a 256th of the commonest pair's count
        self.add(counts)

    def add(self, pairs: Mapping[int, int]) -> None:
        """Queue each pair with its count (new pairs, or waiting ones whose turn may have come)."""
        floor, low, waiting, heap = self.floor, self.low, self.waiting, self.heap
        for pair, count in pairs.items():
            if count < floor:
                continue
            if count < low:
                waiting.setdefault(count.bit_length(), []).append(pair)
            elif self.admissible(pair):
                heapq.heappush(heap, (-count, self.key(pair), pair))

    def pop(self) -> int | None:
        """Take the best pair off the queue (its count is ``counts[pair]``), or None when none is left."""
        heap, counts = self.heap, self.counts
        while True:
            while heap:  # bring the top up to date
                neg, key, pair = heap[0]
                count = counts.get(pair, 0)
                if count == -neg:
                    break
                if count >= self.floor:
                    heapq.heapreplace(heap, (-count, key, pair))
                else:
                    heapq.heappop(heap)
            if (heap and -heap[0][0] >= self.low) or not self.waiting:
                return heapq.heappop(heap)[2] if heap else None
            self._lower()

    def _lower(self) -> None:
        """Halve ``low`` and push the waiting pairs that now reach it."""
        self.low >>= 1
        counts = self.counts
        self.add({pair: counts.get(pair, 0) for pair in self.waiting.pop(self.low.bit_length(), [])})

def merge_words(
    words: Sequence[str],
    freqs: Sequence[int],
    num_merges: int,
    *,
    alphabet: Sequence[bytes] = BYTES,
    lengths: Sequence[int] | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    tick: Callable[[int], None] | None = None,
    allowed: Callable[[int, int, bytes], bool] | None = None,
    vectorise_from: int | None = None,
) -> tuple[list[tuple[int, int, int, int]], list[bytes]]:
    """Learn up to ``num_merges`` merges over ``words``.

    ``words[i]`` spells a distinct pre-token with one character per token (``chr(id)``) and
    ``freqs[i]`` is how often it occurs. Token ``t < len(alphabet)`` is ``alphabet[t]`` (the 256
    bytes by default; character-level BPE passes the UTF-8 of its symbols, which then order ties
    the same way), and ``lengths[t]`` its length as ``max_token_length`` counts it (default: its
    bytes). Returns ``(merges, token_bytes)`` where ``merges[r] = (left, right, count, removed)``
    in internal ids (token ``len(alphabet) + r`` is merge ``r``): ``count`` is the pair's count
    when merged and ``removed`` how many tokens the merge took out of the corpus (less than
    ``count`` only for overlapping pairs like ``a a a``). ``token_bytes[t]`` is the byte string
    of internal token ``t``. ``tick(merges_done)`` is called after each merge so the caller can
    report progress and raise to cancel. ``allowed(left, right, merged_bytes)``, where given, is
    asked once per pair before the pair may ever be merged (it never enters the heap otherwise):
    extending a tokenizer (``engine/extend``) uses it to keep merges off text the base handles.
    A pair with at least ``vectorise_from`` candidate positions (default :data:`FEW_OCCURRENCES`)
    is merged by the vectorised step, one with fewer by the loop; the result is the same.
    """
    token_bytes = list(alphabet)
    token_len = list(lengths) if lengths is not None else [len(t) for t in token_bytes]
    inv = [_invert(t) for t in token_bytes]
    max_len = max_token_length if max_token_length is not None else 1 << 62
    floor = max(min_frequency, 1)
    V = len(token_bytes) + num_merges  # every pair is left * V + right
    few = FEW_OCCURRENCES if vectorise_from is None else vectorise_from

    # 1. Every word's symbols in one array, -1 between words and at both ends. Positions and
    #    links are int32 where they fit: on text without spaces (Chinese) nearly every symbol
    #    is in a distinct word, so these arrays are the training's memory.
    codes = np.frombuffer(_GAP.join(["", *words, ""]).encode("utf-32-le"), dtype=np.uint32)
    sym = np.where(codes == ord(_GAP), -1, codes.astype(np.int64))
    del codes
    n = len(sym)
    index = np.int32 if n < 1 << 31 else np.int64
    freq = np.append(np.asarray(freqs, dtype=np.int64), 0)[np.cumsum(sym < 0) - 1]
    freq[sym < 0] = 0
    nxt = np.minimum(np.arange(1, n + 1, dtype=index), n - 1)
    prv = np.maximum(np.arange(-1, n - 1, dtype=index), 0)
    corpus = _Symbols(sym, nxt, prv, freq, V)

    # 2. Count every adjacent pair inside a word and index where it is.
    first = np.flatnonzero((sym[:-1] >= 0) & (sym[1:] >= 0)).astype(index)
    pairs, sums, order, bounds = _sum_by_pair(sym[first] * V + sym[first + 1], freq[first])
    first = first[order]
    counts: dict[int, int] = dict(zip(pairs, sums))
    where: dict[int, np.ndarray | list[int]] = {pair: first[i:j] for pair, i, j in zip(pairs, bounds, bounds[1:])}
    del order

    def admissible(pair: int) -> bool:
        left, right = divmod(pair, V)
        return token_len[left] + token_len[right] <= max_len and (
            allowed is None or allowed(left, right, token_bytes[left] + token_bytes[right]))

    def key(pair: int) -> str:
        left, right = divmod(pair, V)
        return inv[left] + inv[right]

    queue = _PairQueue(counts, key, admissible, floor)

    merges: list[tuple[int, int, int, int]] = []
    while len(merges) < num_merges:
        # 3. The best pair.
        best = queue.pop()
        if best is None:
            break
        count = counts[best]
        a, b = divmod(best, V)
        t = len(token_bytes)
        token_bytes.append(token_bytes[a] + token_bytes[b])
        token_len.append(token_len[a] + token_len[b])
        inv.append(_invert(token_bytes[t]))

        # 4. Merge every occurrence still there and update the counts of the pairs around them.
        entries = where.pop(best)
        if len(entries) >= few:
            changes = corpus.merge_many(np.asarray(entries), a, b, t)
        else:
            changes = corpus.merge_few(entries if isinstance(entries, list) else entries.tolist(), a, b, t)
        for pair, amount in changes.lowered:
            counts[pair] += amount
        del counts[best]  # lowered too where (a, a) overlapped itself; merged everywhere now
        counts.update(changes.new)  # a new pair's count is final for this step
        where.update(changes.where)
        queue.add(changes.new)
        merges.append((a, b, count, changes.removed))
        if tick is not None:
            tick(len(merges))
    return merges, token_bytes


def words_from_counts(counts: Iterable[tuple[str, int]]) -> tuple[list[str], list[int]]:
    """Turn ``(pre_token, count)`` pairs into byte strings and frequencies for :func:`merge_words`."""
    words: list[str] = []
    freqs: list[int] = []
    for piece, count in counts:
        words.append(piece.encode("utf-8").decode("latin-1"))
        freqs.append(count)
    return words, freqs
