"""A slow, obviously correct BPE encoder, the yardstick for ``engine/models/bpe_merge.py``.

It is tiktoken's ``_educational.py`` and minbpe's ``_encode_chunk`` with Hugging Face's order:
look at every adjacent pair, merge the one with the lowest rank (its leftmost occurrence), and
look again, until no pair has a merge. Scanning every pair for every merge makes it quadratic,
so it lives in ``tests/``: production never calls it. It covers the merge rule only (and
``ignore_merges``), on a byte-level ``BPE``; no dropout, no cache, no pre-tokenizer.
"""

from __future__ import annotations

from functools import cache

from engine.models.bpe import BPE


def reference_merge(ids: list[int], ranks: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Merge ``ids`` by ``ranks``: ``{(left id, right id): (rank, merged id)}``."""
    ids = list(ids)
    while len(ids) >= 2:
        candidates = [(ranks[pair][0], i) for i, pair in enumerate(zip(ids, ids[1:])) if pair in ranks]
        if not candidates:
            break
        _, i = min(candidates)  # the lowest rank, then the leftmost
        ids[i : i + 2] = [ranks[ids[i], ids[i + 1]][1]]
    return ids


def reference_encode(model: BPE, data: bytes) -> list[int]:
    """The ids of one pre-token's bytes under ``model``, as Hugging Face gives them."""
    if model.ignore_merges and (found := model.id_for_bytes(data)) is not None:
        return [found]
    return reference_merge([model.id_for_bytes(bytes([b])) for b in data], ranks_of(model))  # type: ignore[misc]


@cache
def ranks_of(model: BPE) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(left id, right id): (rank, merged id)}`` from the model's merge list as bytes; a pair
    listed twice keeps its later rank, as Hugging Face builds its map (one insert per line)."""
    ids = model.id_for_bytes
    return {(ids(left), ids(right)): (rank, ids(left + right))  # type: ignore[misc]
            for rank, (left, right) in enumerate(model.merges)}
