"""Batched lattices: forward-backward and Viterbi over every distinct word at once.

The Unigram trainer runs forward-backward (E-step) and Viterbi (pruning) over hundreds of
thousands of distinct words, a dozen times. A per-word, per-edge Python loop costs about a
microsecond an edge; here the loops run inside C instead. Words are sorted by length, longest
first, so the words still "alive" at character position ``j`` are a prefix ``0..W[j]`` of the
list, and the lattice is stored *position-major*: slot ``(j, L)`` lists the words that have a
vocabulary piece ending at ``j`` with length ``L`` (``idx``) and that piece's id (``sid``).
A forward step is then a handful of C-level calls per slot: ``itemgetter`` gathers,
``map(mul, ...)``, and a scatter through ``list.__setitem__``.

Within a slot each word appears once (so scattering into per-word arrays is exact), and entries
are sorted by piece id so that per-piece sums are prefix-sum differences over runs.

Values are probabilities, not logs (a multiply-add is what C-level ``map`` can do). Words
whose total probability underflows (very long words) are recomputed one at a time in log space
by :mod:`engine.trainers.unigram_em`'s reference routines. This module knows nothing about the
vocabulary's strings beyond the ``sid_of`` mapping it is built from.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, chain, compress, repeat
from operator import add, and_, eq, gt, is_not, itemgetter, mul, ne, or_, sub
from typing import Any

Getter = Callable[[Sequence[Any]], tuple[Any, ...]]
TINY = 1e-280  # below this a word's probability is recomputed in log space


def getter(indices: Sequence[int]) -> Getter:
    """``itemgetter`` that always returns a tuple (also for zero or one index)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if len(indices) == 1:
        only = indices[0]
        return lambda seq: (seq[only],)
    return lambda seq: ()


def _scatter(target: list[Any], idx: Sequence[int], values: Any) -> None:
    deque(map(target.__setitem__, idx, values), maxlen=0)


class Slot:
    """The edges of one (end position, length) pair, sorted by piece id."""

    __slots__ = ("length", "idx", "sid", "gi", "gs", "run_sids", "g_runs", "g_ends", "p")

    def __init__(self, length: int, idx: Sequence[int], sid: Sequence[int]) -> None:
        self.length = length
        self.set(tuple(idx), tuple(sid))

    def set(self, idx: tuple[int, ...], sid: tuple[int, ...]) -> None:
        self.idx, self.sid = idx, sid
        self.gi, self.gs = getter(idx), getter(sid)
        self.p: tuple[float, ...] = ()  # the pieces' probabilities, gathered once per pass
        n = len(sid)
        ends = list(compress(range(n - 1), map(ne, sid, sid[1:]))) + ([n - 1] if n else [])
        self.g_ends = getter(ends)
        self.run_sids = tuple(sid[e] for e in ends)
        self.g_runs = getter(self.run_sids)

    def add_runs(self, out: list[float], values: Any) -> None:
        """``out[sid] += value`` for every entry (duplicates summed through prefix sums)."""
        ends = self.g_ends(list(accumulate(values)))
        sums = map(sub, ends, chain((0.0,), ends))
        _scatter(out, self.run_sids, map(add, self.g_runs(out), sums))


class Lattices:
    """Lattices of ``words`` (any order; sorted internally) over pieces ``sid_of``."""

    def __init__(
        self,
        words: Sequence[str],
        counts: Sequence[float],
        sid_of: Mapping[str, int],
        max_piece_length: int,
        unk_sid: int,
        *,
        self_sid: Sequence[int] | None = None,
    ) -> None:
        order = sorted(range(len(words)), key=lambda i: (-len(words[i]), words[i]))
        self.order = order
        self.words = [words[i] for i in order]
        self.counts = [float(counts[i]) for i in order]
        self.n_words = len(order)
        self.max_len = len(self.words[0]) if self.words else 0
        lengths = [len(w) for w in self.words]
        # active[j] = number of words with length >= j
        self.active = [0] * (self.max_len + 2)
        for n in lengths:
            self.active[n] += 1
        for j in range(self.max_len - 1, -1, -1):
            self.active[j] += self.active[j + 1]
        own = [self_sid[i] for i in order] if self_sid is not None else None
        get = sid_of.get
        self.slots: list[list[Slot | None]] = [[None] * (max_piece_length + 1) for _ in range(self.max_len + 1)]
        for j in range(1, self.max_len + 1):
            alive = self.words[: self.active[j]]
            for L in range(1, min(j, max_piece_length) + 1):
                if L == 1:
                    sids = list(map(get, map(itemgetter(j - 1), alive), repeat(unk_sid)))
                    idx = list(range(len(alive)))
                else:
                    found = list(map(get, map(itemgetter(slice(j - L, j)), alive)))
                    keep = list(map(is_not, found, repeat(None)))
                    idx = list(compress(range(len(alive)), keep))
                    sids = list(compress(found, keep))
                if own is not None and L == j:  # a piece's own whole-string edge is not an alternative
                    pairs = [(w, s) for w, s in zip(idx, sids) if not (lengths[w] == j and own[w] == s)]
                    idx, sids = [w for w, _ in pairs], [s for _, s in pairs]
                if not idx:
                    continue
                by_sid = sorted(range(len(idx)), key=sids.__getitem__)
                self.slots[j][L] = Slot(L, getter(by_sid)(idx), getter(by_sid)(sids))

    def edges(self) -> int:
        return sum(len(s.idx) for row in self.slots for s in row if s is not None)

    def filter(self, alive: Sequence[bool]) -> None:
        """Drop the edges of pieces that are no longer in the vocabulary."""
        for row in self.slots:
            for L, slot in enumerate(row):
                if slot is None:
                    continue
                keep = list(map(alive.__getitem__, slot.sid))
                if all(keep):
                    continue
                idx = tuple(compress(slot.idx, keep))
                row[L] = Slot(L, idx, tuple(compress(slot.sid, keep))) if idx else None

    def _gather_probs(self, prob: Sequence[float]) -> None:
        for row in self.slots:
            for slot in row:
                if slot is not None:
                    slot.p = slot.gs(prob)

    def _by_word(self, per_position: list[list[float]]) -> list[float]:
        """Each word's value at its own end position, in sorted-word order."""
        out: list[float] = []
        for j in range(self.max_len, 0, -1):
            out.extend(per_position[j][self.active[j + 1] : self.active[j]])
        return out

    # ----------------------------------------------------------------- sum-product
    def forward_backward(self, prob: Sequence[float], expected: list[float]) -> tuple[list[float], list[int]]:
        """Add each piece's expected count to ``expected``; return per-word Z and underflowed words.

        Z is in sorted-word order; underflowed words (Z below ``TINY``) contribute nothing here.
        """
        act, slots = self.active, self.slots
        self._gather_probs(prob)
        alpha: list[list[float]] = [[1.0] * act[0]]
        for j in range(1, self.max_len + 1):
            acc = [0.0] * act[j]
            for slot in slots[j]:
                if slot is not None:
                    vals = map(mul, slot.gi(alpha[j - slot.length]), slot.p)
                    _scatter(acc, slot.idx, map(add, slot.gi(acc), vals))
            alpha.append(acc)
        z = self._by_word(alpha)
        cz = [c / v if v > TINY else 0.0 for c, v in zip(self.counts, z)]
        bad = [w for w, v in enumerate(z) if v <= TINY]
        beta: list[list[float]] = [[]] * (self.max_len + 1)
        beta[self.max_len] = [1.0] * act[self.max_len]
        for i in range(self.max_len - 1, -1, -1):
            acc = [0.0] * act[i + 1] + [1.0] * (act[i] - act[i + 1])
            for L in range(1, min(len(slots[0]) - 1, self.max_len - i) + 1):
                slot = slots[i + L][L]
                if slot is not None:
                    vals = map(mul, slot.gi(beta[i + L]), slot.p)
                    _scatter(acc, slot.idx, map(add, slot.gi(acc), vals))
            beta[i] = acc
        # Posterior of an edge (w, j-L -> j): alpha[j-L] * p * beta[j] * count / Z.
        for j in range(1, self.max_len + 1):
            bz = list(map(mul, beta[j], cz))
            for slot in slots[j]:
                if slot is not None:
                    vals = map(mul, map(mul, slot.gi(alpha[j - slot.length]), slot.p), slot.gi(bz))
                    slot.add_runs(expected, vals)
        return z, bad

    # ----------------------------------------------------------------- max-product
    def viterbi(self, prob: Sequence[float]) -> list[list[float]]:
        """Best-path probabilities per position (``best[j][w]``)."""
        self._gather_probs(prob)
        best: list[list[float]] = [[1.0] * self.active[0]]
        for j in range(1, self.max_len + 1):
            acc = [0.0] * self.active[j]
            for slot in self.slots[j]:
                if slot is not None:
                    vals = map(mul, slot.gi(best[j - slot.length]), slot.p)
                    _scatter(acc, slot.idx, map(max, slot.gi(acc), vals))
            best.append(acc)
        return best

    def backtrack(self, best: list[list[float]], visit: Callable[[Slot, list[int]], None]) -> None:
        """Call ``visit(slot, take)`` where ``take[k]`` is 1 if edge k is on its word's best path.

        Runs after :meth:`viterbi` (which gathered the probabilities).
        """
        act = self.active
        on = [[0] * act[j + 1] + [1] * (act[j] - act[j + 1]) for j in range(self.max_len)]
        on.append([1] * act[self.max_len])
        for j in range(self.max_len, 0, -1):
            on_j, best_j = on[j], best[j]
            for slot in reversed(self.slots[j]):  # longest piece first on ties
                if slot is None:
                    continue
                vals = map(mul, slot.gi(best[j - slot.length]), slot.p)
                take = list(map(and_, slot.gi(on_j), map(eq, vals, slot.gi(best_j))))
                if not any(take):
                    continue
                _scatter(on_j, slot.idx, map(gt, slot.gi(on_j), take))
                prev = on[j - slot.length]
                _scatter(prev, slot.idx, map(or_, slot.gi(prev), take))
                visit(slot, take)

    def viterbi_counts(self, prob: Sequence[float], freq: list[float]) -> list[int]:
        """Add count-weighted piece frequencies on the best paths to ``freq``; return underflowed words."""
        best = self.viterbi(prob)
        bad = [w for w, v in enumerate(self._by_word(best)) if v <= TINY]
        counts = self.counts
        if bad:
            counts = list(counts)
            for w in bad:
                counts[w] = 0.0
        self.backtrack(best, lambda slot, take: slot.add_runs(freq, map(mul, take, slot.gi(counts))))
        return bad
