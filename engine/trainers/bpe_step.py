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
made before anything is written, independence first: it needs only the occurrences' positions,
so the members it turns away cost no grouping of new pairs. The new pairs are read off the
symbols as they are (a left neighbour that is another occurrence's right half becomes that
occurrence's ``t``). Every array over occurrences is in member order, each member's in text
order, so keeping the first members is a prefix slice.

Where the time goes (en_100M, 31,743 merges in 1,635 steps, 5.4M candidate positions): about
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
        self.tag = np.full(len(sym), -1, dtype=np.int32)  # scratch: the member whose occurrence is here

    def merge(self, batch: list[Member], t: int) -> tuple[int, list[int], int, np.ndarray]:
        """Merge the leading members of ``batch`` that merge as one (member ``i`` into token ``t + i``).

        Lowers the pairs around the occurrences and adds the new pairs to the table. Returns how
        many members merged, the tokens each took out of the corpus, the id of the first new
        pair and the new pairs' counts.

        Every array over occurrences is in member order, each member's in text order, so keeping
        the first ``n`` members is a prefix slice, and an occurrence's neighbours of the same
        member are the ones beside it in the array (no gather needed to find them).
        """
        sym, nxt, prv, freq, pid, V = self.sym, self.nxt, self.prv, self.freq, self.pid, self.V
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
        if any(m.a == m.b for m in batch):
            kept = _leftmost(p, member, nxt)
            p, member = p[kept], member[kept]
        q = nxt[p]
        left, right = prv[p], nxt[q]

        # 2. The members whose occurrences neither share nor touch another member's.
        n = self._independent(p, q, left, right, member, k) if k > 1 else 1
        if n < k:
            cut = int(np.searchsorted(member, n))
            p, q, left, right, member = p[:cut], q[:cut], left[:cut], right[:cut], member[:cut]

        # 3. The new pairs, grouped by value: (x, t) at the left neighbour, (t, t) at the other
        #    occurrence's left half where two touch ("a b a b"), and (t, y) at p. A neighbour of the
        #    same member is the entry beside it (no other member's occurrence touches this one).
        same = member[1:] == member[:-1]
        mine_left = np.concatenate(([False], (q[:-1] == left[1:]) & same))  # left is the previous one's q
        mine_right = np.append(mine_left[1:], False)  # right is the next one's p: the same link, seen from there
        sym_left, sym_right, f = sym[left], sym[right], freq[p].astype(np.int64)  # int32 where counts fit
        made = self._new_pairs(p, left, member, mine_left, mine_right, sym_left, sym_right, f, t)

        # 4. How many members stay the best in turn (the first always does); group again without
        #    the others in the rare case that one does not.
        if n > 1:
            keys, counts = made[0], made[1]
            best = _still_best(np.maximum(keys // V, keys % V) - t, counts, [m.count for m in batch[:n]])
            if best < n:
                n, cut = best, int(np.searchsorted(member, best))
                p, q, left, right, member = p[:cut], q[:cut], left[:cut], right[:cut], member[:cut]
                mine_left, mine_right = mine_left[:cut], mine_right[:cut]
                sym_left, sym_right, f = sym_left[:cut], sym_right[:cut], f[:cut]
                made = self._new_pairs(p, left, member, mine_left, mine_right, sym_left, sym_right, f, t)
        keys, counts, at, bounds, groups = made

        # 5. Lower the pairs around each occurrence: (x, a) at the left neighbour unless it is
        #    another occurrence's right half (its (b, a) is that one's right pair), and (b, y) at q.
        old_left = (sym_left >= 0) & ~mine_left
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

    def _new_pairs(self, p: np.ndarray, left: np.ndarray, member: np.ndarray, mine_left: np.ndarray,
                   mine_right: np.ndarray, sym_left: np.ndarray, sym_right: np.ndarray, f: np.ndarray,
                   t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The new pairs of these occurrences grouped by their value ``left * V + right`` (see
        :func:`group`; the value names the pair, so no other key is needed). The member that made
        a pair is its greater token less ``t``: the other token is older."""
        V = self.V
        has_left = sym_left >= 0
        has_right = (sym_right >= 0) & ~mine_right
        token = t + member.astype(np.int64)
        values = np.concatenate(((np.where(mine_left, token, sym_left) * V + token)[has_left],
                                 (token * V + sym_right)[has_right]))
        at = np.concatenate((np.where(mine_left, np.concatenate((p[:1], p[:-1])), left)[has_left], p[has_right]))
        return group(values, np.concatenate((f[has_left], f[has_right])), at, V * V)

    def _independent(self, p: np.ndarray, q: np.ndarray, left: np.ndarray, right: np.ndarray, member: np.ndarray,
                     k: int) -> int:
        """How many leading members have no occurrence that shares or touches another member's.

        Two occurrences of other pairs can only meet in two ways, each seen exactly at one
        neighbour once every ``p`` and then every ``q`` is tagged with its member (no two
        occurrences share a ``p`` or a ``q``, since ``pid`` names one pair per position): one's
        ``q`` is the other's left neighbour (they touch), or one's ``q`` is the other's ``p``
        (they share a symbol), and then the first's right neighbour is the other's ``q``. A
        position tagged at a neighbour always belongs to an occurrence that meets this one.
        """
        tag = self.tag
        tag[p] = member
        tag[q] = member  # after p: a symbol that is one's q and another's p keeps the q's member
        other = np.concatenate((tag[left], tag[right]))
        tag[p], tag[q] = -1, -1
        mine = np.concatenate((member, member))
        clash = (other >= 0) & (other != mine)
        return int(np.maximum(mine, other)[clash].min()) if clash.any() else k


def _still_best(owner: np.ndarray, counts: np.ndarray, member_counts: list[int]) -> int:
    """How many leading members stay the best in turn: none of the new pairs of the members
    before one reaches its count (``owner[i]`` made new pair ``i``, of count ``counts[i]``)."""
    k = len(member_counts)
    best_new = np.zeros(k, dtype=np.int64)
    np.maximum.at(best_new, owner, counts)
    reach = np.maximum.accumulate(best_new)[:-1]  # the best new count of the members before each
    late = np.flatnonzero(reach >= np.asarray(member_counts[1:]))
    return int(late[0]) + 1 if len(late) else k
