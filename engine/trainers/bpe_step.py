"""One step of the BPE merge loop: merge a batch of the best pairs at once, in numpy.

``bpe_merge.py`` describes the arrays (``sym``, ``nxt``, ``prv``, ``freq``, ``pid``) and runs the
loop; this module rewrites them. Past the first few hundred merges most pairs occur in a few
words, and one merge per numpy step would pay ~0.1 ms of numpy calls for a few symbols. So a
step takes the next best pairs off the queue (its *members*, in merge order) and merges as many
of them as give exactly what merging them one by one would:

* **Sharing nothing**: no occurrence of one member shares a symbol with an occurrence of
  another (every occurrence counted, also the overlapping ones of a pair ``(a, a)`` that merge
  one in two). Then merging one changes neither the other's occurrences nor its count. Two
  occurrences may *touch* ("a b c d" merging "a b" and "c d"): whichever merges first, the
  corpus ends the same, with ``(t, t')`` between them.
* **Still the best**: no pair made by the members before one reaches its count. Counts of old
  pairs only drop, so after merging the members before it, each member is still the best. The
  pairs made include those that live only between the merges of two touching members (``(t,
  c)`` after "a b", until "c d" merges), counted as if they lived through the step, which can
  only stop a step early.

The first member always qualifies; the step merges the longest qualifying run and leaves the
rest on the queue (their counts are stale at worst, which the lazy queue checks). Both checks are
made before anything is written, the shared symbols first: they need only the occurrences'
positions, so the members turned away cost no grouping of new pairs. The new pairs are read off
the symbols as they are (a left neighbour that is another occurrence's right half becomes that
occurrence's ``t``). Every array over occurrences is in member order, each member's in text
order, so keeping the first members is a prefix slice. Allowing touching members took spm BPE
en_5M from 493 steps to 371, en_100M's byte-level BPE from 1,663 to 1,477, with the same merges.

Where the time went (en_100M, 31,743 merges in 1,635 steps, 5.4M candidate positions): about
0.33 ms of numpy calls per step (a third of the steps' time) and 0.2 us per candidate (two
thirds). Half the candidates are stale, but one costs only a copy, a gather and a compare: the
whole filter is 15% of the steps' time, so trimming stale positions would save under a tenth.

Left out: choosing the members (the queue, ``bpe_pairs.py``) and the tie-break rule (``bpe_merge.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
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


def stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """The stable sort order of ``keys`` (all in ``0 .. bound - 1``).

    Keys of 16 bits sort by numpy's radix sort (the first pairs: millions of keys over the
    alphabet). Keys of 32 bits, when there are many, sort as two 16-bit radix passes, low half
    first (the first pairs over a large alphabet, e.g. zh_5M's 1.3M over 5,000 characters: 53
    against 70 ms packed; a step's 20,000 new pairs: 0.26 against 0.75 ms). Otherwise the keys
    are packed above their index into one int64 and sorted unstably: equal keys then order by
    index, which is the stable order, and numpy sorts plain integers with SIMD, 3 to 4 times
    faster than the stable argsort of 32-bit keys (a timsort) at the few hundred keys of most
    steps. Keys too wide to pack use that argsort.
    """
    if bound <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if bound <= 1 << 32 and len(keys) >= _TWO_PASSES:
        order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
        return order[np.argsort((keys[order] >> 16).astype(np.uint16), kind="stable")]
    shift = len(keys).bit_length()
    if bound.bit_length() + shift > 63:
        return np.argsort(keys, kind="stable")
    packed = (keys.astype(np.int64) << shift) | np.arange(len(keys))
    packed.sort()
    return packed & ((1 << shift) - 1)


_TWO_PASSES = 2048  # from here two radix passes beat the packed sort (1.4x at 2,000 keys, 0.4x at 200)


def group(keys: np.ndarray, weights: np.ndarray, at: np.ndarray, bound: int) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries grouped by key (every key in ``0 .. bound - 1``): the distinct ``keys`` in order,
    the sum of their ``weights``, the positions ``at`` sorted by key (each key's in their first
    order: the sort is stable), where each key's run starts in those (``bounds``, one past the end
    last), and each sorted entry's group number (a ``repeat`` of the run lengths: a cumulative sum
    over the run heads costs several times more)."""
    if not len(keys):
        return keys, weights, at, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if bound <= 4 * len(keys):
        return _group_dense(keys, weights, at, bound)
    order = stable_order(keys, bound)
    keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    sums = np.add.reduceat(weights[order], starts, dtype=np.int64)  # int32 weights add up in int64
    bounds = np.append(starts, len(keys))
    return keys[starts], sums, at[order], bounds, np.repeat(np.arange(len(starts)), np.diff(bounds))


def _group_dense(keys: np.ndarray, weights: np.ndarray, at: np.ndarray, bound: int) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`group` for keys that fill much of their range (a loop's first pairs over the 256
    bytes: 3.1M keys below 65,536 on en_100M): the runs' sizes are counted per key (``bincount``),
    so the sorted keys and their run heads need no pass over the sorted entries, and the sums are
    one ``reduceat`` over the weights in the sorted order, in integers (a weighted ``bincount``
    adds in float64, which needed a check that the weights stay below 2**53, and took 59 ms of
    the en_100M leader's loop start by itself)."""
    order = stable_order(keys, bound)
    sizes = np.bincount(keys, minlength=bound)
    present = np.flatnonzero(sizes)
    sizes = sizes[present]
    bounds = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    sums = np.add.reduceat(weights[order], bounds[:-1], dtype=np.int64)
    return present, sums, at[order], bounds, np.repeat(np.arange(len(present)), sizes)


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
        # scratch, -1 between steps: the occurrence whose left symbol (p) / right symbol (q) is here
        self.at_p = np.full(len(sym), -1, dtype=np.int32)
        self.at_q = np.full(len(sym), -1, dtype=np.int32)

    def merge(self, batch: list[Member], t: int) -> tuple[int, list[int], int, np.ndarray]:
        """Merge the leading members of ``batch`` that merge as one (member ``i`` into token ``t + i``).

        Lowers the pairs around the occurrences and adds the new pairs to the table. Returns how
        many members merged, the tokens each took out of the corpus, the id of the first new
        pair and the new pairs' counts.

        Every array over occurrences is in member order, each member's in text order, so keeping
        the first ``n`` members is a prefix slice.
        """
        sym, nxt, prv, freq, pid = self.sym, self.nxt, self.prv, self.freq, self.pid
        k = len(batch)
        ids = np.array([m.pair for m in batch], dtype=pid.dtype)
        # 1. The occurrences still there: p the left symbol, q the right, and their neighbours. A
        #    step of one pair (the commonest pairs, with the most positions) needs no member array
        #    to tell them apart.
        if k == 1:
            p = batch[0].where
            p = p[pid[p] == batch[0].pair]
            member = np.zeros(len(p), dtype=np.int32)
        else:
            sizes = [len(m.where) for m in batch]
            p = np.concatenate([m.where for m in batch])
            live = pid[p] == np.repeat(ids, sizes)
            p = p[live]
            member = np.repeat(np.arange(k, dtype=np.int32), sizes)[live]
        # 2. The members whose occurrences share no symbol with an earlier member's, every
        #    occurrence counted: also those of a pair (a, a) that overlap ("a a a"), which merge
        #    one in two but are all in the pair's count.
        n = self._unshared(p, member, k) if k > 1 else 1
        if any(m.a == m.b for m in batch):
            kept = _leftmost(p, member, nxt)
            p, member = p[kept], member[kept]
        if n < k:
            cut = int(np.searchsorted(member, n))
            p, member = p[:cut], member[:cut]
        q = nxt[p]
        left, right = prv[p], nxt[q]
        # Which occurrence's q is each one's left neighbour, and whose p its right one (-1: none).
        left_of, right_of = _touching_in_order(q, left) if n == 1 else self._touching(p, q, left, right)

        # 3. The new pairs, grouped by value (below).
        sym_left, sym_right, f = sym[left], sym[right], freq[p].astype(np.int64)  # int32 where counts fit
        made = self._new_pairs(p, left, member, left_of, right_of, sym_left, sym_right, f, t)

        # 4. How many members stay the best in turn (the first always does); group again without
        #    the others in the rare case that one does not.
        if n > 1:
            best = self._still_best(made[0], made[1], p, member, left_of, sym_left, f, t, batch[:n])
            if best < n:
                n, cut = best, int(np.searchsorted(member, best))
                p, q, left, right, member = p[:cut], q[:cut], left[:cut], right[:cut], member[:cut]
                left_of, right_of = _within(left_of[:cut], cut), _within(right_of[:cut], cut)
                sym_left, sym_right, f = sym_left[:cut], sym_right[:cut], f[:cut]
                made = self._new_pairs(p, left, member, left_of, right_of, sym_left, sym_right, f, t)
        keys, counts, at, bounds, groups = made

        # 5. Lower the pairs around each occurrence: (x, a) at the left neighbour unless that is
        #    another occurrence's q (the pair there is that one's right pair), and (b, y) at q.
        old_left = (sym_left >= 0) & (left_of < 0)
        old_right = sym_right >= 0
        np.subtract.at(self.table.count, np.concatenate((pid[left[old_left]], pid[q[old_right]])),
                       np.concatenate((f[old_left], f[old_right])))
        self.table.count[ids[:n]] = 0  # merged everywhere (lowered too where (a, a) overlapped itself)

        # 6. Merge: p becomes its member's token, q leaves the list; then the new pairs go in.
        sym[p], sym[q] = t + member, -1
        nxt[p], prv[right] = right, p
        pid[p], pid[q] = -1, -1
        first = self.table.add(keys.tolist(), counts, at, bounds)
        pid[at] = first + groups
        removed = np.zeros(n, dtype=np.int64)
        np.add.at(removed, member, f)
        return n, removed.tolist(), first, counts

    def _unshared(self, p: np.ndarray, member: np.ndarray, k: int) -> int:
        """How many leading members have no occurrence that shares a symbol with another member's.

        No two occurrences share a p or a q, since ``pid`` names one pair per position, so a
        shared symbol is always one's q and another's p: each q is tagged with its member, and
        read back at every p. Touching occurrences share none and merge together (:meth:`_new_pairs`).
        """
        tag, q = self.at_q, self.nxt[p]
        tag[q] = member
        other = tag[p]
        tag[q] = -1
        clash = (other >= 0) & (other != member)
        return int(np.maximum(member, other)[clash].min()) if clash.any() else k

    def _touching(self, p: np.ndarray, q: np.ndarray, left: np.ndarray, right: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
        """``left_of`` and ``right_of``: the occurrence whose q is each one's left neighbour, and
        the one whose p is its right neighbour, or -1; each p and q tagged with its occurrence."""
        at_p, at_q = self.at_p, self.at_q
        index = np.arange(len(p), dtype=np.int32)
        at_p[p], at_q[q] = index, index
        left_of, right_of = at_q[left], at_p[right]
        at_p[p], at_q[q] = -1, -1
        return left_of, right_of

    def _new_pairs(self, p: np.ndarray, left: np.ndarray, member: np.ndarray, left_of: np.ndarray, right_of: np.ndarray,
                   sym_left: np.ndarray, sym_right: np.ndarray, f: np.ndarray, t: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The pairs the step leaves, grouped by their value ``left * V + right`` (see :func:`group`;
        the value names the pair, so no other key is needed): ``(x, t)`` at the left neighbour,
        and ``(t, y)`` at p. Where two occurrences touch ("a b c d" merging "a b" and "c d"), the
        pair between them is the right one's left pair, ``(t', t)`` at the other's p, and the left
        one writes no right pair. The member that made a pair is its greater token less ``t``:
        the other token is older, or made by an earlier member."""
        V = self.V
        token = t + member.astype(np.int64)
        touching = left_of >= 0
        has_left = sym_left >= 0
        has_right = (sym_right >= 0) & (right_of < 0)
        before = np.where(touching, token[np.maximum(left_of, 0)], sym_left)
        values = np.concatenate(((before * V + token)[has_left], (token * V + sym_right)[has_right]))
        at = np.concatenate((np.where(touching, p[np.maximum(left_of, 0)], left)[has_left], p[has_right]))
        return group(values, np.concatenate((f[has_left], f[has_right])), at, V * V)

    def _still_best(self, keys: np.ndarray, counts: np.ndarray, p: np.ndarray, member: np.ndarray,
                    left_of: np.ndarray, sym_left: np.ndarray, f: np.ndarray, t: int, members: list[Member]) -> int:
        """How many leading members stay the best in turn (:func:`_still_best_of`). Where two
        members' occurrences touch, the one merged first makes a pair that lives until the other
        merges (``(t, c)`` after "a b" of "a b c d", ``(b, t')`` after "c d"): such passing pairs
        count too, as if they lived through the whole step, which can only stop a step early."""
        V = self.V
        cross = np.flatnonzero((left_of >= 0) & (member[np.maximum(left_of, 0)] != member))
        if len(cross):
            on_left, on_right = member[left_of[cross]].astype(np.int64), member[cross].astype(np.int64)
            passing = np.where(on_left < on_right, (t + on_left) * V + self.sym[p[cross]],  # (t, c): "a b" first
                               sym_left[cross] * V + t + on_right)  # (b, t'): "c d" first
            values = np.concatenate((keys, passing))  # summed with the pairs the step leaves (no positions needed)
            keys, counts = group(values, np.concatenate((counts, f[cross])), values, V * V)[:2]
        return _still_best_of(np.maximum(keys // V, keys % V) - t, counts, [m.count for m in members])


def _touching_in_order(q: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`Symbols._touching` for one member's occurrences, in text order, without tagging the
    corpus: the one before touches where its q is this one's left neighbour ("a b a b")."""
    index = np.arange(len(q), dtype=np.int32)
    touch = q[:-1] == left[1:]  # occurrence i + 1's left neighbour is occurrence i's q
    left_of = np.where(np.concatenate(([False], touch)), index - 1, -1)
    right_of = np.where(np.concatenate((touch, [False])), index + 1, -1)
    return left_of, right_of


def _within(occurrence: np.ndarray, cut: int) -> np.ndarray:
    """Occurrence numbers with those at or past ``cut`` (of members left out of the step) as -1."""
    return np.where(occurrence < cut, occurrence, -1)


def _still_best_of(owner: np.ndarray, counts: np.ndarray, member_counts: list[int]) -> int:
    """How many leading members stay the best in turn: none of the new pairs of the members
    before one reaches its count (``owner[i]`` made new pair ``i``, of count ``counts[i]``)."""
    k = len(member_counts)
    best_new = np.zeros(k, dtype=np.int64)
    np.maximum.at(best_new, owner, counts)
    reach = np.maximum.accumulate(best_new)[:-1]  # the best new count of the members before each
    late = np.flatnonzero(reach >= np.asarray(member_counts[1:]))
    return int(late[0]) + 1 if len(late) else k
