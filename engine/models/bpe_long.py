"""BPE merging for long pre-tokens in O(n log n): a heap of pairs over a linked list of symbols.

``BPE.merge_fast`` copies and sorts the whole list of pair ranks at every merge, which is the
fastest way for the short pieces that real pre-tokenizers produce, but quadratic in the length
of one piece: a 200,000-byte piece (a custom pattern such as ``[\\s\\S]+``, or no pre-tokenizer
at all) took minutes. ``merge_long_ids`` applies the same merges in the same order, Hugging Face's:
the lowest rank first, its leftmost occurrence first, one occurrence at a time, then look again.

How: the symbols form a doubly linked list over their original positions (``prev``/``next``),
so a merge is O(1), and every adjacent pair that has a merge is in a heap keyed by (rank,
position of its left symbol). Positions keep their order as symbols merge, so the heap's
minimum is exactly the pair ``merge_fast`` would pick. A merge changes only the pairs on either
side of the new symbol; they are pushed anew, and the entries they replace are left in the heap
and skipped when popped (lazy invalidation): an entry is stale when its left symbol has been
merged away or the pair now there no longer has that rank. A rank names one pair (``BPE``
keeps the later rank of a pair listed twice, as HF does), so "same rank" means "same pair".

Left out: dropout (``BPE.encode_bytes`` is the reference for it) and the choice of which
pieces are long (``BPE.tokenize``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from heapq import heapify, heappop, heappush
from itertools import repeat

_DEAD = -1  # the id left at a position whose symbol was merged into its left neighbour


def merge_long_ids(ids: list[int], rows: Sequence[Mapping[int, int]], merged_at: Sequence[int]) -> list[int]:
    """Merge a long piece's symbol ``ids`` as ``bpe.merge_short`` would; ``rows`` and
    ``merged_at`` are ``bpe.rank_rows``: ``rows[left][right]`` is a pair's rank."""
    n = len(ids)
    if n < 2:
        return ids
    # A heap entry is one int, rank * 2**shift + position: ints compare faster than tuples, and
    # the order is the same as (rank, position) because every position is below 2**shift.
    shift = n.bit_length()
    mask = (1 << shift) - 1
    heap = [
        rank << shift | i
        for i, rank in enumerate(map(dict.get, map(rows.__getitem__, ids), ids[1:], repeat(None)))
        if rank is not None
    ]
    if not heap:
        return ids  # nothing merges (random bytes, runs of a byte that has no pair)
    heapify(heap)
    next_of = list(range(1, n + 1))  # n past the last symbol
    prev_of = list(range(-1, n - 1))  # -1 before the first
    while heap:
        key = heappop(heap)
        rank, i = key >> shift, key & mask
        left = ids[i]
        if left == _DEAD:
            continue
        j = next_of[i]
        if j == n or rows[left].get(ids[j]) != rank:
            continue  # stale: the pair at i has changed since this entry was pushed
        ids[i] = new = merged_at[rank]
        ids[j] = _DEAD
        k = next_of[i] = next_of[j]
        if k != n:
            prev_of[k] = i
            if (right_rank := rows[new].get(ids[k])) is not None:
                heappush(heap, right_rank << shift | i)
        h = prev_of[i]
        if h >= 0 and (left_rank := rows[ids[h]].get(new)) is not None:
            heappush(heap, left_rank << shift | h)
    return [token_id for token_id in ids if token_id != _DEAD]
