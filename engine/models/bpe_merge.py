"""The BPE merge loop: apply a model's merges to one pre-token's symbols, Hugging Face's order.

The rule (minbpe's ``_encode_chunk``, tiktoken's ``_educational.py``; the slow reference that
says it in five lines is ``tests/engine/bpe_encode_reference.py``): among adjacent pairs that
have a merge, merge the one with the lowest rank, its leftmost occurrence first, one occurrence
at a time, then look again; stop when no adjacent pair has a merge. "One at a time" matters for
imported merge lists, where a merge may use a token that a later merge creates: merging every
occurrence of the lowest rank at once would then give other ids than Hugging Face.

The loop here is Hugging Face's own (``Word::merge_all`` in ``tokenizers``): every adjacent pair
that has a merge sits in a heap keyed by (rank, position of its left symbol), and the symbols form
a doubly linked list over their original positions (``next_of``/``prev_of``), so a merge is O(1)
and a piece of n symbols costs O(n log n). Positions keep their order as symbols merge, so the
heap's minimum is exactly the reference's choice. A merge changes only the pairs on either side
of the new symbol; those are pushed anew, and the entries they replace are left in the heap and
skipped when popped (lazy invalidation): an entry is stale when its left symbol has been merged
away or the pair now there has another rank. A rank names one pair (a pair listed twice keeps
its later rank, as in HF), so "same rank" means "same pair".

Why one loop for every length: the finding of the lowest pair by scanning all pairs, as the
reference does, is quadratic (200,000 bytes of "a" took 90 s), and a second, scanning loop for
short pieces was only ~1.5x faster on them, for code that had to be kept identical to this one.
Cold encodes with many new pieces merge them in numpy instead (``bpe_batch.py``), which finishes
its last words with this loop.

``dropout`` (BPE-dropout, for ``BPE.sample``) skips each candidate merge with that probability,
as HF does: the skipped candidates go back into the heap after the next merge, and when every
candidate is skipped the piece is done.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from heapq import heapify, heappop, heappush

_MERGED_AWAY = -1  # the id left at a position whose symbol joined its left neighbour


def merge(
    ids: list[int],
    rows: Sequence[Mapping[int, int]],
    merged_at: Sequence[int],
    *,
    dropout: float = 0.0,
    rng: random.Random | None = None,
) -> list[int]:
    """The ids of one piece whose symbols are ``ids`` (changed in place), after every merge.

    ``rows[left][right]`` is the rank of the pair (left, right), and rank r makes the token
    ``merged_at[r]`` (``bpe.rank_rows`` builds both).
    """
    n = len(ids)
    if n < 2:
        return ids
    # A heap entry is one int, rank * 2**shift + position: ints compare faster than tuples, and
    # the order is the same as (rank, position) because every position is below 2**shift.
    shift = n.bit_length()
    position_mask = (1 << shift) - 1
    heap = []
    for i in range(n - 1):
        rank = rows[ids[i]].get(ids[i + 1])
        if rank is not None:
            heap.append(rank << shift | i)
    if not heap:
        return ids  # nothing merges (random bytes, a run of a byte that has no pair)
    heapify(heap)
    next_of = list(range(1, n + 1))  # n past the last symbol
    prev_of = list(range(-1, n - 1))  # -1 before the first
    skipped: list[int] = []  # dropout's skipped candidates, back in the heap after the next merge
    while heap:
        entry = heappop(heap)
        rank, i = entry >> shift, entry & position_mask
        left = ids[i]
        if left == _MERGED_AWAY:
            continue
        j = next_of[i]
        if j == n or rows[left].get(ids[j]) != rank:
            continue  # stale: the pair at i has changed since this entry was pushed
        if dropout and rng is not None and rng.random() < dropout:
            skipped.append(entry)
            continue
        for entry in skipped:
            heappush(heap, entry)
        skipped.clear()
        # Merge the pair at (i, j) into i, and unlink j.
        ids[i] = new = merged_at[rank]
        ids[j] = _MERGED_AWAY
        k = next_of[i] = next_of[j]
        if k != n:
            prev_of[k] = i
            right_rank = rows[new].get(ids[k])
            if right_rank is not None:
                heappush(heap, right_rank << shift | i)
        h = prev_of[i]
        if h >= 0:
            left_rank = rows[ids[h]].get(new)
            if left_rank is not None:
                heappush(heap, left_rank << shift | h)
    return [token_id for token_id in ids if token_id != _MERGED_AWAY]
