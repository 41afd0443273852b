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
* ``pid[i]`` is the id of the pair whose left symbol is at ``i`` (``bpe_pairs.PairTable``), or
  -1 where no pair starts. Each merge keeps it exact, so the occurrences of a pair still there
  are the recorded positions where ``pid`` still names it (stale ones are filtered with one
  comparison instead of keeping position sets exact), and the pairs a merge lowers are
  ``pid`` at the left neighbours and at the right halves.
* Merging ``(a, b)`` into ``t`` only lowers the counts of the pairs around each occurrence and
  creates pairs that contain ``t``; the new pairs are summed per pair (:func:`_group`, one sort)
  and given ids, and only those common enough to be queued at once reach Python
  (``bpe_pairs.PairQueue``, a lazy heap; rarer pairs wait in the count array).
* One merge step (:class:`_Symbols`) is vectorised for pairs found in many places and a plain
  loop for the many pairs found in a few, where numpy's per-call cost would dominate.

Overlapping occurrences (``a a a`` holds ``(a, a)`` twice) merge left to right: in a chain of
touching occurrences every other one is merged (:func:`_leftmost`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from engine.trainers.bpe_pairs import PairTable, PairQueue

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


def _group(pairs: np.ndarray, weights: np.ndarray, at: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray,
                                                                            list[int], np.ndarray]:
    """``pairs`` grouped: the distinct ones in order, the sum of their ``weights``, the positions
    ``at`` sorted by pair (each pair's in their first order: the sort is stable), where each
    pair's run starts in those (``bounds``, one past the end last), and each sorted entry's
    group number."""
    if not len(pairs):
        return [], weights, at, [0], pairs
    order = np.argsort(pairs, kind="stable")
    pairs = pairs[order]
    starts = np.flatnonzero(np.concatenate(([True], pairs[1:] != pairs[:-1])))
    sums = np.add.reduceat(weights[order], starts)
    group = np.zeros(len(pairs), dtype=np.int64)
    group[starts[1:]] = 1
    return pairs[starts].tolist(), sums, at[order], [*starts.tolist(), len(pairs)], np.cumsum(group)


def _leftmost(p: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """The occurrences of a pair ``(a, a)`` that merge: every other one of a touching chain."""
    chained = np.concatenate(([False], nxt[p[:-1]] == p[1:]))
    if not chained.any():
        return p
    index = np.arange(len(p))
    chain_start = np.maximum.accumulate(np.where(chained, 0, index))
    return p[(index - chain_start) % 2 == 0]


FEW_OCCURRENCES = 48
"""Below this many candidate positions a merge runs in Python (:meth:`_Symbols.merge_few`):
a vectorised step costs ~0.15 ms of numpy calls whatever its size, a Python one ~2 µs an
occurrence, and past the first few hundred merges most pairs occur in a few words only."""


class _Symbols:
    """The corpus as linked symbols (see the module docstring) and the one step that merges a pair.

    The step exists twice, with the same result: :meth:`merge_many` vectorised for pairs with many
    occurrences, :meth:`merge_few` as a plain loop (over memoryviews of the same arrays) for the
    many pairs that occur only a few times. The tests run the trainer both ways. Each lowers the
    counts of the pairs around the occurrences in ``table``, adds the pairs it creates there,
    and returns ``(removed, first_id, counts)``: the tokens it took out of the corpus, the id of
    the first new pair and the new pairs' counts.
    """

    def __init__(self, sym: np.ndarray, nxt: np.ndarray, prv: np.ndarray, freq: np.ndarray, pid: np.ndarray,
                 V: int, table: PairTable) -> None:
        self.sym, self.nxt, self.prv, self.freq, self.pid, self.V = sym, nxt, prv, freq, pid, V
        self.table = table
        self.merged_right = np.zeros(len(sym), dtype=bool)  # scratch: this merge's right halves
        self.views = tuple(memoryview(array) for array in (sym, nxt, prv, freq, pid))

    def merge_many(self, p: np.ndarray, best: int, a: int, b: int, t: int) -> tuple[int, int, np.ndarray]:
        """Merge pair ``best`` = ``(a, b)`` into ``t`` at the candidate positions ``p`` (stale ones included)."""
        sym, nxt, prv, freq, pid, V = self.sym, self.nxt, self.prv, self.freq, self.pid, self.V
        merged_right, count = self.merged_right, self.table.count
        # The occurrences still there: p is the left symbol, q the right one.
        p = p[pid[p] == best]
        if a == b and len(p) > 1:
            p = _leftmost(p, nxt)
        q = nxt[p]
        left, right, f = prv[p], nxt[q], freq[p]

        # Lower the pairs around each occurrence: (x, a) at the left neighbour, unless it is another
        # occurrence's right half ("a b a b": that (b, a) is the other one's right pair), and (b, y) at q.
        merged_right[q] = True
        old_left = (sym[left] >= 0) & ~merged_right[left]
        merged_right[q] = False
        old_right = sym[right] >= 0
        np.subtract.at(count, pid[left[old_left]], f[old_left])
        np.subtract.at(count, pid[q[old_right]], f[old_right])

        # Merge: p becomes t, q leaves the list; neither starts a known pair until the new ones are in.
        sym[p], sym[q] = t, -1
        nxt[p], prv[right] = right, p
        pid[p], pid[q] = -1, -1

        # The new pairs: (x, t) at the left neighbour now (another occurrence's t where two touched,
        # "a b a b"), and (t, y) at p; (t, t) is counted once, as a left pair.
        now_left = prv[p]
        sym_now_left, sym_right = sym[now_left], sym[right]
        new_left = sym_now_left >= 0
        new_right = (sym_right >= 0) & (sym_right != t)
        pairs, counts, at, bounds, group = _group(
            np.concatenate(((sym_now_left * V + t)[new_left], (t * V + sym_right)[new_right])),
            np.concatenate((f[new_left], f[new_right])),
            np.concatenate((now_left[new_left], p[new_right])))
        first = self.table.add(pairs, counts, at, bounds)
        pid[at] = first + group
        return int(f.sum()), first, counts

    def merge_few(self, candidates: list[int], best: int, a: int, b: int, t: int) -> tuple[int, int, list[int]]:
        """:meth:`merge_many`, one occurrence at a time: reads, then writes, then the new neighbours."""
        sym, nxt, prv, freq, pid = self.views
        count, V = self.table.count_view, self.V
        occurrences = [x for x in candidates if pid[x] == best]
        if a == b and len(occurrences) > 1:  # in a touching chain every other one merges
            kept, last, skip = [], -1, False
            for x in occurrences:
                skip = last >= 0 and nxt[last] == x and not skip
                if not skip:
                    kept.append(x)
                last = x
            occurrences = kept
        rights = {nxt[x] for x in occurrences}
        removed = 0
        for x in occurrences:  # the pairs around each occurrence, before any changes
            f, left, q = freq[x], prv[x], nxt[x]
            removed += f
            if sym[left] >= 0 and left not in rights:
                count[pid[left]] -= f
            if sym[nxt[q]] >= 0:
                count[pid[q]] -= f
        for x in occurrences:
            q = nxt[x]
            right = nxt[q]
            sym[x], sym[q] = t, -1
            nxt[x], prv[right] = right, x
            pid[x] = pid[q] = -1
        new: dict[int, list[int]] = {}  # pair -> [count, its positions...]
        for x in occurrences:  # the pairs around each new t, once every occurrence is merged
            f, now_left, right = freq[x], prv[x], nxt[x]
            if sym[now_left] >= 0:
                _tally(new, sym[now_left] * V + t, f, now_left)
            if sym[right] >= 0 and sym[right] != t:
                _tally(new, t * V + sym[right], f, x)
        counts: list[int] = []
        positions: list[int] = []
        bounds = [0]
        first = self.table.n
        if not new:
            return removed, first, counts
        for i, (n, *at) in enumerate(new.values()):
            for y in at:
                pid[y] = first + i
            counts.append(n)
            positions += at
            bounds.append(len(positions))
        self.table.add(list(new), counts, positions, bounds)
        return removed, first, counts


def _tally(new: dict[int, list[int]], pair: int, f: int, at: int) -> None:
    """Add one occurrence of a new pair to ``new`` (pair -> [count, positions...])."""
    entry = new.get(pair)
    if entry is None:
        new[pair] = [f, at]
    else:
        entry[0] += f
        entry.append(at)


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

    # 2. Count every adjacent pair inside a word, give the pairs ids, and mark where each is.
    first = np.flatnonzero((sym[:-1] >= 0) & (sym[1:] >= 0)).astype(index)
    table = PairTable()
    pid = np.full(n, -1, dtype=np.int32 if 3 * n < 1 << 31 else np.int64)  # ids: at most n + 2 per merged symbol
    if len(first):
        pairs, sums, at, bounds, group = _group(sym[first] * V + sym[first + 1], freq[first], first)
        table.add(pairs, sums, at, bounds)
        pid[at] = group
    del first
    corpus = _Symbols(sym, nxt, prv, freq, pid, V, table)

    def admissible(pair: int) -> bool:
        left, right = divmod(pair, V)
        return token_len[left] + token_len[right] <= max_len and (
            allowed is None or allowed(left, right, token_bytes[left] + token_bytes[right]))

    def key(pair: int) -> str:
        left, right = divmod(pair, V)
        return inv[left] + inv[right]

    queue = PairQueue(table, key, admissible, floor)

    merges: list[tuple[int, int, int, int]] = []
    while len(merges) < num_merges:
        # 3. The best pair.
        best = queue.pop()
        if best is None:
            break
        count = table.count_view[best]
        a, b = divmod(table.pair[best], V)
        t = len(token_bytes)
        token_bytes.append(token_bytes[a] + token_bytes[b])
        token_len.append(token_len[a] + token_len[b])
        inv.append(_invert(token_bytes[t]))

        # 4. Merge every occurrence still there, lowering the pairs around them, and queue the new pairs.
        entries = table.positions(best)
        if len(entries) >= few:
            removed, new, counts = corpus.merge_many(np.asarray(entries), best, a, b, t)
        else:
            removed, new, counts = corpus.merge_few(
                entries if isinstance(entries, list) else entries.tolist(), best, a, b, t)
        table.count_view[best] = 0  # lowered too where (a, a) overlapped itself; merged everywhere now
        queue.offer(new, counts)
        merges.append((a, b, count, removed))
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
