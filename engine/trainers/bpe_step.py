"""One step of the BPE merge loop: merge a batch of the best pairs at once, in numpy.

``bpe_merge.py`` describes the arrays (``sym``, ``nxt``, ``prv``, ``freq``, ``pid``) and runs the
loop; this module rewrites them. Past the first few hundred merges most pairs occur in a few
words, and one merge per numpy step would pay ~0.1 ms of numpy calls for a few symbols. So a
step takes the next best pairs off the queue (its *members*, in merge order) and merges as many
of them as give exactly what merging them one by one would:

* **Independent**: no occurrence of one member shares a position with, or touches, an
  occurrence of another. Then merging one changes neither the other's occurrences nor its
  count, nor any pair the other lowers or creates, so the order does not matter.
* **Still the best**: a member's new pairs never reach the count of a later member. Counts of
  old pairs only drop, so after merging the members before it, each member is still the best.

The first member always qualifies; the step merges the longest qualifying run and leaves the
rest on the queue (their counts are stale at worst, which the lazy queue checks). Both checks are
made before anything is written: the new pairs are read off the symbols as they are (a left
neighbour that is another occurrence's right half becomes that occurrence's ``t``).

Left out: choosing the members (the queue, ``bpe_pairs.py``) and the tie-break rule (``bpe_merge.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.trainers.bpe_pairs import PairTable, Positions


class Member(NamedTuple):
    """A pair the step may merge: its id, its tokens ``(a, b)``, its count, and its candidate positions."""

    pair: int
    a: int
    b: int
    count: int
    where: Positions


def narrow(keys: np.ndarray, bound: int) -> np.ndarray:
    """``keys`` (all below ``bound``) in the narrowest unsigned type that holds them: numpy's stable
    sort is a radix sort for 16-bit keys (7x faster than on int64 at 3M keys) and cheaper on 32."""
    return keys.astype(np.uint16 if bound <= 1 << 16 else np.uint32 if bound <= 1 << 32 else np.int64)


def group(keys: np.ndarray, weights: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                          list[int], np.ndarray]:
    """Entries grouped by key: the distinct ``keys`` in order, the sum of their ``weights``, the
    positions ``at`` sorted by key (each key's in their first order: the sort is stable), where
    each key's run starts in those (``bounds``, one past the end last), and each sorted entry's
    group number."""
    if not len(keys):
        return keys, weights, at, [0], np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    head = np.concatenate(([True], keys[1:] != keys[:-1]))
    starts = np.flatnonzero(head)
    sums = np.add.reduceat(weights[order], starts)
    return keys[starts], sums, at[order], [*starts.tolist(), len(keys)], np.cumsum(head) - 1


def _leftmost(p: np.ndarray, member: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Which occurrences merge: all, except in a touching chain of one member's (only a pair
    ``(a, a)`` chains, ``a a a``), where every other one does, left to right."""
    chained = np.concatenate(([False], (nxt[p[:-1]] == p[1:]) & (member[:-1] == member[1:])))
    if not chained.any():
        return np.ones(len(p), dtype=bool)
    index = np.arange(len(p))
    chain_start = np.maximum.accumulate(np.where(chained, 0, index))
    return (index - chain_start) % 2 == 0


class Symbols:
    """The corpus as linked symbols (see ``bpe_merge``) and the step that merges a batch of pairs."""

    def __init__(self, sym: np.ndarray, nxt: np.ndarray, prv: np.ndarray, freq: np.ndarray, pid: np.ndarray,
                 V: int, table: PairTable) -> None:
        self.sym, self.nxt, self.prv, self.freq, self.pid, self.V = sym, nxt, prv, freq, pid, V
        self.table = table
        self.tag = np.full(len(sym), -1, dtype=np.int32)  # scratch: the member whose occurrence is here

    def merge(self, batch: list[Member], t: int) -> tuple[int, list[int], int, np.ndarray]:
        """Merge the leading members of ``batch`` that merge as one (member ``i`` into token ``t + i``).

        Lowers the pairs around the occurrences and adds the new pairs to the table. Returns how
        many members merged, the tokens each took out of the corpus, the id of the first new
        pair and the new pairs' counts.
        """
        sym, nxt, prv, freq, pid, V = self.sym, self.nxt, self.prv, self.freq, self.pid, self.V
        ids = np.array([m.pair for m in batch])
        # 1. The occurrences still there, member by member in text order: p the left symbol, q the right.
        p = np.concatenate([np.asarray(m.where) for m in batch])
        member = np.repeat(np.arange(len(batch)), [len(m.where) for m in batch])
        live = pid[p] == ids[member]
        p, member = p[live], member[live]
        if any(m.a == m.b for m in batch):
            kept = _leftmost(p, member, nxt)
            p, member = p[kept], member[kept]
        q = nxt[p]
        left, right, f = prv[p], nxt[q], freq[p]
        mine_left = pid[prv[left]] == ids[member]  # the left neighbour is another occurrence's right half
        mine_right = pid[right] == ids[member]  # the right neighbour is another occurrence's left half
        sym_left, sym_right = sym[left], sym[right]

        # 2. The new pairs, keyed by member, side and the other token: (x, t) at the left neighbour,
        #    (t, t) at the other occurrence's left half where two touch ("a b a b"), and (t, y) at p.
        has_left = sym_left >= 0
        has_right = (sym_right >= 0) & ~mine_right
        left_key = 2 * V * member + np.where(mine_left, t + member, sym_left)
        keys, counts, at, bounds, groups = group(
            narrow(np.concatenate((left_key[has_left], (2 * V * member + V + sym_right)[has_right])),
                   2 * V * len(batch)),
            np.concatenate((f[has_left], f[has_right])),
            np.concatenate((np.where(mine_left, prv[left], left)[has_left], p[has_right])))
        keys = keys.astype(np.int64)

        # 3. How many members merge as one, then only theirs from here on.
        n = 1 if len(batch) == 1 else min(self._independent(p, q, left, right, member, len(batch)),
                                          _still_best(keys // (2 * V), counts, [m.count for m in batch]))
        if n < len(batch):
            mask = member < n
            p, q, left, right, f, member = p[mask], q[mask], left[mask], right[mask], f[mask], member[mask]
            mine_left, sym_left, sym_right = mine_left[mask], sym_left[mask], sym_right[mask]
            g = int(np.searchsorted(keys, 2 * V * n))
            keys, counts, at, groups = keys[:g], counts[:g], at[:bounds[g]], groups[:bounds[g]]
            bounds = bounds[:g + 1]

        # 4. Lower the pairs around each occurrence: (x, a) at the left neighbour unless it is
        #    another occurrence's right half (its (b, a) is that one's right pair), and (b, y) at q.
        old_left = (sym_left >= 0) & ~mine_left
        old_right = sym_right >= 0
        np.subtract.at(self.table.count, np.concatenate((pid[left[old_left]], pid[q[old_right]])),
                       np.concatenate((f[old_left], f[old_right])))
        self.table.count[ids[:n]] = 0  # merged everywhere (lowered too where (a, a) overlapped itself)

        # 5. Merge: p becomes its member's token, q leaves the list; then the new pairs go in.
        sym[p], sym[q] = t + member, -1
        nxt[p], prv[right] = right, p
        pid[p], pid[q] = -1, -1
        side, other = np.divmod(keys % (2 * V), V)
        token = t + keys // (2 * V)
        pairs = np.where(side == 0, other * V + token, token * V + other).tolist()
        first = self.table.add(pairs, counts, at, bounds)
        pid[at] = first + groups
        removed = np.zeros(n, dtype=np.int64)
        np.add.at(removed, member, f)
        return n, removed.tolist(), first, counts

    def _independent(self, p: np.ndarray, q: np.ndarray, left: np.ndarray, right: np.ndarray, member: np.ndarray,
                     k: int) -> int:
        """How many leading members have no occurrence that shares or touches another member's."""
        tag = self.tag
        tag[p], tag[q] = member, member  # where two members share a position, one of them sees the other
        first_clash = k
        for at in (p, q, left, right):
            other = tag[at]
            clash = (other >= 0) & (other != member)
            if clash.any():
                first_clash = min(first_clash, int(np.maximum(member, other)[clash].min()))
        tag[p], tag[q] = -1, -1
        return first_clash


def _still_best(owner: np.ndarray, counts: np.ndarray, member_counts: list[int]) -> int:
    """How many leading members stay the best in turn: none of the new pairs of the members
    before one reaches its count (``owner[i]`` made new pair ``i``, of count ``counts[i]``)."""
    k = len(member_counts)
    best_new = np.zeros(k, dtype=np.int64)
    np.maximum.at(best_new, owner, counts)
    reach = np.maximum.accumulate(best_new)[:-1]  # the best new count of the members before each
    late = np.flatnonzero(reach >= np.asarray(member_counts[1:]))
    return int(late[0]) + 1 if len(late) else k
