"""BPE of many pre-tokens at once: every word's next merge found and applied in numpy passes.

A cold encode meets tens of thousands of distinct pre-tokens (en_5M: 70k). Merging each one in
Python costs an interpreter loop per merge; here all of a call's new pre-tokens are laid end
to end in one array of symbols, with one array of pair ranks beside it, and each round takes,
in every word at once, one step of the merge loop (``bpe_merge.merge``): the pair with the lowest
rank, its leftmost occurrence, one occurrence per word per round (Hugging Face's order, so the ids
are the same for any merge list, including merges that use a token a later merge creates). The
loop itself finishes the last words, where a round of numpy calls would cost more. A round costs
a few passes over the symbols of the words not yet finished; words leave the arrays when no pair
of theirs has a merge, so the rounds get cheaper as they go (en_5M: 63 rounds, but after the
tenth only 5k of 70k words are left, and the last ``TAIL_WORDS`` go one by one).

Why a batch at all: merging en_5M's 70k new pre-tokens one by one with ``bpe_merge.merge`` took
0.7-1.0 s against 0.12-0.15 s here (2 cores, load 1.6-2.6), and a cold encode of en_5M takes
about 1.3 s at that load: without the batch it would fall well below the 0.6x tiktoken target of
``docs/benchmarks.md``.

Pair ranks are looked up in :class:`PairRanks`, an open-addressing hash table held in numpy
arrays, because a Python dict cannot be queried for a whole array of pairs at once (and sorted
keys with ``np.searchsorted`` were measured slower: see its docstring).

Left out: dropout, and pieces long enough to need many rounds (``BPE.tokenize_many`` gives
those to ``bpe_merge.merge`` one by one: one round per merge would be quadratic).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain

import numpy as np

# A rank above every real one (and below 2**31): "this pair has no merge".
NO_MERGE = (1 << 31) - 1
# A pair (left, right) is the key left << _ID_BITS | right; ids are below 2**21
# (engine.limits.MAX_VOCAB_SIZE is 2,000,000), and so are ranks (MAX_MERGES is the same).
_ID_BITS = 21
_RANK_BITS = 21
_RANK_MASK = (1 << _RANK_BITS) - 1
_EMPTY = -1  # a free slot
# A batch round costs ~40 numpy calls (~60 us); a word finished in Python ~3 us. So the last
# words of a batch are finished one by one: a batch of 70k words ends after ~15 rounds instead
# of 63, and a batch of a few hundred words costs a few rounds.
TAIL_WORDS = 32
# Fibonacci hashing: multiply by 2**64 / golden ratio (as a signed 64-bit number; numpy wraps
# array products around) and keep the top bits, which mixes the left id (the key's high bits)
# into the slot number.
_GOLDEN = np.int64(0x9E3779B97F4A7C15 - (1 << 64))


class PairRanks:
    """``{(left id, right id): rank}`` queried an array of pairs at a time (open addressing).

    Why a hash table and not ``np.searchsorted`` on the sorted keys, the plainer structure: on
    GPT-2's 50k merges, 70k queries (half of them pairs that have no merge) took 1.0-1.25 ms here
    against 7.6-8.8 ms by binary search, and en_5M's cold batch (501k queries in 98 calls) took
    0.12-0.15 s against 0.16-0.18 s, about 3% of a cold encode of en_5M, whose margin over the
    0.6x tiktoken target is a few percent (2026-11-27, 2 cores, load 1.6).

    A slot holds ``key << 21 | rank`` (42 + 21 bits), so one gather fetches both the pair to
    compare and its rank. The table has at least four slots per pair, so a pair sits at most a
    few slots after the one it hashes to (linear probing); ``get`` tries every query's own slot
    at once, then walks on only with those that found another pair there, and stops after the
    longest walk any pair needed when the table was built.
    """

    def __init__(self, lefts: Sequence[int], rights: Sequence[int], ranks: Sequence[int]) -> None:
        keys = np.asarray(lefts, np.int64) << _ID_BITS | np.asarray(rights, np.int64)
        values = np.asarray(ranks, np.int64)
        if len(values) and not 0 <= values.min() <= values.max() <= _RANK_MASK:
            raise ValueError(f"ranks must lie in [0, {_RANK_MASK}]")
        self._bits = max(4, (4 * len(keys)).bit_length())
        self._mask = (1 << self._bits) - 1
        self._slots = np.full(1 << self._bits, _EMPTY, np.int64)
        # Insert all pairs at once, one probe step per round: in each round every pair still
        # waiting tries its current slot, the first of those aiming at each free slot takes it,
        # and the rest move one slot on.
        slots = self._slot(keys)
        waiting = np.arange(len(keys))
        self._probes = 0
        while waiting.size:
            self._probes += 1
            free = self._slots[slots[waiting]] == _EMPTY
            taken, first = np.unique(slots[waiting[free]], return_index=True)
            placed = waiting[free][first]
            self._slots[taken] = keys[placed] << _RANK_BITS | values[placed]
            settled = np.zeros(len(keys), bool)
            settled[placed] = True
            waiting = waiting[~settled[waiting]]
            slots[waiting] = (slots[waiting] + 1) & self._mask

    def _slot(self, keys: np.ndarray) -> np.ndarray:
        return keys * _GOLDEN >> (64 - self._bits) & self._mask

    def get(self, lefts: np.ndarray, rights: np.ndarray) -> np.ndarray:
        """The rank of each pair ``(lefts[i], rights[i])`` (int64), ``NO_MERGE`` where it has none."""
        keys = lefts.astype(np.int64) << _ID_BITS | rights
        slots = self._slot(keys)
        found = self._slots[slots]
        ranks = np.where(found >> _RANK_BITS == keys, found & _RANK_MASK, NO_MERGE)
        # The few whose slot holds another pair walk on; an empty slot ends a walk: no such pair.
        walking = np.flatnonzero((ranks == NO_MERGE) & (found != _EMPTY))
        for step in range(1, self._probes):
            if not len(walking):
                break
            found = self._slots[(slots[walking] + step) & self._mask]
            hit = found >> _RANK_BITS == keys[walking]
            ranks[walking[hit]] = found[hit] & _RANK_MASK
            walking = walking[~hit & (found != _EMPTY)]
        return ranks


class BatchMerger:
    """A BPE model's merges as numpy tables, built once, and the batch merge that reads them."""

    def __init__(self, byte_ids: Sequence[int], ranks: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        self.byte_ids = np.asarray(byte_ids, np.int32)  # byte -> id
        self.pairs = PairRanks([p[0] for p in ranks], [p[1] for p in ranks], [r for r, _ in ranks.values()])
        self.merged_at = np.zeros(max((r for r, _ in ranks.values()), default=-1) + 1, np.int32)  # rank -> id
        self.merged_at[[r for r, _ in ranks.values()]] = [m for _, m in ranks.values()]
        # The ranks of all 65,536 pairs of bytes, indexed by ``first << 8 | second``: every word
        # starts as bytes, so its first ranks come from one gather instead of the hash table.
        firsts, seconds = np.divmod(np.arange(1 << 16), 1 << 8)
        self.byte_pair_ranks = self.pairs.get(self.byte_ids[firsts], self.byte_ids[seconds]).astype(np.int64)

    def merge(self, words: Sequence[bytes], finish: Callable[[list[int]], list[int]]) -> list[tuple[int, ...]]:
        """The ids of each of ``words`` (non-empty), merged as ``bpe_merge.merge`` merges them.

        ``finish`` is that loop on one word's ids (merging is memoryless, so it can take over a
        half-merged word); it finishes the last ``TAIL_WORDS`` words, where a round's numpy calls
        would cost more than it does.
        """
        pairs, merged_at = self.pairs, self.merged_at
        lengths = np.fromiter(map(len, words), np.int64, len(words))
        data = np.frombuffer(b"".join(words), np.uint8)
        symbols = self.byte_ids[data]
        owners = np.arange(len(words))  # the word each row of lengths is
        # ranks[i] is the rank of the pair (symbols[i], symbols[i + 1]); a word's last symbol has none.
        ranks = np.full(len(symbols), NO_MERGE, np.int64)
        ranks[:-1] = self.byte_pair_ranks[data[:-1].astype(np.intp) << 8 | data[1:]]
        ranks[np.cumsum(lengths) - 1] = NO_MERGE
        positions = np.arange(len(symbols))
        finished_symbols: list[np.ndarray] = []
        finished_owners: list[np.ndarray] = []
        while len(symbols):
            if len(lengths) <= TAIL_WORDS:  # the last few words: one by one (merging is memoryless)
                rest, bounds = symbols.tolist(), np.cumsum(lengths).tolist()
                done = [finish(rest[a:b]) for a, b in zip([0, *bounds], bounds)]
                finished_symbols.append(np.fromiter(chain.from_iterable(done), np.int32))
                finished_owners.append(np.repeat(owners, list(map(len, done))))
                break
            starts = np.cumsum(lengths) - lengths
            # Each word's lowest (rank, position), both in one int so one reduceat finds them.
            best = np.minimum.reduceat(ranks << 32 | positions[: len(symbols)], starts)
            merging = best >> 32 != NO_MERGE
            keep = np.repeat(merging, lengths)  # the symbols of the words that go on
            if not merging.all():  # words with nothing left to merge are done: take them out
                finished_symbols.append(symbols[~keep])
                finished_owners.append(np.repeat(owners[~merging], lengths[~merging]))
                best, starts, lengths, owners = best[merging], starts[merging], lengths[merging], owners[merging]
            at = best & 0xFFFFFFFF  # where each remaining word merges: at and at + 1
            symbols[at] = new = merged_at[best >> 32]
            # The new symbol's pairs with its neighbours; at + 1's pair goes with at + 1.
            has_left = at > starts
            ranks[at[has_left] - 1] = pairs.get(symbols[at[has_left] - 1], new[has_left])
            has_right = at + 2 < starts + lengths
            ranks[at] = NO_MERGE
            ranks[at[has_right]] = pairs.get(new[has_right], symbols[at[has_right] + 2])
            keep[at + 1] = False
            symbols, ranks = symbols[keep], ranks[keep]
            lengths -= 1
        return split_by_owner(finished_symbols, finished_owners, len(words))


def split_by_owner(symbols: Sequence[np.ndarray], owners: Sequence[np.ndarray], n_words: int) -> list[tuple[int, ...]]:
    """Regroup the finished symbols per word: each word finished whole, in one round, in order."""
    all_owners = np.concatenate(owners)
    order = np.argsort(all_owners, kind="stable")
    ids = tuple(np.concatenate(symbols)[order].tolist())
    bounds = np.cumsum(np.bincount(all_owners, minlength=n_words)).tolist()
    return [ids[a:b] for a, b in zip([0, *bounds], bounds)]
